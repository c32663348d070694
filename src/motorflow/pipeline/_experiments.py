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
import math
import re
from collections.abc import Mapping
from typing import Any

import equinox as eqx
import jax
import pydantic

from .._config import (
    ModelConfig,
    TaskConfig,
    TrainConfig,
    check_model_fits_task,
    check_training_fits_model,
)
from .._config_base import ConfigError, config_error, merge_settings, over_block
from .._identity import canonical_json, json_digest
from .._model._ensemble import build_model, make_ensemble
from .._task import Task
from .._training._trainable import either, learning_rate_scales, trained_subsets
from ._workflow_config import ExperimentSpec, SweepSpec, WorkflowConfig, parse_config

BLOCKS = {
    "task": ("tasks", TaskConfig),
    "model": ("models", ModelConfig),
    "training": ("trainings", TrainConfig),
}


def _digest(value: Any, length: int = 10) -> str:
    return json_digest(value)[:length]


MAX_EXPERIMENTS = 1000
# Folders of results/ that are not experiments.
RESERVED_NAMES = ("trials", "figures", "logs", "benchmarks")


def _check_experiment_name(name: str, path: str) -> None:
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
    init_from: str | None = None
    reset_optimizer: bool = True

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
        chained = (
            {"init_from": self.init_from, "reset_optimizer": self.reset_optimizer}
            if self.init_from
            else {}
        )
        return {
            "task": self.task.to_dict(),
            "model": self.model.to_dict(),
            "training": self.train.result_settings(),
            "seed": self.seed,
            **chained,
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
            "init_from": self.init_from,
            "reset_optimizer": self.reset_optimizer,
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
            init_from=data.get("init_from"),
            reset_optimizer=data.get("reset_optimizer", True),
        )


def experiment_keys(seed: int) -> dict[str, jax.Array]:
    """The experiment's independent random streams, each ``fold_in(key(seed), i)``:
    weights, training trials, training noise, evaluation noise, the validation set's
    perturbations, the evaluation conditions' drawn settings, and the analyses' (the
    fixed-point search's starting states). A new stream goes at the end, so the
    others keep their keys."""
    root = jax.random.key(seed)
    names = ("init", "trials", "train", "evaluate", "validation", "conditions", "analysis")
    return {name: jax.random.fold_in(root, index) for index, name in enumerate(names)}


# Trial specs are generated up front into Zarr: 6 float32 values per trial, the go
# step of a task with a go cue, plus
# each perturbation's `active` flag and drawn settings.
MAX_TRIAL_SPEC_BYTES = 8 * 2**30


def trial_spec_bytes(task: TaskConfig) -> int:
    """Bytes of one training trial's spec."""
    values = 6 + task.has_go_cue + sum(1 + len(p.DRAWN) for p in task.perturbations)
    return 4 * values


def _check_trial_specs_fit(task: TaskConfig, training: TrainConfig, path: str) -> None:
    sets = 1 if training.shared_trials else training.n_replicates
    per_trial = trial_spec_bytes(task)
    size = sets * training.n_batches * training.batch_size * per_trial
    if size > MAX_TRIAL_SPEC_BYTES:
        raise ConfigError(
            f"{path}.training",
            f"the training trial specs would take {size / 2**30:,.0f} GiB "
            f"({sets} trial sets x n_batches {training.n_batches} x batch_size "
            f"{training.batch_size} x {per_trial} bytes); at most "
            f"{MAX_TRIAL_SPEC_BYTES // 2**30} GiB are allowed: lower n_batches or "
            "batch_size, or set shared_trials: true",
        )


def _check_perturbation_times(
    settings: WorkflowConfig,
    name: str,
    spec: ExperimentSpec,
    task: TaskConfig,
    model: ModelConfig,
    path: str,
) -> None:
    """Every perturbation of the experiment's training and evaluation begins within a trial."""
    duration = task.n_steps * model.dt
    task_path = f"{path}.override.task" if spec.override.task is not None else f"tasks.{spec.task}"
    located = [(f"{task_path}.perturbations[{i}]", p) for i, p in enumerate(task.perturbations)]
    for condition, perturbations in settings.evaluation.conditions.items():
        located += [
            (f"evaluation.conditions.{condition}[{i}]", p) for i, p in enumerate(perturbations)
        ]
    for where, perturbation in located:
        if perturbation.latest_time() >= duration - 1e-9:
            raise ConfigError(
                where,
                f"the {perturbation.kind} begins at up to {perturbation.latest_time():g} s, "
                f"but the trials of experiment {name!r} last "
                f"{duration:g} s (n_steps {task.n_steps} x dt {model.dt:g}); make it begin "
                "earlier or the trials longer",
            )


