"""The `motorflow` command: `info` reports what the outputs hold, `export` writes one
replicate that loads (with motorflow or plain equinox) as the replicate it was."""

from __future__ import annotations

import json
import os
import re
import runpy
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import equinox as eqx
import jax
import numpy as np
import pandas as pd
import pytest
import yaml
from workflow_helpers import (
    REPO,
    at,
    evaluate_through_stage,
    make_workdir,
    planned_jobs,
    snakemake,
    snakemake_command,
    snakemake_env,
    tiny_config,
    train_through_stages,
)

import motorflow as mf
import motorflow.pipeline as mfp
from motorflow.pipeline._cli import main

EXPERIMENT = "noisy"  # feedback noise on: a rollout can tell a right key from a wrong one


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """One tiny experiment (2 replicates, 10 batches), trained and evaluated through the
    stage functions into the workflow's layout."""
    config = tiny_config()
    config["trainings"]["quick"].update(n_batches=10, validation={"every": 5})
    config["evaluation"]["conditions"].pop("pulse")
    experiment = mfp.resolve_experiments(config)[EXPERIMENT]
    results = tmp_path_factory.mktemp("cli") / "results"
    train_through_stages(experiment, results)
    evaluate_through_stage(experiment, results, mfp.parse_config(config).evaluation)
    return results


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    return code, out, err


def replicate_blocks(text: str) -> dict[int, str]:
    """The `info` output's block of each replicate."""
    parts = re.split(r"^  replicate (\d+)$", text, flags=re.MULTILINE)
    return {int(index): block for index, block in zip(parts[1::2], parts[2::2])}


def reported(block: str, what: str) -> tuple[float, int]:
    """A loss line's value and the batch count it names."""
    match = re.search(rf"{what} +(\S+) \((?:batch|after) (\d+)", block)
    assert match, f"no {what!r} line in:\n{block}"
    return float(match.group(1)), int(match.group(2))


def test_info_reports_each_replicates_losses_as_the_history_holds_them(results, capsys):
    code, out, _ = run(capsys, "info", results / EXPERIMENT)
    assert code == 0
    history = mfp.open_dataset(results / EXPERIMENT / "history.zarr")
    total = history.loss.sel(term="total")
    validation = history.validation_loss.sel(term="total")
    blocks = replicate_blocks(out)
    assert sorted(blocks) == [0, 1]
    for replicate, block in blocks.items():
        loss, batch = reported(block, "final training loss")
        assert batch == 9
        np.testing.assert_allclose(loss, total.sel(batch=9, replicate=replicate), rtol=1e-5)
        loss, batch = reported(block, "final validation loss")
        assert batch == 10
        expected = validation.sel(validation_step=10, replicate=replicate)
        np.testing.assert_allclose(loss, expected, rtol=1e-5)
        loss, batch = reported(block, "best validation loss")
        assert batch == history.best_batch.sel(replicate=replicate)
        expected = history.best_validation_loss.sel(replicate=replicate)
        np.testing.assert_allclose(loss, expected, rtol=1e-5)
        assert re.search(r"diverged +no", block)
    for line in ("task: reach, 15 steps", "2 replicates x 10 batches x 8 trials", "seed: 0"):
        assert line in out
    # The terms that count in a reach: not the hold term (reaches never hold).
    weights = re.search(r"loss weights: (.*)", out).group(1).split(", ")
    assert "effort 1e-05" in weights and "final_velocity 1" in weights
    assert not any(term.startswith("hold") for term in weights), weights
    assert re.search(r"seconds per batch: \S+ median", out)
    assert re.search(r"devices: cpu", out)


def test_info_shows_each_replicates_metric_means_from_the_table(results, capsys):
    _, out, _ = run(capsys, "info", results / EXPERIMENT)
    table = pd.read_csv(results / EXPERIMENT / "metrics.csv")
    for replicate, block in replicate_blocks(out).items():
        assert "of the final parameters" in block
        header = next(line for line in block.splitlines() if "unperturbed" in line).split()
        assert header == ["unperturbed", "curl_cw"]
        row = next(line for line in block.splitlines() if "endpoint_error (m)" in line)
        shown = [float(value) for value in row.split()[2:]]
        expected = table[table.replicate == replicate].set_index("condition").endpoint_error
        np.testing.assert_allclose(shown, expected[header], rtol=1e-5)


