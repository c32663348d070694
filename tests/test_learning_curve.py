"""A learning curve from training snapshots: each snapshot evaluated as the final model is."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from workflow_helpers import (
    evaluate_through_stage,
    make_workdir,
    planned_jobs,
    snakemake,
    tiny_config,
    train_through_stages,
    write_config,
)

import motorflow.pipeline as mfp

EXPERIMENT = "noisy"  # feedback noise on: every snapshot must get the evaluation's noise


def snapshots_into(experiment, results: Path, evaluation) -> xr.Dataset:
    folder = results / experiment.name
    mfp.evaluate_snapshots(
        experiment.name,
        task=experiment.task,
        seed=experiment.seed,
        model_path=folder / "model",
        history_path=folder / "history.zarr",
        eval_path=results / "trials" / experiment.dataset / "eval.zarr",
        curve_path=folder / "learning_curve.zarr",
        evaluation=evaluation,
    )
    return mfp.open_dataset(folder / "learning_curve.zarr")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    config = tiny_config()
    config["trainings"]["quick"].update(n_batches=10, snapshots={"batches": {"every": 5}})
    experiment = mfp.resolve_experiments(config)[EXPERIMENT]
    evaluation = mfp.parse_config(config).evaluation
    results = tmp_path_factory.mktemp("curve") / "results"
    train_through_stages(experiment, results)
    evaluate_through_stage(experiment, results, evaluation)
    return experiment, results, evaluation


def test_the_last_snapshot_scores_as_the_evaluated_final_model(trained):
    experiment, results, evaluation = trained
    curve = snapshots_into(experiment, results, evaluation)
    assert curve.snapshot_step.values.tolist() == [0, 5, 10]
    assert curve.max_lateral_deviation.dims == ("snapshot_step", "replicate", "condition", "trial")
    final = mfp.open_dataset(results / experiment.name / "metrics.zarr")
    for name in final.data_vars:
        np.testing.assert_array_equal(curve[name].sel(snapshot_step=10).values, final[name].values)
    # Earlier snapshots are other networks: their reaches end elsewhere.
    endpoint = curve.endpoint_error
    assert not np.allclose(endpoint.sel(snapshot_step=0), endpoint.sel(snapshot_step=10))
    assert not np.allclose(endpoint.sel(snapshot_step=5), endpoint.sel(snapshot_step=10))


def test_a_history_without_snapshots_is_refused_by_name(tmp_path):
    config = tiny_config()
    config["trainings"]["quick"].update(n_batches=4, validation={"every": 2})
    experiment = mfp.resolve_experiments(config)["quiet"]
    train_through_stages(experiment, tmp_path)
    with pytest.raises(ValueError, match="train.snapshots for 'quiet'"):
        snapshots_into(experiment, tmp_path, mfp.parse_config(config).evaluation)


@pytest.mark.workflow
def test_the_protocol_figure_draws_the_learning_curve_of_the_stages_with_snapshots(tmp_path):
    """The real workflow: a chained protocol whose second stage keeps snapshots; the
    curve's last point is the stage's evaluated result, and editing a panel redraws
    the figure only."""
    config = tiny_config()
    config["trainings"]["quick"].update(n_batches=10, validation={"every": 5})
    # A fixed field: a range would be drawn from each experiment's own seed.
    config["evaluation"]["conditions"]["curl_cw"] = [{"kind": "curl", "strength": 8.0}]
    config["trainings"]["adapt"] = {
        **config["trainings"]["quick"],
        "snapshots": {"batches": {"every": 5}, "trials": False},
    }
    config["experiments"] = {
        "base": {"task": "reach", "model": "small", "training": "quick"},
        "adapt": {
            "task": "reach",
            "model": "small",
            "training": "adapt",
            "init_from": "base",
            "seed": 1,
        },
    }
    config["protocols"] = {
        "adaptation": {
            "stages": ["base", "adapt"],
            "panels": [
                {"stage": "base", "condition": "unperturbed", "title": "null field"},
                {"stage": "base", "condition": "curl_cw", "title": "early exposure"},
                {"stage": "adapt", "condition": "curl_cw"},
            ],
        }
    }
    workdir = make_workdir(tmp_path, config)
    snakemake(workdir, "results/figures/protocol-adaptation.png", "results/summary.csv")
    # The stages have their own seeds, but adapt's replicate r starts from base's.
    summary = pd.read_csv(workdir / "results" / "summary.csv")
    contrasts = summary[summary.statistic != "mean"]
    assert set(zip(contrasts.experiment, contrasts.reference)) == {("adapt", "base")}
    assert set(contrasts.statistic) == {"paired difference"}
    assert set(contrasts.pairing) == {"same ancestor replicates"}
    figures = workdir / "results" / "figures"
    curve = pd.read_csv(figures / "protocol-adaptation-learning-curve.csv")
    assert set(curve.stage) == {"adapt"}
    assert sorted(set(curve.batch)) == [0, 5, 10]
    table = pd.read_csv(figures / "protocol-adaptation.csv")
    last = curve.query("batch == 10").set_index(["condition", "replicate"]).max_lateral_deviation
    final = table.query("stage == 'adapt'").set_index(["condition", "replicate"])
    np.testing.assert_allclose(
        last.sort_index(), final.max_lateral_deviation.sort_index(), rtol=1e-6
    )
    # The first snapshot is the parent's final model, evaluated in the same reaches.
    first = curve.query("batch == 0").set_index(["condition", "replicate"]).max_lateral_deviation
    parent = table.query("stage == 'base'").set_index(["condition", "replicate"])
    np.testing.assert_allclose(
        first.sort_index(), parent.max_lateral_deviation.sort_index(), rtol=1e-6
    )
    assert planned_jobs(workdir, "results/figures/protocol-adaptation.png") == set()
    config["protocols"]["adaptation"]["panels"][2]["title"] = "late exposure"
    write_config(workdir, config)
    assert planned_jobs(workdir, "results/figures/protocol-adaptation.png") == {
        ("protocol_figure", "protocol=adaptation")
    }
