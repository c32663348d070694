"""Condition sweeps: a trained model's metrics against a setting that varies across its
evaluation conditions (a stimulation's time, a lesion's size), paired with a baseline
condition, with the x values from the config."""

from __future__ import annotations

import jax
import numpy as np
import pytest
import xarray as xr
from figure_checks import layout_problems
from workflow_helpers import tiny_config

import motorflow as mf
import motorflow.pipeline as mfp

CONDITIONS = ["unperturbed", "early", "late"]


def values(offsets, effects, *, nan_at=None) -> xr.Dataset:
    """One experiment's `replicate_values`: each replicate's reaction time is its own
    offset plus the condition's effect (and a little of each replicate's noise)."""
    offsets = np.asarray(offsets, float)
    rng = np.random.default_rng(len(offsets))
    data = offsets[:, None] + np.asarray(effects)[None, :]
    data = data + 0.001 * rng.normal(size=data.shape)
    if nan_at is not None:
        data[nan_at] = np.nan
    dims = ("replicate", "condition")
    coords = {"replicate": np.arange(len(offsets)), "condition": CONDITIONS}
    variable = xr.DataArray(data, coords, dims, attrs={"units": "s"})
    return xr.Dataset({"reaction_time": variable, "peak_speed": variable * 2 + 1})


def sweep(experiments, *, baseline="unperturbed", **kwargs):
    return mf.condition_sweep(
        experiments,
        {name: [-0.1, 0.0] for name in experiments},
        conditions=["early", "late"],
        metrics=["reaction_time", "peak_speed"],
        baseline=baseline,
        key=jax.random.key(0),
        n_resamples=2000,
        **kwargs,
    )


def test_with_a_baseline_each_point_is_the_replicates_mean_paired_difference():
    # Replicates differ by far more than the effect: only pairing shows it clearly.
    offsets = [0.1, 0.3, 0.5, 0.7]
    result = sweep({"a": values(offsets, [0.0, 0.02, 0.05])})
    raw = values(offsets, [0.0, 0.02, 0.05]).reaction_time
    want = (raw.sel(condition=["early", "late"]) - raw.sel(condition="unperturbed")).mean(
        "replicate"
    )
    cell = result.sel(experiment="a", metric="reaction_time")
    np.testing.assert_allclose(cell["mean"].values, want.values)
    # The interval is the paired differences': a few ms wide, not the offsets' 0.6 s.
    assert (cell.ci_high - cell.ci_low).max() < 0.01
    assert (cell.ci_low < cell["mean"]).all() and (cell["mean"] < cell.ci_high).all()
    assert cell.ci_low.sel(condition="late") > 0.04
    assert result.attrs["baseline"] == "unperturbed"


def test_without_a_baseline_the_points_are_the_metrics_themselves():
    data = values([0.1, 0.3, 0.5], [0.0, 0.02, 0.05])
    result = sweep({"a": data}, baseline=None)
    want = data.reaction_time.sel(condition=["early", "late"]).mean("replicate")
    np.testing.assert_allclose(result["mean"].sel(experiment="a", metric="reaction_time"), want)
    assert result.attrs["baseline"] == ""


def test_a_replicate_missing_in_the_baseline_drops_from_every_paired_point():
    result = sweep({"a": values([0.1, 0.3, 0.5], [0.0, 0.02, 0.05], nan_at=(1, 0))})
    assert (result.n.sel(experiment="a", metric="reaction_time") == 2).all()
    assert np.isnan(result.value.sel(experiment="a", replicate=1)).all()


def test_experiments_of_different_sizes_share_the_sweep_and_keep_their_numbers():
    small = values([0.1, 0.3], [0.0, 0.01, 0.03])
    large = values([0.2, 0.4, 0.6, 0.8], [0.0, 0.02, 0.05])
    both = sweep({"small": small, "large": large})
    alone = sweep({"large": large})
    assert both.sizes["replicate"] == 4
    assert np.isnan(both.value.sel(experiment="small", replicate=[2, 3])).all()
    # Each interval's resamples derive from its names: adding an experiment changes none.
    for name in ("mean", "ci_low", "ci_high", "n"):
        np.testing.assert_array_equal(
            both[name].sel(experiment="large"), alone[name].sel(experiment="large")
        )
    table = mf.condition_sweep_table(both)
    assert len(table) == 2 * 2 * 2
    assert set(table.units) == {"s"} and set(table.baseline) == {"unperturbed"}


