"""Read and check a workflow config as the workflow does, before any job: the one
function the Snakefile (workflow/rules/common.smk) and ``motorflow check`` share.

Nothing here evaluates the config: the files are read by the project's own loader
(:func:`load_config_file`), never by Snakemake's, which runs YTE templates.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jsonschema

from .._config_errors import ConfigError, Problems
from ._config_file import load_config_file
from ._config_schema import config_json_schema
from ._experiments import Experiment, _experiment_specs, resolve_experiments
from ._job_settings import job_run_settings, job_settings
from ._sweeps import grid_points
from ._workflow_config import WorkflowConfig, parse_config


@dataclasses.dataclass(frozen=True)
class CheckedConfig:
    """A config that passed every check, with what the workflow builds from it.

    **Arguments:**

    - `config`: the plain config as read (files merged, then overrides).
    - `settings`: the typed config.
    - `experiments`: every experiment, sweeps expanded, by name.
    - `blocks`: each experiment's (task, model, training) block names.
    - `job_settings`, `job_run_settings`: each job's settings (see `job_settings`).
    - `sweeps`: each sweep's experiments with their grid values.
    """

    config: dict[str, Any]
    settings: WorkflowConfig
    experiments: dict[str, Experiment]
    blocks: dict[str, tuple[str, str, str]]
    job_settings: Any
    job_run_settings: Any
    sweeps: dict[str, dict[str, dict[str, Any]]]

    def summary(self) -> list[str]:
        """A line per experiment: its name, blocks and replicate count."""
        return [
            f"{name}: task {task}, model {model}, training {training}, "
            f"n_replicates {self.experiments[name].train.n_replicates}"
            for name, (task, model, training) in self.blocks.items()
        ]


def merged(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """`override` over `base` at every depth, as Snakemake merges config files and
    ``--config`` (a mapping over a mapping merges; anything else replaces)."""
    result = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping):
            old = result.get(key)
            result[key] = merged(old if isinstance(old, Mapping) else {}, value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def read_config(
    paths: Sequence[str | Path], overrides: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The files in `paths` read by the safe loader and merged in order, then `overrides`."""
    config: dict[str, Any] = {}
    for path in paths:
        config = merged(config, load_config_file(path))
    return merged(config, overrides or {})


def _check_schema(config: Mapping[str, Any], settings: WorkflowConfig) -> None:
    """The JSON Schema Snakemake validates (generated from the typed config) accepts it."""
    schema = config_json_schema()
    validator = jsonschema.validators.validator_for(schema)(schema)
    error = jsonschema.exceptions.best_match(
        validator.iter_errors({**config, **settings.filled_sections()})
    )
    if error is not None:
        path = ".".join(str(part) for part in error.absolute_path)
        raise ConfigError(path or "(top level)", f"the config's schema refuses it: {error.message}")


def check_config(config: Mapping[str, Any]) -> CheckedConfig:
    """Every check the workflow runs before any job, on the plain `config`; raises a
    :class:`ConfigError` naming the key path of the problem, or a
    :class:`ConfigErrors` naming each of several independent ones (the typed
    config's key errors all at once; when there are none, every cross-field problem).
    """
    settings = parse_config(config)
    problems = Problems()
    with problems.collecting():
        experiments = resolve_experiments(settings)
    with problems.collecting():
        _check_schema(config, settings)
    problems.raise_any()
    specs = _experiment_specs(settings)
    return CheckedConfig(
        config=dict(config),
        settings=settings,
        experiments=experiments,
        blocks={name: (spec.task, spec.model, spec.training) for name, (_, spec) in specs.items()},
        job_settings=job_settings(settings, experiments),
        job_run_settings=job_run_settings(settings, experiments),
        sweeps={
            name: grid_points(name, sweep, f"sweeps.{name}")
            for name, sweep in settings.sweeps.items()
        },
    )