def test_info_says_what_is_not_written_yet_and_which_replicate_diverged(results, capsys):
    trained_only = results / "trained_only"
    history = mfp.open_dataset(results / EXPERIMENT / "history.zarr")
    history["diverged_at"][:] = [-1, 7]
    mfp.write_dataset(history, trained_only / "history.zarr")
    shutil.copytree(results / EXPERIMENT / "model", trained_only / "model")
    code, out, _ = run(capsys, "info", trained_only)
    shutil.rmtree(trained_only)
    assert code == 0
    assert "metrics: not evaluated yet" in out
    assert "model_best/: missing" in out
    assert "metrics (mean" not in out
    blocks = replicate_blocks(out)
    assert re.search(r"diverged +no", blocks[0])
    assert re.search(r"diverged +yes, at batch 7", blocks[1])


@pytest.mark.parametrize(
    ("resumed_from", "says"),
    [
        (0, None),
        (5, "resumed from the checkpoint at batch 5 of 10"),
        # A reverted edit or a finished run: no batch trained, none after the last named.
        (10, "nothing was left to train: all 10 batches came from a checkpoint"),
    ],
)
def test_info_says_truly_where_a_resumed_training_started(
    results, capsys, tmp_path, resumed_from, says
):
    resumed = tmp_path / "resumed"
    history = mfp.open_dataset(results / EXPERIMENT / "history.zarr")
    record = json.loads(history.attrs["run_record"])
    history.attrs["run_record"] = json.dumps({**record, "resumed_from_batch": resumed_from})
    mfp.write_dataset(history, resumed / "history.zarr")
    code, out, _ = run(capsys, "info", resumed)
    assert code == 0
    run_section = out.split("\nrun\n")[1].split("\nmodels\n")[0]
    lines = [line for line in run_section.splitlines() if "resumed" in line or "left" in line]
    assert lines == ([f"  {says}"] if says else [])


def test_a_folder_that_is_no_experiment_is_named_with_the_experiments_beside_it(results, capsys):
    for command in (["info"], ["export"]):
        argv = [*command, results / "typo"]
        if command == ["export"]:
            argv += [results.parent / "out", "--replicate", "0"]
        code, out, err = run(capsys, *argv)
        assert code == 2 and out == ""
        assert err.strip().endswith(
            f"{results / 'typo'} is not a trained experiment; "
            f"trained experiments in {results}: {EXPERIMENT}"
        )
        assert len(err.strip().splitlines()) == 1
    # The results folder itself: the experiments inside it are listed.
    code, _, err = run(capsys, "info", results)
    assert code == 2 and f"it holds the trained experiments: {EXPERIMENT}" in err
    assert not (results.parent / "out").exists()


@pytest.mark.parametrize("replicate", [2, -1])
def test_a_replicate_out_of_range_is_refused_with_the_valid_range(
    results, capsys, tmp_path, replicate
):
    code, _, err = run(
        capsys, "export", results / EXPERIMENT, tmp_path / "out", "--replicate", replicate
    )
    assert code == 2
    assert f"replicate {replicate} is out of range" in err and "replicates 0 to 1" in err
    assert not (tmp_path / "out").exists()


def noisy_rollouts(model: mf.ClosedLoop, key: jax.Array) -> mf.Rollout:
    """One model on the task's center-out reaches, noise drawn from `key`."""
    config = mfp.resolve_experiments(tiny_config())[EXPERIMENT]
    task = mf.Task(config.task)
    trials = task.eval_trials().trials
    keys = jax.random.split(key, trials.init_pos.shape[0])
    rollout, _ = jax.jit(lambda m, k: mf.run_trials(m, task, trials, k))(model, keys)
    return rollout