def _resolve_one(
    settings: WorkflowConfig, name: str, spec: ExperimentSpec, path: str
) -> Experiment:
    _check_experiment_name(name, path)
    blocks: dict[str, Any] = {}
    for block, (section, cls) in BLOCKS.items():
        reference = getattr(spec, block)
        defined = getattr(settings, section)
        if reference not in defined:
            raise ConfigError(
                f"{path}.{block}",
                f"{reference!r} is not defined in {section} (defined: {', '.join(defined)})",
            )
        override = getattr(spec.override, block)
        if override is None:
            blocks[block] = defined[reference]
        else:
            blocks[block] = over_block(
                defined[reference], override, f"{path}.override.{block}", cls
            )
    check_model_fits_task(blocks["model"], blocks["task"], path)
    check_training_fits_model(blocks["training"], blocks["model"], path)
    _check_perturbation_times(settings, name, spec, blocks["task"], blocks["model"], path)
    _check_trial_specs_fit(blocks["task"], blocks["training"], path)
    # Trainable paths name parts of the model: check them on the model's shapes, which
    # computes nothing (so the Snakemake controller never starts an accelerator).
    model = eqx.filter_eval_shape(
        build_model,
        blocks["model"],
        n_task_inputs=Task(blocks["task"]).n_inputs,
        key=jax.eval_shape(lambda: jax.random.key(0)),
    )
    subsets = trained_subsets(model, blocks["training"], f"{path}.training")
    learning_rate_scales(
        model,
        either([subset for _, subset in subsets]),
        blocks["training"].optimizer,
        f"{path}.training.optimizer",
    )
    return Experiment(
        name=name,
        task_name=spec.task,
        task=blocks["task"],
        model=blocks["model"],
        train=blocks["training"],
        seed=spec.seed,
        init_from=spec.init_from,
        reset_optimizer=spec.reset_optimizer,
    )


def _model_shapes(experiment: Experiment) -> list[tuple[int, ...]]:
    """The shapes of the ensemble's arrays, in order (computed without running JAX)."""
    ensemble = eqx.filter_eval_shape(
        make_ensemble,
        experiment.model,
        n_replicates=experiment.train.n_replicates,
        n_task_inputs=Task(experiment.task).n_inputs,
        key=jax.eval_shape(lambda: jax.random.key(0)),
    )
    return [
        leaf.shape for leaf in jax.tree.leaves(ensemble) if isinstance(leaf, jax.ShapeDtypeStruct)
    ]


def _state_layout(train: TrainConfig) -> dict[str, Any]:
    """The training settings that shape the optimizer state (a continued state needs them)."""
    optimizer = train.optimizer
    return {
        "optimizer.name": optimizer.name,
        "optimizer.momentum": optimizer.name == "sgd" and optimizer.momentum > 0,
        # Every array that trains in some stage has a state.
        "trained": sorted(train.trained_paths),
    }


def _check_init_from(child: Experiment, parent: Experiment, path: str) -> None:
    """`child` can start from `parent`'s trained model (and optimizer state)."""
    if child.train.n_replicates != parent.train.n_replicates:
        raise ConfigError(
            f"{path}.init_from",
            f"{child.name!r} trains {child.train.n_replicates} replicates but starts from "
            f"{parent.name!r}, which trains {parent.train.n_replicates}; they must agree",
        )
    if _model_shapes(child) != _model_shapes(parent):
        raise ConfigError(
            f"{path}.init_from",
            f"the model of {child.name!r} does not have the shapes of {parent.name!r}'s, "
            "whose trained weights it starts from: keep the network size, cell and plant "
            "(settings without weights, such as noise, delay and mass, may differ)",
        )
    if child.reset_optimizer:
        return
    ours, theirs = _state_layout(child.train), _state_layout(parent.train)
    changed = [key for key in ours if ours[key] != theirs[key]]
    if changed:
        raise ConfigError(
            f"{path}.reset_optimizer",
            f"continuing {parent.name!r}'s optimizer state needs the same "
            f"{', '.join(changed)} as its training; change them back or set "
            "reset_optimizer: true",
        )


def _check_chains(
    experiments: Mapping[str, Experiment], specs: Mapping[str, tuple[str, ExperimentSpec]]
) -> None:
    """Every `init_from` names an experiment it can start from, and no chain loops."""
    for name, experiment in experiments.items():
        path = specs[name][0]
        seen = [name]
        parent = experiment.init_from
        while parent is not None:
            if parent not in experiments:
                raise ConfigError(
                    f"{path}.init_from",
                    f"{parent!r} is not an experiment (defined: {', '.join(specs)})",
                )
            if parent in seen:
                loop = " -> ".join([*seen, parent])
                raise ConfigError(
                    f"{path}.init_from", f"the experiments start from each other in a loop: {loop}"
                )
            seen.append(parent)
            parent = experiments[parent].init_from
        if experiment.init_from is not None:
            _check_init_from(experiment, experiments[experiment.init_from], path)


