"""Packed training (motorflow.train_pack): experiments that share their compiled program
train as one call per chunk, and each ends as it ends trained alone.

On the CPU the pack maps its experiments one after another (``lax.map``): each equals its
run alone bitwise. Vmapped (``vectorize_members=True``, a GPU's default) each equals its
run alone within RTOL/ATOL below (on the CPU within 1e-5, as measured).
"""

import logging
import os
import signal

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import assert_trees_equal, tiny_model_config, tiny_task, tiny_train_config
from jax.sharding import Mesh

import motorflow as mf
import motorflow.pipeline as mfp
from motorflow._training import _packs
from motorflow._training._driver import ChunkRequest, training_steps
from motorflow._training._preemption import PreemptionWatch
from motorflow._training._sharding import ReplicateLayout

SEEDS = (0, 1, 2)
# Three chunks of ten batches, each validated, logged and checkpointed after.
SMALL = {
    "n_replicates": 2,
    "n_batches": 30,
    "batch_size": 4,
    "validation": {"every": 10},
    "log": {"every": 10},
    "checkpoint": {"every": 10},
}
# Vmapped members against runs alone, after 30 batches: on the CPU they measured bitwise
# equal while learning rates and loss weights were constants of the program; as
# arguments (batched over the members) they measured 3.4e-7 apart at most (relative),
# asserted below 1e-5. Off the CPU batched kernels round otherwise: the bound is float32
# rounding grown over 30 Adam steps with a margin, not yet measured on a GPU.
RTOL, ATOL = 1e-4, 1e-6


def member(seed: int, network: dict | None = None, task: mf.Task | None = None, **train) -> dict:
    """train()'s arguments for a tiny experiment of `seed` (noise on)."""
    model = tiny_model_config(**(network or {}))
    task = tiny_task() if task is None else task
    config = tiny_train_config(**{**SMALL, **train})
    init_key, trials_key, train_key = jax.random.split(jax.random.key(seed), 3)
    ensemble = mf.make_ensemble(
        model, n_replicates=config.n_replicates, n_task_inputs=task.n_inputs, key=init_key
    )
    trials = task.training_trials(
        key=trials_key,
        n_replicates=config.n_replicates,
        n_batches=config.n_batches,
        batch_size=config.batch_size,
    )
    return {
        "ensemble": ensemble,
        "trials": trials,
        "task": task,
        "config": config,
        "key": train_key,
    }


def alone(arguments: dict, **options) -> mf.TrainResult:
    return mf.train(**{"progress": False, **arguments, **options})


@pytest.fixture(scope="module")
def reference():
    """Each seed trained alone."""
    return {seed: alone(member(seed)) for seed in SEEDS}


def assert_same_run(result: mf.TrainResult, expected: mf.TrainResult) -> None:
    assert result.run_id == expected.run_id
    assert_trees_equal(result.state, expected.state)
    assert_trees_equal(result.history, expected.history)


def assert_close_run(result: mf.TrainResult, expected: mf.TrainResult) -> float:
    """Equal within RTOL/ATOL; returns the largest relative difference."""
    worst = 0.0
    pairs = [(result.state.params, expected.state.params), (result.history, expected.history)]
    for got, want in pairs:
        for x, y in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
            x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
            np.testing.assert_allclose(x, y, rtol=RTOL, atol=ATOL)
            finite = np.isfinite(y) & (np.abs(y) > ATOL)
            if finite.any():
                worst = max(worst, float(np.max(np.abs(x - y)[finite] / np.abs(y[finite]))))
    return worst


@pytest.fixture
def calls(monkeypatch):
    """The number of experiments in each packed compiled call; no chunk runs alone."""
    widths = []
    packed = _packs.run_packed_chunk

    def counted(requests, **options):
        widths.append(len(requests))
        return packed(requests, **options)

    def refused(request):
        raise AssertionError("a chunk ran alone, outside the packed call")

    monkeypatch.setattr(_packs, "run_packed_chunk", counted)
    monkeypatch.setattr(ChunkRequest, "run", refused)
    return widths


