"""One channel from config to job: each job reads the settings it uses from its rule's
params (the values that decide its rerun) and how it runs from its run settings,
never by resolving the whole config again."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest
from workflow_helpers import at, tiny_config

import motorflow as mf
import motorflow.pipeline as mfp

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted((ROOT / "config").glob("*.yaml"))


def job_params(settings: dict, rule: str, key: str) -> dict[str, str]:
    """A job's params as the workflow's `setting_params` names them."""
    return {
        f"{mfp.SETTING_PARAM_PREFIX}{index}": values[key]
        for index, values in enumerate(mfp.rule_params(settings, rule))
    }


def resolved(config: dict):
    typed = mfp.parse_config(config)
    experiments = mfp.resolve_experiments(typed)
    return (
        typed,
        experiments,
        mfp.job_settings(typed, experiments),
        mfp.job_run_settings(typed, experiments),
    )


def with_conditions_and_chains() -> dict:
    """The tiny config with unsorted condition names, an empty block, a chained
    experiment continuing its parent's optimizer and run-only training settings."""
    config = tiny_config()
    config["evaluation"]["conditions"] = {
        "zeta": [],
        "alpha": [{"kind": "curl", "strength": [2.0, 6.0]}],
    }
    at("trainings.quick.checkpoint", {"every": 3, "seconds": 5})(config)
    at("trainings.quick.keep_checkpoints", 1)(config)
    at("trainings.quick.tensorboard", True)(config)
    config["experiments"]["child"] = {
        **config["experiments"]["quiet"],
        "init_from": "quiet",
        "reset_optimizer": False,
    }
    return config


CONFIGS = {
    "tiny": tiny_config,
    "conditions and chains": with_conditions_and_chains,
    **{path.name: (lambda path=path: mfp.load_config_file(path)) for path in SHIPPED},
}


@pytest.mark.parametrize("name", CONFIGS)
def test_each_job_reads_from_its_params_what_resolving_the_config_gives(name):
    typed, experiments, settings, run = resolved(CONFIGS[name]())
    # What a figure draws; which experiments a full run draws is not a figure's setting.
    figures = {k: v for k, v in typed.figures.to_dict().items() if k != "experiments"}
    for experiment_name, experiment in experiments.items():
        train = mfp.train_job_experiment(
            experiment_name,
            job_params(settings, "train", experiment_name),
            run[("train", experiment_name)],
        )
        assert train == dataclasses.replace(experiment, task_name=""), experiment_name
        task, seed, evaluation = mfp.evaluate_job_settings(
            job_params(settings, "evaluate", experiment_name)
        )
        assert (task, seed) == (experiment.task, experiment.seed)
        assert evaluation == typed.evaluation
        assert list(evaluation.conditions) == list(typed.evaluation.conditions)
        analysis = mfp.parse_setting_params(job_params(settings, "analysis", experiment_name))
        assert mf.TaskConfig.from_dict(analysis["task"], "task") == experiment.task
        assert analysis["seed"] == experiment.seed
        options = mf.AnalysisConfig.from_dict(analysis["analysis"], "analysis")
        assert options == typed.analysis.model_copy(update={"replicate": 0})
        for rule in ("experiment_figures", "analysis_figures"):
            read = mfp.parse_setting_params(job_params(settings, rule, experiment_name))
            assert read["figures"] == figures, rule


def test_run_settings_change_how_a_job_runs_and_never_its_params():
    config = tiny_config()
    _, _, settings, run = resolved(config)
    at("trainings.quick.checkpoint", {"times": 2})(config)
    at("trainings.quick.keep_checkpoints", 4)(config)
    config["jax_cache_dir"] = "elsewhere/cache"
    _, _, edited_settings, edited_run = resolved(config)
    assert edited_settings == settings
    for key, value in run.items():
        assert edited_run[key] != value, key
        assert edited_run[key]["jax_cache_dir"] == "elsewhere/cache"
    assert edited_run[("train", "quiet")]["training"]["keep_checkpoints"] == 4


def test_an_empty_mapping_survives_the_params():
    flat = mfp.flatten_settings({"a": {}, "b": {"c": {}, "d": 1}})
    assert flat == {"a": {}, "b.c": {}, "b.d": 1}
    texts = [mfp.setting_param(k, v) for k, v in flat.items()]
    assert mfp.parse_setting_params(texts) == {"a": {}, "b": {"c": {}, "d": 1}}


def _config_reads(path: Path) -> list[int]:
    """Lines of a script that read `snakemake.config`."""
    tree = ast.parse(path.read_text())
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr == "config"
        and isinstance(node.value, ast.Name)
        and node.value.id == "snakemake"
    ]


@pytest.mark.parametrize(
    "script", sorted((ROOT / "workflow" / "scripts").glob("*.py")), ids=lambda path: path.name
)
def test_no_job_script_reads_the_config(script):
    assert _config_reads(script) == [], f"{script.name} reads snakemake.config"


def test_the_check_sees_a_script_that_reads_the_config(tmp_path):
    script = tmp_path / "bad.py"
    script.write_text('options = snakemake.config["figures"]\n')
    assert _config_reads(script) == [1]
