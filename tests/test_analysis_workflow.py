"""End-to-end: the analysis, summary and sweep stages with the real `snakemake`; an edit of
their settings reruns exactly them, and what they rewrite equals a fresh computation."""

from __future__ import annotations

import copy
import json

import pandas as pd
import pytest
import xarray as xr
from workflow_helpers import make_workdir, planned_jobs, snakemake, tiny_config, write_config

import motorflow.pipeline as mfp

pytestmark = pytest.mark.workflow

SWEPT = ("size-hidden_size4", "size-hidden_size6")
EXPERIMENTS = ("quiet", *SWEPT)


def sweep_config() -> dict:
    config = tiny_config()
    del config["experiments"]["noisy"], config["protocols"]
    # Stimulation of the network at two times: a condition sweep of its effect.
    stimulation = {"kind": "stimulation", "amplitude": 0.3, "duration": 0.1, "fraction": 0.5}
    config["evaluation"]["conditions"] = {
        "unperturbed": [],
        "early": [{**stimulation, "start": 0.1}],
        "late": [{**stimulation, "start": 0.3}],
    }
    config["condition_sweeps"] = {
        "timing": {
            "experiments": ["quiet", SWEPT[0]],
            "conditions": ["early", "late"],
            "setting": "start",
            "baseline": "unperturbed",
            "metrics": ["peak_speed", "endpoint_error"],
        }
    }
    config["sweeps"] = {
        "size": {"experiment": "quiet", "grid": {"model.network.hidden_size": [4, 6]}}
    }
    config["analysis"] = {"fixed_points": {"steps": 300, "n_starts": 6}}
    config["statistics"] = {"n_resamples": 1000}
    # One experiment's own figures (test_workflow.py checks each of them): the sweep's,
    # the comparison's and the condition sweep's figures read every experiment's stores.
    config["figures"]["experiments"] = ["quiet"]
    # The preferred directions of two experiments side by side, in this order.
    config["comparisons"] = {
        "sizes": {"analysis": "tuning", "experiments": [SWEPT[1], "quiet"], "title": "Sizes"}
    }
    return config


def edited_config() -> dict:
    config = copy.deepcopy(sweep_config())
    config["analysis"]["fixed_points"]["n_starts"] = 4
    config["analysis"]["tuning"] = {"speed_threshold": 0.3}
    config["statistics"]["seed"] = 5
    config["sweeps"]["size"]["metrics"] = ["max_lateral_deviation", "endpoint_error"]
    # Drawn through the workflow's settings: a labelled mark with dots in its label.
    config["sweeps"]["size"]["marks"] = {"half of 10.5": 5.25}
    config["sweeps"]["size"]["x_scale"] = "log"
    config["condition_sweeps"]["timing"]["metrics"] = ["endpoint_error"]
    return config


@pytest.fixture(scope="module")
def rerun(tmp_path_factory):
    """A workdir run with `sweep_config`, then edited and run again; plus the rerun's plan."""
    workdir = make_workdir(tmp_path_factory.mktemp("analyses"), sweep_config())
    snakemake(workdir)
    write_config(workdir, edited_config())
    plan = planned_jobs(workdir)
    snakemake(workdir)
    return workdir, plan


def test_a_sweep_gets_its_figure_and_every_experiment_its_analyses(rerun):
    workdir, _ = rerun
    results = workdir / "results"
    assert (results / "figures" / "sweep-size.png").stat().st_size > 0
    for experiment in EXPERIMENTS:
        assert (results / experiment / "analysis.zarr" / "zarr.json").is_file()
    for figure in ("pca", "fixed_points", "tuning"):
        assert (results / "figures" / "quiet" / f"{figure}.png").stat().st_size > 0
    # The experiments not drawn have no figures of their own.
    assert not (results / "figures" / SWEPT[0]).exists()
    table = pd.read_csv(results / "summary.csv")
    table["reference"] = table.reference.fillna("")
    assert set(table.experiment) == set(EXPERIMENTS)
    # Every pair of experiments is contrasted, the later minus the earlier.
    pairs = set(zip(table.experiment, table.reference)) - {(e, "") for e in EXPERIMENTS}
    assert pairs == {(SWEPT[0], "quiet"), (SWEPT[1], "quiet"), (SWEPT[1], SWEPT[0])}


