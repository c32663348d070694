"""The numbers of the preferred-direction comparison across experiments: per experiment
how bimodal the well-tuned units' preferred directions are, per replicate and pooled,
with intervals across replicates."""

from __future__ import annotations

import json
from collections.abc import Mapping

import numpy as np
import pandas as pd
import xarray as xr

from ._comparison_table import comparison_table, each_condition, interval_row, replicate_row


def axial_mean(angles: np.ndarray) -> tuple[float, float]:
    """The circular mean of axes (angles modulo π) and their axial circular standard
    deviation, both in rad (Mardia & Jupp 2000, *Directional Statistics*, §2.3.4 and
    §3.4: the angles are doubled, averaged as unit vectors and halved;
    ``sd = sqrt(-2 ln R) / 2`` with ``R`` the doubled angles' mean resultant length).

    The mean lies in [0, π); NaN angles are left out, and with none both are NaN.
    """
    angles = np.asarray(angles, dtype=np.float64).ravel()
    angles = angles[np.isfinite(angles)]
    if not angles.size:
        return np.nan, np.nan
    resultant = np.exp(2j * angles).mean()
    mean = float(np.mod(np.angle(resultant) / 2, np.pi))
    length = min(float(np.abs(resultant)), 1.0)
    spread = float(np.sqrt(-2 * np.log(length)) / 2) if length > 0 else np.inf
    return mean, spread


def pooled_axis(
    analysis: xr.Dataset, condition: str, min_r_squared: float, *, key=None
) -> dict[str, float]:
    """The bimodality `r`, axis and Rayleigh p of every replicate's tuned units pooled
    (as `preferred_direction_axis` computes them per replicate); with a random `key`,
    also the Monte Carlo ``pd_bimodality_p`` (`bimodality_p`, with the store's number
    of draws)."""
    from ._tuning import preferred_direction_axis

    one = analysis.sel(condition=condition)
    pooled = xr.Dataset(
        {
            name: (("replicate", "condition", "unit"), one[name].values.reshape(1, 1, -1))
            for name in ("preferred_direction", "r_squared")
        }
    )
    axis = preferred_direction_axis(pooled, min_r_squared=min_r_squared)
    if key is not None:
        from ._bimodality import bimodality_p

        axis["pd_bimodality_p"] = bimodality_p(
            axis.pd_bimodality,
            axis.pd_n_tuned,
            key=key,
            n_draws=int(analysis.pd_bimodality_p.attrs["n_draws"]),
        )
    axis = axis.isel(replicate=0, condition=0)
    return {name: float(axis[name]) for name in axis.data_vars}


def _min_r_squared(analysis: xr.Dataset) -> float:
    """The ``min_r_squared`` the store's tuning analysis counted tuned units with."""
    if "min_r_squared" in analysis.pd_n_tuned.attrs:
        return float(analysis.pd_n_tuned.attrs["min_r_squared"])
    # A workflow's store keeps its analyses' settings as JSON in its attributes.
    return float(json.loads(analysis.attrs["analysis"])["tuning"]["min_r_squared"])


# The per-replicate statistics of the table: the analysis store's variable, the
# table's name for it and its units.
_STATISTICS = (
    ("pd_bimodality", "bimodality_r", "1"),
    ("pd_uniformity_p", "rayleigh_p", "1"),
    ("pd_bimodality_p", "bimodality_p", "1"),
    ("pd_n_tuned", "n_tuned", "units"),
)


def preferred_direction_table(
    analyses: Mapping[str, xr.Dataset], *, confidence: float, n_resamples: int, seed: int
) -> pd.DataFrame:
    """One row per experiment, evaluation condition and statistic: the value of each
    replicate (``replicate_<k>``), their mean with its percentile bootstrap interval
    across replicates (`bootstrap_interval`, resamples keyed by `seed` and the
    experiment, condition and statistic names) and the pooled value (every replicate's
    tuned units together).

    The statistics: ``bimodality_r`` (the doubled preferred directions' resultant
    length, `preferred_direction_axis`), ``rayleigh_p`` (its uniformity p),
    ``bimodality_p`` (its Monte Carlo p against as many uniform directions,
    `bimodality_p`; pooled, from draws keyed by `seed`, the experiment and condition), ``n_tuned``
    (units with ``r_squared`` at least the analysis's ``min_r_squared``) and
    ``axis_deg`` (the modes' axis in degrees, in [0, 180), frame of the hand: 0° to the
    right, 90° away from the body; its mean is the axial circular mean across
    replicates, with no interval, and ``axis_sd_deg`` their axial circular SD).
    """
    import jax  # only for the table's intervals: the figure module needs none

    from ._bootstrap import name_code

    key = jax.random.key(seed)
    rows = []
    for experiment, analysis in analyses.items():
        min_r_squared = _min_r_squared(analysis)
        for condition, one in each_condition(analysis):
            pooled_key = key
            for name in (experiment, str(condition), "bimodality_p"):
                pooled_key = jax.random.fold_in(pooled_key, name_code(name))
            pooled = pooled_axis(analysis, condition, min_r_squared, key=pooled_key)
            for variable, statistic, units in _STATISTICS:
                values = np.asarray(one[variable].values, dtype=np.float64)
                rows.append(
                    interval_row(
                        experiment,
                        condition,
                        statistic,
                        units,
                        values,
                        key=key,
                        n_resamples=n_resamples,
                        confidence=confidence,
                    )
                    | {"pooled": pooled[variable]}
                )
            axes = np.asarray(one.pd_axis.values, dtype=np.float64)
            mean, spread = axial_mean(axes)
            rows.append(
                replicate_row(experiment, condition, "axis_deg", "deg", np.degrees(axes))
                | {
                    "mean": np.degrees(mean),
                    "low": np.nan,
                    "high": np.nan,
                    "pooled": np.degrees(pooled["pd_axis"]),
                }
            )
            rows.append(
                replicate_row(
                    experiment, condition, "axis_sd_deg", "deg", np.full(axes.shape, np.nan)
                )
                | {"mean": np.degrees(spread), "low": np.nan, "high": np.nan, "pooled": np.nan}
            )
    return comparison_table(rows, confidence=confidence, extra=("pooled",))
