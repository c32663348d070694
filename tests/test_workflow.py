"""End-to-end: the real snakemake on a tiny config, and what an edit reruns."""

from __future__ import annotations

import copy
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace

import jax
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import report_browser
import xarray as xr
import zarr
from workflow_helpers import (
    REPO,
    assert_same_results,
    at,
    copy_project,
    finished_tiny_pipeline,
    make_workdir,
    planned_jobs,
    snakemake,
    tiny_config,
    write_config,
)

import motorflow as mf
import motorflow.pipeline as mfp

pytestmark = pytest.mark.workflow


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A workdir where the tiny pipeline has run to completion (this module's copy of
    the session's run)."""
    return copy_project(finished_tiny_pipeline(), tmp_path_factory.mktemp("pipeline"))


# The tiny config's protocol draws both experiments: it is redrawn whenever either reruns.
PROTOCOL = ("protocol_figure", "protocol=noise")


def experiment_jobs(experiment: str) -> set[tuple[str, str]]:
    return {
        (rule, f"experiment={experiment}")
        for rule in ("train", "evaluate", "experiment_figures", "analysis", "analysis_figures")
    }


# Drawn from every experiment's replicates: rerun whenever any of them reruns.
ACROSS = {("comparison_figure", ""), ("summary", ""), PROTOCOL, ("all", "")}


def test_every_store_opens_as_the_readme_shows_without_a_warning(finished):
    stores = sorted((finished / "results").rglob("*.zarr"))
    assert len(stores) >= 8  # trials, and each experiment's history, states, metrics
    for store in stores:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert xr.open_zarr(store).data_vars, store


def test_the_preflight_estimate_is_near_the_measured_peaks(finished):
    # The jobs ran in warm workers, which end each job's log with its peak memory
    # (Snakemake's benchmark files measure the process that waited for the worker).
    checked = mfp.check_config(mfp.read_config([finished / "config" / "config.yaml"]))
    for item in mfp.estimate(checked.settings, checked.experiments):
        for stage, estimated in (("train", item.train_memory), ("evaluate", item.evaluate_memory)):
            log = (finished / "results" / "logs" / stage / f"{item.experiment}.log").read_text()
            measured = float(re.findall(r"warm worker \d+: .* peak memory (\d+) MiB", log)[-1])
            measured *= 2**20
            assert 0.6 < estimated / measured < 1.6, (item.experiment, stage, estimated, measured)


def test_full_run_writes_every_output_with_documented_dims(finished):
    results = finished / "results"
    for experiment in ("quiet", "noisy"):
        states = xr.open_zarr(results / experiment / "states.zarr")
        assert dict(states.sizes) == {
            "replicate": 2,
            "condition": 3,
            "trial": 4,
            "time": 15,
            "component": 2,
            "actuator": 2,
            "unit": 8,
        }
        steps = ("replicate", "condition", "trial", "time")
        assert states.pos.dims == (*steps, "component")
        assert states.control.dims == (*steps, "actuator")
        assert states.hidden.dims == (*steps, "unit")
        assert list(states.condition.values) == ["unperturbed", "curl_cw", "pulse"]
        # The curl strength is drawn per trial within its range, in its condition only.
        strength = states.perturbation0_strength.sel(condition="curl_cw")
        assert ((strength >= 5.0) & (strength <= 10.0)).all() and strength.std() > 0
        np.testing.assert_array_equal(states.perturbation0_active, [[0] * 4, [1] * 4, [0] * 4])
        assert json.loads(states.attrs["conditions"])["pulse"][0]["start"] == 0.2
        np.testing.assert_allclose(states.time, np.arange(15) * 0.05, rtol=1e-6)
        assert set(states.coords) >= {"goal_angle", "goal_distance", "component", "time"}
        assert json.loads(states.attrs["experiment"]) == experiment

        history = xr.open_zarr(results / experiment / "history.zarr")
        assert history.loss.dims == ("term", "batch", "replicate")
        assert history.sizes["batch"] == 20 and np.isfinite(history.loss.values).all()
        assert list(history.validation_step.values) == [0, 10, 20]
        record = json.loads(history.attrs["run_record"])
        assert record["backend"] == "cpu" and record["devices"]
        assert record["parameters"]["network.readout.weight"]["shape"] == [2, 8]
        assert record["versions"]["jax"] == jax.__version__
        timing = record["timing"]
        assert 0 < timing["seconds_per_batch_p10"] <= timing["seconds_per_batch_median"]
        assert timing["seconds_per_batch_median"] <= timing["seconds_per_batch_p90"]
        log = (results / "logs" / "train" / f"{experiment}.log").read_text()
        assert "seconds per batch: median" in log and "trainable parameters per replicate" in log

        metrics = xr.open_zarr(results / experiment / "metrics.zarr")
        assert metrics.endpoint_error.dims == ("replicate", "condition", "trial")
        table = pd.read_csv(results / experiment / "metrics.csv")
        assert list(table.replicate) == [0, 0, 0, 1, 1, 1] and "endpoint_error" in table
        assert list(table.condition) == ["unperturbed", "curl_cw", "pulse"] * 2
        assert "max_lateral_deviation" in table

        ensemble, config = mf.load_ensemble(results / experiment / "model")
        assert mf.n_replicates(ensemble) == 2 and config.network.hidden_size == 8
        best = mf.load_training_record(results / experiment / "model_best")
        assert best["parameters"] == "best" and best["diverged_at"] == [-1, -1]
        assert best["best_batch"] == history.best_batch.values.tolist()
        assert (results / experiment / "checkpoints").is_dir()
        for figure in ("loss", "trajectories", "speed"):
            assert (results / "figures" / experiment / f"{figure}.png").stat().st_size > 0
    assert (results / "figures" / "comparison.png").stat().st_size > 0
    # The protocol's numbers are the stages' metrics averaged over trials.
    assert (results / "figures" / "protocol-noise.png").stat().st_size > 0
    table = pd.read_csv(results / "figures" / "protocol-noise.csv")
    assert list(table.columns) == ["stage", "condition", "replicate", "max_lateral_deviation"]
    assert len(table) == 2 * 3 * 2
    metrics = xr.open_zarr(results / "noisy" / "metrics.zarr")
    row = table.query("stage == 'noisy' and condition == 'curl_cw' and replicate == 1")
    expected = metrics.max_lateral_deviation.sel(condition="curl_cw", replicate=1).mean("trial")
    np.testing.assert_allclose(row.max_lateral_deviation, float(expected), rtol=1e-6)
    # Both experiments share the task and data settings, hence one dataset.
    assert len(list((results / "trials").iterdir())) == 1
    noise = json.loads(xr.open_zarr(results / "noisy" / "history.zarr").attrs["experiment"])[
        "model"
    ]["feedback"]["noise_std"]
    assert noise == 0.1


def test_the_analyses_and_the_summary_are_written_with_documented_dims(finished):
    results = finished / "results"
    for experiment in ("quiet", "noisy"):
        analysis = xr.open_zarr(results / experiment / "analysis.zarr")
        assert analysis.projection.dims == ("replicate", "condition", "trial", "time", "pc")
        assert analysis.loading.dims == ("replicate", "pc", "unit")  # one space per replicate
        ratio = analysis.explained_variance_ratio.values
        assert ((ratio > 0) & (ratio <= 1)).all() and (np.diff(ratio, axis=-1) <= 0).all()
        assert analysis.fixed_point.dims == ("replicate", "trial", "start", "unit")
        assert analysis.sizes["start"] == 16 and analysis.sizes["mode"] == 8
        # A stable point is a converged one whose update's eigenvalues lie inside the circle.
        stable = analysis.stable.values
        assert (analysis.max_eigenvalue_magnitude.values[stable] < 1).all()
        assert analysis.preferred_direction.dims == ("replicate", "condition", "unit")
        direction = analysis.preferred_direction.values
        assert ((direction >= 0) & (direction < 2 * np.pi)).all()
        log = (results / "logs" / "analysis" / f"{experiment}.log").read_text()
        assert "Fixed points:" in log and f"Wrote results/{experiment}/analysis.zarr" in log
        for figure in ("pca", "fixed_points", "tuning"):
            assert (results / "figures" / experiment / f"{figure}.png").stat().st_size > 0
    table = pd.read_csv(results / "summary.csv")
    table[["reference", "condition"]] = table[["reference", "condition"]].fillna("")
    means = table[table.statistic == "mean"]
    # The summary's means are the per-replicate means of metrics.csv, averaged.
    for experiment in ("quiet", "noisy"):
        per_replicate = pd.read_csv(results / experiment / "metrics.csv")
        expected = per_replicate.groupby("condition").endpoint_error.mean()
        rows = means[(means.experiment == experiment) & (means.metric == "endpoint_error")]
        got = rows.set_index("condition").estimate
        np.testing.assert_allclose(got[expected.index], expected, rtol=1e-5)
        assert (rows.ci_low <= rows.estimate).all() and (rows.estimate <= rows.ci_high).all()
    # quiet and noisy share their seed and replicate count: paired, noisy minus quiet.
    contrasts = table[table.statistic != "mean"]
    assert set(contrasts.statistic) == {"paired difference"}
    assert set(zip(contrasts.experiment, contrasts.reference)) == {("noisy", "quiet")}
    summary = xr.open_zarr(results / "summary.zarr")
    assert bool(summary.paired.sel(experiment="noisy", reference="quiet"))


def test_a_diverged_replicate_is_isolated_flagged_and_marked_through_the_pipeline(tmp_path):
    config = tiny_config()
    config["trainings"]["quick"]["on_divergence"] = "isolate"
    del config["experiments"]["noisy"], config["protocols"]
    config["evaluation"]["conditions"] = {"unperturbed": []}
    config["figures"]["experiments"] = []  # the stores say what is marked
    config["analysis"] = {"fixed_points": {"n_starts": 2, "steps": 50}}
    workdir = make_workdir(tmp_path, config)
    snakemake(workdir, "--until", "trials")
    results = workdir / "results"
    # A NaN goal in replicate 1's batch 5 makes its loss non-finite there.
    (trials,) = (results / "trials").iterdir()
    zarr.open_group(trials / "train.zarr", mode="r+")["goal_pos"][1, 5, 0, 0] = np.nan
    snakemake(workdir)
    history = mfp.open_dataset(results / "quiet" / "history.zarr")
    assert history.diverged_at.values.tolist() == [-1, 5]
    assert np.isnan(history.loss.sel(term="total", replicate=1, batch=slice(5, None))).all()
    assert np.isnan(history.loss.sel(replicate=1, batch=slice(6, None))).all()
    assert np.isfinite(history.loss.sel(replicate=0)).all()
    assert mf.load_training_record(results / "quiet" / "model")["diverged_at"] == [-1, 5]
    log = (results / "logs" / "train" / "quiet.log").read_text()
    assert "Replicate 1 diverged at batch 5" in log
    final = mfp.open_dataset(results / "quiet" / "metrics.zarr")
    assert final.diverged_at.values.tolist() == [-1, 5]
    assert np.isnan(final.endpoint_error.sel(replicate=1)).all()
    assert np.isfinite(final.endpoint_error.sel(replicate=0)).all()
    assert final.endpoint_error.attrs["units"] == "m" and final.attrs["goal_radius"] == 0.05
    table = pd.read_csv(results / "quiet" / "metrics.csv")
    assert table.endpoint_error.isna().tolist() == [False, True]
    # The best model: replicate 1 at its best validation before it diverged.
    best_batch = history.best_batch.values.tolist()
    assert best_batch[1] == 0 and best_batch[0] in (0, 10, 20)
    edit = at("evaluation.model", "best")
    edit(config)
    write_config(workdir, config)
    assert {rule for rule, _ in planned_jobs(workdir)} == {
        "evaluate",
        "analysis",
        "summary",
        "comparison_figure",
        "all",
    }
    snakemake(workdir)
    best = mfp.open_dataset(results / "quiet" / "metrics.zarr")
    assert np.isfinite(best.endpoint_error).all()
    states = mfp.open_dataset(results / "quiet" / "states.zarr")
    assert json.loads(states.attrs["parameters"]) == "best"


def test_a_second_run_has_nothing_to_do(finished):
    assert planned_jobs(finished) == set()


def test_editing_a_workflow_script_reruns_its_rules_jobs_and_nothing_else(finished):
    # Each rule's command holds its script's digest (Snakemake's code trigger), as
    # Snakemake's `script:` reran a rule whose script was newer than its outputs.
    script = finished / "workflow" / "scripts" / "comparison_figure.py"
    original = script.read_text()
    script.write_text(original + "\n# an edit\n")
    try:
        assert planned_jobs(finished) == {("comparison_figure", ""), ("all", "")}
    finally:
        script.write_text(original)
    assert planned_jobs(finished) == set()  # its content again: nothing to do


def test_a_finished_project_moved_elsewhere_has_nothing_to_do(finished, tmp_path):
    # The jobs' commands hold no path of the machine (the job client's is filled in
    # as the job starts), so a moved or copied project is as finished as it was.
    moved = shutil.copytree(finished, tmp_path / "moved", symlinks=True)
    assert planned_jobs(moved) == set()


def test_jobs_in_warm_workers_give_what_jobs_in_processes_of_their_own_give(finished, tmp_path):
    """The fixture's jobs ran in warm workers (motorflow.pipeline._warm_workers), one
    after another in a few processes: the same jobs of one experiment (each kind of job
    but those across experiments), each in a process of its own, write the same trials,
    model, history, states, metrics, analyses and figures. (Running the whole pipeline
    again took 103 s; the jobs across experiments are run by the same job runner.)"""
    alone = make_workdir(tmp_path / "alone", tiny_config())
    figures = sorted(
        p.relative_to(finished) for p in (finished / "results/figures/quiet").glob("*.png")
    )
    targets = ["results/quiet/metrics.csv", "results/quiet/analysis.zarr", *map(str, figures)]
    snakemake(alone, *targets, env={"MOTORFLOW_WARM_WORKERS": "0"})
    assert_same_results(finished, alone, ["quiet"])
    table = "results/quiet/metrics.csv"
    assert (alone / table).read_text() == (finished / table).read_text()
    assert len(figures) >= 5  # loss, speed, trajectories and the analyses' figures
    # Drawn alike: the same pixels (the files' metadata may differ).
    for figure in figures:
        a, b = (plt.imread(workdir / figure) for workdir in (finished, alone))
        np.testing.assert_array_equal(a, b, err_msg=str(figure))


def test_editing_one_learning_rate_reruns_exactly_that_experiment(finished):
    config = tiny_config()
    config["experiments"]["noisy"]["override"]["training"] = {"optimizer": {"learning_rate": 0.02}}
    write_config(finished, config, "edited.yaml")
    jobs = planned_jobs(finished, "--configfile", "edited.yaml")
    assert jobs == experiment_jobs("noisy") | ACROSS


def test_editing_a_figure_option_reruns_only_figures(finished):
    config = tiny_config()
    config["figures"]["dpi"] = 50
    write_config(finished, config, "edited.yaml")
    jobs = planned_jobs(finished, "--configfile", "edited.yaml")
    assert jobs == {
        ("experiment_figures", "experiment=quiet"),
        ("experiment_figures", "experiment=noisy"),
        ("analysis_figures", "experiment=quiet"),
        ("analysis_figures", "experiment=noisy"),
        ("comparison_figure", ""),
        PROTOCOL,
        ("all", ""),
    }


def test_editing_a_task_setting_reruns_its_trials_and_everything_downstream(finished):
    config = tiny_config()
    config["tasks"]["reach"]["workspace"] = [[-0.5, -0.5], [0.5, 0.5]]
    write_config(finished, config, "edited.yaml")
    jobs = planned_jobs(finished, "--configfile", "edited.yaml")
    rules = sorted(rule for rule, _ in jobs)
    assert rules.count("trials") == 1
    assert jobs - {job for job in jobs if job[0] == "trials"} == (
        experiment_jobs("quiet") | experiment_jobs("noisy") | ACROSS
    )


def test_editing_one_experiments_task_override_leaves_the_other_alone(finished):
    config = tiny_config()
    config["experiments"]["noisy"]["override"]["task"] = {"n_steps": 16}
    write_config(finished, config, "edited.yaml")
    jobs = planned_jobs(finished, "--configfile", "edited.yaml")
    assert {job for job in jobs if job[0] != "trials"} == (experiment_jobs("noisy") | ACROSS)
    assert sum(rule == "trials" for rule, _ in jobs) == 1


def test_track_code_reruns_training_when_the_library_changes(finished):
    config = tiny_config()
    config["track_code"] = True
    write_config(finished, config, "edited.yaml")
    jobs = planned_jobs(finished, "--configfile", "edited.yaml")
    assert ("train", "experiment=quiet") in jobs and ("train", "experiment=noisy") in jobs
    assert not any(rule == "trials" for rule, _ in jobs)


def test_a_sweep_expands_into_named_experiments(finished):
    config = tiny_config()
    config["sweeps"] = {
        "size": {"experiment": "quiet", "grid": {"model.network.hidden_size": [4, 8]}}
    }
    write_config(finished, config, "edited.yaml")
    jobs = planned_jobs(finished, "--configfile", "edited.yaml")
    trained = {wildcards for rule, wildcards in jobs if rule == "train"}
    assert trained == {"experiment=size-hidden_size4", "experiment=size-hidden_size8"}
    assert ("sweep_figure", "sweep=size") in jobs and ("summary", "") in jobs


def snapshot(directory):
    return {(str(p.relative_to(directory)), p.stat().st_mtime_ns) for p in directory.rglob("*")}


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (
            lambda c: c["experiments"]["noisy"].update(model="large"),
            ["experiments.noisy.model", "'large' is not defined"],
        ),
        (
            lambda c: c["models"]["small"]["network"].update(hidden_size=0),
            ["models.small.network.hidden_size", "must be an integer >= 1, got 0"],
        ),
        (
            lambda c: c["experiments"].update({"../out": c["experiments"]["quiet"]}),
            ["experiments.'../out'", "not a valid name"],
        ),
    ],
)
def test_a_bad_config_stops_before_any_job_and_names_the_key(finished, edit, words):
    config = tiny_config()
    edit(config)
    write_config(finished, config, "edited.yaml")
    before = snapshot(finished / "results")
    result = snakemake(finished, "--configfile", "edited.yaml", check=False)
    assert result.returncode != 0
    for word in words:
        assert word in result.stderr
    assert "Nothing was run" in result.stderr
    assert snapshot(finished / "results") == before