def test_a_missing_condition_or_metric_is_named():
    with pytest.raises(ValueError, match="'middle'"):
        mf.condition_sweep(
            {"a": values([0.1, 0.2], [0.0, 0.0, 0.0])},
            {"a": [0.0, 1.0]},
            conditions=["early", "middle"],
            metrics=["reaction_time"],
            key=jax.random.key(0),
        )


def test_the_figure_draws_a_line_per_experiment_at_the_conditions_x_values():
    result = sweep(
        {"a": values([0.1, 0.3, 0.5], [0.0, 0.02, 0.05]), "b": values([0.2, 0.4], [0, 0, 0.01])}
    )
    figure = mf.plot_condition_sweep(
        result, x_label="stimulation start from the go cue (s)", marks={"go cue": 0.0}
    )
    axes = [ax for ax in figure.axes if ax.get_lines()]
    assert len(axes) == 2
    for ax in axes:
        means = [line for line in ax.get_lines() if line.get_gid() == "mean"]
        assert [line.get_label() for line in means] == ["a", "b"]
        np.testing.assert_allclose(means[0].get_xdata(), [-0.1, 0.0])
        assert any(line.get_gid() == "no effect" for line in ax.get_lines())
        assert any(line.get_gid() == "mark" for line in ax.get_lines())
    assert "reaction time − unperturbed (s)" in [ax.get_ylabel() for ax in axes]
    assert layout_problems(figure) == []


def delayed_config(**sweep_settings) -> dict:
    config = tiny_config()
    config["tasks"]["reach"].update(kind="delayed_reach", go_step=[4, 8], eval_go_step=6)
    config["models"]["small"]["dt"] = 0.02
    stimulation = {"kind": "stimulation", "amplitude": 0.2, "duration": 0.04}
    config["evaluation"]["conditions"] = {
        "unperturbed": [],
        "early": [{**stimulation, "start": 0.04}],
        "late": [{**stimulation, "start": 0.12}],
    }
    config["condition_sweeps"] = {
        "timing": {
            "experiments": ["quiet", "noisy"],
            "conditions": ["unperturbed", "early", "late"],
            "setting": "start",
            "unperturbed_at": -0.2,
            "baseline": "unperturbed",
            "metrics": ["reaction_time"],
            **sweep_settings,
        }
    }
    del config["protocols"]
    return config


@pytest.mark.parametrize(("relative_to", "shift"), [("trial_start", 0.0), ("go_cue", 0.12)])
def test_the_x_values_are_each_conditions_setting_from_where_it_is_measured(relative_to, shift):
    settings = mfp.parse_config(delayed_config(relative_to=relative_to))
    experiments = mfp.resolve_experiments(settings)
    points = mfp.condition_sweep_points(settings, experiments, "timing")
    # The go cue at step 6 of 0.02 s; the unperturbed condition where it is told to be.
    for name in ("quiet", "noisy"):
        np.testing.assert_allclose(points[name], [-0.2 - shift, 0.04 - shift, 0.12 - shift])
    label, marks = mfp.condition_sweep_axis(settings, "timing")
    if relative_to == "go_cue":
        assert (label, marks) == ("stimulation start from the go cue (s)", {"go cue": 0.0})
    else:
        assert (label, marks) == ("stimulation start (s)", {})


def test_a_setting_that_is_not_a_time_cannot_be_measured_from_the_go_cue():
    config = delayed_config(relative_to="go_cue", setting="amplitude")
    with pytest.raises(mf.ConfigError) as error:
        mfp.resolve_experiments(config)
    assert "condition_sweeps.timing.conditions[1]" in str(error.value)
    assert "'amplitude' is not one of the stimulation's times (start)" in str(error.value)