def test_a_comparison_gets_its_figure_and_table_of_its_experiments_in_order(rerun):
    workdir, _ = rerun
    figures = workdir / "results" / "figures"
    assert (figures / "comparison-sizes.png").stat().st_size > 0
    table = pd.read_csv(figures / "comparison-sizes.csv")
    assert list(dict.fromkeys(table.experiment)) == [SWEPT[1], "quiet"]
    chosen = (table.statistic == "bimodality_r") & (table.condition == "unperturbed")
    r = table[chosen].set_index("experiment")
    # Each replicate's r is the analysis store's, and the mean theirs.
    for experiment in (SWEPT[1], "quiet"):
        stored = mfp.open_dataset(workdir / "results" / experiment / "analysis.zarr")
        values = stored.pd_bimodality.isel(condition=0).values
        found = r.loc[experiment, [f"replicate_{k}" for k in range(values.size)]]
        assert found.to_numpy(float) == pytest.approx(values, nan_ok=True)
        assert r.loc[experiment, "units"] == "1"


def test_a_condition_sweep_draws_each_replicates_paired_effect_of_the_intervention(rerun):
    workdir, _ = rerun
    figures = workdir / "results" / "figures"
    assert (figures / "condition-sweep-timing.png").stat().st_size > 0
    table = pd.read_csv(figures / "condition-sweep-timing.csv")
    assert list(dict.fromkeys(table.experiment)) == ["quiet", SWEPT[0]]
    assert set(table.metric) == {"endpoint_error"} and set(table.baseline) == {"unperturbed"}
    for row in table.itertuples():
        metrics = mfp.open_dataset(workdir / "results" / row.experiment / "metrics.zarr")
        per_replicate = metrics.endpoint_error.mean("trial")
        effect = per_replicate.sel(condition=row.condition) - per_replicate.sel(
            condition="unperturbed"
        )
        assert row.mean == pytest.approx(float(effect.mean()), rel=1e-6)
        assert row.x == {"early": 0.1, "late": 0.3}[row.condition]
        assert row.ci_low <= row.mean <= row.ci_high and row.n == 2
        # The stimulation moves the hand: an effect, not the baseline again.
        assert row.mean != 0


def test_editing_the_analyses_statistics_or_sweep_metrics_reruns_only_them(rerun):
    _, plan = rerun
    expected = {
        ("summary", ""),
        ("comparison_figure", ""),
        ("analysis_comparison", "comparison=sizes"),
        ("sweep_figure", "sweep=size"),
        ("condition_sweep_figure", "condition_sweep=timing"),
        ("all", ""),
    }
    expected |= {("analysis", f"experiment={experiment}") for experiment in EXPERIMENTS}
    expected |= {("analysis_figures", "experiment=quiet")}
    assert plan == expected


def test_the_rerun_analyses_and_summary_equal_a_fresh_computation(rerun, tmp_path):
    workdir, _ = rerun
    results = workdir / "results"
    settings = mfp.parse_config(edited_config())
    experiments = mfp.resolve_experiments(settings)
    for name in EXPERIMENTS:
        experiment = experiments[name]
        mfp.analyse_experiment(
            experiment.name,
            task=experiment.task,
            seed=experiment.seed,
            model_path=results / name / "model",
            eval_path=results / "trials" / experiment.dataset / "eval.zarr",
            states_path=results / name / "states.zarr",
            analysis_path=tmp_path / f"{name}.zarr",
            options=settings.analysis,
        )
        xr.testing.assert_identical(
            mfp.open_dataset(results / name / "analysis.zarr"),
            mfp.open_dataset(tmp_path / f"{name}.zarr"),
        )
    mfp.summary_stage(
        {name: experiments[name].seed for name in EXPERIMENTS},
        history_paths=[results / name / "history.zarr" for name in EXPERIMENTS],
        metrics_paths=[results / name / "metrics.zarr" for name in EXPERIMENTS],
        table_path=tmp_path / "summary.csv",
        store_path=tmp_path / "summary.zarr",
        statistics=settings.statistics,
    )
    xr.testing.assert_identical(
        mfp.open_dataset(results / "summary.zarr"), mfp.open_dataset(tmp_path / "summary.zarr")
    )
    assert (results / "summary.csv").read_text() == (tmp_path / "summary.csv").read_text()
    comparison = edited_config()["comparisons"]["sizes"]
    mfp.analysis_comparison(
        comparison["analysis"],
        analysis_paths={
            name: results / name / "analysis.zarr" for name in comparison["experiments"]
        },
        figure_path=tmp_path / "comparison.png",
        table_path=tmp_path / "comparison.csv",
        replicate=0,
        statistics=settings.statistics,
        options={"dpi": 40},
    )
    assert (results / "figures" / "comparison-sizes.csv").read_text() == (
        tmp_path / "comparison.csv"
    ).read_text()


