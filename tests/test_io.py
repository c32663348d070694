import json

import equinox as eqx
import jax
import pytest
from conftest import assert_trees_equal, tiny_model_config

import motorflow as mf


def test_save_load_round_trips_bit_exactly(tmp_path):
    config = tiny_model_config(cell="leaky", hidden_noise_std=0.1)
    ensemble = mf.make_ensemble(config, n_replicates=3, n_task_inputs=2, key=jax.random.key(5))
    mf.save_ensemble(tmp_path / "model", ensemble, config, n_task_inputs=2)
    loaded, loaded_config = mf.load_ensemble(tmp_path / "model")
    assert loaded_config == config
    assert_trees_equal(eqx.filter(loaded, eqx.is_array), eqx.filter(ensemble, eqx.is_array))
    assert eqx.tree_equal(
        eqx.filter(loaded, eqx.is_array, inverse=True),
        eqx.filter(ensemble, eqx.is_array, inverse=True),
    )
    assert not list(tmp_path.glob("*.pkl")) and not list(tmp_path.glob(".model*"))


def test_saving_over_an_existing_model_replaces_it(tmp_path):
    config = tiny_model_config()
    first = mf.make_ensemble(config, n_replicates=2, n_task_inputs=2, key=jax.random.key(0))
    second = mf.make_ensemble(config, n_replicates=2, n_task_inputs=2, key=jax.random.key(1))
    mf.save_ensemble(tmp_path / "model", first, config, n_task_inputs=2)
    mf.save_ensemble(tmp_path / "model", second, config, n_task_inputs=2)
    loaded, _ = mf.load_ensemble(tmp_path / "model")
    assert_trees_equal(eqx.filter(loaded, eqx.is_array), eqx.filter(second, eqx.is_array))
    assert [p.name for p in tmp_path.iterdir()] == ["model"]


def test_loading_a_directory_that_is_no_model_says_so(tmp_path):
    with pytest.raises(FileNotFoundError, match="ensemble.json is missing"):
        mf.load_ensemble(tmp_path)


@pytest.mark.parametrize("cell", ["gru", "reservoir"])
def test_a_model_saved_before_cells_had_blocks_loads_with_its_cells_settings(tmp_path, cell):
    # Saved then, the network's keys held every cell's settings and `cell` its kind.
    settings = {"tau": 0.05, "gain": 1.2, "connectivity": 0.5, "output_feedback": True}
    config = tiny_model_config(cell={"kind": "reservoir", **settings} if cell != "gru" else cell)
    ensemble = mf.make_ensemble(config, n_replicates=2, n_task_inputs=2, key=jax.random.key(5))
    mf.save_ensemble(tmp_path / "model", ensemble, config, n_task_inputs=2)
    record_path = tmp_path / "model" / "ensemble.json"
    record = json.loads(record_path.read_text())
    record["model"]["network"].update(cell=cell, **settings)
    record_path.write_text(json.dumps(record))
    loaded, loaded_config = mf.load_ensemble(tmp_path / "model")
    assert loaded_config == config
    assert_trees_equal(eqx.filter(loaded, eqx.is_array), eqx.filter(ensemble, eqx.is_array))
