"""The optimizer as an optax composition: its state, training stages, group rates, clipping."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import assert_trees_equal

import motorflow as mf
from motorflow._training._optimizer import LeafOptimizer


def optimizer(n_batches: int = 10, **settings) -> LeafOptimizer:
    return LeafOptimizer(mf.OptimizerConfig.from_dict(settings), n_batches)


def bits(x) -> np.ndarray:
    """A float32 array's bit patterns (tells -0.0 from +0.0)."""
    return np.asarray(x, np.float32).view(np.uint32)


PARAMS = {
    "a": jnp.array([[0.5, -1.0], [2.0, 0.25]]),
    # -0.0 included: an array that takes no step must keep even its zeros' signs.
    "b": jnp.array([-0.0, 1.5, -3.0]),
}


def gradient(seed: int, size: float = 1.0) -> dict:
    keys = jax.random.split(jax.random.key(seed), 2)
    return {
        name: size * jax.random.normal(key, PARAMS[name].shape)
        for name, key in zip(PARAMS, keys, strict=True)
    }


def test_the_state_is_a_plain_pytree_of_arrays_that_saves_and_restores(tiny, tmp_path):
    setup = tiny(
        trainable=["network.readout"],
        stages=[{"at": 2, "trainable": ["network"]}],
        optimizer={
            "name": "adamw",
            "learning_rates": {"network.cell": 0.003},
            "clip_global_norm": 1.0,
            "schedule": {"kind": "warmup_cosine", "warmup_steps": 2},
        },
    )
    trainer = mf.Trainer(setup.ensemble, setup.task, setup.config)
    state = trainer.init(key=setup.train_key)
    batches = jax.tree.map(lambda x: np.swapaxes(np.asarray(x)[:, :3], 0, 1), setup.trials)
    state, _ = trainer.run_chunk(state, batches, jnp.arange(3))
    leaves = jax.tree.leaves(state.opt_state)
    # Only arrays: no Python object (a label, a schedule, a helper) hides as a leaf.
    assert leaves and all(isinstance(leaf, jax.Array) for leaf in leaves)
    # One state per replicate: every array's leading axis is the replicate's.
    assert {leaf.shape[0] for leaf in leaves} == {setup.config.n_replicates}
    mf.save_ensemble(
        tmp_path / "model",
        setup.ensemble,
        setup.model_config,
        n_task_inputs=setup.task.n_inputs,
        optimizer_state=state.opt_state,
    )
    restored = mf.load_optimizer_state(tmp_path / "model", state.opt_state)
    assert_trees_equal(restored, state.opt_state)


def test_an_inactive_array_keeps_its_value_and_state_bitwise_while_the_active_ones_step():
    opt = optimizer(name="adam", learning_rate=0.1)
    params, state = PARAMS, opt.init(PARAMS)
    for batch in range(2):
        params, state = opt.step(gradient(batch), state, params, jnp.asarray(batch), None)
    params = {**params, "b": PARAMS["b"]}  # b's -0.0 back, to watch its sign
    only_a = {"a": jnp.asarray(True), "b": jnp.asarray(False)}
    stepped, stepped_state = opt.step(gradient(2, 1e6), state, params, jnp.asarray(2), only_a)
    np.testing.assert_array_equal(bits(stepped["b"]), bits(params["b"]))
    assert_trees_equal(stepped_state[-1]["b"], state[-1]["b"])
    assert not np.array_equal(stepped["a"], params["a"])
    ((adam_a, _), (adam_b, _)) = stepped_state[-1]["a"], stepped_state[-1]["b"]
    assert int(adam_a.count) == 3 and int(adam_b.count) == 2
    # Trained again, it resumes from its own moments and step count.
    _, resumed = opt.step(gradient(3), stepped_state, stepped, jnp.asarray(3), None)
    (adam_b, _) = resumed[-1]["b"]
    assert int(adam_b.count) == 3


