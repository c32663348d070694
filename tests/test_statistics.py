import jax
import numpy as np
import pandas as pd
import pytest
import xarray as xr

from motorflow._analysis._bootstrap import bootstrap_interval, resample_indices, resample_path
from motorflow._analysis._replicate_values import replicate_values
from motorflow._analysis._statistics import TABLE_COLUMNS, summarise, summary_table
from motorflow._training._history import empty_history, history_dataset

CONDITIONS = ["null", "curl"]


def values(final_loss, endpoint_error=None) -> xr.Dataset:
    """Per-replicate numbers shaped like `replicate_values`: a loss, and an endpoint
    error per replicate and condition (by default the loss, shifted per condition)."""
    final_loss = np.asarray(final_loss, dtype=float)
    if endpoint_error is None:
        endpoint_error = final_loss[:, None] + np.arange(len(CONDITIONS))
    return xr.Dataset(
        {
            "final_validation_loss": ("replicate", final_loss),
            "endpoint_error": (("replicate", "condition"), endpoint_error, {"units": "m"}),
        },
        coords={"replicate": np.arange(len(final_loss)), "condition": CONDITIONS},
    )


def random_values(n_replicates: int, seed: int, shift: float = 0.0) -> xr.Dataset:
    return values(np.random.default_rng(seed).normal(shift, 1.0, n_replicates))


def width(summary: xr.Dataset, **cell) -> float:
    cell = summary.sel(**cell)
    return float(cell.difference_ci_high - cell.difference_ci_low)


def test_interval_contains_the_mean_and_is_the_percentile_bootstrap_of_its_resamples():
    sample = np.random.default_rng(0).gamma(2.0, size=15)
    key = jax.random.key(3)
    low, high = bootstrap_interval(
        np.r_[sample, np.nan], key=key, n_resamples=4000, confidence=0.9, path=("a", 1)
    )
    assert low < sample.mean() < high
    # The same resamples drawn by hand and summarised by numpy give the same interval.
    indices = np.asarray(resample_indices(key, resample_path("a", 1), n=15, n_resamples=4000))
    expected = np.percentile(sample[indices].mean(axis=1), [5, 95])
    np.testing.assert_allclose([low, high], expected, rtol=1e-12)
    # Another path draws other resamples: a different (still sensible) interval.
    other = bootstrap_interval(sample, key=key, n_resamples=4000, confidence=0.9, path=("b", 1))
    assert other != (low, high) and other[0] < sample.mean() < other[1]


def test_fewer_than_two_finite_values_give_no_interval():
    key = jax.random.key(0)
    for sample in ([], [2.0], [np.nan, 2.0, np.inf]):
        low, high = bootstrap_interval(sample, key=key, n_resamples=100, confidence=0.95)
        assert np.isnan(low) and np.isnan(high)
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_interval([1.0, 2.0], key=key, n_resamples=100, confidence=1.0)


def test_pairing_removes_a_shared_per_replicate_offset_from_the_interval():
    rng = np.random.default_rng(1)
    # Replicate r of both experiments starts from the same weights: a large offset shared
    # by the pair, against which the effect (0.1) is small.
    offset = rng.normal(0.0, 1.0, 12)
    first = values(offset + rng.normal(0.0, 0.01, 12))
    second = values(offset + 0.1 + rng.normal(0.0, 0.01, 12))
    experiments = {"first": first, "second": second}
    key = jax.random.key(0)
    paired = summarise(experiments, {"first": 5, "second": 5}, key=key)
    unpaired = summarise(experiments, {"first": 5, "second": 6}, key=key)
    contrast = dict(experiment="second", reference="first", metric="final_validation_loss")
    cell = paired.sel(**contrast, condition="")
    assert bool(paired.paired.sel(experiment="second", reference="first"))
    assert not bool(unpaired.paired.sel(experiment="second", reference="first"))
    assert cell.difference_ci_low < 0.1 < cell.difference_ci_high and cell.difference_ci_low > 0
    assert width(paired, **contrast, condition="") < width(unpaired, **contrast, condition="") / 10
    # Either way the estimate is the same when no replicate is missing.
    np.testing.assert_allclose(
        cell.difference, unpaired.difference.sel(**contrast, condition=""), rtol=1e-9
    )


