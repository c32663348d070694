"""`figures.experiments`: a full run draws the own figures of the experiments its
patterns match (the experiments' figures are most of a large sweep's time), every
experiment still counts in the figures across experiments, and another experiment's
figure is made when asked for by its path."""

import pytest
from workflow_helpers import make_workdir, planned_jobs, tiny_config

import motorflow.pipeline as mfp

pytestmark = pytest.mark.workflow

FIGURE_RULES = ("experiment_figures", "analysis_figures")


def swept_config(**figures) -> dict:
    config = tiny_config()
    config["sweeps"] = {
        "size": {"experiment": "quiet", "grid": {"model.network.hidden_size": [4, 6, 8]}}
    }
    config["figures"] = figures
    return config


def drawn(jobs) -> set[str]:
    return {wildcards for rule, wildcards in jobs if rule in FIGURE_RULES}


def test_a_full_run_draws_only_the_matched_experiments_and_the_others_on_request(tmp_path):
    config = swept_config(experiments=["noisy", "size-*[68]"])
    workdir = make_workdir(tmp_path, config)
    jobs = planned_jobs(workdir)
    assert drawn(jobs) == {
        f"experiment={name}" for name in ("noisy", "size-hidden_size6", "size-hidden_size8")
    }
    # Every experiment is still evaluated, analysed and in the sweep figure.
    for stage in ("evaluate", "analysis"):
        assert len({wildcards for rule, wildcards in jobs if rule == stage}) == 5, stage
    assert {("sweep_figure", "sweep=size"), ("summary", "")} <= jobs
    # An experiment not drawn: its figure by its path.
    asked = planned_jobs(workdir, "results/figures/quiet/loss.png")
    assert ("experiment_figures", "experiment=quiet") in asked
    assert mfp.drawn_experiments(mfp.parse_config(config), ["quiet", "noisy"]) == ["noisy"]


def test_packed_figures_take_only_the_drawn_experiments(tmp_path):
    config = swept_config(experiments=["size-*"])
    config["resources"] = {"figures": {"pack": 2}}
    jobs = planned_jobs(make_workdir(tmp_path, config))
    # Three drawn experiments: a pack of two and the last alone; the others in none.
    assert {job for job in jobs if job[0].startswith(FIGURE_RULES)} == {
        *((f"{rule}_pack_0", "") for rule in FIGURE_RULES),
        *((rule, "experiment=size-hidden_size8") for rule in FIGURE_RULES),
    }


def test_no_experiment_drawn_leaves_the_figures_across_experiments(tmp_path):
    jobs = planned_jobs(make_workdir(tmp_path, swept_config(experiments=[])))
    assert not drawn(jobs)
    assert {("comparison_figure", ""), ("sweep_figure", "sweep=size")} <= jobs
