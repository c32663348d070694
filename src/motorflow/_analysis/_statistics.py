"""Statistics across an ensemble's replicates: per-replicate numbers, percentile bootstrap
intervals of their means, and contrasts between experiments (paired when they can be)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import xarray as xr
from jaxtyping import PRNGKeyArray

from ._bootstrap import (
    bootstrap_interval,
    check_settings,
    finite_values,
    percentile_interval,
    resample_path,
    resampled_means,
)
from ._replicate_values import NO_CONDITION

TABLE_COLUMNS = (
    "experiment",
    "reference",
    "condition",
    "metric",
    "units",
    "statistic",
    "estimate",
    "ci_low",
    "ci_high",
    "n",
    "confidence",
    "pairing",
)
# Why a contrast is paired (`pairing`); an unpaired contrast says "unpaired".
SHARED_SEED = "shared seed"
SAME_ANCESTOR = "same ancestor replicates"
UNPAIRED = "unpaired"
# The summary's numbers have the unit of their metric, which varies along `metric`: their
# attribute points at the ``units (metric)`` coord; counts and labels are dimensionless.
PER_METRIC = {"units": "per metric, see the units coord"}
COUNT = {"units": "1"}
# Key streams folded into the caller's key first, so that means and contrasts never share one.
_MEAN_STREAM, _CONTRAST_STREAM = 0, 1


def _per_cell(values: xr.Dataset) -> dict[tuple[str, str], np.ndarray]:
    """(metric, condition) -> the values over `replicate`; a variable without a
    `condition` dim goes under `NO_CONDITION`."""
    cells = {}
    for metric, variable in values.data_vars.items():
        if "condition" in variable.dims:
            for condition in variable.condition.values:
                selected = variable.sel(condition=condition)
                cells[str(metric), str(condition)] = np.asarray(selected.values, np.float64)
        else:
            cells[str(metric), NO_CONDITION] = np.asarray(variable.values, np.float64)
    for (metric, condition), cell in cells.items():
        if cell.ndim != 1:
            raise ValueError(
                f"{metric!r} ({condition or 'no condition'}) should vary over replicate only, "
                f"has shape {cell.shape}"
            )
    return cells


def _union(groups: list[list[str]]) -> list[str]:
    return list(dict.fromkeys(item for group in groups for item in group))


def _difference(
    experiment: np.ndarray,
    reference: np.ndarray,
    *,
    paired: bool,
    key: PRNGKeyArray,
    path: tuple[str | int, ...],
    n_resamples: int,
    confidence: float,
) -> tuple[float, float, float, int]:
    """Estimate, interval and count of `experiment` minus `reference`."""
    if paired:
        differences = experiment - reference
        differences = differences[np.isfinite(differences)]
        estimate = differences.mean() if differences.size else np.nan
        low, high = bootstrap_interval(
            differences, key=key, n_resamples=n_resamples, confidence=confidence, path=path
        )
        return float(estimate), low, high, differences.size
    experiment, reference = finite_values(experiment), finite_values(reference)
    n = experiment.size + reference.size
    if not (experiment.size and reference.size):
        return np.nan, np.nan, np.nan, n
    estimate = experiment.mean() - reference.mean()
    if min(experiment.size, reference.size) < 2:
        return float(estimate), np.nan, np.nan, n
    # Each group resampled on its own: independent replicates share nothing to pair on.
    differences = resampled_means(
        experiment, key, resample_path(*path, "experiment"), n_resamples
    ) - resampled_means(reference, key, resample_path(*path, "reference"), n_resamples)
    low, high = percentile_interval(differences, confidence)
    return float(estimate), low, high, n


def _root(name: str, init_from: Mapping[str, str | None]) -> str:
    """The experiment at the start of `name`'s chain of `init_from` links (`name`
    itself when it starts from fresh weights)."""
    seen = {name}
    while (parent := init_from.get(name)) is not None and parent not in seen:
        seen.add(parent)
        name = parent
    return name


def pairing(
    experiment: str,
    reference: str,
    *,
    seeds: Mapping[str, int],
    init_from: Mapping[str, str | None],
    n_replicates: Mapping[str, int],
) -> str:
    """Why replicate r of `experiment` and of `reference` are a pair, or ``"unpaired"``.

    The one rule both the summary and the comparison figure pair by. Only experiments
    with the same number of replicates pair (replicate r needs a partner r), and then:

    - with the same seed, replicate r of both started from the same initial weights and
      trained on the same trials (``"shared seed"``);
    - when both descend, through `init_from` links, from the same experiment (one from
      the other, or two siblings or cousins from one parent), replicate r of each starts
      from replicate r of that ancestor: a child adopts its parent's weights replicate by
      replicate, and only from a parent with as many replicates (the config refuses
      any other chain). Two siblings with seeds of their own share no trials, but they
      share the ancestor's trained replicate r, which is what makes their replicate r
      differ from their replicate s; so they pair as a parent and child do
      (``"same ancestor replicates"``).

    Both may hold (``"shared seed, same ancestor replicates"``).

    **Arguments:**

    - `experiment`, `reference`: the two experiments' names.
    - `seeds`: experiment name to its seed; an experiment missing here shares none.
    - `init_from`: experiment name to the experiment it starts from (missing or None:
      from fresh weights); it may name experiments that are not compared.
    - `n_replicates`: experiment name to its number of replicates.
    """
    if n_replicates[experiment] != n_replicates[reference]:
        return UNPAIRED
    reasons = []
    if experiment in seeds and reference in seeds and seeds[experiment] == seeds[reference]:
        reasons.append(SHARED_SEED)
    if _root(experiment, init_from) == _root(reference, init_from):
        reasons.append(SAME_ANCESTOR)
    return ", ".join(reasons) or UNPAIRED


def summarise(
    values: Mapping[str, xr.Dataset],
    seeds: Mapping[str, int],
    *,
    key: PRNGKeyArray,
    n_resamples: int = 10000,
    confidence: float = 0.95,
    init_from: Mapping[str, str | None] | None = None,
    max_references: int | None = None,
) -> xr.Dataset:
    """Mean and bootstrap interval of each experiment's numbers, and the difference of
    every experiment to each earlier one (among the first `max_references`).

    Two experiments are paired when they have the same number of replicates and the
    same seed, or descend from the same experiment through `init_from` (see
    `pairing`): replicate r of both then shares its start, so their difference is the
    mean of the per-replicate differences (over the replicates finite in both),
    bootstrapped over those pairs. Otherwise it is the difference of the means, each
    group resampled independently. Intervals are percentile bootstraps
    (`bootstrap_interval`); each cell's key derives from `key` and the names of its
    experiment(s), metric and condition, so adding, dropping or reordering experiments
    leaves every other cell's numbers unchanged.

    **Arguments:**

    - `values`: experiment name to its `replicate_values` (any Dataset whose variables
      have dim `replicate` and optionally `condition`), in the order that defines the
      contrasts: each experiment is compared with every experiment before it.
    - `seeds`: experiment name to its seed (an experiment missing here pairs with none).
    - `key`: a `jax.random` key.
    - `n_resamples`: bootstrap resamples per interval.
    - `confidence`: the intervals' coverage, in (0, 1).
    - `init_from`: experiment name to the experiment it starts from (missing or None:
      from fresh weights).
    - `max_references`: contrast with the first this many experiments only (None: all).

    **Returns:**

    A Dataset with coords `experiment` (the order of `values`), `reference` (the first
    `max_references` of them), `metric` (variables in order of first appearance) and
    `condition` (same order; ``""`` for a number without conditions, such as
    ``final_validation_loss``), ``units (metric)`` and ``defined (experiment, metric,
    condition)``, which says whether the experiment has that metric in that condition
    (cells where it does not are NaN with ``n`` 0, unlike an experiment measured but
    with every replicate NaN, which is defined with ``n`` 0), and variables:

    - ``mean``, ``ci_low``, ``ci_high`` `(experiment, metric, condition)`: the mean over
      the finite replicates and its interval;
    - ``n`` `(experiment, metric, condition)`: how many replicates are finite;
    - ``difference``, ``difference_ci_low``, ``difference_ci_high`` `(experiment,
      reference, metric, condition)`: experiment minus reference, only where the
      reference comes earlier in `values` (NaN elsewhere);
    - ``difference_n``: the pairs used when paired, else both groups' finite replicates
      together;
    - ``paired`` `(experiment, reference)`: whether that contrast is paired (False
      where no contrast is made);
    - ``pairing`` `(experiment, reference)`: why (`pairing`'s answer; ``""`` where no
      contrast is made).

    The attributes record ``confidence``, ``n_resamples`` and ``method``.
    """
    check_settings(n_resamples, confidence)
    names = list(values)
    cells = {name: _per_cell(dataset) for name, dataset in values.items()}
    metrics = _union([[metric for metric, _ in cells[name]] for name in names])
    conditions = _union([[condition for _, condition in cells[name]] for name in names])
    shape = (len(names), len(metrics), len(conditions))
    mean, low, high = (np.full(shape, np.nan) for _ in range(3))
    n = np.zeros(shape, np.int64)
    defined = np.zeros(shape, bool)
    for e, name in enumerate(names):
        for (metric, condition), cell in cells[name].items():
            index = (e, metrics.index(metric), conditions.index(condition))
            finite = finite_values(cell)
            defined[index] = True
            n[index] = finite.size
            mean[index] = finite.mean() if finite.size else np.nan
            low[index], high[index] = bootstrap_interval(
                finite,
                key=key,
                n_resamples=n_resamples,
                confidence=confidence,
                path=(_MEAN_STREAM, name, metric, condition),
            )
    references = names if max_references is None else names[:max_references]
    pair_shape = (len(names), len(references), len(metrics), len(conditions))
    difference, difference_low, difference_high = (np.full(pair_shape, np.nan) for _ in range(3))
    difference_n = np.zeros(pair_shape, np.int64)
    paired = np.zeros(pair_shape[:2], bool)
    reasons = np.full(pair_shape[:2], "", dtype=object)
    n_replicates = {name: dataset.sizes["replicate"] for name, dataset in values.items()}
    for e, name in enumerate(names):
        for r, reference in enumerate(references[:e]):
            reasons[e, r] = pairing(
                name,
                reference,
                seeds=seeds,
                init_from=init_from or {},
                n_replicates=n_replicates,
            )
            paired[e, r] = reasons[e, r] != UNPAIRED
            for (metric, condition), cell in cells[name].items():
                if (metric, condition) not in cells[reference]:
                    continue
                index = (e, r, metrics.index(metric), conditions.index(condition))
                (
                    difference[index],
                    difference_low[index],
                    difference_high[index],
                    difference_n[index],
                ) = _difference(
                    cell,
                    cells[reference][metric, condition],
                    paired=bool(paired[e, r]),
                    key=key,
                    path=(_CONTRAST_STREAM, name, reference, metric, condition),
                    n_resamples=n_resamples,
                    confidence=confidence,
                )
    units = {}
    for dataset in values.values():
        for metric, variable in dataset.data_vars.items():
            units.setdefault(str(metric), str(variable.attrs.get("units", "")))
    cell_dims = ("experiment", "metric", "condition")
    pair_dims = ("experiment", "reference", "metric", "condition")
    return xr.Dataset(
        {
            "mean": (cell_dims, mean, PER_METRIC),
            "ci_low": (cell_dims, low, PER_METRIC),
            "ci_high": (cell_dims, high, PER_METRIC),
            "n": (cell_dims, n, COUNT),
            "difference": (pair_dims, difference, PER_METRIC),
            "difference_ci_low": (pair_dims, difference_low, PER_METRIC),
            "difference_ci_high": (pair_dims, difference_high, PER_METRIC),
            "difference_n": (pair_dims, difference_n, COUNT),
            "paired": (("experiment", "reference"), paired, COUNT),
            "pairing": (("experiment", "reference"), reasons, COUNT),
        },
        coords={
            "experiment": np.array(names, dtype=object),
            "reference": np.array(references, dtype=object),
            "metric": np.array(metrics, dtype=object),
            "condition": np.array(conditions, dtype=object),
            "units": ("metric", np.array([units[m] for m in metrics], dtype=object)),
            "defined": (cell_dims, defined),
        },
        attrs={
            "confidence": confidence,
            "n_resamples": n_resamples,
            "method": "percentile bootstrap of the mean (Efron & Tibshirani 1993)",
        },
    )


def summary_table(summary: xr.Dataset) -> pd.DataFrame:
    """The summary in long format, one row per number, for ``results/<config>/summary.csv``.

    Rows: first each experiment's mean of each metric in each condition it has
    (statistic ``"mean"``, empty reference), then each contrast of an experiment with
    an earlier reference, where both have the metric in that condition (statistic
    ``"paired difference"`` or ``"difference"``, and in ``pairing`` why it is paired,
    or ``"unpaired"``).

    **Arguments:**

    - `summary`: the Dataset from `summarise`.

    **Returns:**

    A DataFrame with the columns ``experiment``, ``reference``, ``condition``, ``metric``,
    ``units`` (the metric's, as in its store), ``statistic``, ``estimate``, ``ci_low``,
    ``ci_high``, ``n``, ``confidence`` and ``pairing`` (``""`` in a mean's row); a metric
    without conditions has condition ``""``.
    """
    confidence = summary.attrs["confidence"]
    names = [str(name) for name in summary.experiment.values]
    references = [str(name) for name in summary.reference.values]
    metrics = [str(metric) for metric in summary.metric.values]
    units = [str(unit) for unit in summary.units.values]
    conditions = [str(condition) for condition in summary.condition.values]
    cell_dims = ("experiment", "metric", "condition")
    pair_dims = ("experiment", "reference", "metric", "condition")
    defined = summary.defined.transpose(*cell_dims).values
    plain = [
        summary[name].transpose(*cell_dims).values for name in ("mean", "ci_low", "ci_high", "n")
    ]
    contrast = [
        summary[name].transpose(*pair_dims).values
        for name in ("difference", "difference_ci_low", "difference_ci_high", "difference_n")
    ]
    paired = summary.paired.transpose("experiment", "reference").values
    reasons = summary.pairing.transpose("experiment", "reference").values
    cells = [
        (m, metric, c, condition)
        for m, metric in enumerate(metrics)
        for c, condition in enumerate(conditions)
    ]
    rows = [
        (
            name,
            "",
            condition,
            metric,
            units[m],
            "mean",
            *(array[e, m, c] for array in plain),
            confidence,
            "",
        )
        for e, name in enumerate(names)
        for m, metric, c, condition in cells
        if defined[e, m, c]
    ]
    rows += [
        (
            name,
            reference,
            condition,
            metric,
            units[m],
            "paired difference" if paired[e, r] else "difference",
            *(array[e, r, m, c] for array in contrast),
            confidence,
            str(reasons[e, r]),
        )
        for e, name in enumerate(names)
        for r, reference in enumerate(references[:e])
        for m, metric, c, condition in cells
        if defined[e, m, c] and defined[r, m, c]
    ]
    table = pd.DataFrame(rows, columns=list(TABLE_COLUMNS))
    return table.astype(
        {
            "estimate": np.float64,
            "ci_low": np.float64,
            "ci_high": np.float64,
            "n": np.int64,
            "confidence": np.float64,
        }
    )