@pytest.mark.parametrize("best", [False, True])
def test_an_exported_replicate_loads_and_runs_as_that_replicate(results, capsys, tmp_path, best):
    folder = tmp_path / "export"
    # The folder before the options, and after them as the tutorial writes it.
    options = ["--replicate", 1, *(["--best"] if best else [])]
    where = [folder, *options] if not best else [*options, folder]
    code, out, _ = run(capsys, "export", results / EXPERIMENT, *where)
    assert code == 0 and str(folder) in out
    source = results / EXPERIMENT / ("model_best" if best else "model")
    original, original_config = mf.load_ensemble(source)
    exported, config = mf.load_ensemble(folder)
    assert config == original_config
    assert mf.n_replicates(exported) == 1
    for mine, theirs in zip(
        jax.tree.leaves(eqx.filter(exported, eqx.is_array)),
        jax.tree.leaves(eqx.filter(original, eqx.is_array)),
    ):
        np.testing.assert_array_equal(mine[0], theirs[1])
    record = mf.load_training_record(folder)
    expected = mf.load_training_record(source)
    assert record["parameters"] == ("best" if best else "final")
    assert record["best_batch"] == [expected["best_batch"][1]]
    assert record["diverged_at"] == [expected["diverged_at"][1]]
    assert record["exported_from"]["replicate"] == 1

    key = jax.random.key(3)
    replicate = mf.take_replicate(original, 1)
    alone = noisy_rollouts(mf.take_replicate(exported, 0), key)
    jax.tree.map(np.testing.assert_array_equal, alone, noisy_rollouts(replicate, key))
    # The noise is on, so a different key would have shown a different rollout.
    assert not np.array_equal(alone.pos, noisy_rollouts(replicate, jax.random.key(4)).pos)


def test_model_eqx_loads_with_plain_equinox_as_its_readme_says(
    results, capsys, tmp_path, monkeypatch
):
    exported = tmp_path / "export"
    assert run(capsys, "export", results / EXPERIMENT, exported, "--replicate", 1)[0] == 0
    # The export is relocatable: moved into another folder, its README's lines still load it,
    # run from the folder that holds it (as the README says); nothing in it names the
    # folder it was written to.
    folder = tmp_path / "moved" / "export"
    folder.parent.mkdir()
    exported.rename(folder)
    # (Its README and records; orbax's own commit marker notes where it wrote.)
    for path in [folder / "README.txt", *folder.glob("*.json")]:
        assert str(tmp_path) not in path.read_text(), path
    monkeypatch.chdir(folder.parent)
    readme = (folder / "README.txt").read_text()
    snippets = re.findall(r"((?:^    .*\n)+)", readme, flags=re.MULTILINE)
    assert len(snippets) == 2
    plain = {}
    exec(textwrap.dedent(snippets[1]), plain)  # the README's own lines, followed literally
    ensemble, _ = mf.load_ensemble(results / EXPERIMENT / "model")
    replicate = mf.take_replicate(ensemble, 1)
    assert jax.tree.structure(plain["model"]) == jax.tree.structure(replicate)
    jax.tree.map(np.testing.assert_array_equal, plain["model"], replicate)
    # Without the replicate axis: the recurrent weights are one matrix, not a stack.
    assert plain["model"].network.readout.weight.ndim == 2
    with_motorflow = {}
    exec(textwrap.dedent(snippets[0]), with_motorflow)
    assert eqx.tree_equal(with_motorflow["model"], plain["model"])


def test_export_goes_into_the_results_folder_unless_told(results, capsys, tmp_path):
    copy = tmp_path / "results" / "config"
    shutil.copytree(results / EXPERIMENT, copy / EXPERIMENT)
    code, out, _ = run(capsys, "export", copy / EXPERIMENT, "--replicate", 1, "--best")
    folder = copy / "exports" / f"{EXPERIMENT}-replicate1-best"
    assert code == 0 and str(folder) in out
    assert mf.load_training_record(folder)["parameters"] == "best"
    assert mf.load_training_record(folder)["exported_from"] == {
        "experiment": f"../../{EXPERIMENT}",
        "replicate": 1,
    }


def test_export_replaces_an_earlier_export_but_no_other_folder(results, capsys, tmp_path):
    folder = tmp_path / "export"
    assert run(capsys, "export", results / EXPERIMENT, folder, "--replicate", 0)[0] == 0
    assert run(capsys, "export", results / EXPERIMENT, folder, "--replicate", 1)[0] == 0
    assert mf.load_training_record(folder)["exported_from"]["replicate"] == 1
    model = results / EXPERIMENT / "model"
    before = sorted(p.relative_to(model) for p in model.rglob("*"))
    code, _, err = run(capsys, "export", results / EXPERIMENT, model, "--replicate", 0)
    assert code == 2 and "is not an exported model" in err
    assert sorted(p.relative_to(model) for p in model.rglob("*")) == before
    assert mf.n_replicates(mf.load_ensemble(model)[0]) == 2


