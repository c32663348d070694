"""Incremental == fresh, with the real `snakemake`: after a config edit, exactly the stale
jobs rerun and every store and model they write equals a from-scratch run's.

One workdir holds an experiment per kind of edit (every model setting without
weights, one per stage), all edited at once, so one rerun checks them all.
"""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import tiny_train_settings
from workflow_helpers import (
    assert_same_results,
    evaluate_through_stage,
    make_workdir,
    planned_jobs,
    snakemake,
    train_through_stages,
    write_config,
)

import motorflow.pipeline as mfp

pytestmark = pytest.mark.workflow


def experiment(model=None, training=None, task=None, **spec):
    override = {
        block: value
        for block, value in (("model", model), ("training", training), ("task", task))
        if value
    }
    return {"task": "reach", "model": "noisy", "training": "short", **spec, "override": override}


BASE = {
    "tasks": {"reach": {"n_steps": 10, "eval": {"n_directions": 3}}},
    "models": {
        "noisy": {
            "network": {"hidden_size": 4, "hidden_noise_std": 0.02},
            "feedback": {"delay": 1, "noise_std": 0.05},
        }
    },
    "trainings": {
        "short": tiny_train_settings(
            n_replicates=2,
            n_batches=10,
            batch_size=4,
            validation={"every": 5},
            log={"every": 5},
            checkpoint={"every": 5},
        )
    },
    "experiments": {
        "same": experiment(),
        "leaky": experiment(model={"network": {"cell": "leaky"}}),
        **{name: experiment() for name in ("delay", "model", "cell", "pert", "kind")},
        "lr": experiment(),
        # A chain: editing `lr` reruns its descendants, the last continuing the optimizer.
        "lr_child": experiment(init_from="lr"),
        "lr_grandchild": experiment(init_from="lr_child", reset_optimizer=False),
        "seed": experiment(),
        "steps": experiment(),
    },
    "evaluation": {
        "conditions": {"unperturbed": [], "curl": [{"kind": "curl", "strength": [2.0, 6.0]}]}
    },
    "resources": {"train": {"threads": 1}},
    "results": "results",  # where the tests read the outputs
}

# Experiment -> its override after the edit; each changes one setting.
EDITS = {
    # One setting alone (its dry-run reason names it, before and now), then the other
    # settings without weights together (which edit reruns which job, one setting at a
    # time, is tests/test_edit_corpus.py's dry-run corpus).
    "delay": {"model": {"feedback": {"delay": 2}}},
    "model": {
        "model": {
            "feedback": {"noise_std": 0.1},
            "network": {"hidden_noise_std": 0.05},
            "plant": {"mass": 1.5, "damping": 0.3},
            "dt": 0.04,
        }
    },
    # Another cell, with weight constraints that only it can take.
    "cell": {
        "model": {"network": {"cell": "rnn"}},
        "training": {
            "constraints": [
                {"kind": "dale", "readout": True},
                {"kind": "connectivity", "density": 0.5},
                {"kind": "spectral_radius", "max": 0.9},
            ]
        },
    },
    "leaky": {"model": {"network": {"cell": {"kind": "leaky", "tau": 0.2}}}},
    "lr": {
        "training": {
            "optimizer": {"learning_rate": 0.02},
            "on_divergence": "isolate",
            "snapshots": {"batches": {"every": 5}},
            "gradient_norms": "per_term",
            "update_rules": [{"kind": "oja", "rate": 0.01, "batches": {"every": 2}}],
        }
    },
    "steps": {"task": {"n_steps": 12}},
    # Training under perturbations: new trial specs (with the draws), a new validation set.
    "pert": {
        "task": {
            "perturbations": [
                {"kind": "curl", "strength": [0.0, 8.0], "probability": 0.5},
                {"kind": "force_pulse", "angle": [0.0, 360.0], "start": [0.0, 0.3]},
            ]
        }
    },
    # Another kind of task: a go cue (a new network input), go steps in the trial specs.
    "kind": {"task": {"kind": "delayed_reach", "n_steps": 10, "go_step": [2, 5]}},
}