@pytest.mark.parametrize(
    "schedule", [{"kind": "constant"}, {"kind": "exponential", "decay_steps": 2}]
)
def test_a_groups_rate_is_the_configured_rate(tiny, schedule):
    # Plain SGD from zero steps by exactly -rate * gradient: the readout at its group's
    # rate (on the schedule's shape), the rest at the optimizer's.
    setup = tiny(
        optimizer={
            "name": "sgd",
            "learning_rate": 0.01,
            "learning_rates": {"network.readout": 0.003},
            "schedule": schedule,
        }
    )
    trainer = mf.Trainer(setup.ensemble, setup.task, setup.config)
    zeros = jax.tree.map(jnp.zeros_like, trainer.initial_params)
    grads = jax.tree.map(
        lambda x: jax.random.normal(jax.random.key(x.size), x.shape), trainer.initial_params
    )
    batch = jnp.asarray(3)
    state = jax.vmap(trainer.optimizer.init)(zeros)
    stepped, _ = jax.vmap(trainer.optimizer.step, in_axes=(0, 0, 0, None, None))(
        grads, state, zeros, batch, None
    )
    config = setup.config.optimizer

    def moved_at(rate, part):
        schedule = mf.learning_rate_schedule(config, setup.config.n_batches, rate)
        rate_now = np.float32(schedule(batch))
        gradient, step = part(grads), part(stepped)
        jax.tree.map(lambda g, s: np.testing.assert_array_equal(s, -(rate_now * g)), gradient, step)

    moved_at(0.003, lambda tree: tree.network.readout)
    moved_at(0.01, lambda tree: tree.network.cell)
    assert np.abs(stepped.network.readout.weight).max() > 1e-5


def test_clipping_bounds_the_global_norm_of_the_trained_arrays():
    opt = optimizer(name="sgd", learning_rate=1.0, clip_global_norm=0.5)
    zeros = jax.tree.map(jnp.zeros_like, PARAMS)
    state, batch = opt.init(zeros), jnp.asarray(0)
    big, small = gradient(0, 10.0), gradient(1, 0.05)

    def norm(tree):
        return float(np.sqrt(sum(np.sum(np.square(x, dtype=np.float64)) for x in tree.values())))

    assert norm(big) > 5 and norm(small) < 0.5
    stepped, _ = opt.step(big, state, zeros, batch, None)
    np.testing.assert_allclose(norm(stepped), 0.5, rtol=1e-5)
    stepped, _ = opt.step(small, state, zeros, batch, None)
    jax.tree.map(lambda s, g: np.testing.assert_array_equal(s, -g), stepped, small)
    # Only the trained arrays count: b's huge gradient neither moves b nor clips a.
    only_a = {"a": jnp.asarray(True), "b": jnp.asarray(False)}
    stepped, _ = opt.step({**small, "b": big["b"]}, state, zeros, batch, only_a)
    np.testing.assert_array_equal(stepped["a"], -small["a"])
    np.testing.assert_array_equal(stepped["b"], zeros["b"])


def test_the_learning_rate_follows_the_batch_not_the_step_count():
    # Several steps in one batch (segments) take that batch's rate; an array that sat
    # out the first batches takes the rate of the batch it trains in.
    opt = optimizer(
        name="sgd", learning_rate=1.0, schedule={"kind": "exponential", "decay_steps": 1}
    )
    zeros = jax.tree.map(jnp.zeros_like, PARAMS)
    grads = gradient(0)
    state = opt.init(zeros)
    only_a = {"a": jnp.asarray(True), "b": jnp.asarray(False)}
    for batch in range(3):
        _, state = opt.step(grads, state, zeros, jnp.asarray(batch), only_a)
    rate = np.float32(opt.schedule(jnp.asarray(5)))
    for _ in range(2):
        stepped, state = opt.step(grads, state, zeros, jnp.asarray(5), None)
        jax.tree.map(lambda s, g: np.testing.assert_array_equal(s, -(rate * g)), stepped, grads)
