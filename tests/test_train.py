import functools
import itertools
import logging
import pickle
import re

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import assert_trees_equal, tiny_train_config

import motorflow as mf
import motorflow.pipeline as mfp
from motorflow._model._setting import weights
from motorflow._training._divergence import DivergencePolicy
from motorflow._training._driver import _chunk_inputs
from motorflow._training._schedule import WallClock


class Interrupt(Exception):
    pass


def interrupt_at(batch):
    def on_log(done, history):
        if done == batch:
            raise Interrupt

    return on_log


def test_a_short_run_lowers_training_and_validation_loss(tiny):
    setup = tiny(
        n_batches=60,
        validation={"every": 20},
        log={"every": 20},
        checkpoint={"every": 20},
        optimizer={"learning_rate": 0.05},
    )
    result = setup.train()
    loss = result.history["loss"]["total"]
    assert np.isfinite(loss).all()
    assert (loss[-10:].mean(axis=0) < 0.85 * loss[:5].mean(axis=0)).all()
    validation = result.history["validation"]["total"]
    assert validation.shape == (4, 3)
    # Feedback and hidden noise are on, so the validation loss has a floor above zero.
    assert (validation[-1] < 0.8 * validation[0]).all()


def test_history_records_every_term_per_batch_and_replicate(tiny):
    setup = tiny()
    history = setup.train().history
    assert set(history["loss"]) == {
        "position",
        "final_velocity",
        "effort",
        "hidden",
        "hold",
        "total",
    }
    for values in history["loss"].values():
        assert values.shape == (40, 3) and np.isfinite(values).all()
    np.testing.assert_allclose(history["learning_rate"], 1e-2)
    weights = {name: term.weight for name, term in setup.config.loss.terms.items()}
    recombined = sum(weights[name] * history["loss"][name] for name in weights)
    np.testing.assert_allclose(recombined, history["loss"]["total"], rtol=1e-5)
    dataset = mf.history_dataset(history)
    assert dataset.loss.dims == ("term", "batch", "replicate")
    assert list(dataset.validation_step.values) == [0, 10, 20, 30, 40]


def test_leaves_outside_the_trainable_subset_stay_bit_identical(tiny):
    setup = tiny(trainable=["network.readout"])
    trained = setup.train().ensemble
    assert_trees_equal(
        eqx.filter(trained.network.cell, eqx.is_array),
        eqx.filter(setup.ensemble.network.cell, eqx.is_array),
    )
    assert not np.array_equal(trained.network.readout.weight, setup.ensemble.network.readout.weight)


def resume_points(log: str) -> list[int]:
    """The batch each checkpointed training in `log` resumed from (0: the first batch)."""
    found = re.findall(
        r"Resuming from the checkpoint at batch (\d+)|Training from the first batch", log
    )
    return [int(batch or 0) for batch in found]


@pytest.mark.parametrize(
    ("checkpoint", "resumed_from"),
    [
        ({"every": 10}, [0, 10, 30]),
        # The interruption at 10 comes before the first checkpoint, and the one at 30
        # loses the chunk since the checkpoint at 20, which must be recomputed exactly.
        ({"every": 20}, [0, 0, 20]),
        # Exponential checkpoints at 3, 9 and 21; the wall clock (made due at every
        # chunk's end below) adds the ones at 10 and 30.
        ({"exponential": {"start": 3, "factor": 2}, "seconds": 0.01}, [0, 10, 30]),
    ],
)
def test_resuming_after_interruptions_equals_an_uninterrupted_run(
    tiny, tmp_path, monkeypatch, caplog, checkpoint, resumed_from
):
    # A clock a second later at every reading: where a run resumes does not depend on
    # the machine's speed.
    ticks = itertools.count()
    clock = functools.partial(WallClock, clock=lambda: float(next(ticks)))
    monkeypatch.setattr("motorflow._training._plan.WallClock", clock)
    setup = tiny(checkpoint=checkpoint)
    reference = setup.train()
    directory = tmp_path / "checkpoints"
    # Interrupted at 10 and 30 batches, then run to the end.
    with caplog.at_level(logging.INFO, logger="motorflow"):
        for batch in (10, 30):
            with pytest.raises(Interrupt):
                setup.train(checkpoint_dir=directory, on_log=interrupt_at(batch))
        resumed = setup.train(checkpoint_dir=directory)
    assert resume_points(caplog.text) == resumed_from
    assert resumed.record["resumed_from_batch"] == resumed_from[-1]
    assert f"for batches {resumed_from[-1] + 1} to 40 of 8 trials" in caplog.text
    assert f"Training done: batches {resumed_from[-1] + 1} to 40 in" in caplog.text
    assert int(resumed.state.step) == 40
    assert_trees_equal(resumed.state, reference.state)
    assert_trees_equal(resumed.history, reference.history)
    assert_trees_equal(
        eqx.filter(resumed.ensemble, eqx.is_array), eqx.filter(reference.ensemble, eqx.is_array)
    )