def edited_config(jax_cache: Path) -> dict:
    config = copy.deepcopy(BASE)
    for name, override in EDITS.items():
        config["experiments"][name]["override"] = override
    config["experiments"]["seed"]["seed"] = 7
    # Settings that cannot change results: nothing reruns for them.
    config["trainings"]["short"]["checkpoint"] = {"every": 10, "seconds": 1}
    config["trainings"]["short"]["log"] = {"first": 3, "exponential": {"start": 2}}
    config["trainings"]["short"]["keep_checkpoints"] = 1
    config["trainings"]["short"]["tensorboard"] = True
    # The session's cache (BASE's) spelled another way: the key's text changes and
    # nothing may rerun for it, while the jobs and this process share their programs.
    config["jax_cache_dir"] = os.path.join(jax_cache, "..", jax_cache.name)
    config["resources"]["evaluate"] = {"mem_mb": 1500}
    return config


# Experiments whose evaluation is checked too; the others stop at the train outputs
# (the evaluation of a model is a function of it), which keeps the test's job count down.
EVALUATED = ("same", "lr", "seed", "steps", "pert", "lr_grandchild", "kind")


def stores(config) -> list[str]:
    return [
        f"results/{name}/metrics.csv" if name in EVALUATED else f"results/{name}/history.zarr"
        for name in config["experiments"]
    ]


def fresh_results(config: dict, root: Path) -> None:
    """A from-scratch run of `config` through the stage functions the scripts call.

    Only the stages the workflow test ran: evaluation for `EVALUATED` experiments.
    """
    config = copy.deepcopy(config)
    settings = mfp.parse_config(config)
    experiments = mfp.resolve_experiments(settings)
    results = root / "results"
    for name, exp in experiments.items():
        train_through_stages(exp, results)
        if name not in EVALUATED:
            continue
        evaluate_through_stage(exp, results, settings.evaluation)


def train_log(workdir: Path, name: str) -> str:
    return (workdir / "results/logs/train" / f"{name}.log").read_text()


@pytest.fixture(scope="module")
def edited(tmp_path_factory, compilation_cache):
    """A workdir run with BASE, then edited and run again; plus the plan of the rerun.

    The edited config moves the jobs' compilation cache to this test session's, so the
    fresh runs in this process load the programs the jobs compiled.
    """
    workdir = make_workdir(tmp_path_factory.mktemp("incremental"), BASE)
    snakemake(workdir, *stores(BASE))
    config = edited_config(compilation_cache)
    write_config(workdir, config)
    plan = planned_jobs(workdir, *stores(config))
    reason = snakemake(workdir, "--dry-run", *stores(config)).stdout
    snakemake(workdir, *stores(config))
    return workdir, config, plan, reason


def test_an_edit_reruns_exactly_the_jobs_whose_settings_changed(edited):
    _, config, plan, _ = edited
    retrained = set(EDITS) | {"seed", "lr_child", "lr_grandchild"}
    expected = {("train", f"experiment={name}") for name in retrained}
    expected |= {("evaluate", f"experiment={name}") for name in retrained & set(EVALUATED)}
    # New trial specs for the new seed, n_steps, perturbations and task kind; `same`
    # reruns nothing.
    trials = {job for job in plan if job[0] == "trials"}
    assert len(trials) == 4
    assert plan - trials == expected


def test_the_dry_run_reason_names_the_changed_settings(edited):
    *_, dry_run = edited
    # The jobs' reasons: the changed settings only, never a run setting.
    reason = "\n".join(line for line in dry_run.splitlines() if "reason:" in line)
    assert "before: 'model.feedback.delay=1' now: 'model.feedback.delay=2'" in reason
    assert "model.plant.mass=1.5" in reason
    assert "checkpoint" not in reason and "training.log" not in reason
    assert "jax_cache" not in reason