def test_lint_reports_only_the_per_rule_environment_advice(tmp_path):
    workdir = make_workdir(tmp_path, tiny_config())
    result = snakemake(workdir, "--lint", check=False)
    output = result.stdout + result.stderr
    lints = [line.strip() for line in output.splitlines() if line.startswith("    * ")]
    assert lints, output  # the advice is expected for every rule
    assert set(lints) == {"* Specify a conda environment or container for each rule.:"}


def test_snakefmt_check_passes():
    result = subprocess.run(
        [sys.executable, "-m", "snakefmt", "--check", "Snakefile", "workflow"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_job_sizes_come_from_the_config_and_editing_them_reruns_nothing(finished, tmp_path):
    config = tiny_config()
    config["resources"] = {
        "train": {
            "mem_mb": 1234,
            "runtime": 77,
            "gpus": 1,
            "gpu_model": "a100",
            "slurm_partition": "gpu",
        },
        "figures": {"threads": 2, "mem_mb": 321},
    }
    write_config(finished, config)
    try:
        assert planned_jobs(finished) == set()
        plan = snakemake(finished, "--dry-run", "--forcerun", "train").stdout
    finally:
        write_config(finished, tiny_config())
    jobs = {}
    for block in plan.split("\nrule ")[1:]:
        rule = block.split(":", 1)[0]
        jobs.setdefault(rule, block)
    train, figures = jobs["train"], jobs["experiment_figures"]
    assert "threads: 2" in train and "threads: 2" in figures  # train's default, figures' own
    for resource in ("mem_mb=1234", "runtime=77", "gpu=1", "gpu_model=a100", "slurm_partition=gpu"):
        assert resource in train, train
    assert "mem_mb=321" in figures and "gpu=0" in figures and "gpu_model" not in figures


@pytest.fixture(scope="module")
def report(finished):
    """The finished run's HTML report, made as the README says."""
    snakemake(finished, "--report", "report.html")
    return finished / "report.html"


def figure_files(workdir) -> list[str]:
    """Every figure the run wrote under results/figures/, named as the report names them."""
    return sorted(
        path.relative_to(workdir).as_posix()
        for path in (workdir / "results" / "figures").rglob("*")
        if path.suffix in report_browser.FIGURE_SUFFIXES
    )


def test_the_report_renders_with_what_the_first_readme_command_installs(finished, report):
    # `pip install -e .` (no extras) must bring what `snakemake --report` imports.
    base = [r for r in importlib.metadata.requires("motorflow") if "extra ==" not in r]
    assert any(r.startswith("pygments") for r in base), base
    html = report.read_text()
    figures = figure_files(finished)
    assert "results/figures/comparison.png" in figures, figures
    for figure in figures:
        assert f'"{figure}"' in html, figure


def _report_config(loaded: dict) -> dict:
    """The config the report renders with, made as workflow/rules/common.smk makes it."""
    config = copy.deepcopy(loaded)
    config.update(mfp.parse_config(loaded).filled_sections())
    return config


def _config_with_sweeps_and_chains() -> dict:
    config = tiny_config()
    config["sweeps"] = {
        "size": {
            "experiment": "quiet",
            "grid": {"model.network.hidden_size": [4, 8], "seed": [0, 1]},
        }
    }
    config["experiments"]["longer_"] = {
        "task": "reach",
        "model": "small",
        "training": "quick",
        "seed": 3,
        "init_from": "quiet",
        "override": {"training": {"n_batches": 30}},
    }
    return config


@pytest.mark.parametrize(
    "loaded",
    [
        pytest.param(lambda: mfp.load_config_file(REPO / "config/config.yaml"), id="default"),
        pytest.param(tiny_config, id="tiny"),
        pytest.param(_config_with_sweeps_and_chains, id="sweeps"),
    ],
)
def test_the_report_pages_render_without_a_markup_error_for_each_config(loaded):
    # Snakemake renders the front page and each caption with Jinja (as here), then as
    # reStructuredText; a markup error would show as a red box in the report. The
    # experiment's description holds characters that are markup.
    from docutils.core import publish_parts
    from docutils.utils import SystemMessage
    from jinja2 import Environment

    config = _report_config(loaded())
    environment = Environment(trim_blocks=True, lstrip_blocks=True)  # as Snakemake's
    description = "Experiment longer_: seed 3; *gru* with `32` |units| [1]_ and a \\."
    wildcards = SimpleNamespace(
        experiment="quiet", protocol="noise", sweep="size", comparison="directions"
    )
    for page in sorted((REPO / "workflow/report").glob("*.rst")):
        template = environment.from_string(page.read_text())
        if page.name == "workflow.rst":
            contexts = [SimpleNamespace(config=config)]
        else:  # a caption, before and after its rule has the `description` param
            contexts = [
                SimpleNamespace(config=config, params=params, wildcards=wildcards)
                for params in (SimpleNamespace(), SimpleNamespace(description=description))
            ]
        for context in contexts:
            text = template.render(snakemake=context, categories={}, files=[])
            try:  # a warning or error in the markup raises
                html = publish_parts(text, writer="html", settings_overrides={"halt_level": 2})
            except SystemMessage as error:
                raise AssertionError(f"{page.name}: {error}\n{text}") from None
            if hasattr(getattr(context, "params", None), "description"):
                assert description in html["body"], html["body"]
    # The front page lists every experiment of the config and each sweep.
    front = environment.from_string((REPO / "workflow/report/workflow.rst").read_text())
    text = front.render(snakemake=SimpleNamespace(config=config), categories={}, files=[])
    for name in [*config["experiments"], *config["sweeps"]]:
        assert f"``{name}``" in text, name


@pytest.fixture(scope="module")
def chromium():
    """A Chromium to drive, else a skip (under CI a failure): plain `pytest` installs nothing."""
    path = report_browser.find_chromium()
    missing = [
        *(["a Chromium (chromium, chromium-browser or google-chrome on PATH)"] * (path is None)),
        *(["Playwright (pip install -e '.[test]')"] * (not importlib.util.find_spec("playwright"))),
    ]
    if missing:
        reason = f"{' and '.join(missing)} not found"
        if report_browser.ci():
            pytest.fail(f"{reason}, and CI is set (.ci/run installs Chromium)")
        pytest.skip(f"{reason}: apt-get install chromium, or run .ci/run")
    return path


def test_a_browser_shows_every_figure_of_the_report(chromium, finished, report, tmp_path):
    # A real headless Chromium clicks through the report's menus as a reader would.
    screenshots = tmp_path / "screenshots"
    try:
        seen = report_browser.show_every_result(report, chromium, screenshots)
    finally:  # the screenshots are the test's artefacts, kept whatever happens
        artifacts = os.environ.get("MOTORFLOW_TEST_ARTIFACTS")
        if artifacts and screenshots.exists():
            shutil.copytree(screenshots, Path(artifacts) / "report", dirs_exist_ok=True)
    # The front page, from its title on (Snakemake would cut off the top of a long one).
    assert seen.title.startswith("motorflow"), seen.title
    assert seen.title_in_reach
    shown = {result.path: result for result in seen.shown}
    figures = figure_files(finished)
    assert figures and set(figures) <= set(shown), sorted(set(figures) - set(shown))
    for figure in figures:
        result = shown[figure]
        assert result.loaded and min(result.natural_size) > 0, result  # decoded, not broken
        assert result.visible and min(result.box) > 0, result  # displayed
        assert result.in_reach, result  # its top can be scrolled to
        # Its caption states the settings of the experiments it draws (all of them for
        # the comparison and the tiny config's protocol).
        experiments = [name for name in tiny_config()["experiments"] if f"/{name}/" in figure]
        for name in experiments or tiny_config()["experiments"]:
            assert f"Experiment {name}: seed" in result.caption, (figure, result.caption)


def test_a_target_of_an_undefined_experiment_or_protocol_names_the_defined_ones(tmp_path):
    workdir = make_workdir(tmp_path, tiny_config())
    for target, message in [
        ("results/figures/typo/loss.png", "no experiment 'typo'; it defines: quiet, noisy."),
        ("results/typo/history.zarr", "no experiment 'typo'; it defines: quiet, noisy."),
        ("results/figures/protocol-nois.png", "no protocol 'nois'; it defines: noise."),
    ]:
        result = snakemake(workdir, "--dry-run", target, check=False)
        assert result.returncode != 0 and message in result.stdout + result.stderr, target
    # The targets of what the config defines plan their jobs, with no error on the way.
    for target in ("results/figures/quiet/loss.png", "results/figures/protocol-noise.png"):
        result = snakemake(workdir, "--dry-run", target)
        assert "Error" not in result.stdout + result.stderr


def test_each_stage_logs_clean_lines_of_what_it_read_and_wrote(finished):
    logs = finished / "results/logs"
    train = (logs / "train/quiet.log").read_text()
    assert "\r" not in train  # no progress bar in a file
    for expected in [
        "Read results/trials/",
        "Training 2 replicates for batches 1 to 20 of 8 trials each",
        "Training done: batches 1 to 20 in",
        "Wrote results/quiet/model\n",
        "Wrote results/quiet/model_best\n",
        "Wrote results/quiet/history.zarr\n",
    ]:
        assert expected in train, expected
    steps = [line for line in train.splitlines() if " INFO batch " in line]
    assert [line.split(" INFO batch ")[1].split()[0] for line in steps] == ["10/20", "20/20"]
    assert all(line.endswith("batch/s") and "validation:" in line for line in steps)
    evaluate = (logs / "evaluate/quiet.log").read_text()
    for expected in ["Reading results/quiet/model\n", "Wrote results/quiet/states.zarr\n"]:
        assert expected in evaluate, expected
    assert "Wrote results/quiet/metrics.csv\n" in evaluate
    figures = (logs / "figures/quiet.log").read_text()
    assert "Read results/quiet/history.zarr\n" in figures
    assert "Wrote results/figures/quiet/loss.png\n" in figures