COMPILED: list[str] | None = None  # the programs compiled while a test records them


def _record_compile(event: str, duration: float, *, fun_name: str = "", **_) -> None:
    if COMPILED is not None and event == "/jax/core/compile/backend_compile_duration":
        COMPILED.append(fun_name)


jax.monitoring.register_event_duration_secs_listener(_record_compile)


def test_a_resumed_run_calls_the_programs_its_fresh_run_compiled(tiny, tmp_path):
    """Restored arrays are committed to a device, and JAX compiles a program for
    committed arguments apart from one for uncommitted ones: a fresh run's state is
    committed too, so that resuming compiles no training program again (it compiled
    the chunk, validation and best-parameter programs a second time, 3-7 s each)."""
    global COMPILED
    setup = tiny(n_batches=20)
    with pytest.raises(Interrupt):
        setup.train(checkpoint_dir=tmp_path, on_log=interrupt_at(10))
    COMPILED = []
    try:
        resumed = setup.train(checkpoint_dir=tmp_path)
        jax.jit(lambda x: x * 3)(jnp.arange(5.0))  # a new program: the recording works
    finally:
        compiled, COMPILED = COMPILED, None
    assert resumed.record["resumed_from_batch"] == 10
    assert compiled[-1] == "jit(<lambda>)"
    again = [name for name in compiled if name in ("jit(run_chunk)", "jit(validate)")]
    assert not again, compiled


def test_a_finished_run_reruns_from_its_final_checkpoint(tiny, tmp_path, caplog):
    setup = tiny()
    first = setup.train(checkpoint_dir=tmp_path)
    calls = []
    with caplog.at_level(logging.INFO, logger="motorflow"):
        again = setup.train(checkpoint_dir=tmp_path, on_log=lambda done, _: calls.append(done))
    assert calls == [] and again.record["resumed_from_batch"] == 40
    # The log says so, and names no batch after the last ("batches 41 to 40").
    assert "Nothing to train: all 40 batches were done already" in caplog.text
    assert "Training done: no batch was left to train" in caplog.text
    assert not re.search(r"batch(es)? 41", caplog.text)
    assert_trees_equal(again.state, first.state)


def test_checkpoints_of_another_configuration_are_not_resumed(tiny, tmp_path):
    tiny(optimizer={"learning_rate": 0.05}).train(checkpoint_dir=tmp_path)
    setup = tiny()
    resumed = setup.train(checkpoint_dir=tmp_path)
    assert resumed.record["resumed_from_batch"] == 0
    assert_trees_equal(resumed.state, setup.train().state)


def test_keeps_the_newest_checkpoints_and_the_best(tiny, tmp_path):
    setup = tiny(keep_checkpoints=1)
    setup.train(checkpoint_dir=tmp_path)
    run = run_dir(tmp_path)
    with mfp.Checkpoints(run, fingerprint=_fingerprint(run), keep=1) as checkpoints:
        steps = checkpoints.all_steps()
        assert checkpoints.latest_step() == 40 and 40 in steps
        assert checkpoints.best_step() in steps
        assert len(steps) <= 2


def _fingerprint(directory):
    import json

    return json.loads((directory / "motorflow-run.json").read_text())


def run_dir(store):
    """The one run directory of a checkpoint store."""
    (run,) = [p for p in store.iterdir() if p.is_dir()]
    return run


