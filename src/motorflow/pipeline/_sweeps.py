"""Sweeps: a base experiment over a grid of settings, expanded into named experiments."""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from typing import Any

import pydantic

from .._config_base import merge_settings
from .._config_errors import ConfigError, config_error
from ._cross_experiment_specs import SweepSpec
from ._grid import grid_point_list
from ._workflow_config import ExperimentSpec

# At most this many experiments in a config, sweeps expanded (each is a train job and
# about four more). Nothing in a job's command grows with the sweep (a long description
# travels in a file: ``_job_argument``); Snakemake's planning does, a little faster than
# linearly (a dry run of 1,001 experiments: 38 s on an idle 2-core machine; of 10,000:
# 9 min 43 s and 2 GB; benchmarks/README.md). A study beyond this is several configs.
MAX_EXPERIMENTS = 10_000


def _nested(setting: str, value: Any) -> dict[str, Any]:
    """``"model.feedback.delay", 4`` as ``{"model": {"feedback": {"delay": 4}}}``."""
    nested: Any = value
    for key in reversed(setting.split(".")):
        nested = {key: nested}
    return nested


def grid_points(name: str, sweep: SweepSpec, path: str = "") -> dict[str, dict[str, Any]]:
    """Each experiment a sweep expands to, by name, with its grid values ``{setting: value}``.

    The name is the sweep's and each setting's last key with its value
    (``noise-noise_std0p05-hidden_size16``).
    """
    points: dict[str, dict[str, Any]] = {}
    for point_name, values in grid_point_list(name, sweep.grid):
        if point_name in points:
            raise ConfigError(
                f"{path}.grid",
                f"two grid points both expand to the experiment name {point_name!r}; "
                "make the values distinct",
            )
        points[point_name] = values
    return points


def expand_sweep(
    name: str, sweep: SweepSpec, experiments: Mapping[str, ExperimentSpec], path: str
) -> dict[str, ExperimentSpec]:
    if sweep.experiment not in experiments:
        raise ConfigError(
            f"{path}.experiment",
            f"{sweep.experiment!r} is not defined in experiments "
            f"(defined: {', '.join(experiments)})",
        )
    size = math.prod(len(values) for values in sweep.grid.values())
    if size > MAX_EXPERIMENTS:
        raise ConfigError(
            f"{path}.grid",
            f"expands to {size:,} experiments; a config has at most {MAX_EXPERIMENTS:,} "
            "(split the sweep or shorten its lists)",
        )
    expanded: dict[str, ExperimentSpec] = {}
    base = experiments[sweep.experiment].model_dump()
    for expanded_name, point in grid_points(name, sweep, path).items():
        spec = copy.deepcopy(base)
        for setting, value in point.items():
            if setting == "seed":
                spec["seed"] = value
            else:
                overrides = {k: v for k, v in spec["override"].items() if v is not None}
                spec["override"] = merge_settings(overrides, _nested(setting, value))
        try:
            expanded[expanded_name] = ExperimentSpec.model_validate(spec)
        except pydantic.ValidationError as error:
            raise config_error(error, f"{path} (as {expanded_name})", spec) from None
    return expanded
