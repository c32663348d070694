"""The cell family: each registered cell is a config block of its kind, with its own
settings, that builds its cell; a bare kind is that block with its defaults."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from conftest import raises_config_error

import motorflow as mf
from motorflow._config_base import merge_settings, over_block


def _network(cell, **settings) -> mf.NetworkConfig:
    return mf.ModelConfig.from_dict({"network": {"cell": cell, **settings}}).network


def test_the_config_accepts_exactly_the_registered_cells():
    for kind, config in mf.CELLS.items():
        cell = _network({"kind": kind}).cell
        assert type(cell) is config and cell.kind == kind
    with raises_config_error("network.cell", "unknown kind", "'gru', 'rnn', 'leaky'", "'lstm'"):
        mf.ModelConfig.from_dict({"network": {"cell": "lstm"}})
    with raises_config_error("network.cell.kind", "'reservoir'", "'lstm'"):
        mf.ModelConfig.from_dict({"network": {"cell": {"kind": "lstm"}}})


@pytest.mark.parametrize("kind", sorted(mf.CELLS))
def test_a_bare_kind_is_the_block_of_that_kind_with_its_defaults(kind):
    assert _network(kind) == _network({"kind": kind})
    assert _network(kind).cell == mf.CELLS[kind]()


@pytest.mark.parametrize("kind", sorted(mf.CELLS))
def test_each_cell_block_builds_its_cell_and_steps_its_hidden_state(kind):
    block = mf.CELLS[kind]()
    cell = block.build(6, 7, dt=0.05, key=jax.random.key(0))
    assert type(cell) is block.CELL and cell.KIND == kind and cell.hidden_size == 7
    hidden = cell(jnp.ones(6), jnp.zeros(7))
    assert hidden.shape == (7,) and bool(jnp.all(jnp.isfinite(hidden)))
    assert not bool(jnp.all(hidden == 0))
    # The model builds the same cell from its network's block.
    config = mf.ModelConfig.from_dict({"network": {"cell": kind, "hidden_size": 7}})
    model = mf.build_model(config, n_task_inputs=2, key=jax.random.key(0))
    assert type(model.network.cell) is block.CELL


def test_a_cell_takes_its_settings_from_its_block():
    config = mf.ModelConfig.from_dict(
        {"dt": 0.01, "network": {"cell": {"kind": "leaky", "tau": 0.05}, "substeps": 2}}
    )
    cell = mf.build_model(config, n_task_inputs=2, key=jax.random.key(0)).network.cell
    assert cell.alpha == pytest.approx(0.005 / 0.05)  # the cell's own step: dt / substeps
    reservoir = {"kind": "reservoir", "tau": 0.2, "gain": 0.7, "output_feedback": True}
    config = mf.ModelConfig.from_dict({"network": {"cell": reservoir, "hidden_size": 6}})
    network = mf.build_model(config, n_task_inputs=2, key=jax.random.key(0)).network
    assert network.cell.gain == 0.7 and network.cell.alpha == pytest.approx(0.05 / 0.2)
    assert network.output_feedback is not None
    assert [kind for kind, block in mf.CELLS.items() if block().feeds_output_back()] == []


@pytest.mark.parametrize("kind", ["leaky", "reservoir"])
def test_a_time_constant_shorter_than_the_cells_step_names_the_cells_tau(kind):
    with raises_config_error("network.cell.tau", f"the {kind} cell", "(0.05)", "got 0.01"):
        mf.ModelConfig.from_dict({"network": {"cell": {"kind": kind, "tau": 0.01}}})
    # Five sub-steps make the cell's step 0.01 s: tau 0.01 s is then allowed.
    network = {"cell": {"kind": kind, "tau": 0.01}, "substeps": 5}
    assert mf.ModelConfig.from_dict({"network": network}).network.cell.tau == 0.01


def test_a_setting_of_another_cell_names_the_cells_that_have_it():
    owners = [kind for kind, block in mf.CELLS.items() if "tau" in block.model_fields]
    assert owners[:2] == ["leaky", "reservoir"]
    with raises_config_error(
        "network.cell.tau", "a setting of the leaky", *owners, "cells, not of the gru cell"
    ):
        mf.ModelConfig.from_dict({"network": {"cell": {"tau": 0.2}}})  # the default gru


def test_a_bare_kind_merges_as_its_block():
    # An override `cell: leaky` over a leaky cell keeps its settings, as
    # `cell: {kind: leaky}` does; another kind replaces the block whole.
    leaky = mf.ModelConfig.from_dict({"network": {"cell": {"kind": "leaky", "tau": 0.5}}})
    for same in ("leaky", {"kind": "leaky"}):
        assert over_block(leaky, {"network": {"cell": same}}).network.cell.tau == 0.5
    assert over_block(leaky, {"network": {"cell": "rnn"}}).network.cell == mf.VanillaConfig()
    # A sweep's grid over the cell's tau, over an experiment's override `cell: leaky`.
    override = merge_settings(
        {"model": {"network": {"cell": "leaky"}}}, {"model": {"network": {"cell": {"tau": 0.3}}}}
    )
    gru = mf.ModelConfig()
    assert over_block(gru, override["model"]).network.cell == mf.LeakyConfig(tau=0.3)
