"""What the Snakefile does once per run (motorflow.pipeline.WorkflowRun), without
Snakemake: the end-to-end tests (test_workflow, test_results_folders, test_crash_safety,
test_warm_workers) run it through the real snakemake."""

from __future__ import annotations

import io
import signal

import pytest
from workflow_helpers import tiny_config, write_config

import motorflow as mf
import motorflow.pipeline as mfp
from motorflow.pipeline._invocation import WORKFLOW_COMMAND


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A folder with the tiny config as config/config.yaml (its results folder is
    results/config), as the workflow's working directory; no workflow command noted."""
    config = tiny_config()
    del config["results"]
    write_config(tmp_path, config)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(WORKFLOW_COMMAND, "")  # restored, not left set, after the test
    monkeypatch.delenv(WORKFLOW_COMMAND)
    return tmp_path


def test_the_process_that_starts_the_workflow_estimates_and_the_jobs_do_not(project):
    log = io.StringIO()
    run = mfp.WorkflowRun.open([], {}, log=log)
    assert run.started_here and run.results == "results/config"
    assert set(run.checked.experiments) == set(tiny_config()["experiments"])
    lines = log.getvalue().splitlines()
    assert lines[0].startswith("motorflow estimate")
    assert sum(name in log.getvalue() for name in run.checked.experiments) == len(
        run.checked.experiments
    )
    # A job's snakemake parses the workflow again, with the user's command noted.
    again = io.StringIO()
    job = mfp.WorkflowRun.open([], {}, log=again)
    assert not job.started_here and again.getvalue() == ""


def test_overrides_apply_to_the_default_config(project):
    run = mfp.WorkflowRun.open([], {"figures": {"dpi": 55}}, log=io.StringIO())
    assert run.checked.config["figures"]["dpi"] == 55
    assert run.config_files == [mfp._workflow_run.DEFAULT_CONFIG]


def test_a_bad_config_is_refused_with_a_line_per_problem(project):
    with pytest.raises(mf.ConfigError) as caught:
        mfp.WorkflowRun.open([], {"figures": {"dpi": -1, "format": "bmp"}}, log=io.StringIO())
    lines = mfp.config_problems(caught.value)
    assert len(lines) == 3, lines
    assert any("figures.dpi" in line for line in lines[:2])
    assert any("figures.format" in line for line in lines[:2])
    assert all(line.startswith("Invalid config: ") for line in lines[:2])
    assert lines[-1] == "Nothing was run; fix the config and run again."
    assert not (project / "results").exists()


def test_a_run_marks_its_folder_and_keeps_the_last_results_until_it_succeeds(project):
    run = mfp.WorkflowRun.open([], {}, log=io.StringIO())
    results = project / run.results
    (results / "quiet").mkdir(parents=True)
    (results / "quiet" / "metrics.csv").write_text("a,b\n1,2\n")
    run.started(cores=1, local=False)
    assert mfp._results_folder.results_owner(results) == ["config/config.yaml"]
    assert run.warm_workers is None  # not a local run: no warm workers
    kept = results / ".last-complete" / "quiet" / "metrics.csv"
    assert kept.read_text() == "a,b\n1,2\n"
    # A failed run says where the last complete results are, and keeps them...
    assert "results/config/.last-complete/" in run.failed()
    assert kept.exists()
    # ...until a run succeeds.
    run.succeeded()
    assert not (results / ".last-complete").exists()
    assert run.failed() is None


def test_the_cluster_warning_is_ignored_by_snakemake_and_what_it_starts():
    before = signal.getsignal(signal.SIGUSR1)
    try:
        signal.signal(signal.SIGUSR1, signal.SIG_DFL)
        mfp.ignore_cluster_warning()
        assert signal.getsignal(signal.SIGUSR1) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGUSR1, before)
