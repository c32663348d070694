"""Checks of resolved experiments that no single block can make: trial specs that fit
in memory, perturbation windows inside the trial, chains whose parent and child fit
together, protocols, the analysed replicate and each analysis's own check."""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import equinox as eqx
import jax

from .._analysis._config import ANALYSES
from .._config import ModelConfig, TaskConfig
from .._config_errors import ConfigError, Problems
from .._model._ensemble import make_ensemble
from .._tasks import Task
from .._training._config import TrainConfig
from ._workflow_config import ExperimentSpec, WorkflowConfig

if TYPE_CHECKING:  # it imports these checks
    from ._experiments import Experiment

# Trial specs are generated up front into Zarr: 6 float32 values per trial, the go
# step of a task with a go cue, plus each perturbation's `active` flag and drawn settings.
MAX_TRIAL_SPEC_BYTES = 8 * 2**30


def trial_spec_bytes(task: TaskConfig) -> int:
    """Bytes of one training trial's spec."""
    values = 6 + task.has_go_cue + sum(1 + len(p.DRAWN) for p in task.perturbations)
    return 4 * values


def check_trial_specs_fit(task: TaskConfig, training: TrainConfig, path: str) -> None:
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


def check_perturbation_times(
    settings: WorkflowConfig,
    name: str,
    spec: ExperimentSpec,
    task: TaskConfig,
    model: ModelConfig,
    path: str,
) -> None:
    """Every perturbation of the experiment's training and evaluation begins within a
    trial and fits the model (an intervention's units exist)."""
    duration = task.n_steps * model.dt
    task_path = f"{path}.override.task" if spec.override.task is not None else f"tasks.{spec.task}"
    located = [(f"{task_path}.perturbations[{i}]", p) for i, p in enumerate(task.perturbations)]
    for condition, perturbations in settings.evaluation.conditions.items():
        located += [
            (f"evaluation.conditions.{condition}[{i}]", p) for i, p in enumerate(perturbations)
        ]
    for where, perturbation in located:
        problem = perturbation.model_problem(model.network.hidden_size)
        if problem is not None:
            raise ConfigError(
                where,
                f"{problem} in experiment {name!r} (model {spec.model!r}); choose units "
                "below that or a larger network",
            )
        if perturbation.latest_time() >= duration - 1e-9:
            raise ConfigError(
                where,
                f"the {perturbation.kind} begins at up to {perturbation.latest_time():g} s, "
                f"but the trials of experiment {name!r} last "
                f"{duration:g} s (n_steps {task.n_steps} x dt {model.dt:g}); make it begin "
                "earlier or the trials longer",
            )


