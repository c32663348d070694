"""SIGTERM / SIGUSR1 make training checkpoint at the next chunk boundary and stop; the
rerun resumes to exactly the uninterrupted result."""

import os
import signal

import equinox as eqx
import pytest
from conftest import assert_trees_equal

import motorflow.pipeline as mfp


def signal_at(batch: int, sig: signal.Signals):
    def on_log(done, history):
        if done == batch:
            os.kill(os.getpid(), sig)

    return on_log


@pytest.mark.parametrize("sig", [signal.SIGUSR1, signal.SIGTERM])
def test_a_signal_checkpoints_stops_and_the_rerun_equals_an_uninterrupted_run(tiny, tmp_path, sig):
    # Checkpoints only at the end: the one at the stop is the signal's.
    setup = tiny(checkpoint={"at": [40]})
    reference = setup.train()
    before = signal.getsignal(sig)
    with pytest.raises(mfp.TrainingPreempted) as stopped:
        setup.train(checkpoint_dir=tmp_path, on_log=signal_at(10, sig))
    # Signalled after the call that ended at batch 10: the next call runs to 20.
    assert stopped.value.batch == 20 and stopped.value.signal_name == sig.name
    assert "Run the same command again" in str(stopped.value)
    assert signal.getsignal(sig) == before  # the handler is put back
    store = mfp.CheckpointStore(tmp_path)
    (run,) = store.runs()
    assert sorted(int(p.name) for p in (tmp_path / run).iterdir() if p.name.isdigit()) == [20]
    resumed = setup.train(checkpoint_dir=tmp_path)
    assert resumed.record["resumed_from_batch"] == 20
    assert_trees_equal(resumed.state, reference.state)
    assert_trees_equal(resumed.history, reference.history)
    assert_trees_equal(
        eqx.filter(resumed.ensemble, eqx.is_array), eqx.filter(reference.ensemble, eqx.is_array)
    )
