"""Zarr stores of the pipeline: trial specs in, labelled Datasets out, checked on read.

Writes go to a temporary sibling and are renamed into place, so a store is
either complete or absent. Reads check dims, shapes, dtypes and variables and
name the store and the problem when something is off.
"""

from __future__ import annotations

import contextlib
import json
import logging
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import jax.numpy as jnp
import numpy as np
import xarray as xr

from .._atomic import atomic_directory
from .._evaluate import COMPONENTS
from .._faults import kill_point
from .._perturbations import PERTURBATIONS, AbstractPerturbation
from .._tasks import CenterOut, Trials
from .._tasks._dataset import GO_STEP, TRIAL_FIELDS, perturbation_variable_name, trial_variables


class StoreError(ValueError):
    """A Zarr store is missing, damaged or does not have the expected layout."""

    def __init__(self, path: str | Path, problem: str):
        super().__init__(
            f"{path}: {problem}. Delete the store and rerun the workflow to rebuild it."
        )


logger = logging.getLogger("motorflow")


def write_dataset(dataset: xr.Dataset, path: str | Path, *, encoding: dict | None = None) -> None:
    """Write `dataset` as a Zarr v3 store at `path`, atomically (replacing any old one).

    The store's metadata is consolidated into its root, so that ``xr.open_zarr(path)``
    reads it without listing the directory, where Snakemake leaves a marker file
    (``.snakemake_timestamp``) that zarr would warn about.
    """
    with atomic_directory(path) as tmp, warnings.catch_warnings():
        # zarr notes that consolidated metadata is not (yet) in the v3 specification;
        # zarr and xarray read it.
        warnings.filterwarnings("ignore", message="Consolidated metadata is currently not")
        dataset.to_zarr(tmp, zarr_format=3, consolidated=True, encoding=encoding or {})
        kill_point(f"write:{Path(path).name}")
    logger.info("Wrote %s", path)


@contextlib.contextmanager
def opened_store(path: str | Path) -> Iterator[xr.Dataset]:
    """A store written by :func:`write_dataset`, open but not loaded (read only what
    you use of it inside the block).

    The store's directory is listed (its consolidated metadata is not relied on), and
    zarr's warning about the one file there that is not zarr's, Snakemake's marker
    ``.snakemake_timestamp`` in each directory output, is silenced: it is harmless
    and would show on every finished run.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Object at \.snakemake_timestamp")
        with xr.open_zarr(path, consolidated=False) as dataset:
            yield dataset


def open_dataset(path: str | Path) -> xr.Dataset:
    """Open a store written by :func:`write_dataset`, fully loaded into memory."""
    path = Path(path)
    if not path.is_dir():
        raise StoreError(path, "the store does not exist")
    try:
        with opened_store(path) as dataset:
            loaded = dataset.load()
    except Exception as error:  # noqa: BLE001 - zarr raises many kinds for damaged stores
        raise StoreError(
            path, f"cannot be read as a Zarr store ({type(error).__name__}: {error})"
        ) from None
    logger.info("Read %s", path)
    return loaded


def json_attrs(values: Mapping[str, Any]) -> dict[str, str]:
    """Attributes as JSON strings (portable to any xarray backend)."""
    return {name: json.dumps(value, sort_keys=True) for name, value in values.items()}


def _trial_attrs(trials: Trials, attrs: Mapping[str, Any] | None) -> dict[str, str]:
    described = [p.to_dict() for p in trials.perturbations]
    return json_attrs({**(attrs or {}), "perturbations": described})


def trials_dataset(trials: Trials, *, attrs: Mapping[str, Any] | None = None) -> xr.Dataset:
    """Training specs `(replicate, batch, trial, component)` as a Dataset, with the
    perturbations' settings in the attribute ``perturbations``."""
    return xr.Dataset(
        trial_variables(trials, ("replicate", "batch", "trial")),
        coords={"component": COMPONENTS},
        attrs=_trial_attrs(trials, attrs),
    )


def write_trials(
    trials: Trials, path: str | Path, *, batches_per_chunk: int = 50, attrs=None
) -> None:
    """Write training specs chunked along `batch` (read back in large blocks)."""
    dataset = trials_dataset(trials, attrs=attrs)
    n_rep, n_batches, n_trials, _ = dataset.goal_pos.shape
    chunks = (n_rep, min(batches_per_chunk, n_batches), n_trials, 2)
    encoding = {name: {"chunks": chunks[: dataset[name].ndim]} for name in dataset.data_vars}
    write_dataset(dataset, path, encoding=encoding)


