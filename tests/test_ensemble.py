import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from conftest import assert_trees_equal, raises_config_error, tiny_model_config

import motorflow as mf


def test_replicates_differ_and_share_structure():
    ensemble = mf.make_ensemble(
        tiny_model_config(), n_replicates=4, n_task_inputs=2, key=jax.random.key(0)
    )
    assert mf.n_replicates(ensemble) == 4
    weights = np.asarray(ensemble.network.readout.weight)
    assert weights.shape == (4, 2, 8)
    assert all(not np.array_equal(weights[0], weights[i]) for i in range(1, 4))


def test_a_taken_replicate_is_the_model_built_alone():
    config = tiny_model_config(cell="leaky")
    key = jax.random.key(7)
    ensemble = mf.make_ensemble(config, n_replicates=3, n_task_inputs=2, key=key)
    alone = mf.build_model(config, n_task_inputs=2, key=mf.replicate_keys(3, key=key)[2])
    taken = mf.take_replicate(ensemble, 2)
    assert_trees_equal(eqx.filter(taken, eqx.is_array), eqx.filter(alone, eqx.is_array))
    assert eqx.tree_equal(
        eqx.filter(taken, eqx.is_array, inverse=True), eqx.filter(alone, eqx.is_array, inverse=True)
    )

    goal = jnp.broadcast_to(jnp.array([0.4, 0.1]), (10, 2))
    args = (jnp.zeros(2), jnp.zeros(2), goal)
    assert_trees_equal(
        taken.rollout(*args, key=jax.random.key(1)), alone.rollout(*args, key=jax.random.key(1))
    )


def test_trainable_filter_selects_named_parts_and_rejects_unknown_paths():
    ensemble = mf.make_ensemble(
        tiny_model_config(), n_replicates=2, n_task_inputs=2, key=jax.random.key(0)
    )
    spec = mf.trainable_filter(ensemble, ["network.readout"])
    assert spec.network.readout.weight and spec.network.readout.bias
    assert not any(jax.tree.leaves(spec.network.cell))
    with raises_config_error("train.trainable", "'network.readuot'", "readout"):
        mf.trainable_filter(ensemble, ["network.readuot"], "train.trainable")