def test_experiments_are_paired_exactly_when_seed_and_replicate_count_match():
    experiments = {
        "a": random_values(4, 0),
        "b": random_values(4, 1),
        "c": random_values(4, 2),
        "d": random_values(5, 3),
        "e": random_values(4, 4),
    }
    seeds = {"a": 0, "b": 0, "c": 1, "d": 0}  # "e" has no seed: paired with none
    summary = summarise(experiments, seeds, key=jax.random.key(0), n_resamples=100)
    paired = summary.paired.to_pandas()
    assert set(paired.stack()[paired.stack()].index) == {("b", "a")}
    table = summary_table(summary)
    contrasts = table[table.reference != ""]
    statistic = contrasts.groupby(["experiment", "reference"]).statistic.unique()
    assert list(statistic.loc["b", "a"]) == ["paired difference"]
    assert list(statistic.loc["d", "a"]) == ["difference"]
    pairing = contrasts.groupby(["experiment", "reference"]).pairing.unique()
    assert list(pairing.loc["b", "a"]) == ["shared seed"]
    assert list(pairing.loc["d", "a"]) == ["unpaired"]
    assert len(statistic) == 10  # every pair once, the reference the earlier one


def test_a_chain_pairs_parent_and_child_and_siblings_whatever_their_seeds():
    # baseline -> adapt -> washout and baseline -> control, each with its own seed:
    # replicate r of every stage starts from replicate r of baseline.
    experiments = {
        "baseline": random_values(4, 0),
        "adapt": random_values(4, 1),
        "washout": random_values(4, 2),
        "control": random_values(4, 3),
        "unrelated": random_values(4, 4),
    }
    seeds = {"baseline": 0, "adapt": 1, "washout": 2, "control": 3, "unrelated": 4}
    init_from = {"adapt": "baseline", "washout": "adapt", "control": "baseline"}
    summary = summarise(
        experiments, seeds, key=jax.random.key(0), n_resamples=100, init_from=init_from
    )
    paired = summary.paired.to_pandas().stack()
    chain = ["baseline", "adapt", "washout", "control"]
    expected = {(name, reference) for e, name in enumerate(chain) for reference in chain[:e]}
    assert set(paired[paired].index) == expected
    assert str(summary.pairing.sel(experiment="control", reference="adapt").item()) == (
        "same ancestor replicates"
    )
    # The table says why: the contrasts of the chain are paired differences by ancestry.
    table = summary_table(summary)
    contrasts = table[table.reference != ""].set_index(["experiment", "reference"])
    washout = contrasts.loc[("washout", "baseline")]
    assert set(washout.statistic) == {"paired difference"}
    assert set(washout.pairing) == {"same ancestor replicates"}
    loner = contrasts.loc[("unrelated", "baseline")]
    assert set(loner.statistic) == {"difference"} and set(loner.pairing) == {"unpaired"}
    assert set(table[table.reference == ""].pairing) == {""}
    # A paired difference counts the pairs (4), not both groups' replicates (8).
    cell = summary.sel(
        experiment="washout", reference="baseline", metric="final_validation_loss", condition=""
    )
    assert int(cell.difference_n) == 4


def test_a_shared_seed_and_a_shared_ancestor_are_both_named():
    experiments = {"parent": random_values(3, 0), "child": random_values(3, 1)}
    summary = summarise(
        experiments,
        {"parent": 0, "child": 0},
        key=jax.random.key(0),
        n_resamples=100,
        init_from={"child": "parent"},
    )
    reason = str(summary.pairing.sel(experiment="child", reference="parent").item())
    assert reason == "shared seed, same ancestor replicates"


def test_a_chain_with_unequal_replicate_counts_is_not_paired():
    # A workflow config refuses such a chain (test_chaining); `summarise` given one
    # pairs nothing, as there is no replicate r on one side.
    experiments = {"parent": random_values(4, 0), "child": random_values(3, 1)}
    summary = summarise(
        experiments,
        {"parent": 0, "child": 1},
        key=jax.random.key(0),
        n_resamples=100,
        init_from={"child": "parent"},
    )
    assert not bool(summary.paired.sel(experiment="child", reference="parent"))
    assert str(summary.pairing.sel(experiment="child", reference="parent").item()) == "unpaired"


