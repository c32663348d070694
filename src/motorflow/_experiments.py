"""Resolve a workflow config into named experiments.

Named blocks (``tasks``, ``models``, ``trainings``) combine into ``experiments``,
each optionally overriding parts of its blocks; ``sweeps`` expand a base
experiment over a grid of values into more experiments. Everything is checked
here, with errors naming the key path, before any job runs.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import re
from collections.abc import Mapping
from typing import Any

import equinox as eqx
import jax

from ._config import (
    ConfigError,
    ModelConfig,
    TaskConfig,
    TrainConfig,
    check_model_fits_task,
)
from ._ensemble import build_model
from ._identity import canonical_json, json_digest
from ._tasks import ReachTask
from ._trainable import trainable_filter

NAME = re.compile(r"^[A-Za-z0-9_-]+$")
BLOCKS = {
    "task": ("tasks", TaskConfig),
    "model": ("models", ModelConfig),
    "training": ("trainings", TrainConfig),
}
EXPERIMENT_KEYS = ("task", "model", "training", "seed", "override")


def _digest(value: Any, length: int = 10) -> str:
    return json_digest(value)[:length]


MAX_NAME_LENGTH = 64
MAX_EXPERIMENTS = 1000
# Folders of results/ that are not experiments.
RESERVED_NAMES = ("trials", "figures", "logs", "benchmarks")


def check_name(name: Any, path: str) -> None:
    """Names become paths: only letters, digits, ``_`` and ``-``, at most 64 characters."""
    if not isinstance(name, str) or not NAME.match(name):
        raise ConfigError(
            path,
            f"{name!r} is not a valid name: use only letters, digits, '_' and '-' "
            "(names become file paths)",
        )
    if len(name) > MAX_NAME_LENGTH:
        raise ConfigError(
            path,
            f"{name[:20]!r}... is {len(name)} characters long; names have at most "
            f"{MAX_NAME_LENGTH} (they become file paths)",
        )


def _check_experiment_name(name: str, path: str) -> None:
    check_name(name, path)
    if name in RESERVED_NAMES:
        raise ConfigError(
            path,
            f"{name!r} is the name of a folder of results/ ({', '.join(RESERVED_NAMES)}); "
            "give the experiment another name",
        )


@dataclasses.dataclass(frozen=True)
class Experiment:
    """One experiment: a task, a model and a training setup, with its seed.

    Every random stream of the experiment derives from `seed` (see :meth:`keys`).
    """

    name: str
    task_name: str
    task: TaskConfig
    model: ModelConfig
    train: TrainConfig
    seed: int

    def dataset_spec(self) -> dict[str, Any]:
        """Everything the training trial specs depend on (experiments that agree share them)."""
        return {
            "task": self.task.to_dict(),
            "n_replicates": 1 if self.train.shared_trials else self.train.n_replicates,
            "n_batches": self.train.n_batches,
            "batch_size": self.train.batch_size,
            "seed": self.seed,
        }

    @property
    def dataset(self) -> str:
        """Name of the trial-spec dataset: the task name and a digest of its spec."""
        return f"{self.task_name}-{_digest(self.dataset_spec())}"

    def train_settings(self) -> dict[str, Any]:
        """Every setting the train stage's result depends on (not the checkpoint cadence).

        The train rule's params are exactly these, so Snakemake retrains when one of
        them changes and never otherwise.
        """
        return {
            "task": self.task.to_dict(),
            "model": self.model.to_dict(),
            "training": self.train.result_settings(),
            "seed": self.seed,
        }

    def evaluate_settings(self) -> dict[str, Any]:
        """The settings the evaluate stage reads beside the trained model."""
        return {"task": self.task.to_dict(), "seed": self.seed}

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "task_name": self.task_name,
            "task": self.task.to_dict(),
            "model": self.model.to_dict(),
            "train": self.train.to_dict(),
            "seed": self.seed,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Experiment:
        return cls(
            name=data["name"],
            task_name=data["task_name"],
            task=TaskConfig.from_dict(data["task"], "task"),
            model=ModelConfig.from_dict(data["model"], "model"),
            train=TrainConfig.from_dict(data["train"], "train"),
            seed=data["seed"],
        )


def experiment_keys(seed: int) -> dict[str, jax.Array]:
    """The experiment's independent random streams, each ``fold_in(key(seed), i)``."""
    root = jax.random.key(seed)
    return {
        name: jax.random.fold_in(root, index)
        for index, name in enumerate(("init", "trials", "train", "evaluate"))
    }