def test_non_finite_loss_names_batch_replicate_and_term_and_keeps_the_checkpoint(tiny, tmp_path):
    setup = tiny()
    goal = np.asarray(setup.trials.goal_pos).copy()
    goal[1, 27, 3] = np.nan
    setup.trials = mf.Trials(setup.trials.init_pos, setup.trials.init_vel, jnp.asarray(goal))
    with pytest.raises(mf.NonFiniteLossError) as error:
        setup.train(checkpoint_dir=tmp_path)
    message = str(error.value)
    assert "batch 27" in message and "replicate(s) 1," in message and "position" in message
    assert "checkpoint (batch 20)" in message
    assert (error.value.batch, error.value.replicates) == (27, [1])
    run = run_dir(tmp_path)
    with mfp.Checkpoints(run, fingerprint=_fingerprint(run)) as checkpoints:
        assert checkpoints.latest_step() == 20


def test_each_replicate_gets_its_own_trials_unless_shared(tiny):
    own = tiny().train().history["loss"]["position"]
    shared_setup = tiny(shared_trials=True)
    assert shared_setup.trials.goal_pos.shape[0] == 1
    shared = shared_setup.train().history["loss"]["position"]
    assert np.isfinite(shared).all()
    # With shared trials the replicates see the same reaches, so their first-batch
    # losses differ only through their weights; own trials differ per replicate.
    assert not np.array_equal(own[0], shared[0])


@pytest.mark.parametrize(
    "optimizer",
    [
        {"name": "sgd", "learning_rate": 0.01, "momentum": 0.9},
        {"name": "adamw", "learning_rate": 0.01, "weight_decay": 0.01},
        {
            "name": "adam",
            "clip_global_norm": 0.1,
            "schedule": {"kind": "warmup_cosine", "warmup_steps": 10, "end_factor": 0.1},
        },
        {"name": "adam", "schedule": {"kind": "exponential", "decay_rate": 0.5, "decay_steps": 20}},
    ],
)
def test_configured_optimizers_train_and_record_their_learning_rate(tiny, optimizer):
    setup = tiny(optimizer=optimizer)
    history = setup.train().history
    schedule = mf.learning_rate_schedule(setup.config.optimizer, setup.config.n_batches)
    np.testing.assert_allclose(
        history["learning_rate"], [schedule(b) for b in range(40)], rtol=1e-6
    )
    loss = history["loss"]["total"]
    assert (loss[-5:].mean(axis=0) < loss[:5].mean(axis=0)).all()


def test_trials_of_the_wrong_shape_are_rejected(tiny):
    setup = tiny()
    setup.trials = jax.tree.map(lambda x: x[:, :, :4], setup.trials)
    with pytest.raises(ValueError, match="batch_size"):
        setup.train()


@pytest.mark.parametrize("shared", [False, True])
def test_replicates_trained_as_one_batch_match_replicates_trained_in_turn(tiny, shared):
    # GPUs train a device's replicates as one vmapped batch; CPUs one after another.
    setup = tiny(shared_trials=shared)
    batches = jax.tree.map(lambda x: np.swapaxes(np.asarray(x)[:, :10], 0, 1), setup.trials)
    results = []
    for vectorize in (False, True):
        trainer = mf.Trainer(
            setup.ensemble, setup.task, setup.config, vectorize_replicates=vectorize
        )
        state, records = trainer.run_chunk(
            trainer.init(key=setup.train_key), batches, jnp.arange(10)
        )
        results.append((state.params, state.opt_state, records))
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6), *results)


def test_a_non_finite_validation_loss_stops_training_before_its_checkpoint(tiny, tmp_path):
    # A huge step leaves the parameters finite but the next rollouts infinite: the
    # training loss before the update was finite, so only the validation loss shows it.
    setup = tiny(
        optimizer={"name": "sgd", "learning_rate": 1e38},
        validation={"every": 1},
        log={"every": 1},
        checkpoint={"every": 1},
    )
    with pytest.raises(mf.NonFiniteLossError) as error:
        setup.train(checkpoint_dir=tmp_path)
    assert error.value.what == "validation loss" and error.value.batch == 1
    assert "Non-finite validation loss at batch 1" in str(error.value)
    assert "No checkpoint had been written" in str(error.value)
    run = run_dir(tmp_path)
    assert not [p for p in run.iterdir() if p.name.isdigit()]


def with_nan_goal(setup, replicate, batch):
    """`setup` whose training trials give `replicate` a NaN goal in `batch`."""
    goal = np.asarray(setup.trials.goal_pos).copy()
    goal[replicate, batch, 0] = np.nan
    setup.trials = mf.Trials(setup.trials.init_pos, setup.trials.init_vel, jnp.asarray(goal))
    return setup