def test_the_jobs_that_ran_after_the_edit_read_the_edited_run_settings(edited):
    """Settings that change how a job runs, not what it makes, reach the job through
    its run settings: every retrained experiment wrote TensorBoard events (switched
    on by the edit), the one that did not rerun none."""
    workdir, *_ = edited
    results = workdir / "results"
    for name in EDITS:
        assert list((results / name / "tensorboard").rglob("events.out.tfevents.*")), name
    assert not (results / "same" / "tensorboard").exists()


def test_every_rerun_output_equals_a_fresh_run_of_the_edited_config(edited, tmp_path):
    workdir, config, _, _ = edited
    fresh_results(config, tmp_path)
    assert_same_results(tmp_path, workdir, list(config["experiments"]))


def test_a_rerun_after_an_edit_trains_from_the_first_batch(edited):
    workdir, *_ = edited
    for name in EDITS:
        log = train_log(workdir, name)
        assert "Training from the first batch" in log, name
        assert "Resuming" not in log and "finished training earlier" not in log
    for child, parent in (("lr_child", "lr"), ("lr_grandchild", "lr_child")):
        assert f"Starting from the trained model of {parent!r}" in train_log(workdir, child)


def test_a_forced_rerun_retrains_from_scratch_to_the_same_result(edited, tmp_path):
    workdir, config, _, _ = edited
    before = (workdir / "results/same/model").stat().st_mtime_ns
    snakemake(workdir, "results/same/metrics.csv", "--forcerun", "results/same/model")
    log = train_log(workdir, "same")
    assert "this run was forced: training from the first batch" in log
    assert re.search(r"batch 10/10", log)
    assert (workdir / "results/same/model").stat().st_mtime_ns != before
    fresh_results({**config, "experiments": {"same": config["experiments"]["same"]}}, tmp_path)
    assert_same_results(tmp_path, workdir, ["same"])


def test_a_failed_edit_costs_nothing_once_it_is_reverted(edited, tmp_path):
    workdir, config, _, _ = edited
    target = "results/lr/metrics.csv"
    diverging = copy.deepcopy(config)
    diverging["experiments"]["lr"]["override"]["training"]["optimizer"] = {
        "name": "sgd",
        "learning_rate": 1e38,
    }
    # Stopping at the divergence: under `isolate` a run whose every replicate diverged
    # would end with its results flagged, not fail.
    diverging["experiments"]["lr"]["override"]["training"]["on_divergence"] = "stop"
    write_config(workdir, diverging)
    failed = snakemake(workdir, target, check=False)
    assert failed.returncode != 0 and "Non-finite" in failed.stdout + failed.stderr
    assert not (workdir / "results/lr/model").exists()  # Snakemake removed the old outputs
    write_config(workdir, config)
    snakemake(workdir, target)
    assert "finished training earlier" in train_log(workdir, "lr")
    fresh_results({**config, "experiments": {"lr": config["experiments"]["lr"]}}, tmp_path)
    assert_same_results(tmp_path, workdir, ["lr"])


def test_parsing_the_workflow_starts_no_accelerator(edited):
    # JAX_PLATFORMS=cuda makes any JAX backend start fail on this CPU-only machine:
    # the controller builds the DAG without one, so the dry run still succeeds.
    workdir, config, _, _ = edited
    snakemake(workdir, "--dry-run", env={"JAX_PLATFORMS": "cuda"})  # raises if it fails


def test_a_delayed_reach_is_scored_from_its_go_cue(edited):
    workdir, config, *_ = edited
    task = mfp.resolve_experiments(config)["kind"].task
    states = mfp.open_dataset(workdir / "results/kind/states.zarr")
    np.testing.assert_allclose(states.go_time, task.evaluation_go_step * 0.05)
    table = pd.read_csv(workdir / "results/kind/metrics.csv")
    assert "reaction_time" in table and table.reaction_time.notna().all()
    assert "reaction_time" not in pd.read_csv(workdir / "results/same/metrics.csv")