def test_nan_replicates_are_dropped_and_so_are_pairs_with_a_nan_on_either_side():
    a = np.array([1.0, np.nan, 3.0, 4.0, 5.0])
    b = np.array([2.0, 2.5, np.nan, 4.5, 7.0])
    summary = summarise({"a": values(a), "b": values(b)}, {"a": 0, "b": 0}, key=jax.random.key(0))
    loss = summary.sel(metric="final_validation_loss", condition="")
    assert list(loss.n.values) == [4, 4]
    np.testing.assert_allclose(loss["mean"], [np.nanmean(a), np.nanmean(b)])
    contrast = loss.sel(experiment="b", reference="a")
    assert int(contrast.difference_n) == 3
    np.testing.assert_allclose(contrast.difference, np.mean([1.0, 0.5, 2.0]))
    assert contrast.difference_ci_low <= 0.5 and contrast.difference_ci_high >= 2.0 - 1e-12
    # Only NaN: defined, but n = 0 and no numbers.
    diverged = summarise({"x": values([np.nan, np.nan])}, {}, key=jax.random.key(0))
    assert int(diverged.n.sel(experiment="x", metric="final_validation_loss", condition="")) == 0
    assert summary_table(diverged)[["estimate", "ci_low", "ci_high"]].isna().all().all()


def test_the_same_key_gives_identical_numbers_and_another_key_other_intervals():
    experiments = {"a": random_values(6, 0), "b": random_values(6, 1), "c": random_values(3, 2)}
    seeds = {"a": 0, "b": 0, "c": 0}
    first = summarise(experiments, seeds, key=jax.random.key(5), n_resamples=500)
    again = summarise(experiments, seeds, key=jax.random.key(5), n_resamples=500)
    xr.testing.assert_identical(first, again)
    other = summarise(experiments, seeds, key=jax.random.key(6), n_resamples=500)
    xr.testing.assert_equal(first["mean"], other["mean"])
    assert not np.allclose(first.ci_low, other.ci_low, equal_nan=True)


def test_adding_an_experiment_leaves_every_other_row_unchanged():
    experiments = {name: random_values(5, index) for index, name in enumerate("abc")}
    seeds = {"a": 0, "b": 0, "c": 1, "late": 0, "early": 1}
    key = jax.random.key(2)
    before = summary_table(summarise(experiments, seeds, key=key, n_resamples=300))
    at_end = {**experiments, "late": random_values(5, 9)}
    after = summary_table(summarise(at_end, seeds, key=key, n_resamples=300))
    index = ["experiment", "reference", "condition", "metric"]
    pd.testing.assert_frame_equal(
        after.set_index(index).loc[before.set_index(index).index], before.set_index(index)
    )
    assert len(after) > len(before)
    # Keys follow the names, not the positions, so even adding one first changes nothing.
    at_start = {"early": random_values(5, 9), **experiments}
    after = summary_table(summarise(at_start, seeds, key=key, n_resamples=300))
    pd.testing.assert_frame_equal(
        after.set_index(index).loc[before.set_index(index).index], before.set_index(index)
    )


def test_a_large_summary_contrasts_each_with_the_first_only_and_the_same_numbers():
    """What a sweep past `EACH_EXPERIMENT_UP_TO` experiments gets: the full summary's rows
    whose reference is the first experiment, and none of the quadratically many others."""
    experiments = {f"e{index}": random_values(4, index, shift=index) for index in range(6)}
    seeds = {name: index % 2 for index, name in enumerate(experiments)}
    key = jax.random.key(4)
    full = summarise(experiments, seeds, key=key, n_resamples=300)
    first_only = summarise(experiments, seeds, key=key, n_resamples=300, max_references=1)
    assert list(first_only.reference.values) == ["e0"]
    xr.testing.assert_identical(first_only, full.sel(reference=["e0"]))
    table = summary_table(first_only)
    assert set(table.reference) == {"", "e0"}
    full_table = summary_table(full)
    expected = full_table[full_table.reference.isin(["", "e0"])].reset_index(drop=True)
    pd.testing.assert_frame_equal(table, expected)