def replicates(tree, which):
    """The replicates `which` of every array leaf of `tree` (replicate axis first)."""
    return jax.tree.map(lambda x: np.asarray(x)[which], eqx.filter(tree, eqx.is_array))


def test_isolation_freezes_a_diverged_replicate_and_trains_the_others_as_if_none_had(
    tiny, tmp_path
):
    healthy = [0, 2]
    reference = tiny(on_divergence="isolate").train()
    setup = with_nan_goal(tiny(on_divergence="isolate"), replicate=1, batch=5)
    directory = tmp_path / "checkpoints"
    with pytest.raises(Interrupt):
        setup.train(checkpoint_dir=directory, on_log=interrupt_at(20))
    result = setup.train(checkpoint_dir=directory)
    assert result.record["resumed_from_batch"] == 20  # after the divergence at 5
    assert result.history["diverged_at"].tolist() == [-1, 5, -1]
    for name in ("params", "opt_state", "best_params", "best_loss", "best_batch"):
        assert_trees_equal(
            replicates(getattr(result.state, name), healthy),
            replicates(getattr(reference.state, name), healthy),
        )
    assert_trees_equal(
        jax.tree.map(lambda x: x[..., healthy], result.history["loss"]),
        jax.tree.map(lambda x: x[..., healthy], reference.history["loss"]),
    )
    # The diverged replicate keeps its parameters after batches 0..4 (run by the
    # program train runs: the plan's chunk, its other steps skipped).
    trainer = mf.Trainer(setup.ensemble, setup.task, setup.config)
    noise_key = jax.random.split(setup.train_key)[0]
    inputs = _chunk_inputs(setup.trials, 0, 5, mf.TrainingPlan(setup.config))
    after_five, _ = trainer.run_chunk(trainer.init(key=noise_key), *inputs)
    assert_trees_equal(replicates(result.state.params, 1), replicates(after_five.params, 1))
    loss = result.history["loss"]["total"][:, 1]
    assert np.isfinite(loss[:5]).all() and np.isnan(loss[5:]).all()
    validation = result.history["validation"]["total"][:, 1]
    assert np.isfinite(validation[0]) and np.isnan(validation[1:]).all()
    dataset = mf.history_dataset(result.history)
    assert dataset.diverged_at.values.tolist() == [-1, 5, -1]


def test_by_default_a_diverged_replicate_stops_training(tiny):
    setup = with_nan_goal(tiny(), replicate=2, batch=5)
    with pytest.raises(mf.NonFiniteLossError, match="on_divergence: isolate") as error:
        setup.train()
    assert (error.value.batch, error.value.replicates) == (5, [2])


def test_isolation_finishes_a_run_whose_every_replicate_diverged(tiny, caplog):
    # Under isolate a diverged replicate is a result (a sweep's value that diverges
    # ranks last), so a run whose replicates all diverge still ends with its results.
    setup = tiny(on_divergence="isolate", n_replicates=2)
    for replicate, batch in ((0, 3), (1, 12)):
        setup = with_nan_goal(setup, replicate, batch)
    with caplog.at_level("WARNING", logger="motorflow"):
        result = setup.train()
    assert mf.history_dataset(result.history).diverged_at.values.tolist() == [3, 12]
    assert caplog.text.count("Every replicate has diverged (the last at batch 12)") == 1
    params = eqx.filter(result.state.params, eqx.is_inexact_array)
    assert all(np.isfinite(leaf).all() for leaf in jax.tree.leaves(params))
    loss = result.history["loss"]["total"]
    assert np.isfinite(loss[:3, 0]).all() and np.isnan(loss[12:]).all()


def test_the_divergence_error_survives_pickling():
    # A worker process's error must reach its parent (concurrent.futures pickles it).
    error = mf.NonFiniteLossError(
        batch=7, replicates=[0, 2], terms=["position"], resume_hint="Resume.", what="parameters"
    )
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.batch, copy.replicates, copy.terms, copy.what) == (
        7,
        [0, 2],
        ["position"],
        "parameters",
    )
    assert str(copy) == str(error)