def check_movement_time(
    task: TaskConfig, model: ModelConfig, train: TrainConfig, path: str
) -> None:
    """The minimum-jerk reach that RLS's targets follow (Flash & Hogan 1985; see
    `motorflow._training.rules._targets`) ends within the trial, also after the
    latest go cue: otherwise the targets never bring the effector to the goal."""
    movement_time = getattr(train.learning, "movement_time", None)
    if movement_time is None:
        return
    duration = task.n_steps * model.dt
    go_step = getattr(task, "go_step", None)
    start = 0.0 if go_step is None else go_step[1] * model.dt
    if start + movement_time > duration + 1e-9:
        after = f" after the latest go cue (go_step {go_step[1]})" if go_step else ""
        raise ConfigError(
            f"{path}.training.learning.movement_time",
            f"the reach the targets follow lasts {movement_time:g} s{after}, beyond the "
            f"trials' {duration:g} s (task n_steps {task.n_steps} x model dt "
            f"{model.dt:g}), so the targets never reach the goal; make movement_time at "
            f"most {duration - start:g} s or the trials longer",
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


def check_init_from(child: Experiment, parent: Experiment, path: str) -> None:
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


def check_chains(
    experiments: Mapping[str, Experiment],
    specs: Mapping[str, tuple[str, ExperimentSpec]],
    problems: Problems | None = None,
) -> None:
    """Every `init_from` names an experiment it can start from, and no chain loops.

    `specs` holds every experiment defined; one defined but not in `experiments` (it
    has a problem of its own) is not checked as a parent. With `problems`, each
    experiment's problem is kept there; without, they are raised together.
    """
    collected = Problems() if problems is None else problems
    for name, experiment in experiments.items():
        with collected.collecting():
            _check_chain(name, experiment, experiments, specs)
    if problems is None:
        collected.raise_any()


def _check_chain(
    name: str,
    experiment: Experiment,
    experiments: Mapping[str, Experiment],
    specs: Mapping[str, tuple[str, ExperimentSpec]],
) -> None:
    path = specs[name][0]
    seen = [name]
    parent = experiment.init_from
    while parent is not None:
        if parent not in specs:
            raise ConfigError(
                f"{path}.init_from",
                f"{parent!r} is not an experiment (defined: {', '.join(specs)})",
            )
        if parent not in experiments:
            return  # refused on its own
        if parent in seen:
            loop = " -> ".join([*seen, parent])
            raise ConfigError(
                f"{path}.init_from", f"the experiments start from each other in a loop: {loop}"
            )
        seen.append(parent)
        parent = experiments[parent].init_from
    if experiment.init_from is not None:
        check_init_from(experiment, experiments[experiment.init_from], path)


def _from_unexpanded(name: str, unexpanded: Sequence[str]) -> bool:
    """Whether `name` could be a point of one of the sweeps that did not expand (their
    problem is reported already; a name they would have made is not named again)."""
    return any(name.startswith(f"{sweep}-") for sweep in unexpanded)


def check_protocols(
    settings: WorkflowConfig,
    experiments: Mapping[str, Experiment],
    specs: Mapping[str, Any],
    problems: Problems,
    *,
    unexpanded: Sequence[str] = (),
) -> None:
    """Each protocol's stages are experiments (`specs` names every one defined, but
    for the `unexpanded` sweeps'), its conditions and panels name conditions and
    stages of its own."""
    conditions = settings.evaluation.conditions

    def unknown(path: str, name: str, what: str, known: Any, where: str) -> None:
        problems.errors.append(
            ConfigError(path, f"{name!r} is not {what} ({where}{', '.join(known)})")
        )

    for name, protocol in settings.protocols.items():
        for index, stage in enumerate(protocol.stages):
            if stage not in specs and not _from_unexpanded(stage, unexpanded):
                unknown(
                    f"protocols.{name}.stages[{index}]", stage, "an experiment", specs, "defined: "
                )
        for index, condition in enumerate(protocol.conditions):
            if condition not in conditions:
                unknown(
                    f"protocols.{name}.conditions[{index}]",
                    condition,
                    "an evaluation condition",
                    conditions,
                    "defined in evaluation.conditions: ",
                )
        for index, panel in enumerate(protocol.panels):
            path = f"protocols.{name}.panels[{index}]"
            if panel.stage not in protocol.stages:
                unknown(
                    f"{path}.stage", panel.stage, "a stage of the protocol", protocol.stages, ""
                )
            if panel.condition not in conditions:
                unknown(
                    f"{path}.condition",
                    panel.condition,
                    "an evaluation condition",
                    conditions,
                    "defined in evaluation.conditions: ",
                )


def check_comparisons(
    settings: WorkflowConfig,
    experiments: Mapping[str, Experiment],
    specs: Mapping[str, Any],
    problems: Problems,
    *,
    unexpanded: Sequence[str] = (),
) -> None:
    """Each comparison lists experiments of the config (`specs` names every one
    defined, but for the `unexpanded` sweeps'), each once, and an analysis that
    draws comparisons."""
    for name, comparison in settings.comparisons.items():
        analysis = ANALYSES[comparison.analysis]
        if not analysis.COMPARES:
            comparing = [other for other, kind in ANALYSES.items() if kind.COMPARES]
            problems.errors.append(
                ConfigError(
                    f"comparisons.{name}.analysis",
                    f"the {comparison.analysis!r} analysis draws no comparison across "
                    f"experiments; the ones that do: {', '.join(comparing) or 'none'}",
                )
            )
        check_listed_experiments(
            f"comparisons.{name}.experiments", comparison.experiments, specs, problems, unexpanded
        )


def check_listed_experiments(
    path: str,
    names: Sequence[str],
    specs: Mapping[str, Any],
    problems: Problems,
    unexpanded: Sequence[str] = (),
) -> None:
    """Each of `names` (the list at `path`) is an experiment of `specs`, listed once (a
    point of an `unexpanded` sweep is not named again)."""
    seen = set()
    for index, experiment in enumerate(names):
        where = f"{path}[{index}]"
        if experiment not in specs:
            if _from_unexpanded(experiment, unexpanded):
                continue
            problems.errors.append(
                ConfigError(
                    where, f"{experiment!r} is not an experiment (defined: {', '.join(specs)})"
                )
            )
        elif experiment in seen:
            problems.errors.append(
                ConfigError(where, f"{experiment!r} is listed twice; list each experiment once")
            )
        seen.add(experiment)


def drawn_experiments(settings: WorkflowConfig, names: Sequence[str]) -> list[str]:
    """The experiments among `names` (in their order) whose own figures a full run
    makes: those `figures.experiments` matches, or all of them."""
    patterns = settings.figures.experiments
    if patterns is None:
        return list(names)
    return [name for name in names if any(fnmatch.fnmatchcase(name, p) for p in patterns)]


def check_drawn_experiments(
    settings: WorkflowConfig,
    experiments: Mapping[str, Experiment],
    specs: Mapping[str, Any],
    problems: Problems,
    *,
    unexpanded: Sequence[str] = (),
) -> None:
    """Each pattern of `figures.experiments` matches an experiment (a pattern matching
    none is a typo; skipped while a sweep could not expand)."""
    if unexpanded:
        return
    for index, pattern in enumerate(settings.figures.experiments or ()):
        if not any(fnmatch.fnmatchcase(name, pattern) for name in specs):
            shown = ", ".join(list(specs)[:10]) + (
                f", ... ({len(specs)} in all)" if len(specs) > 10 else ""
            )
            problems.errors.append(
                ConfigError(
                    f"figures.experiments[{index}]",
                    f"{pattern!r} matches no experiment (defined: {shown}); write a name "
                    "or a glob pattern (`*`, `?`, `[...]`) of the experiments to draw",
                )
            )


def check_drawn_replicate(settings: WorkflowConfig, experiments: Mapping[str, Experiment]) -> None:
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


def check_analyses(
    settings: WorkflowConfig, experiments: Mapping[str, Experiment], problems: Problems
) -> None:
    """Each analysis's own check of its settings against every experiment
    (:meth:`AbstractAnalysis.check`), in the order of `ANALYSES`: the first problem
    of each is kept in `problems`."""
    models_and_tasks = {name: (e.model, e.task) for name, e in experiments.items()}
    for analysis in settings.analysis.analyses.values():
        with problems.collecting():
            analysis.check(models_and_tasks)
