"""Zarr stores of the pipeline: trial specs in, labelled Datasets out, checked on read.

Writes go to a temporary sibling and are renamed into place, so a store is
either complete or absent. Reads check dims, shapes, dtypes and variables and
name the store and the problem when something is off. What any store needs
(atomic writes, checked reads, the states' layout) is in :mod:`._datasets`, which
loads no JAX; this module adds the trial specs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jax.numpy as jnp
import numpy as np
import xarray as xr

from .._evaluate import COMPONENTS
from .._perturbations import PERTURBATIONS, AbstractPerturbation
from .._tasks import CenterOut, Trials
from .._tasks._dataset import GO_STEP, TRIAL_FIELDS, perturbation_variable_name, trial_variables
from ._datasets import (
    StoreError,
    check_variables,
    json_attrs,
    open_dataset,
    opened_store,
    read_states,
    write_dataset,
)

__all__ = [  # the store layer's names, the light ones included
    "StoreError",
    "center_out_dataset",
    "json_attrs",
    "open_dataset",
    "opened_store",
    "read_center_out",
    "read_states",
    "read_trials",
    "trials_dataset",
    "write_dataset",
    "write_trials",
]


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
        check_variables(dataset, path, variables)
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
    check_variables(dataset, path, {name: (*dims, "component") for name in TRIAL_FIELDS})
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