def _check_protocols(settings: WorkflowConfig, experiments: Mapping[str, Experiment]) -> None:
    for name, protocol in settings.protocols.items():
        for index, stage in enumerate(protocol.stages):
            if stage not in experiments:
                raise ConfigError(
                    f"protocols.{name}.stages[{index}]",
                    f"{stage!r} is not an experiment (defined: {', '.join(experiments)})",
                )


def _value_label(value: Any) -> str:
    text = canonical_json(value).strip('"')
    return re.sub(r"[^A-Za-z0-9_]", "", text.replace(".", "p").replace("-", "m"))


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
    settings = list(sweep.grid)
    points: dict[str, dict[str, Any]] = {}
    for combination in itertools.product(*(sweep.grid[s] for s in settings)):
        labels = [f"{s.split('.')[-1]}{_value_label(v)}" for s, v in zip(settings, combination)]
        point_name = "-".join([name, *labels])
        if point_name in points:
            raise ConfigError(
                f"{path}.grid",
                f"two grid points both expand to the experiment name {point_name!r}; "
                "make the values distinct",
            )
        points[point_name] = dict(zip(settings, combination))
    return points


def _expand_sweep(
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


def _experiment_specs(settings: WorkflowConfig) -> dict[str, tuple[str, ExperimentSpec]]:
    """Every experiment's (config path, spec), sweeps expanded."""
    specs = {name: (f"experiments.{name}", spec) for name, spec in settings.experiments.items()}
    for sweep_name, sweep in settings.sweeps.items():
        path = f"sweeps.{sweep_name}"
        for name, spec in _expand_sweep(sweep_name, sweep, settings.experiments, path).items():
            if name in specs:
                raise ConfigError(
                    path,
                    f"the sweep expands to the experiment name {name!r}, which "
                    f"{specs[name][0]} already uses; rename one of them",
                )
            specs[name] = (f"{path} (as {name})", spec)
    if len(specs) > MAX_EXPERIMENTS:
        raise ConfigError(
            "sweeps",
            f"the config defines {len(specs):,} experiments; at most {MAX_EXPERIMENTS:,} "
            "are allowed",
        )
    return specs


def _typed(config: Mapping[str, Any] | WorkflowConfig) -> WorkflowConfig:
    return config if isinstance(config, WorkflowConfig) else parse_config(config)


def resolve_experiments(config: Mapping[str, Any] | WorkflowConfig) -> dict[str, Experiment]:
    """All experiments of a workflow config, sweeps expanded, in a stable order.

    Raises :class:`ConfigError` naming the key path of the first problem found.
    Computes nothing with JAX (model shapes only), so it starts no accelerator.
    """
    settings = _typed(config)
    specs = _experiment_specs(settings)
    experiments = {
        name: _resolve_one(settings, name, spec, path) for name, (path, spec) in specs.items()
    }
    _check_chains(experiments, specs)
    _check_protocols(settings, experiments)
    _check_drawn_replicate(settings, experiments)
    return experiments


def _check_drawn_replicate(settings: WorkflowConfig, experiments: Mapping[str, Experiment]) -> None:
    """The replicate the analysis figures draw exists in every experiment."""
    replicate = settings.analysis.replicate
    for name, experiment in experiments.items():
        if replicate >= experiment.train.n_replicates:
            raise ConfigError(
                "analysis.replicate",
                f"is {replicate}, but experiment {name!r} has "
                f"{experiment.train.n_replicates} replicates (0 to "
                f"{experiment.train.n_replicates - 1}); choose one every experiment has",
            )


def resolve_experiment(config: Mapping[str, Any] | WorkflowConfig, name: str) -> Experiment:
    """The experiment `name` of a workflow config (a sweep's point included)."""
    settings = _typed(config)
    specs = _experiment_specs(settings)
    if name not in specs:
        raise ConfigError(
            "experiments", f"no experiment is named {name!r}; defined: {', '.join(specs)}"
        )
    # The experiment and the ones it starts from, checked as a chain.
    chain: dict[str, Experiment] = {}
    current: str | None = name
    while current is not None and current in specs and current not in chain:
        path, spec = specs[current]
        chain[current] = _resolve_one(settings, current, spec, path)
        current = chain[current].init_from
    _check_chains(chain, specs)
    return chain[name]