def test_a_stopping_run_names_parameters_or_loss_whichever_went_first():
    policy = DivergencePolicy("stop", resume_hint=lambda: "")
    losses = {"position": np.ones((4, 3)), "total": np.ones((4, 3))}
    with pytest.raises(mf.NonFiniteLossError) as error:
        policy.after_update(np.array([-1, -1, -1]), np.array([-1, 12, -1]), losses, start=10)
    assert error.value.what == "parameters" and error.value.batch == 12
    # A non-finite loss whose update left the parameters finite stops the run too.
    losses["total"][3, 0] = losses["position"][3, 0] = np.inf
    with pytest.raises(mf.NonFiniteLossError) as error:
        policy.after_update(np.array([-1, -1, -1]), np.array([-1, -1, -1]), losses, start=10)
    assert (error.value.what, error.value.batch, error.value.replicates) == (
        "training loss",
        13,
        [0],
    )
    assert error.value.terms == ["position"]


def test_the_best_parameters_are_those_of_the_lowest_validation_loss(tiny):
    # A large step makes the validation loss go up and down, so the best is not the last.
    setup = tiny(optimizer={"learning_rate": 0.2}, validation={"every": 5})
    result = setup.train()
    validation = result.history["validation"]["total"]
    steps = result.history["validation_step"]
    best = np.argmin(validation, axis=0)
    np.testing.assert_array_equal(result.history["best_batch"], steps[best])
    np.testing.assert_array_equal(
        result.history["best_validation_loss"], validation[best, np.arange(3)]
    )
    assert (steps[best] < 40).any(), "the test needs a replicate whose best is not the last"
    # Each replicate's best parameters are its parameters after its best batch count.
    trainer = mf.Trainer(setup.ensemble, setup.task, setup.config)
    plan = mf.TrainingPlan(setup.config)
    state = trainer.init(key=jax.random.split(setup.train_key)[0])
    at = {0: state.params}
    for start, stop in plan.chunks(0):
        state, _ = trainer.run_chunk(state, *_chunk_inputs(setup.trials, start, stop, plan))
        at[stop] = state.params
    for replicate, batch in enumerate(steps[best]):
        assert_trees_equal(
            replicates(result.state.best_params, replicate), replicates(at[batch], replicate)
        )
    assert_trees_equal(
        eqx.filter(result.best_ensemble, eqx.is_array),
        eqx.filter(trainer.ensemble(result.state.best_params), eqx.is_array),
    )


def test_the_run_record_names_parameters_devices_versions_and_step_times(tiny, caplog):
    setup = tiny()
    # Compiled programs are shared by trainers of equal settings and shapes: start
    # from none, so that this run's first call compiles.
    jax.clear_caches()
    with caplog.at_level(logging.INFO, logger="motorflow"):
        record = setup.train().record
    # Its weights: a noise level (an array setting) is not a parameter.
    one_replicate = mf.take_replicate(weights(setup.ensemble.network), 0)
    sizes = {entry["size"] for entry in record["parameters"].values()}
    assert sum(e["size"] for e in record["parameters"].values()) == sum(
        x.size for x in jax.tree.leaves(one_replicate)
    )
    assert record["parameters"]["network.cell.gru.weight_hh"]["shape"] == [24, 8]  # GRU: 3 gates
    assert min(sizes) > 0 and record["devices"] and record["versions"]["jax"] == jax.__version__
    timing = record["timing"]
    # Four calls of 10 batches; the first compiled and is left out of the step times.
    assert timing["timed_batches"] == 30 and timing["compile_seconds"] > 0
    assert 0 < timing["seconds_per_batch_p10"] <= timing["seconds_per_batch_median"]
    assert timing["seconds_per_batch_median"] <= timing["seconds_per_batch_p90"]
    assert "seconds per batch: median" in caplog.text
    # The same run again reuses the programs: nothing compiles, every batch is timed.
    again = setup.train().record["timing"]
    assert again["timed_batches"] == 40 and again["compile_seconds"] == 0


