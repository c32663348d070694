"""Percentile-bootstrap intervals whose resamples derive from a seed and the names of
what is resampled, so adding an experiment or metric changes no other interval."""

from __future__ import annotations

import functools
import zlib
from collections.abc import Sequence

import jax
import numpy as np
from jaxtyping import Array, ArrayLike, Int, PRNGKeyArray, UInt


@functools.partial(jax.jit, static_argnames=("n", "n_resamples"))
def resample_indices(
    key: PRNGKeyArray, path: UInt[ArrayLike, " depth"], *, n: int, n_resamples: int
) -> Int[Array, "resample n"]:
    """`n_resamples` draws of `n` indices into `n` values, with replacement, from `key`
    folded with each entry of `path` in turn (one compiled call: this runs per cell)."""
    for index in range(len(path)):
        key = jax.random.fold_in(key, path[index])
    return jax.random.randint(key, (n_resamples, n), 0, n)


def name_code(name: str) -> int:
    # A fixed hash of the name, not its position, so that adding or reordering experiments
    # (or metrics, or conditions) never changes another cell's resamples.
    return zlib.crc32(name.encode())


def resample_path(*names: str | int) -> np.ndarray:
    return np.array(
        [name if isinstance(name, int) else name_code(name) for name in names], np.uint32
    )


def finite_values(values: ArrayLike) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64).ravel()
    return values[np.isfinite(values)]


def check_settings(n_resamples: int, confidence: float) -> None:
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


def percentile_interval(resampled_means: np.ndarray, confidence: float) -> tuple[float, float]:
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(resampled_means, [tail, 100 - tail])
    return float(low), float(high)


def resampled_means(
    values: np.ndarray, key: PRNGKeyArray, path: np.ndarray, n_resamples: int
) -> np.ndarray:
    indices = np.asarray(resample_indices(key, path, n=values.size, n_resamples=n_resamples))
    # The means in float64 on the host: float32 (JAX's default) would blur narrow intervals.
    return values[indices].mean(axis=1)


def bootstrap_interval(
    values: ArrayLike,
    *,
    key: PRNGKeyArray,
    n_resamples: int,
    confidence: float,
    path: Sequence[str | int] = (),
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of `values` (Efron & Tibshirani 1993,
    *An Introduction to the Bootstrap*, ch. 13).

    The finite values are resampled with replacement `n_resamples` times, all at once;
    the interval runs between the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2``
    percentiles (linearly interpolated) of the resampled means. With fewer than two
    finite values there is no spread to resample and the interval is ``(nan, nan)``
    (never a zero-width interval that would look like certainty).

    **Arguments:**

    - `values`: the numbers, any shape (flattened); NaN and infinities are dropped.
    - `key`: a `jax.random` key; the resample indices are
      ``randint(fold_in(key, *path), (n_resamples, n), 0, n)``.
    - `n_resamples`: how many resamples (>= 1).
    - `confidence`: the interval's coverage, in (0, 1).
    - `path`: names or integers folded into `key` first (names by a fixed hash), so
      that one key can serve many intervals independently.
    """
    check_settings(n_resamples, confidence)
    finite = finite_values(values)
    if finite.size < 2:
        return np.nan, np.nan
    means = resampled_means(finite, key, resample_path(*path), n_resamples)
    return percentile_interval(means, confidence)
