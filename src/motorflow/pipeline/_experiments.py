"""Resolve a workflow config into named experiments.

Named blocks (``tasks``, ``models``, ``trainings``) combine into ``experiments``,
each optionally overriding parts of its blocks; ``sweeps`` expand a base
experiment over a grid of values into more experiments. Everything is checked
here, with errors naming the key path, before any job runs.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import Any

import equinox as eqx
import jax

from .._config import (
    ModelConfig,
    TaskConfig,
    check_model_fits_task,
    check_training_fits_model,
    check_training_fits_task,
)
from .._config_base import over_block
from .._config_errors import ConfigError, Problems
from .._config_errors import problems as problems_of
from .._identity import json_digest
from .._model._ensemble import build_model
from .._tasks import Task
from .._training._config import TrainConfig
from .._training._trainable import either, learning_rates, trained_subsets
from ._condition_sweeps import check_condition_sweeps
from ._experiment_checks import (
    check_analyses,
    check_chains,
    check_comparisons,
    check_drawn_experiments,
    check_drawn_replicate,
    check_movement_time,
    check_perturbation_times,
    check_protocols,
    check_trial_specs_fit,
)
from ._partners import check_partners
from ._sweeps import MAX_EXPERIMENTS, expand_sweep
from ._workflow_config import ExperimentSpec, WorkflowConfig, parse_config

BLOCKS = {
    "task": ("tasks", TaskConfig),
    "model": ("models", ModelConfig),
    "training": ("trainings", TrainConfig),
}


def _digest(value: Any, length: int = 10) -> str:
    return json_digest(value)[:length]


# Folders of a results folder that are not experiments.
RESERVED_NAMES = ("trials", "figures", "logs", "benchmarks", "exports")


def _check_experiment_name(name: str, path: str) -> None:
    if name in RESERVED_NAMES:
        raise ConfigError(
            path,
            f"{name!r} is the name of a folder of the results folder ({', '.join(RESERVED_NAMES)}); "
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

    @classmethod
    def from_train_settings(
        cls, name: str, settings: Mapping[str, Any], resume_only: Mapping[str, Any]
    ) -> Experiment:
        """The experiment of :meth:`train_settings` (as a train job's params give them)
        and the training keys that shape only the resume state and the log
        (`RESUME_ONLY_KEYS`, from the job's run settings).

        The task's block name is not among the settings (the trial store's path
        carries it), so `task_name` is empty.
        """
        return cls(
            name=name,
            task_name="",
            task=TaskConfig.from_dict(settings["task"], "task"),
            model=ModelConfig.from_dict(settings["model"], "model"),
            train=TrainConfig.from_dict({**settings["training"], **resume_only}, "training"),
            seed=settings["seed"],
            init_from=settings.get("init_from"),
            reset_optimizer=settings.get("reset_optimizer", True),
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


def _block(
    settings: WorkflowConfig, spec: ExperimentSpec, block: str, section: str, cls: Any, path: str
) -> Any:
    """The experiment's `block` (task, model or training): the named one, with the
    experiment's override merged over it."""
    reference = getattr(spec, block)
    defined = getattr(settings, section)
    if reference not in defined:
        raise ConfigError(
            f"{path}.{block}",
            f"{reference!r} is not defined in {section} (defined: {', '.join(defined)})",
        )
    override = getattr(spec.override, block)
    if override is None:
        return defined[reference]
    return over_block(defined[reference], override, f"{path}.override.{block}", cls)


@functools.lru_cache(maxsize=64)  # a sweep's experiments share their model's shapes
def _model_shapes(model: ModelConfig, n_task_inputs: int) -> Any:
    return eqx.filter_eval_shape(
        build_model,
        model,
        n_task_inputs=n_task_inputs,
        key=jax.eval_shape(lambda: jax.random.key(0)),
    )


def _check_trained_parts(blocks: Mapping[str, Any], path: str) -> None:
    """Trainable paths and per-part learning rates name parts of the model: checked on
    the model's shapes, which computes nothing (so the Snakemake controller never
    starts an accelerator)."""
    model = _model_shapes(blocks["model"], Task(blocks["task"]).n_inputs)
    subsets = trained_subsets(model, blocks["training"], f"{path}.training")
    learning_rates(
        model,
        either([subset for _, subset in subsets]),
        blocks["training"].optimizer,
        f"{path}.training.optimizer",
    )


def _resolve_one(
    settings: WorkflowConfig, name: str, spec: ExperimentSpec, path: str
) -> Experiment:
    problems = Problems()
    with problems.collecting():
        _check_experiment_name(name, path)
    blocks: dict[str, Any] = {}
    for block, (section, cls) in BLOCKS.items():
        with problems.collecting():
            blocks[block] = _block(settings, spec, block, section, cls, path)
    problems.raise_any()  # the checks below need every block
    # Each check is independent of the others: every problem is reported.
    if path.startswith("sweeps."):  # a sweep's point: "sweeps.<name> (as <experiment>)"
        sweep_path = path.split(" ", 1)[0]
        swept = settings.sweeps[sweep_path.removeprefix("sweeps.")].grid
        partners = (blocks["model"], blocks["training"], sweep_path, swept)
    else:
        partners = (blocks["model"], blocks["training"], path)
    for check, arguments in (
        (check_model_fits_task, (blocks["model"], blocks["task"], path)),
        (check_training_fits_model, (blocks["training"], blocks["model"], path)),
        (check_training_fits_task, (blocks["training"], blocks["task"], path)),
        (check_movement_time, (blocks["task"], blocks["model"], blocks["training"], path)),
        (check_partners, partners),
        (
            check_perturbation_times,
            (settings, name, spec, blocks["task"], blocks["model"], path),
        ),
        (check_trial_specs_fit, (blocks["task"], blocks["training"], path)),
        (_check_trained_parts, (blocks, path)),
    ):
        with problems.collecting():
            check(*arguments)
    problems.raise_any()
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


def _experiment_specs(
    settings: WorkflowConfig, problems: Problems | None = None
) -> dict[str, tuple[str, ExperimentSpec]]:
    """Every experiment's (config path, spec), sweeps expanded. With `problems`, a
    sweep that cannot expand is kept there and left out (the others are checked)."""
    collected = Problems() if problems is None else problems
    specs = {name: (f"experiments.{name}", spec) for name, spec in settings.experiments.items()}
    for sweep_name, sweep in settings.sweeps.items():
        path = f"sweeps.{sweep_name}"
        with collected.collecting():
            expanded = expand_sweep(sweep_name, sweep, settings.experiments, path)
            for name in expanded:
                if name in specs:
                    raise ConfigError(
                        path,
                        f"the sweep expands to the experiment name {name!r}, which "
                        f"{specs[name][0]} already uses; rename one of them",
                    )
            specs.update({name: (f"{path} (as {name})", spec) for name, spec in expanded.items()})
    if len(specs) > MAX_EXPERIMENTS:
        raise ConfigError(
            "sweeps",
            f"the config defines {len(specs):,} experiments; at most {MAX_EXPERIMENTS:,} "
            "are allowed",
        )
    if problems is None:
        collected.raise_any()
    return specs


def _typed(config: Mapping[str, Any] | WorkflowConfig) -> WorkflowConfig:
    return config if isinstance(config, WorkflowConfig) else parse_config(config)


def resolve_experiments(config: Mapping[str, Any] | WorkflowConfig) -> dict[str, Experiment]:
    """All experiments of a workflow config, sweeps expanded, in a stable order.

    Raises :class:`ConfigError` naming the key path of the problem found, or a
    :class:`ConfigErrors` naming each of several independent problems (a check that
    needs a part already found wrong is skipped).
    Computes nothing with JAX (model shapes only), so it starts no accelerator.
    """
    settings = _typed(config)
    problems = Problems()
    specs = _experiment_specs(settings, problems)
    experiments = {}
    said: set[tuple[str, str]] = set()
    for name, (path, spec) in specs.items():
        try:
            experiments[name] = _resolve_one(settings, name, spec, path)
        except ConfigError as error:
            for problem in problems_of(error):
                # Experiments sharing a bad block (or a bad evaluation condition)
                # meet the same problem: said once, under the first of them.
                if problem.path.startswith(path):
                    seen = (problem.path.removeprefix(path), problem.message)
                else:
                    seen = (problem.path, "")
                if seen not in said:
                    said.add(seen)
                    problems.errors.append(problem)
    # The checks across experiments see only the experiments that resolved: one
    # that did not has its problem reported already, and is not named again; nor is
    # a name a sweep that could not expand would have made.
    check_chains(experiments, specs, problems)
    unexpanded = tuple(
        name
        for name in settings.sweeps
        if not any(path.startswith(f"sweeps.{name} (as ") for path, _ in specs.values())
    )
    for check in (
        check_protocols,
        check_comparisons,
        check_condition_sweeps,
        check_drawn_experiments,
    ):
        check(settings, experiments, specs, problems, unexpanded=unexpanded)
    with problems.collecting():
        check_drawn_replicate(settings, experiments)
    check_analyses(settings, experiments, problems)
    problems.raise_any()
    return experiments


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
    check_chains(chain, specs)
    return chain[name]