def _check_variables(
    dataset: xr.Dataset, path: str | Path, expected: Mapping[str, tuple[str, ...]]
) -> None:
    for name, dims in expected.items():
        if name not in dataset:
            raise StoreError(path, f"variable {name!r} is missing (expected {', '.join(expected)})")
        variable = dataset[name]
        if variable.dims != dims:
            raise StoreError(path, f"variable {name!r} has dims {variable.dims}, expected {dims}")
        if not np.issubdtype(variable.dtype, np.floating):
            raise StoreError(
                path, f"variable {name!r} has dtype {variable.dtype}, expected a float type"
            )
    if "component" in dataset.dims and dataset.sizes["component"] != 2:
        raise StoreError(
            path, f"dim 'component' has size {dataset.sizes['component']}, expected 2 (x, y)"
        )


def _read_perturbations(
    dataset: xr.Dataset, path: str | Path, dims: tuple[str, ...]
) -> tuple[tuple[AbstractPerturbation, ...], tuple[dict[str, np.ndarray], ...]]:
    """The perturbations a trial store's attrs describe, with their per-trial values."""
    try:
        described = json.loads(dataset.attrs.get("perturbations", "[]"))
        perturbations = tuple(PERTURBATIONS[item["kind"]].from_dict(item) for item in described)
    except (ValueError, KeyError, TypeError) as error:
        raise StoreError(path, f"its 'perturbations' attribute is unreadable ({error})") from None
    params = []
    for index, perturbation in enumerate(perturbations):
        names = ("active", *perturbation.DRAWN)
        variables = {perturbation_variable_name(index, name): dims for name in names}
        _check_variables(dataset, path, variables)
        params.append(
            {
                name: np.asarray(
                    dataset[perturbation_variable_name(index, name)].values, np.float32
                )
                for name in names
            }
        )
    return perturbations, tuple(params)


def _read_go_step(dataset: xr.Dataset, path: str | Path, dims: tuple[str, ...]):
    """The stored go steps, or `None` if the trials have none."""
    if GO_STEP not in dataset:
        return None
    variable = dataset[GO_STEP]
    if variable.dims != dims or not np.issubdtype(variable.dtype, np.integer):
        raise StoreError(
            path,
            f"variable {GO_STEP!r} has dims {variable.dims} and dtype {variable.dtype}, "
            f"expected {dims} and an integer type",
        )
    return variable.values.astype(np.int32)


def _read_trials(dataset: xr.Dataset, path: str | Path, dims: tuple[str, ...], as_array) -> Trials:
    _check_variables(dataset, path, {name: (*dims, "component") for name in TRIAL_FIELDS})
    perturbations, params = _read_perturbations(dataset, path, dims)
    go_step = _read_go_step(dataset, path, dims)
    return Trials(
        *(as_array(dataset[name].values, np.float32) for name in TRIAL_FIELDS),
        perturbations=perturbations,
        params=tuple({k: as_array(v, np.float32) for k, v in p.items()} for p in params),
        go_step=None if go_step is None else as_array(go_step, np.int32),
    )


def read_trials(path: str | Path) -> Trials:
    """Training specs from a store written by :func:`write_trials`."""
    return _read_trials(open_dataset(path), path, ("replicate", "batch", "trial"), np.asarray)


def center_out_dataset(
    center_out: CenterOut, *, attrs: Mapping[str, Any] | None = None
) -> xr.Dataset:
    """Center-out specs `(trial, component)` with goal angle and distance coords, and
    the perturbations they carry (the validation set's)."""
    return xr.Dataset(
        trial_variables(center_out.trials, ("trial",)),
        coords={
            "component": COMPONENTS,
            "goal_angle": ("trial", np.asarray(center_out.goal_angle), {"units": "rad"}),
            "goal_distance": ("trial", np.asarray(center_out.goal_distance), {"units": "m"}),
        },
        attrs=_trial_attrs(center_out.trials, attrs),
    )


def read_center_out(path: str | Path) -> CenterOut:
    """Evaluation specs from a store written from :func:`center_out_dataset`."""
    dataset = open_dataset(path)
    trials = _read_trials(dataset, path, ("trial",), jnp.asarray)
    for coord in ("goal_angle", "goal_distance"):
        if coord not in dataset.coords:
            raise StoreError(path, f"coordinate {coord!r} is missing")
    return CenterOut(
        trials=trials,
        goal_angle=jnp.asarray(dataset.goal_angle.values, jnp.float32),
        goal_distance=jnp.asarray(dataset.goal_distance.values, jnp.float32),
    )


_STEPS = ("replicate", "condition", "trial", "time")
STATE_VARIABLES = {
    "pos": (*_STEPS, "component"),
    "vel": (*_STEPS, "component"),
    "control": (*_STEPS, "actuator"),
    "output": (*_STEPS, "actuator"),
    "hidden": (*_STEPS, "unit"),
    "goal": ("condition", "trial", "time", "component"),
}


def read_states(path: str | Path) -> xr.Dataset:
    """An evaluation states store, checked for every variable and its dims."""
    dataset = open_dataset(path)
    _check_variables(dataset, path, STATE_VARIABLES)
    return dataset