def test_schema_is_a_subcommand(capsys):
    code, out, _ = run(capsys, "schema")
    assert code == 0 and out.startswith("# Generated from motorflow's typed config")
    assert yaml.safe_load(out) == mfp.config_json_schema()


def test_the_installed_command_runs(results):
    script = Path(sys.executable).parent / "motorflow"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "motorflow"]
    done = subprocess.run(
        [*command, "info", str(results / EXPERIMENT)],
        capture_output=True,
        text=True,
        env=snakemake_env(),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert sorted(replicate_blocks(done.stdout)) == [0, 1]


# As a user sees it, and with warnings as errors (one caught inside would lose a line).
@pytest.mark.parametrize("python_options", [[], ["-W", "error"]])
def test_info_on_a_finished_workflow_run_prints_no_warning(results, tmp_path, python_options):
    # Snakemake leaves a marker file in each directory it declared as an output.
    finished = shutil.copytree(results / EXPERIMENT, tmp_path / EXPERIMENT)
    outputs = ["history.zarr", "states.zarr", "metrics.zarr", "model", "model_best"]
    for output in outputs:
        (finished / output / ".snakemake_timestamp").touch()
    done = subprocess.run(
        [sys.executable, *python_options, "-m", "motorflow", "info", str(finished)],
        capture_output=True,
        text=True,
        env=snakemake_env(),
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert sorted(replicate_blocks(done.stdout)) == [0, 1]
    # Read from states.zarr: a warning turned into an error would have lost it.
    assert "of the final parameters" in done.stdout


def test_a_workflow_run_records_and_info_shows_the_users_command_and_the_job(tmp_path, capsys):
    config = tiny_config()
    del config["experiments"]["noisy"], config["protocols"]
    config["trainings"]["quick"].update(
        n_batches=4, validation={"every": 2}, log={"every": 2}, checkpoint={"every": 2}
    )
    workdir = make_workdir(tmp_path, config)
    target = "results/quiet/history.zarr"
    snakemake(workdir, target)
    history = mfp.open_dataset(workdir / target)
    record = json.loads(history.attrs["run_record"])
    # What was typed (python -m snakemake ...), not the job's temporary script.
    assert record["command"] == snakemake_command(target)
    assert (record["rule"], record["wildcards"]) == ("train", {"experiment": "quiet"})
    code, out, _ = run(capsys, "info", workdir / "results/quiet")
    assert code == 0
    assert f"  command: {shlex.join(snakemake_command(target))}\n" in out
    assert "  workflow job: rule train (experiment=quiet)\n" in out
    # The command is no param: another command line makes no job stale.
    assert planned_jobs(workdir, "results/quiet/model") == set()


def test_python_m_motorflow_is_the_same_command(results, capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["motorflow", "info", str(results / "typo")])
    with pytest.raises(SystemExit) as exit_:
        runpy.run_module("motorflow", run_name="__main__")
    assert exit_.value.code == 2
    assert "is not a trained experiment" in capsys.readouterr().err


SHIPPED = sorted((Path(__file__).resolve().parents[1] / "config").glob("*.yaml"))


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_check_passes_every_shipped_config_with_a_line_per_experiment(capsys, path):
    code, out, err = run(capsys, "check", path)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == f"{path}: OK; results go to results/{path.stem}/"
    experiments = mfp.resolve_experiments(mfp.load_config_file(path))
    assert len(lines) == 1 + len(experiments)
    for name, spec in mfp.load_config_file(path)["experiments"].items():
        replicates = experiments[name].train.n_replicates
        # Its blocks, then the preflight estimate: disk and both jobs' peak memory.
        (line,) = [line for line in lines if line.startswith(f"  {name}: ")]
        assert line.startswith(
            f"  {name}: task {spec['task']}, model {spec['model']}, "
            f"training {spec['training']}, n_replicates {replicates}; writes ~"
        ), line
        assert "train peak ~" in line and "evaluate peak ~" in line, line


def test_check_gives_line_and_column_of_a_yaml_syntax_error(capsys, tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(tiny_config()) + "extra: [1, 2\n")
    code, out, err = run(capsys, "check", path)
    lines = path.read_text().count("\n")
    assert code == 1 and out == ""
    assert err.startswith(f"motorflow check: {path}:{lines + 1}:1: is not valid YAML: "), err
    assert "Traceback" not in err


def test_check_names_the_key_path_value_and_what_is_allowed(capsys, tmp_path):
    config = tiny_config()
    config["trainings"]["quick"]["n_replicates"] = 0
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    code, out, err = run(capsys, "check", path)
    assert code == 1 and out == ""
    assert err.startswith(
        f"motorflow check: {path}: trainings.quick.n_replicates: must be an integer >= 1, got 0"
    ), err


def test_check_refuses_a_cross_experiment_problem_the_workflow_refuses(capsys, tmp_path):
    # Resolved experiments, not only the typed blocks: a protocol stage that is no experiment.
    config = tiny_config()
    config["protocols"]["noise"]["stages"] = ["quiet", "missing"]
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    code, _, err = run(capsys, "check", path)
    assert code == 1
    assert f"{path}: protocols.noise.stages[1]: 'missing' is not an experiment" in err, err


def test_check_refuses_a_yte_template_without_evaluating_it(capsys, tmp_path):
    made = tmp_path / "evaluated"
    path = tmp_path / "config.yaml"
    path.write_text(
        "__use_yte__: true\n"
        + yaml.safe_dump(tiny_config())
        + f"jax_cache_dir: ?__import__('pathlib').Path({str(made)!r}).touch() or 'cache'\n"
    )
    code, out, err = run(capsys, "check", path)
    assert code == 1 and out == ""
    assert f"{path}: __use_yte__: templating is not allowed" in err, err
    assert not made.exists()
    # Snakemake's loader would have run it: the expression is live.
    yte = pytest.importorskip("yte")
    assert yte.process_yaml(path.read_text())["jax_cache_dir"] == "cache"
    assert made.exists()


def test_a_failing_check_is_a_message_naming_the_file_never_a_traceback(
    capsys, tmp_path, monkeypatch
):
    # Whatever a check does wrong on some input, the user gets the file and exit 2.
    def broken(config):
        raise KeyError("evaluation")

    monkeypatch.setattr("motorflow.pipeline._check.check_config", broken)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(tiny_config()))
    code, out, err = run(capsys, "check", path)
    assert code == 2 and out == ""
    assert err.startswith(f"motorflow check: {path}: the check failed unexpectedly (KeyError"), err
    assert "Traceback" not in err


@pytest.mark.workflow
def test_check_and_the_workflow_refuse_a_config_with_the_same_message(capsys, tmp_path):
    # A cross-experiment problem (more components than units): one check, two callers.
    config = tiny_config()
    config["analysis"] = {"pca": {"n_components": 9}}
    workdir = make_workdir(tmp_path, config)
    code, _, err = run(capsys, "check", workdir / "config/config.yaml")
    message = "analysis.pca.n_components: is 9, but experiment 'quiet' has network.hidden_size 8"
    assert code == 1 and message in err, err
    result = snakemake(workdir, "--dry-run", check=False)
    assert result.returncode != 0
    assert f"Invalid config: {message}" in result.stdout + result.stderr
    assert not (workdir / "results").exists()


# Three independent mistakes in three sections, and the line each must get.
THREE_KEY_ERRORS = {
    "tasks.reach.n_steps": ("tasks.reach.n_steps", -1, "must be an integer >= 1, got -1"),
    "figures.dpi": ("figures.dpi", 5, "must be an integer >= 10, got 5"),
    "evaluation.goal_radius": ("evaluation.goal_radius", -1.0, "must be a number > 0, got -1.0"),
}
# Three independent cross-field mistakes (each checked once the keys are valid).
THREE_CROSS_FIELD_ERRORS = {
    "analysis.pca.n_components": (
        "analysis.pca",
        {"n_components": 9},
        "is 9, but experiment 'quiet' has network.hidden_size 8",
    ),
    "analysis.replicate": ("analysis.replicate", 2, "is 2, but experiment 'quiet' has 2"),
    "comparisons.both.experiments[0]": (
        "comparisons",
        {"both": {"analysis": "tuning", "experiments": ["nope"]}},
        "'nope' is not an experiment",
    ),
}


@pytest.mark.parametrize("mistakes", [THREE_KEY_ERRORS, THREE_CROSS_FIELD_ERRORS])
def test_check_reports_every_independent_problem_on_a_line_of_its_own(capsys, tmp_path, mistakes):
    config = tiny_config()
    for where, value, _ in mistakes.values():
        at(where, value)(config)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    code, out, err = run(capsys, "check", path)
    assert code == 1 and out == "", err
    *lines, advice = err.strip().splitlines()
    assert advice.startswith("The config is refused"), err
    assert len(lines) == 3, err
    for key, (_, _, message) in mistakes.items():
        (line,) = [line for line in lines if f": {key}: " in line]
        assert line.startswith(f"motorflow check: {path}: {key}: ") and message in line, err


def test_a_check_that_needs_a_refused_experiment_is_skipped(capsys, tmp_path):
    # 'quiet' is refused (a delay as long as its trials): the protocol and the
    # comparison naming it say nothing more about it (it is defined, not missing).
    config = tiny_config()
    at("experiments.quiet.override", {"model": {"feedback": {"delay": 15}}})(config)
    at("comparisons", {"both": {"analysis": "tuning", "experiments": ["quiet", "noisy"]}})(config)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    code, _, err = run(capsys, "check", path)
    assert code == 1
    (line,) = err.strip().splitlines()[:-1]
    assert "experiments.quiet.model.feedback.delay" in line, err


@pytest.mark.workflow
def test_the_workflow_names_every_independent_problem(tmp_path):
    config = tiny_config()
    for where, value, _ in THREE_KEY_ERRORS.values():
        at(where, value)(config)
    workdir = make_workdir(tmp_path, config)
    result = snakemake(workdir, "--dry-run", check=False)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    assert output.count("Invalid config:") == 3, output[-3000:]
    for key, (_, _, message) in THREE_KEY_ERRORS.items():
        assert f"Invalid config: {key}: {message}" in output, output[-3000:]
    assert not (workdir / "results").exists()


# What a mistyped or --help command line must not wait for.
HEAVY_LIBRARIES = ("jax", "jaxlib", "equinox", "optax", "xarray", "zarr", "matplotlib", "pandas")


def imported_modules(importtime: str) -> set[str]:
    """The modules named in Python's ``-X importtime`` report."""
    return {
        line.rsplit("|", 1)[1].strip()
        for line in importtime.splitlines()
        if line.startswith("import time:") and not line.endswith("imported package")
    }


@pytest.mark.parametrize(
    ("argv", "code", "says"),
    [
        (["--help"], 0, "usage: motorflow"),
        (["info", "--help"], 0, "usage: motorflow info"),
        (["nosuchcommand"], 2, "invalid choice: 'nosuchcommand'"),
        (["info"], 2, "the following arguments are required: experiment"),
        (["export", "results/x", "out"], 2, "the following arguments are required: --replicate"),
    ],
)
@pytest.mark.parametrize("entry", ["python -m motorflow", "motorflow"])
def test_help_and_argument_errors_answer_without_loading_jax(entry, argv, code, says):
    script = Path(sys.executable).parent / "motorflow"
    if entry == "motorflow" and not script.exists():
        pytest.skip("the motorflow command is not installed beside this Python")
    command = [sys.executable, "-m", "motorflow"] if entry != "motorflow" else [str(script)]
    done = subprocess.run(
        [*command, *argv],
        capture_output=True,
        text=True,
        env=snakemake_env({"PYTHONPROFILEIMPORTTIME": "1"}),
        check=False,
    )
    assert done.returncode == code, done.stderr
    assert says in done.stdout + done.stderr
    imported = imported_modules(done.stderr)
    assert "motorflow.pipeline._cli" in imported  # the report covers the command's imports
    loaded = sorted(m for m in imported if m.split(".")[0] in HEAVY_LIBRARIES)
    assert loaded == []


def test_a_reader_that_closes_the_pipe_early_gets_no_traceback():
    # `motorflow check c.yaml | head -1`: head exits after one line. Here the reading
    # end is closed before the command writes at all.
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "motorflow", "check", str(REPO / "config" / "config.yaml")],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1
