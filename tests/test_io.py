import json
import shutil

import equinox as eqx
import jax
import numpy as np
import orbax.checkpoint as ocp
import pytest
from conftest import assert_trees_equal, tiny_model_config

import motorflow as mf
from motorflow._training._trainable import trainable_filter


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


def test_a_saved_model_holds_its_weights_only_and_takes_its_noise_from_its_config(tmp_path):
    config = tiny_model_config(hidden_noise_std=0.1)
    ensemble = mf.make_ensemble(config, n_replicates=2, n_task_inputs=2, key=jax.random.key(5))
    mf.save_ensemble(tmp_path / "model", ensemble, config, n_task_inputs=2)
    saved = ocp.StandardCheckpointer().metadata(tmp_path / "model" / "arrays")
    names = {entry.name for entry in jax.tree.leaves(saved.item_metadata.tree)}
    assert names and not any("noise" in name for name in names)
    loaded, _ = mf.load_ensemble(tmp_path / "model")
    assert float(loaded.network.hidden_noise_std.value[1]) == pytest.approx(0.1)
    assert float(loaded.feedback.noise_std.value[0]) == pytest.approx(0.05)


def test_a_model_saved_while_noise_levels_were_static_loads(tmp_path):
    # Then a noise level was a static field: the file's tree had no entry for it (a
    # module without arrays, as the feedback channel was, an empty entry).
    config = tiny_model_config(hidden_noise_std=0.1)
    ensemble = mf.make_ensemble(config, n_replicates=2, n_task_inputs=2, key=jax.random.key(5))
    mf.save_ensemble(tmp_path / "model", ensemble, config, n_task_inputs=2)
    arrays = tmp_path / "model" / "arrays"
    shutil.rmtree(arrays)
    network = ensemble.network
    old_tree = {
        "plant": None,
        "feedback": None,
        "network": {
            "cell": {"gru": {k: v for k, v in vars(network.cell.gru).items() if eqx.is_array(v)}},
            "readout": {"weight": network.readout.weight, "bias": network.readout.bias},
            "output_feedback": None,
        },
    }
    with ocp.StandardCheckpointer() as checkpointer:
        checkpointer.save(arrays, old_tree)
    loaded, _ = mf.load_ensemble(tmp_path / "model")
    assert eqx.tree_equal(loaded, ensemble)


def test_a_file_of_another_models_arrays_is_refused_naming_them(tmp_path):
    small = tiny_model_config()
    ensemble = mf.make_ensemble(small, n_replicates=2, n_task_inputs=2, key=jax.random.key(5))
    mf.save_ensemble(tmp_path / "model", ensemble, small, n_task_inputs=2)
    record_path = tmp_path / "model" / "ensemble.json"
    record = json.loads(record_path.read_text())
    record["model"]["network"]["cell"] = {"kind": "rnn"}
    record_path.write_text(json.dumps(record))
    with pytest.raises(ValueError, match="network.cell.gru.weight_hh.*saved by another model"):
        mf.load_ensemble(tmp_path / "model")


def test_adopted_weights_leave_the_adopters_own_noise_levels():
    quiet = tiny_model_config(hidden_noise_std=0.0)
    noisy = tiny_model_config(hidden_noise_std=0.3)
    parent = mf.make_ensemble(quiet, n_replicates=2, n_task_inputs=2, key=jax.random.key(1))
    child = mf.make_ensemble(noisy, n_replicates=2, n_task_inputs=2, key=jax.random.key(2))
    adopted = mf.adopt_weights(child, parent)
    assert_trees_equal(adopted.network.readout, parent.network.readout)
    assert adopted.network.hidden_noise_std.nonzero
    np.testing.assert_array_equal(adopted.network.hidden_noise_std.value, np.float32([0.3, 0.3]))


def test_a_noise_level_never_trains():
    model = mf.make_ensemble(
        tiny_model_config(hidden_noise_std=0.1), n_replicates=2, n_task_inputs=2,
        key=jax.random.key(0),
    )  # fmt: skip
    selected = trainable_filter(model, ["network"])
    assert selected.network.readout.weight and not selected.network.hidden_noise_std.value
    with pytest.raises(mf.ConfigError, match="'feedback' selects no trainable"):
        trainable_filter(model, ["feedback"])
