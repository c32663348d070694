import jax
import numpy as np
import pytest
import xarray as xr
from conftest import tiny_task

import motorflow.pipeline as mfp


def test_trial_specs_round_trip_with_labelled_dims(tmp_path):
    task = tiny_task()
    trials = task.training_trials(jax.random.key(0), n_replicates=2, n_batches=5, batch_size=3)
    mfp.write_trials(trials, tmp_path / "train.zarr", batches_per_chunk=2, attrs={"seed": 0})
    stored = xr.open_zarr(tmp_path / "train.zarr", consolidated=False)
    assert stored.goal_pos.dims == ("replicate", "batch", "trial", "component")
    assert stored.goal_pos.encoding["chunks"] == (2, 2, 3, 2)
    back = mfp.read_trials(tmp_path / "train.zarr")
    for name in ("init_pos", "init_vel", "goal_pos"):
        np.testing.assert_array_equal(getattr(back, name), getattr(trials, name))


def test_center_out_specs_round_trip(tmp_path):
    center_out = tiny_task().eval_trials()
    mfp.write_dataset(mfp.center_out_dataset(center_out), tmp_path / "eval.zarr")
    back = mfp.read_center_out(tmp_path / "eval.zarr")
    np.testing.assert_array_equal(back.trials.goal_pos, center_out.trials.goal_pos)
    np.testing.assert_array_equal(back.goal_angle, center_out.goal_angle)


def test_a_store_with_wrong_dims_or_missing_variables_is_named(tmp_path):
    trials = tiny_task().training_trials(
        jax.random.key(0), n_replicates=1, n_batches=2, batch_size=3
    )
    dataset = mfp.trials_dataset(trials)
    mfp.write_dataset(dataset.drop_vars("goal_pos"), tmp_path / "missing.zarr")
    with pytest.raises(mfp.StoreError, match=r"missing\.zarr: variable 'goal_pos' is missing"):
        mfp.read_trials(tmp_path / "missing.zarr")
    mfp.write_dataset(dataset.rename({"batch": "batches"}), tmp_path / "dims.zarr")
    with pytest.raises(mfp.StoreError, match=r"dims\.zarr: variable 'init_pos' has dims"):
        mfp.read_trials(tmp_path / "dims.zarr")
    mfp.write_dataset(dataset.astype(np.int32), tmp_path / "ints.zarr")
    with pytest.raises(mfp.StoreError, match="dtype int32"):
        mfp.read_trials(tmp_path / "ints.zarr")
    with pytest.raises(mfp.StoreError, match="does not exist"):
        mfp.read_trials(tmp_path / "nowhere.zarr")


def test_writing_replaces_a_store_whole(tmp_path):
    first = xr.Dataset({"a": ("x", np.arange(3.0))})
    second = xr.Dataset({"b": ("y", np.arange(2.0))})
    mfp.write_dataset(first, tmp_path / "s.zarr")
    mfp.write_dataset(second, tmp_path / "s.zarr")
    back = mfp.open_dataset(tmp_path / "s.zarr")
    assert list(back.data_vars) == ["b"]
    assert [p.name for p in tmp_path.iterdir()] == ["s.zarr"]