def test_a_pack_of_seeds_equals_each_seed_trained_alone_bitwise_on_the_cpu(reference, calls):
    results = mf.train_pack([member(seed) for seed in SEEDS], vectorize_members=False)
    assert calls == [3, 3, 3]  # one call per chunk for all three
    for seed, result in zip(SEEDS, results):
        assert_same_run(result, reference[seed])


def test_a_vmapped_pack_equals_each_seed_trained_alone_within_the_tolerance(reference, calls):
    results = mf.train_pack([member(seed) for seed in SEEDS], vectorize_members=True)
    assert calls == [3, 3, 3]
    worst = max(assert_close_run(r, reference[s]) for s, r in zip(SEEDS, results))
    if jax.default_backend() == "cpu":
        assert worst < 1e-5, worst  # as measured (above)


def noisy_member(seed: int, hidden: float, feedback: float) -> dict:
    """A tiny experiment of `seed` at these noise levels (the network's and the feedback's)."""
    arguments = member(seed)
    model = mf.ModelConfig.from_dict(
        {
            "network": {"hidden_size": 8, "hidden_noise_std": hidden},
            "feedback": {"noise_std": feedback},
        }
    )
    init_key = jax.random.split(jax.random.key(seed), 3)[0]
    ensemble = mf.make_ensemble(
        model, n_replicates=SMALL["n_replicates"], n_task_inputs=2, key=init_key
    )
    return {**arguments, "ensemble": ensemble}


def test_noise_levels_are_arrays_one_program_trains_them_each_as_alone(request):
    # Noise stds are multiplied in (array settings): a noise sweep's experiments share
    # one program; a zero level (no draws at all) is a program of its own.
    levels = [(1, 0.01, 0.05), (1, 0.2, 0.05), (1, 0.01, 0.3), (1, 0.0, 0.05), (2, 0.0, 0.05)]
    members = [noisy_member(*level) for level in levels]
    alone_results = [alone(arguments) for arguments in members]
    calls = request.getfixturevalue("calls")
    results = mf.train_pack(members, vectorize_members=False)
    assert calls == [3, 2] * 3  # the nonzero levels together, the zero level apart
    totals = []
    for result, expected in zip(results, alone_results):
        assert_same_run(result, expected)
        totals.append(result.history["loss"]["total"])
    for i, j in [(0, 1), (0, 2), (0, 3)]:  # each level trains as itself
        assert not np.array_equal(totals[i], totals[j])


def swept_member(rate: float, weight: float, strength: float | list[float]) -> dict:
    """A tiny experiment at this learning rate (on a warm-up and cosine schedule), this
    weight of the position term and this curl field (its strength drawn per trial)."""
    curl = {"kind": "curl", "strength": strength, "probability": 0.5}
    task = mf.Task(
        mf.TaskConfig.from_dict(
            {"n_steps": 12, "eval": {"n_directions": 4}, "perturbations": [curl]}
        )
    )
    return member(
        1,
        task=task,
        optimizer={
            "learning_rate": rate,
            "schedule": {"kind": "warmup_cosine", "warmup_steps": 5, "end_factor": 0.1},
        },
        loss={"position": {"weight": weight}},
    )


def test_learning_rates_loss_weights_and_drawn_perturbations_are_arguments_of_one_program(
    request,
):
    # What differs between these experiments reaches the programs as arrays, so one
    # program trains them all, each as it trains alone; each setting still trains as
    # itself (results differ).
    settings = [(0.01, 1.0, 10.0), (0.03, 1.0, 10.0), (0.01, 3.0, 10.0), (0.01, 1.0, [0.0, 20.0])]
    members = [swept_member(*setting) for setting in settings]
    alone_results = [alone(arguments) for arguments in members]
    calls = request.getfixturevalue("calls")
    results = mf.train_pack(members, vectorize_members=False)
    assert calls == [4] * 3
    totals = []
    for result, expected in zip(results, alone_results):
        assert_same_run(result, expected)
        totals.append(result.history["loss"]["total"])
    for other in (1, 2, 3):
        assert not np.array_equal(totals[0], totals[other])
    # The history's learning rate is the member's own schedule.
    np.testing.assert_allclose(
        results[1].history["learning_rate"], 3 * results[0].history["learning_rate"], rtol=1e-6
    )