def test_trainings_of_equal_settings_share_their_programs_and_train_as_alone(tiny):
    # A seed sweep's experiments in one warm worker: the second of two trainings of
    # equal settings and shapes (other weights, other keys) compiles nothing and ends
    # bitwise where it ends alone, and so does one of another learning rate (an argument
    # of the programs); one whose settings differ in a number the programs hold as a
    # constant (the clipping norm) compiles its own.
    setup = tiny()
    other_weights = mf.make_ensemble(
        setup.model_config,
        n_replicates=setup.config.n_replicates,
        n_task_inputs=setup.task.n_inputs,
        key=jax.random.key(7),
    )
    faster = tiny_train_config(optimizer={"learning_rate": 0.03})
    clipped = tiny_train_config(optimizer={"clip_global_norm": 1.0})
    runs = {
        "first": (setup.ensemble, setup.config, setup.train_key),
        "other seed": (other_weights, setup.config, jax.random.key(8)),
        "other rate": (other_weights, faster, jax.random.key(8)),
        "clipped": (other_weights, clipped, jax.random.key(8)),
    }

    def train(name):
        ensemble, config, key = runs[name]
        return mf.train(ensemble, setup.trials, setup.task, config, key=key, progress=False)

    alone = {}
    for name in runs:
        jax.clear_caches()
        alone[name] = train(name)
        assert alone[name].record["timing"]["compile_seconds"] > 0
    jax.clear_caches()
    in_turn = {name: train(name) for name in runs}
    compiled = {name: in_turn[name].record["timing"]["compile_seconds"] for name in runs}
    # A learning rate is an argument of the programs; clipping keys programs of its own.
    assert compiled["first"] > 0 and compiled["other seed"] == compiled["other rate"] == 0
    assert compiled["clipped"] > 0
    for name in runs:
        assert_trees_equal(
            eqx.filter(in_turn[name].ensemble, eqx.is_array),
            eqx.filter(alone[name].ensemble, eqx.is_array),
        )
        assert_trees_equal(in_turn[name].history, alone[name].history)
    assert not np.array_equal(
        in_turn["other rate"].history["loss"]["total"],
        in_turn["other seed"].history["loss"]["total"],
    )


def states_at_chunk_ends(setup):
    """The train state after each of the plan's chunks, run as `train` runs them."""
    trainer = mf.Trainer(setup.ensemble, setup.task, setup.config)
    plan = mf.TrainingPlan(setup.config)
    state = trainer.init(key=jax.random.split(setup.train_key)[0])
    states = {0: state}
    for start, stop in plan.chunks(0):
        state, _ = trainer.run_chunk(state, *_chunk_inputs(setup.trials, start, stop, plan))
        states[stop] = state
    return states


def test_a_stage_trains_only_its_parts_and_each_part_keeps_its_optimizer_state(tiny):
    setup = tiny(trainable=["network.readout"], stages=[{"at": 20, "trainable": ["network"]}])
    states = states_at_chunk_ends(setup)
    first, switched, last = states[0], states[20], states[40]

    def cell(tree):
        return tree.network.cell

    # Before the switch the cell is bit-identical and its optimizer state untouched
    # (each array's state: the last link of the optimizer's chain).
    assert_trees_equal(cell(switched.params), cell(first.params))
    assert_trees_equal(cell(switched.opt_state[-1]), cell(first.opt_state[-1]))
    assert not np.array_equal(
        switched.params.network.readout.weight, first.params.network.readout.weight
    )
    # Each array counts its own steps: the readout's continue across the switch.
    (readout_adam, _) = last.opt_state[-1].network.readout.weight
    (cell_adam, _) = last.opt_state[-1].network.cell.gru.weight_hh
    assert readout_adam.count.tolist() == [40] * 3 and cell_adam.count.tolist() == [20] * 3
    assert not np.array_equal(cell(last.params).gru.weight_hh, cell(first.params).gru.weight_hh)
    result = setup.train()
    assert_trees_equal(result.state.params, last.params)


def test_a_parts_learning_rate_scales_its_steps(tiny):
    sgd = {"name": "sgd", "learning_rate": 0.01}
    steps = []
    for optimizer in (sgd, {**sgd, "learning_rates": {"network.readout": 0.001}}):
        setup = tiny(optimizer=optimizer)
        trainer = mf.Trainer(setup.ensemble, setup.task, setup.config)
        first = trainer.init(key=setup.train_key)
        batch = jax.tree.map(lambda x: np.swapaxes(np.asarray(x)[:, :1], 0, 1), setup.trials)
        after, _ = trainer.run_chunk(first, batch, jnp.array([0]))
        steps.append(
            jax.tree.map(lambda a, b: np.asarray(a, np.float64) - b, after.params, first.params)
        )
    plain, grouped = steps
    # Plain SGD steps by -rate * gradient: a tenth of the rate, a tenth of the step.
    np.testing.assert_allclose(
        grouped.network.readout.weight, 0.1 * plain.network.readout.weight, rtol=1e-3, atol=1e-8
    )
    assert np.abs(plain.network.readout.weight).max() > 1e-5
    assert_trees_equal(grouped.network.cell, plain.network.cell)
