"""The cell family: every registered cell is buildable from the config by its name."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

import motorflow as mf


def test_the_config_accepts_exactly_the_registered_cells():
    for kind in mf.CELLS:
        assert mf.ModelConfig.from_dict({"network": {"cell": kind}}).network.cell == kind
    with pytest.raises(mf.ConfigError, match="cell"):
        mf.ModelConfig.from_dict({"network": {"cell": "lstm"}})


@pytest.mark.parametrize("kind", sorted(mf.CELLS))
def test_each_registered_cell_builds_by_name_and_steps_its_hidden_state(kind):
    config = mf.ModelConfig.from_dict({"network": {"cell": kind, "hidden_size": 7}})
    model = mf.build_model(config, n_task_inputs=2, key=jax.random.key(0))
    cell = model.network.cell
    assert type(cell) is mf.CELLS[kind] and cell.KIND == kind and cell.hidden_size == 7
    hidden = cell(jnp.ones(6), jnp.zeros(7))
    assert hidden.shape == (7,) and bool(jnp.all(jnp.isfinite(hidden)))
    assert not bool(jnp.all(hidden == 0))


def test_a_leaky_cell_takes_its_time_constant_from_the_network_config():
    config = mf.ModelConfig.from_dict({"dt": 0.01, "network": {"cell": "leaky", "tau": 0.05}})
    cell = mf.build_model(config, n_task_inputs=2, key=jax.random.key(0)).network.cell
    assert cell.alpha == pytest.approx(0.01 / 0.05)
