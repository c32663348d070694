"""Optional TensorBoard event files: what a run writes, and a resumed run's."""

import struct
import sys

import numpy as np
import pytest

pytest.importorskip("tensorboardX")
from tensorboardX.proto import event_pb2
from workflow_helpers import at, tiny_config, train_through_stages

import motorflow.pipeline as mfp


def read_events(path):
    """The Event records of one event file (TFRecord framing: length, its CRC, data, CRC)."""
    data, events, offset = path.read_bytes(), [], 0
    while offset < len(data):
        (length,) = struct.unpack("<Q", data[offset : offset + 8])
        events.append(event_pb2.Event.FromString(data[offset + 12 : offset + 12 + length]))
        offset += 12 + length + 4
    return events


def scalars(directory):
    """tag -> {step: value} as TensorBoard shows it: files in the order they were
    written, a file that starts a session at step s superseding later steps before it."""
    files = [read_events(path) for path in directory.glob("events.out.tfevents.*")]
    shown: dict[str, dict[int, float]] = {}
    for events in sorted(files, key=lambda events: events[0].wall_time):
        for event in events:
            if event.HasField("session_log") and event.session_log.status == 1:
                for series in shown.values():
                    for step in [s for s in series if s >= event.step]:
                        del series[step]
            for value in event.summary.value:
                series = shown.setdefault(value.tag, {})
                assert event.step not in series, f"{value.tag} step {event.step} twice"
                series[event.step] = value.simple_value
    return shown


def series(shown, tag, steps):
    return np.array([shown[tag].get(step, np.nan) for step in steps], np.float32)


def check_against_history(shown, history, n_replicates):
    batches = np.arange(len(history["learning_rate"]))
    for r in range(n_replicates):
        for name, tag in (("loss", "loss"), ("grad_norm", "grad_norm")):
            expected = history[name]["total"][:, r]
            got = series(shown, f"{tag}/total/replicate_{r}", batches)
            np.testing.assert_allclose(got, expected, rtol=1e-6)
        steps = history["validation_step"]
        expected = history["validation"]["position"][:, r]
        got = series(shown, f"validation_loss/position/replicate_{r}", steps)
        np.testing.assert_allclose(got, expected, rtol=1e-6)
    np.testing.assert_allclose(
        series(shown, "learning_rate", batches), history["learning_rate"], rtol=1e-6
    )


def test_a_run_writes_its_losses_gradient_norms_and_learning_rate(tiny, tmp_path):
    setup = tiny(optimizer={"schedule": {"kind": "warmup_cosine", "warmup_steps": 5}})
    result = setup.train(tensorboard_dir=tmp_path / "board")
    shown = scalars(tmp_path / "board")
    check_against_history(shown, result.history, setup.config.n_replicates)
    # Per-term gradient norms are not recorded by default, so not written.
    assert not any(tag.startswith("grad_norm/position") for tag in shown)


def test_a_resumed_run_shows_each_batch_once_as_an_uninterrupted_one(tiny, tmp_path):
    setup = tiny(checkpoint={"every": 20})
    reference = setup.train()

    def stop_at_30(done, history):
        if done == 30:
            raise KeyboardInterrupt

    board, checkpoints = tmp_path / "board", tmp_path / "checkpoints"
    with pytest.raises(KeyboardInterrupt):
        setup.train(checkpoint_dir=checkpoints, tensorboard_dir=board, on_log=stop_at_30)
    # The interrupted run wrote batches 20..29 past its checkpoint; the resumed run
    # writes them again, superseding them.
    assert max(scalars(board)["loss/total/replicate_0"]) == 29
    resumed = setup.train(checkpoint_dir=checkpoints, tensorboard_dir=board)
    assert resumed.record["resumed_from_batch"] == 20
    assert len(list(board.glob("events.out.tfevents.*"))) == 2
    check_against_history(scalars(board), reference.history, setup.config.n_replicates)


def test_without_tensorboardx_a_run_says_what_to_install(tiny, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboardX", None)
    with pytest.raises(ImportError, match=r"motorflow\[tensorboard\]"):
        tiny().train(tensorboard_dir=tmp_path / "board")
    assert not (tmp_path / "board").exists()


def test_the_train_stage_writes_event_files_per_training_configuration(tmp_path):
    config = tiny_config()
    at("trainings.quick.tensorboard", True)(config)
    settings = mfp.parse_config(config)
    experiment = mfp.resolve_experiments(settings)["quiet"]
    train_through_stages(experiment, tmp_path)
    runs = list((tmp_path / experiment.name / "tensorboard").iterdir())
    assert len(runs) == 1 and (tmp_path / experiment.name / "checkpoints").exists()
    assert any(tag.startswith("loss/total/") for tag in scalars(runs[0]))
