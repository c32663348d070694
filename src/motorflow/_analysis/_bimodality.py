"""The preferred directions' bimodality tested against uniform directions by Monte Carlo.

Lillicrap & Scott (2013, Neuron 77:168) call a population's preferred directions
bimodal where their doubled-angle resultant length `r` exceeds that of 99.9% of
100,000 draws of as many directions from the uniform distribution (as Verduzco-Flores &
De Schutter 2022, eLife 11:e77216, Methods, describe the test). Here the p-value is that
share itself, ``(1 + #{r_uniform >= r}) / (1 + n_draws)`` (North, Curtis & Sham 2002,
Am J Hum Genet 71:439: the observed value counted among the draws, so that p is never
0), so a network
passes the published test where ``p < 0.001`` with ``n_draws`` of 100,000.
"""

from __future__ import annotations

import jax
import numpy as np
import xarray as xr
from jaxtyping import PRNGKeyArray


# Draws made at once: 10,000 sets of a few hundred units are a few tens of MB.
_CHUNK = 10_000


def uniform_bimodality(n_units: int, *, key: PRNGKeyArray, n_draws: int) -> np.ndarray:
    """The doubled-angle resultant lengths of `n_draws` sets of `n_units` directions
    drawn uniformly, sorted.

    The draws for `n_units` come from ``fold_in(key, n_units)`` (a block of at most
    10,000 sets from each ``fold_in`` of that by the block's index, so that memory stays
    bounded however many sets are drawn), so that one set's p-value does not depend on
    which other unit counts are tested with it. A doubled uniform angle is itself
    uniform, so the doubled angles are drawn directly.
    """
    key = jax.random.fold_in(key, n_units)
    lengths = []
    for block, start in enumerate(range(0, n_draws, _CHUNK)):
        size = min(_CHUNK, n_draws - start)
        angles = jax.random.uniform(
            jax.random.fold_in(key, block), (size, n_units), maxval=2 * np.pi
        )
        angles = np.asarray(angles, dtype=np.float64)
        lengths.append(np.hypot(np.cos(angles).mean(axis=1), np.sin(angles).mean(axis=1)))
    return np.sort(np.concatenate(lengths))


def bimodality_p(
    bimodality: xr.DataArray, n_tuned: xr.DataArray, *, key: PRNGKeyArray, n_draws: int
) -> xr.DataArray:
    """The Monte Carlo p-value of each resultant length `bimodality` of `n_tuned`
    doubled preferred directions (arrays of one shape): the share of `n_draws` sets of
    as many uniform directions whose `r` is at least as large (see the module's
    docstring). NaN where no unit is tuned."""
    if n_draws < 1:
        raise ValueError(f"n_draws must be at least 1, got {n_draws}")
    r = np.asarray(bimodality.values, dtype=np.float64)
    n = np.asarray(n_tuned.values)
    p = np.full(r.shape, np.nan)
    for count in np.unique(n[n > 0]):
        null = uniform_bimodality(int(count), key=key, n_draws=n_draws)
        where = (n == count) & np.isfinite(r)
        at_least = null.size - np.searchsorted(null, r[where], side="left")
        p[where] = (1 + at_least) / (1 + n_draws)
    return bimodality.copy(data=p).assign_attrs(units="1", n_draws=n_draws)