def _deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _mapping(config: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any]:
    value = config.get(key) or {}
    if not isinstance(value, Mapping):
        raise ConfigError(path, f"must be a mapping of named entries, got {value!r}")
    return value


def _resolve_one(config: Mapping[str, Any], name: str, spec: Any, path: str) -> Experiment:
    _check_experiment_name(name, path)
    if not isinstance(spec, Mapping):
        raise ConfigError(path, f"must be a mapping with keys {', '.join(EXPERIMENT_KEYS)}")
    unknown = sorted(set(spec) - set(EXPERIMENT_KEYS))
    if unknown:
        raise ConfigError(
            f"{path}.{unknown[0]}", f"unknown key; allowed keys here: {', '.join(EXPERIMENT_KEYS)}"
        )
    override = spec.get("override") or {}
    if not isinstance(override, Mapping):
        raise ConfigError(f"{path}.override", f"must be a mapping, got {override!r}")
    bad = sorted(set(override) - set(BLOCKS))
    if bad:
        raise ConfigError(
            f"{path}.override.{bad[0]}", f"unknown block; allowed: {', '.join(BLOCKS)}"
        )
    blocks: dict[str, Any] = {}
    for block, (section, cls) in BLOCKS.items():
        reference = spec.get(block)
        defined = _mapping(config, section, section)
        if reference is None:
            raise ConfigError(
                f"{path}.{block}",
                f"missing; name one of the {section}: {', '.join(defined) or 'none defined'}",
            )
        if reference not in defined:
            raise ConfigError(
                f"{path}.{block}",
                f"{reference!r} is not defined in {section} (defined: {', '.join(defined) or 'none'})",
            )
        base = defined[reference] or {}
        if not isinstance(base, Mapping):
            raise ConfigError(f"{section}.{reference}", f"must be a mapping, got {base!r}")
        merged = _deep_merge(base, override.get(block) or {})
        blocks[block] = cls.from_dict(
            merged, f"{path}.override.{block}" if block in override else f"{section}.{reference}"
        )
    seed = spec.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**31:
        raise ConfigError(f"{path}.seed", f"must be an integer in [0, 2**31), got {seed!r}")
    check_model_fits_task(blocks["model"], blocks["task"], path)
    # Trainable paths name parts of the model: check them on the model's shapes, which
    # computes nothing (so the Snakemake controller never starts an accelerator).
    model = eqx.filter_eval_shape(
        build_model,
        blocks["model"],
        n_task_inputs=ReachTask(blocks["task"]).n_inputs,
        key=jax.eval_shape(lambda: jax.random.key(0)),
    )
    trainable_filter(model, blocks["training"].trainable, f"{path}.training.trainable")
    return Experiment(
        name=name,
        task_name=spec["task"],
        task=blocks["task"],
        model=blocks["model"],
        train=blocks["training"],
        seed=seed,
    )


def _value_label(value: Any) -> str:
    text = canonical_json(value).strip('"')
    return re.sub(r"[^A-Za-z0-9_]", "", text.replace(".", "p").replace("-", "m"))