def test_the_table_has_the_documented_columns_and_a_row_per_measured_number():
    experiments = {"a": random_values(4, 0), "b": random_values(4, 1)}
    summary = summarise(experiments, {"a": 0, "b": 0}, key=jax.random.key(0), confidence=0.9)
    table = summary_table(summary)
    assert list(table.columns) == list(TABLE_COLUMNS)
    assert table.n.dtype == np.int64 and (table.confidence == 0.9).all()
    plain = table[table.statistic == "mean"]
    assert (plain.reference == "").all()
    # The loss has no condition; the endpoint error one row per condition; none mixed.
    assert set(zip(plain.metric, plain.condition)) == {
        ("final_validation_loss", ""),
        ("endpoint_error", "null"),
        ("endpoint_error", "curl"),
    }
    assert len(plain) == 2 * 3 and len(table) == 3 * 3
    row = table[(table.experiment == "b") & (table.metric == "endpoint_error")]
    row = row[(row.condition == "curl") & (row.reference == "a")].iloc[0]
    cell = summary.sel(experiment="b", reference="a", metric="endpoint_error", condition="curl")
    assert row.statistic == "paired difference"
    assert (row.estimate, row.ci_low, row.ci_high, row.n) == (
        float(cell.difference),
        float(cell.difference_ci_low),
        float(cell.difference_ci_high),
        4,
    )
    assert summary.units.sel(metric="endpoint_error") == "m"


def test_replicate_values_takes_the_final_total_loss_and_trial_means_of_each_metric():
    arrays = empty_history(["position"], n_batches=20, n_replicates=3, validation_steps=[0, 10, 20])
    arrays["validation"]["total"][:] = [[9.0, 9.0, 9.0], [5.0, 5.0, 5.0], [1.0, 2.0, 3.0]]
    arrays["diverged_at"][:] = [-1, -1, 15]
    history = history_dataset(arrays)
    trials = np.arange(3 * 2 * 4, dtype=float).reshape(3, 2, 4)
    trials[2] = np.nan  # a diverged replicate's metrics are NaN
    trials[0, 1, 0] = np.nan  # a trial that never settled
    metrics = xr.Dataset(
        {"movement_time": (("replicate", "condition", "trial"), trials, {"units": "s"})},
        coords={"replicate": np.arange(3), "condition": CONDITIONS},
    )
    result = replicate_values(history, metrics)
    np.testing.assert_array_equal(result.final_validation_loss, [1.0, 2.0, np.nan])
    assert result.attrs["validation_step"] == 20
    assert result.movement_time.dims == ("replicate", "condition")
    assert result.movement_time.attrs["units"] == "s"
    np.testing.assert_allclose(result.movement_time[0], [1.5, np.mean([5.0, 6.0, 7.0])])
    assert list(result.diverged_at.values) == [-1, -1, 15]
    without_conditions = replicate_values(history, metrics.isel(condition=0, drop=True))
    assert list(without_conditions.condition.values) == [""]
    with pytest.raises(ValueError):
        replicate_values(history, metrics.isel(replicate=[0, 1]))


def test_the_metrics_come_in_one_order_whatever_order_the_store_lists_them_in():
    # A Zarr store read back lists its variables in no fixed order; the summary's
    # `metric` coord, and so a rerun's summary.zarr, must not depend on it.
    arrays = empty_history(["position"], n_batches=2, n_replicates=2, validation_steps=[0, 2])
    history = history_dataset(arrays)
    dims = ("replicate", "condition", "trial")
    metrics = xr.Dataset(
        {
            name: (dims, np.ones((2, 2, 3)))
            for name in ("onset_time", "endpoint_error", "peak_speed")
        },
        coords={"replicate": np.arange(2), "condition": CONDITIONS},
    )
    orders = [
        list(replicate_values(history, metrics[list(names)]).data_vars)
        for names in (metrics.data_vars, reversed(list(metrics.data_vars)))
    ]
    assert orders[0] == orders[1]
    assert orders[0] == ["final_validation_loss", "endpoint_error", "peak_speed", "onset_time"]
