import jax
import numpy as np
import pytest
import xarray as xr
from conftest import tiny_task

import motorflow.pipeline as mfp


def test_trial_specs_round_trip_with_labelled_dims(tmp_path):
    task = tiny_task()
    trials = task.training_trials(key=jax.random.key(0), n_replicates=2, n_batches=5, batch_size=3)
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
        key=jax.random.key(0), n_replicates=1, n_batches=2, batch_size=3
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


def store_files(root):
    return {p.relative_to(root): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.filterwarnings("ignore:The data type")  # zarr's, for str coordinates
def test_a_small_store_made_in_memory_has_the_files_zarr_writes_itself(tmp_path, monkeypatch):
    # What the pipeline's stores hold: float and int variables with NaN, string and
    # float coordinates, JSON attributes, a chunked variable and a compressed one.
    rng = np.random.default_rng(0)
    dataset = xr.Dataset(
        {
            "pos": (("replicate", "condition", "time"), rng.normal(size=(2, 3, 40))),
            "count": (("replicate",), np.array([3, 4], dtype="int32")),
            "error": (("condition",), np.array([0.1, np.nan, 0.3], dtype="float32")),
        },
        coords={"condition": ["a", "bb", "ccc"], "time": np.arange(40) * 0.05},
        attrs={"parameters": '"final"'},
    )
    dataset["pos"].attrs["units"] = "m"
    encoding = {"pos": {"chunks": (1, 3, 20)}}
    mfp.write_dataset(dataset, tmp_path / "memory.zarr", encoding=encoding)
    monkeypatch.setattr("motorflow.pipeline._datasets.IN_MEMORY_BYTES", 0)
    mfp.write_dataset(dataset, tmp_path / "direct.zarr", encoding=encoding)
    memory, direct = store_files(tmp_path / "memory.zarr"), store_files(tmp_path / "direct.zarr")
    assert len(memory) > 10 and memory == direct
    xr.testing.assert_identical(mfp.open_dataset(tmp_path / "memory.zarr"), dataset)
