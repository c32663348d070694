"""Any of the pipeline's Zarr stores, written atomically and read back checked: the
part of the store layer that needs only xarray, so that a figure or summary job
reading them loads no JAX (:mod:`._store` adds the trial specs' stores)."""

from __future__ import annotations

import contextlib
import json
import logging
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from .._analysis._replicate_values import replicate_values
from .._atomic import atomic_directory
from .._faults import kill_point


class StoreError(ValueError):
    """A Zarr store is missing, damaged or does not have the expected layout."""

    def __init__(self, path: str | Path, problem: str):
        super().__init__(
            f"{path}: {problem}. Delete the store and rerun the workflow to rebuild it."
        )


logger = logging.getLogger("motorflow")


# A store of at most this many bytes is made in memory and its files written at once:
# zarr's local store writes each file (two or three a variable) through its event
# loop and a thread pool, about 1.5 ms of CPU a file, so a small store of 49
# variables (an analysis store) cost 0.5 CPU-s to write, against 0.29 in memory. The
# files are byte for byte the same either way (tests/test_store.py).
IN_MEMORY_BYTES = 64 * 2**20


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
        options = {"zarr_format": 3, "consolidated": True, "encoding": encoding or {}}
        if dataset.nbytes <= IN_MEMORY_BYTES:
            from zarr.storage import MemoryStore

            files: dict[str, Any] = {}
            dataset.to_zarr(MemoryStore(files), **options)
            _write_files(tmp, {key: buffer.to_bytes() for key, buffer in files.items()})
        else:
            dataset.to_zarr(tmp, **options)
        kill_point(f"write:{Path(path).name}")
    logger.info("Wrote %s", path)


def _write_files(root: Path, files: Mapping[str, bytes]) -> None:
    """Write each of `files` (a store's keys, "/"-separated) under `root`."""
    for key, data in files.items():
        target = root.joinpath(*key.split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


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


def check_variables(
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
    check_variables(dataset, path, STATE_VARIABLES)
    return dataset


def read_replicate_values(
    history_paths: Sequence[Path], metrics_paths: Sequence[Path], names: Sequence[str]
) -> dict[str, xr.Dataset]:
    """Each named experiment's numbers per replicate (`replicate_values`), read from its
    history and metrics stores (the summary's input, and the comparison's and sweep's)."""
    return {
        name: replicate_values(open_dataset(history), open_dataset(metrics))
        for name, history, metrics in zip(names, history_paths, metrics_paths, strict=True)
    }
