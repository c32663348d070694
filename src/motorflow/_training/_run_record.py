"""What a training run was: its parameters, machine, versions, command and step times.

The record describes how a result was made, not the result: it is written to the
train log and to ``history.zarr``'s ``run_record`` attribute, and is the one part
of the outputs that differs between two runs of the same config (times, machine).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import logging
import platform
import shlex
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from .._identity import code_version
from ._callbacks import Callback
from ._progress import batch_span

if TYPE_CHECKING:
    from ._history import History

logger = logging.getLogger("motorflow")

_LIBRARIES = ("motorflow", "jax", "jaxlib", "equinox", "optax", "orbax-checkpoint", "numpy")


def named_arrays(params: Any) -> dict[str, Any]:
    """Each array of `params` by its dotted path into the model (``network.readout.weight``)."""
    return {
        jax.tree_util.keystr(path, simple=True, separator="."): leaf
        for path, leaf in jax.tree_util.tree_leaves_with_path(params)
        if eqx.is_array(leaf)
    }


def with_named_arrays(model: Any, arrays: Mapping[str, Any]) -> Any:
    """`model` with each array named in `arrays` (by its :func:`named_arrays` path)
    replaced by the given value; the inverse of :func:`named_arrays`."""
    unknown = set(arrays) - set(named_arrays(model))
    if unknown:
        raise KeyError(f"the model has no arrays {sorted(unknown)}")

    def replace(path, leaf):
        name = jax.tree_util.keystr(path, simple=True, separator=".")
        return jnp.asarray(arrays[name], leaf.dtype) if name in arrays else leaf

    return jax.tree_util.tree_map_with_path(replace, model)


def parameter_table(params: Any) -> dict[str, dict[str, Any]]:
    """Each trainable array's path -> its shape and size per replicate (the leading
    replicate axis left out)."""
    table = {}
    for name, leaf in named_arrays(params).items():
        shape = [int(n) for n in leaf.shape[1:]]
        table[name] = {"shape": shape, "size": int(np.prod(shape))}
    return table


def _version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def command_line() -> list[str]:
    """This process's command line as it was typed: ``python -m snakemake ...`` keeps
    its interpreter and ``-m`` (its ``sys.argv`` would start with a ``__main__.py``)."""
    if Path(sys.argv[0]).name == "__main__.py":
        return list(sys.orig_argv)
    return list(sys.argv)


def environment() -> dict[str, Any]:
    """The devices, library versions, Python and the command of this process."""
    return {
        "devices": [f"{d.platform}:{d.id} {d.device_kind}" for d in jax.devices()],
        "backend": jax.default_backend(),
        "versions": {
            "python": platform.python_version(),
            **{name: _version(name) for name in _LIBRARIES},
        },
        "code_version": code_version(),
        "command": command_line(),
        "host": platform.node(),
    }


# JAX's monitoring events for the parts of a compilation (tracing, lowering, XLA).
_COMPILE_EVENTS = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
)


class StepTimer:
    """Wall time of compiled calls, as seconds per batch after compilation, and the
    time spent compiling (from JAX's monitoring events) while it is entered."""

    def __init__(self):
        self.compile_seconds = 0.0
        self._per_batch: list[float] = []
        self._batches: list[int] = []
        self._started = time.perf_counter()

    def _on_duration(self, event: str, duration: float, **_: Any) -> None:
        if event in _COMPILE_EVENTS:
            self.compile_seconds += duration

    def __enter__(self) -> Self:
        jax.monitoring.register_event_duration_secs_listener(self._on_duration)
        return self

    def __exit__(self, *exc_info: object) -> None:
        jax.monitoring.unregister_event_duration_listener(self._on_duration)

    @contextlib.contextmanager
    def chunk(self, n_batches: int) -> Iterator[None]:
        """Time a call that trains `n_batches` (its results read back inside the block);
        a call that compiled is left out of the step times."""
        compiled_before, start = self.compile_seconds, time.perf_counter()
        yield
        if self.compile_seconds == compiled_before:
            self._per_batch.append((time.perf_counter() - start) / max(n_batches, 1))
            self._batches.append(n_batches)

    def summary(self) -> dict[str, Any]:
        """Median, 10th and 90th percentile seconds per batch (each call's batches
        weigh by their number), the compile time and the total time so far."""
        per_batch = np.repeat(self._per_batch, self._batches)
        stats = (
            {
                f"seconds_per_batch_{name}": float(np.percentile(per_batch, q))
                for name, q in (("median", 50), ("p10", 10), ("p90", 90))
            }
            if per_batch.size
            else {}
        )
        return {
            **stats,
            "timed_batches": int(per_batch.size),
            "compile_seconds": round(self.compile_seconds, 3),
            "total_seconds": round(time.perf_counter() - self._started, 3),
        }


def describe_record(record: dict[str, Any]) -> str:
    """The record as a few log lines."""
    params = record["parameters"]
    total = sum(entry["size"] for entry in params.values())
    shapes = ", ".join(f"{path} {tuple(e['shape'])}" for path, e in params.items())
    timing = record.get("timing", {})
    lines = [
        f"trainable parameters per replicate: {total:,} ({shapes})",
        f"devices: {', '.join(record['devices'])}",
        "versions: " + ", ".join(f"{k} {v}" for k, v in record["versions"].items()),
        f"command: {shlex.join(record['command'])}",
    ]
    if "rule" in record:
        wildcards = ", ".join(f"{k}={v}" for k, v in record.get("wildcards", {}).items())
        lines.append(f"job: rule {record['rule']}{f' ({wildcards})' if wildcards else ''}")
    if "seconds_per_batch_median" in timing:
        lines.append(
            f"seconds per batch: median {timing['seconds_per_batch_median']:.4g}, "
            f"p10 {timing['seconds_per_batch_p10']:.4g}, p90 {timing['seconds_per_batch_p90']:.4g} "
            f"({timing['timed_batches']} batches); compilation {timing['compile_seconds']:.3g} s; "
            f"total {timing['total_seconds']:.3g} s"
        )
    return "\n".join(lines)


class RunRecorder(Callback):
    """The record of a training run (:attr:`TrainResult.record`) as a callback of
    :func:`train`: logged when the run starts and, with the step times of its compiled
    calls (:attr:`timer`, while entered), again when it ends without an error.

    **Arguments:**

    - `parameters`: the trainable arrays (:func:`parameter_table`).
    - `invocation`: how the run was started, entered over the record's defaults.
    - `n_batches`: the run's batches.
    """

    def __init__(
        self,
        parameters: dict[str, dict[str, Any]],
        invocation: Mapping[str, Any] | None,
        n_batches: int,
    ):
        self.record = {"parameters": parameters, **environment(), **(invocation or {})}
        self.n_batches = n_batches

    def __enter__(self) -> Self:
        self.timer = StepTimer().__enter__()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc_info: object) -> None:
        self.timer.__exit__(exc_type, *exc_info)
        if exc_type is not None:
            return
        self.record["timing"] = self.timer.summary()
        logger.info(
            "Training done: %s in %.1f s",
            batch_span(self._done, self.n_batches)
            if self._done < self.n_batches
            else "no batch was left to train",
            self.record["timing"]["total_seconds"],
        )
        logger.info("Run record:\n%s", describe_record(self.record))

    def on_resume(self, done: int, history: History) -> None:
        self._done = done
        self.record["resumed_from_batch"] = done
        logger.info("Run record:\n%s", describe_record(self.record))