def test_a_program_form_holds_no_number_a_traced_function_could_read():
    # A trainer keys its programs by configs whose argument numbers are a placeholder:
    # code that read one from its block rather than its array would fail, not use it.
    config = tiny_train_config(optimizer={"learning_rate": 0.02}).program_form()
    assert config == tiny_train_config(optimizer={"learning_rate": 0.5}).program_form()
    assert hash(config) == hash(tiny_train_config(loss={"effort": {"weight": 2}}).program_form())
    assert config != tiny_train_config(optimizer={"clip_global_norm": 1.0}).program_form()
    terms = {name: jnp.ones(()) for name in config.loss.terms}
    with pytest.raises(TypeError, match="argument of the compiled programs"):
        mf.total_loss(config.loss, terms)
    optimizer, params = mf.make_optimizer(config.optimizer, 10), {"w": jnp.ones(3)}
    with pytest.raises(TypeError, match="argument of the compiled programs"):
        optimizer.update(params, optimizer.init(params), params, batch=0)
    assert mf.total_loss(config.loss, terms, weights=dict.fromkeys(terms, 2.0)) == 2 * len(terms)


EDITS = {
    "seed": lambda: member(7),
    "learning rate": lambda: member(1, optimizer={"learning_rate": 0.02}),
    "clipping": lambda: member(1, optimizer={"clip_global_norm": 0.5}),
    "noise": lambda: member(1, network={"hidden_noise_std": 0.05}),
}


@pytest.mark.parametrize("edit", list(EDITS))
def test_editing_one_member_leaves_the_others_bitwise_unchanged(reference, edit):
    edited = EDITS[edit]()
    first, edited_result, last = mf.train_pack([member(0), edited, member(2)])
    assert_same_run(first, reference[0])
    assert_same_run(last, reference[2])
    assert_same_run(edited_result, alone(edited))
    assert not np.array_equal(
        edited_result.history["loss"]["total"], reference[1].history["loss"]["total"]
    )


def test_a_vmapped_pack_of_fixed_width_is_unchanged_by_another_members_edit():
    # Without a fixed width the edited member's leaving would make the others' call
    # narrower, and batched kernels may round differently at another width.
    options = {"vectorize_members": True, "members_per_program": 3}
    before = mf.train_pack([member(seed) for seed in SEEDS], **options)
    edited = member(1, optimizer={"learning_rate": 0.02})
    after = mf.train_pack([member(0), edited, member(2)], **options)
    assert_same_run(after[0], before[0])
    assert_same_run(after[2], before[2])
    assert_close_run(after[1], alone(edited))


def signal_at(batch: int, sig: signal.Signals):
    def on_log(done, history):
        if done == batch:
            os.kill(os.getpid(), sig)

    return on_log


def test_a_signal_stops_every_member_and_the_resumed_pack_equals_the_uninterrupted(
    reference, tmp_path
):
    folders = [tmp_path / f"seed{seed}" for seed in SEEDS]
    members = [{**member(s), "checkpoint_dir": d} for s, d in zip(SEEDS, folders)]
    before = signal.getsignal(signal.SIGUSR1)
    # The last member's hook signals after batch 10, when every member has its result.
    members[-1]["on_log"] = signal_at(10, signal.SIGUSR1)
    with pytest.raises(mfp.TrainingPreempted) as stopped:
        mf.train_pack(members)
    assert stopped.value.batch == 20
    assert signal.getsignal(signal.SIGUSR1) == before  # the handler is put back
    resumed = mf.train_pack([{**member(s), "checkpoint_dir": d} for s, d in zip(SEEDS, folders)])
    for seed, result in zip(SEEDS, resumed):
        assert result.record["resumed_from_batch"] == 20  # every member saw the signal
        assert_same_run(result, reference[seed])