def _without_units(dataset: xr.Dataset) -> list[str]:
    return [str(name) for name, var in dataset.data_vars.items() if not var.attrs.get("units")]


def test_every_stored_variable_has_units_and_the_summary_table_agrees(rerun):
    """Issue 27: every data variable of the states, metrics, analysis, history and
    summary stores names its unit, and summary.csv's `units` column is the metrics'."""
    workdir, _ = rerun
    results = workdir / "results"
    metric_units = {}
    for experiment in EXPERIMENTS:
        for store in ("states", "metrics", "analysis", "history"):
            dataset = mfp.open_dataset(results / experiment / f"{store}.zarr")
            assert _without_units(dataset) == [], (experiment, store)
        states = mfp.open_dataset(results / experiment / "states.zarr")
        assert states.pos.attrs["units"] == "m" and states.control.attrs["units"] == "N"
        metrics = mfp.open_dataset(results / experiment / "metrics.zarr")
        metric_units.update({str(n): v.attrs["units"] for n, v in metrics.data_vars.items()})
    summary = mfp.open_dataset(results / "summary.zarr")
    assert _without_units(summary) == []
    stored = dict(zip(summary.metric.values, summary.units.values))
    assert all(stored.values())
    table = pd.read_csv(results / "summary.csv", keep_default_na=False)
    from_table = dict(zip(table.metric, table.units))
    assert from_table == stored
    assert {m: u for m, u in from_table.items() if m in metric_units} == metric_units
    assert from_table["final_validation_loss"] == "a.u."


def test_the_comparison_draws_the_curves_against_trials_and_training_time(
    rerun, tmp_path, monkeypatch
):
    # Issue 30 point 5: rules compared at equal data and at equal wall-clock budget.
    # The workflow's comparison stage hands the figure each run's trials per batch
    # (its training's batch_size) and median seconds per batch (its run record).
    from motorflow.pipeline import _figure_stages

    workdir, _ = rerun
    results = workdir / "results"
    drawn = {}
    real = _figure_stages.plot_comparison

    def spy(*args, **kwargs):
        drawn.update(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(_figure_stages, "plot_comparison", spy)
    mfp.comparison_figure(
        list(EXPERIMENTS),
        history_paths=[results / name / "history.zarr" for name in EXPERIMENTS],
        metrics_paths=[results / name / "metrics.zarr" for name in EXPERIMENTS],
        summary_path=results / "summary.zarr",
        output_path=tmp_path / "comparison.png",
        options={"dpi": 40},
    )
    assert (tmp_path / "comparison.png").stat().st_size > 0
    batch_size = sweep_config()["trainings"]["quick"]["batch_size"]
    assert drawn["trials_per_batch"] == dict.fromkeys(EXPERIMENTS, batch_size)
    for name in EXPERIMENTS:
        record = json.loads(xr.open_zarr(results / name / "history.zarr").attrs["run_record"])
        seconds = record["timing"]["seconds_per_batch_median"]
        assert drawn["seconds_per_batch"][name] == seconds > 0