def _expand_sweep(
    name: str, sweep: Any, experiments: Mapping[str, Any], path: str
) -> dict[str, dict[str, Any]]:
    check_name(name, path)
    allowed = ("experiment", "grid")
    if not isinstance(sweep, Mapping):
        raise ConfigError(path, f"must be a mapping with keys {', '.join(allowed)}")
    unknown = sorted(set(sweep) - set(allowed))
    if unknown:
        raise ConfigError(
            f"{path}.{unknown[0]}", f"unknown key; allowed keys here: {', '.join(allowed)}"
        )
    base_name = sweep.get("experiment")
    if base_name not in experiments:
        raise ConfigError(
            f"{path}.experiment",
            f"{base_name!r} is not defined in experiments (defined: {', '.join(experiments) or 'none'})",
        )
    grid = sweep.get("grid")
    if not isinstance(grid, Mapping) or not grid:
        raise ConfigError(
            f"{path}.grid",
            "must map setting paths (e.g. model.feedback.noise_std) to lists of values",
        )
    for setting, values in grid.items():
        block = str(setting).split(".")[0]
        if block not in (*BLOCKS, "seed") or (block == "seed") != (setting == "seed"):
            raise ConfigError(
                f"{path}.grid.{setting}",
                "a sweep setting is 'seed' or a dotted path starting with task., model. or training.",
            )
        if not isinstance(values, list) or not values:
            raise ConfigError(
                f"{path}.grid.{setting}", f"must be a non-empty list of values, got {values!r}"
            )
    size = 1
    for values in grid.values():
        size *= len(values)
    if size > MAX_EXPERIMENTS:
        raise ConfigError(
            f"{path}.grid",
            f"expands to {size:,} experiments; a config has at most {MAX_EXPERIMENTS:,} "
            "(split the sweep or shorten its lists)",
        )
    expanded: dict[str, dict[str, Any]] = {}
    base = experiments[base_name]
    settings = list(grid)
    for combination in itertools.product(*(grid[s] for s in settings)):
        spec = copy.deepcopy(dict(base))
        labels = []
        for setting, value in zip(settings, combination):
            labels.append(f"{setting.split('.')[-1]}{_value_label(value)}")
            if setting == "seed":
                spec["seed"] = value
                continue
            block, *keys = setting.split(".")
            nested: Any = value
            for key in reversed(keys):
                nested = {key: nested}
            spec["override"] = _deep_merge(spec.get("override") or {}, {block: nested})
        expanded_name = "-".join([name, *labels])
        if expanded_name in expanded:
            raise ConfigError(
                f"{path}.grid",
                f"two grid points both expand to the experiment name {expanded_name!r}; "
                "make the values distinct",
            )
        expanded[expanded_name] = spec
    return expanded


def _experiment_specs(config: Mapping[str, Any]) -> dict[str, tuple[str, Any]]:
    """Every experiment's (config path, spec), sweeps expanded, names checked."""
    for section in ("tasks", "models", "trainings"):
        for name in _mapping(config, section, section):
            check_name(name, f"{section}.{name}")
    experiments = _mapping(config, "experiments", "experiments")
    sweeps = _mapping(config, "sweeps", "sweeps")
    specs: dict[str, tuple[str, Any]] = {
        name: (f"experiments.{name}", spec) for name, spec in experiments.items()
    }
    for sweep_name, sweep in sweeps.items():
        path = f"sweeps.{sweep_name}"
        for name, spec in _expand_sweep(sweep_name, sweep, experiments, path).items():
            if name in specs:
                raise ConfigError(
                    path,
                    f"the sweep expands to the experiment name {name!r}, which "
                    f"{specs[name][0]} already uses; rename one of them",
                )
            specs[name] = (f"{path} (as {name})", spec)
    if not specs:
        raise ConfigError("experiments", "no experiments are defined; add at least one")
    if len(specs) > MAX_EXPERIMENTS:
        raise ConfigError(
            "sweeps",
            f"the config defines {len(specs):,} experiments; at most {MAX_EXPERIMENTS:,} "
            "are allowed",
        )
    return specs


def resolve_experiments(config: Mapping[str, Any]) -> dict[str, Experiment]:
    """All experiments of a workflow config, sweeps expanded, in a stable order.

    Raises :class:`ConfigError` naming the key path of the first problem found.
    Computes nothing with JAX (model shapes only), so it starts no accelerator.
    """
    specs = _experiment_specs(config)
    return {name: _resolve_one(config, name, spec, path) for name, (path, spec) in specs.items()}


def resolve_experiment(config: Mapping[str, Any], name: str) -> Experiment:
    """The experiment `name` of a workflow config (a sweep's point included)."""
    specs = _experiment_specs(config)
    if name not in specs:
        raise ConfigError(
            "experiments", f"no experiment is named {name!r}; defined: {', '.join(specs)}"
        )
    path, spec = specs[name]
    return _resolve_one(config, name, spec, path)
