"""The settings each pipeline job depends on: its rule params, hence its rerun trigger."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ._experiments import Experiment
from ._identity import canonical_json, code_version

JobKey = tuple[str, str]


def flatten_settings(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested mappings as ``{"a.b.c": leaf}`` (lists are leaves), in sorted key order."""
    if not isinstance(value, Mapping):
        return {prefix: value}
    flat: dict[str, Any] = {}
    for key in sorted(value):
        flat.update(flatten_settings(value[key], f"{prefix}.{key}" if prefix else str(key)))
    return flat


def job_settings(
    config: Mapping[str, Any], experiments: Mapping[str, Experiment]
) -> dict[JobKey, dict[str, Any]]:
    """Flat settings (``{"model.feedback.delay": 2, ...}``) per job ``(rule, wildcard)``.

    Each job gets exactly the settings its outputs depend on, so Snakemake reruns it
    when one of them changes and never otherwise: the train job its experiment's
    task, model, training (without the checkpoint cadence) and seed; evaluate the
    task, seed and `evaluation`; figures the `figures` options. With `track_code`,
    the library's code version is a setting of the train and evaluate jobs.
    `config` has its top-level defaults filled in (``evaluation``, ``figures``, ...).
    """
    code = {"code": code_version()} if config.get("track_code") else {}
    figures = flatten_settings({"figures": config["figures"]})
    settings: dict[JobKey, dict[str, Any]] = {}
    for name, experiment in experiments.items():
        settings[("trials", experiment.dataset)] = flatten_settings(experiment.dataset_spec())
        settings[("train", name)] = {**flatten_settings(experiment.train_settings()), **code}
        evaluate = {**experiment.evaluate_settings(), "evaluation": config["evaluation"]}
        settings[("evaluate", name)] = {**flatten_settings(evaluate), **code}
        settings[("experiment_figures", name)] = dict(figures)
    settings[("comparison_figure", "")] = {**figures, "experiments": list(experiments)}
    return settings


def setting_param(name: str, value: Any) -> str:
    """One setting as the text ``name=<canonical JSON value>`` (one rule param)."""
    return f"{name}={canonical_json(value)}"


def parse_setting_params(params: Any) -> dict[str, Any]:
    """Nested settings back from :func:`setting_param` texts (the inverse of flattening)."""
    nested: dict[str, Any] = {}
    for text in params:
        name, _, value = text.partition("=")
        *parents, last = name.split(".")
        node = nested
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = json.loads(value)
    return nested
