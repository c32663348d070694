"""The numbers of the rotational-dynamics comparison across experiments: per experiment
how much of the hidden dynamics a rotation explains (Churchland et al. 2012), per
replicate, with the mean's interval across replicates, the condition-shuffle control
(Michaels et al. 2016) and the tensor maximum entropy surrogates (Elsayed & Cunningham
2017)."""

from __future__ import annotations

from collections.abc import Mapping

import jax
import numpy as np
import pandas as pd
import xarray as xr

from ._comparison_table import comparison_table, each_condition, interval_row

# The per-replicate statistics of the table: the analysis store's variable, the table's
# name for it and its units.
STATISTICS = (
    ("jpca_r2_skew", "r2_skew", "1"),
    ("jpca_r2_best", "r2_best", "1"),
    ("jpca_r2_ratio", "r2_ratio", "1"),
    ("jpca_plane_variance", "plane_variance", "1"),
    ("jpca_frequency", "frequency", "Hz"),
    ("jpca_shuffled_r2_skew", "shuffled_r2_skew_p95", "1"),
    ("jpca_shuffled_r2_ratio", "shuffled_r2_ratio_p95", "1"),
    ("jpca_surrogate_r2_ratio", "surrogate_r2_ratio_p95", "1"),
    ("jpca_surrogate_p", "surrogate_p", "1"),
)


def rotation_table(
    analyses: Mapping[str, xr.Dataset], *, confidence: float, n_resamples: int, seed: int
) -> pd.DataFrame:
    """One row per experiment, evaluation condition and statistic: the value of each
    replicate (``replicate_<k>``) and their mean with its percentile bootstrap interval
    across replicates (`bootstrap_interval`; resamples keyed by `seed` and the
    experiment, condition and statistic names; NaN values, such as a diverged
    replicate's, are left out).

    The statistics (`hidden_jpca`): ``r2_skew`` and ``r2_best``, the R² of the
    skew-symmetric (rotational) and unconstrained linear fits of the first differences
    in the top PCs; ``r2_ratio``, their ratio (Michaels et al. 2016's RGR);
    ``plane_variance``, the top jPC plane's share of the normalised data's variance;
    ``frequency``, its rotation (Hz); ``shuffled_r2_skew_p95`` and
    ``shuffled_r2_ratio_p95``, the 95th percentiles over condition shuffles (the
    control: a replicate's rotation is more than chance where its value exceeds these);
    ``surrogate_r2_ratio_p95``, the 95th percentile of the ratio over tensor maximum
    entropy surrogates (Elsayed & Cunningham 2017), and ``surrogate_p``, the share of
    surrogates (counting the data) whose ratio reaches the replicate's.
    """
    key = jax.random.key(seed)
    rows = []
    for experiment, analysis in analyses.items():
        for condition, one in each_condition(analysis):
            for variable, statistic, units in STATISTICS:
                if variable in one and "surrogate" in one[variable].dims:
                    # Per replicate, the 95th percentile of its surrogates' ratios.
                    surrogates = one[variable].transpose("replicate", "surrogate").values
                    values = np.array([_p95(row) for row in np.asarray(surrogates, np.float64)])
                elif variable in one:
                    values = np.asarray(one[variable].values, dtype=np.float64).ravel()
                else:  # a store written without the control
                    values = np.full(one.sizes["replicate"], np.nan)
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
                )
    return comparison_table(rows, confidence=confidence)


def _p95(values: np.ndarray) -> float:
    """The 95th percentile of the finite `values` (NaN for none)."""
    finite = values[np.isfinite(values)]
    return float(np.percentile(finite, 95)) if finite.size else np.nan