class Interrupt(Exception):
    pass


def interrupt_at(batch: int):
    def on_log(done, history):
        if done == batch:
            raise Interrupt

    return on_log


def test_members_at_different_progress_each_resume_their_own_checkpoints(reference, tmp_path):
    folders = [tmp_path / f"seed{seed}" for seed in SEEDS]
    members = [{**member(s), "checkpoint_dir": d} for s, d in zip(SEEDS, folders)]
    members[1]["on_log"] = interrupt_at(10)
    # One member's error stops that member only; the pack raises it when the rest are done.
    with pytest.raises(Interrupt) as stopped:
        mf.train_pack(members)
    assert "member 1 stopped with this error" in "\n".join(stopped.value.__notes__)
    # Member 2 starts over; member 0 finished earlier, member 1 stopped after batch 10.
    resumed = mf.train_pack(
        [
            {**member(0), "checkpoint_dir": folders[0]},
            {**member(1), "checkpoint_dir": folders[1]},
            {**member(2), "checkpoint_dir": folders[2], "restart": True},
        ]
    )
    assert [r.record["resumed_from_batch"] for r in resumed] == [30, 10, 0]
    for seed, result in zip(SEEDS, resumed):
        assert_same_run(result, reference[seed])


def test_members_of_another_shape_run_in_programs_of_their_own(reference):
    other = member(1, network={"hidden_size": 6})
    first, wider, last = mf.train_pack([member(0), other, member(2)])
    assert_same_run(first, reference[0])
    assert_same_run(last, reference[2])
    assert_same_run(wider, alone(other))


def first_request(arguments: dict) -> ChunkRequest:
    steps = training_steps(**{**arguments, "progress": False})
    request = next(steps)
    steps.close()
    return request


@pytest.mark.parametrize(
    ("other", "named"),
    [
        (
            lambda: member(1, optimizer={"clip_global_norm": 1.0}),
            "train.optimizer.clip_global_norm",
        ),
        (lambda: member(1, network={"hidden_size": 6}), "its model differs"),
    ],
)
def test_a_packed_call_refuses_requests_of_another_program_naming_the_setting(other, named):
    requests = [first_request(member(0)), first_request(other())]
    with pytest.raises(ValueError, match="request 1 .* cannot share") as error:
        _packs.run_packed_chunk(requests, vectorize_members=False)
    assert named in str(error.value)


def test_a_pack_refuses_a_trainer_spread_over_devices():
    request = first_request(member(0))
    mesh = Mesh(np.asarray(jax.devices()[:1]), ("replicate",))
    n = request.trainer.n_replicates
    spread = eqx.tree_at(lambda t: t.layout, request.trainer, ReplicateLayout(n, n, mesh))
    request = request._replace(trainer=spread)
    with pytest.raises(ValueError, match="a pack trains on one device"):
        _packs.run_packed_chunk([request], vectorize_members=False)


def test_preemption_watches_entered_together_may_leave_in_any_order():
    before = signal.getsignal(signal.SIGUSR1)
    first, second = PreemptionWatch(), PreemptionWatch()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)  # the first to finish leaves first
    os.kill(os.getpid(), signal.SIGUSR1)  # still caught: the second still watches
    assert second.requested == "SIGUSR1"
    second.__exit__(None, None, None)
    assert signal.getsignal(signal.SIGUSR1) == before


def test_each_members_log_lines_start_with_its_name(caplog):
    with caplog.at_level(logging.INFO, logger="motorflow"):
        mf.train_pack([member(0), member(1)], names=["first", "second"])
    lines = [record.getMessage() for record in caplog.records]
    for name in ("first", "second"):
        assert any(line.startswith(f"{name}: Training 2 replicates") for line in lines)
        assert any(line.startswith(f"{name}: batch 30/30") for line in lines)
    # Outside the pack, lines are as they were.
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="motorflow"):
        alone(member(0))
    assert not any(record.getMessage().startswith("first") for record in caplog.records)
