import json

import jax
import numpy as np
import xarray as xr
from conftest import tiny_model_config, tiny_task

import motorflow as mf


def test_states_dataset_has_labelled_dims_coords_and_attrs(tmp_path):
    config, task = tiny_model_config(), tiny_task(n_steps=12)
    ensemble = mf.make_ensemble(config, n_replicates=2, n_task_inputs=2, key=jax.random.key(0))
    states = mf.evaluate(ensemble, task, config, key=jax.random.key(1), attrs={"seed": 3})
    assert dict(states.sizes) == {
        "replicate": 2,
        "condition": 1,
        "trial": 4,
        "time": 12,
        "component": 2,
        "actuator": 2,
        "unit": 8,
    }
    steps = ("replicate", "condition", "trial", "time")
    for name in ("pos", "vel"):
        assert states[name].dims == (*steps, "component")
    for name in ("control", "output"):
        assert states[name].dims == (*steps, "actuator")
    assert list(states.actuator.values) == ["x", "y"]
    assert list(states.condition.values) == ["unperturbed"]
    assert states.hidden.dims == (*steps, "unit")
    assert states.goal.dims == ("condition", "trial", "time", "component")
    assert list(states.component.values) == ["x", "y"]
    np.testing.assert_allclose(states.time, np.arange(12) * 0.05, rtol=1e-6)
    assert states.goal_angle.dims == ("trial",) and states.goal_distance.dims == ("trial",)
    assert mf.ModelConfig.from_dict(json.loads(states.attrs["model_config"])) == config
    assert mf.TaskConfig.from_dict(json.loads(states.attrs["task_config"])) == task.config
    assert json.loads(states.attrs["seed"]) == 3
    np.testing.assert_array_equal(states.pos.isel(time=0), 0.0)  # reaches start at the center

    path = tmp_path / "states.zarr"
    states.to_zarr(path, zarr_format=3, consolidated=False)
    xr.testing.assert_identical(xr.open_zarr(path, consolidated=False).load(), states)


def test_each_replicate_is_evaluated_as_its_own_model():
    config, task = tiny_model_config(), tiny_task()
    ensemble = mf.make_ensemble(config, n_replicates=2, n_task_inputs=2, key=jax.random.key(0))
    states = mf.evaluate(ensemble, task, config, key=jax.random.key(1))
    trials = task.eval_trials().trials
    model = mf.take_replicate(ensemble, 1)
    key = jax.random.split(jax.random.split(jax.random.key(1), 2)[1], 4)[3]
    alone, _ = mf.run_trial(model, task, jax.tree.map(lambda x: x[3], trials), key=key)
    np.testing.assert_allclose(
        states.pos.sel(replicate=1, condition="unperturbed", trial=3),
        alone.pos,
        rtol=1e-5,
        atol=1e-6,
    )
