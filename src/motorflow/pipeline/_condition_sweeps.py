"""The condition sweeps of a config (`condition_sweeps:`): their checks against the
experiments and evaluation conditions, and each point's x value, the swept setting of
the one perturbation in its condition that has it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._config_errors import ConfigError, Problems
from .._metrics import METRICS
from ._cross_experiment_specs import ConditionSweepSpec
from ._experiment_checks import check_listed_experiments
from ._workflow_config import WorkflowConfig


def _carrier(conditions: Mapping[str, Sequence[Any]], condition: str, setting: str) -> list:
    """The perturbations of `condition` that have the setting `setting`."""
    return [p for p in conditions[condition] if setting in type(p).model_fields]


def _condition_problem(
    conditions: Mapping[str, Sequence[Any]], condition: str, sweep: ConditionSweepSpec
) -> str | None:
    """What stops `condition` from giving the sweep an x value, or None."""
    if condition not in conditions:
        return (
            f"{condition!r} is not an evaluation condition (defined in "
            f"evaluation.conditions: {', '.join(conditions)})"
        )
    carriers = _carrier(conditions, condition, sweep.setting)
    if not conditions[condition] and sweep.unperturbed_at is not None:
        return None
    if len(carriers) != 1:
        kinds = ", ".join(p.kind for p in conditions[condition]) or "none"
        where = (
            "set unperturbed_at to its x value"
            if not conditions[condition]
            else "give each listed condition exactly one"
        )
        return (
            f"condition {condition!r} has {len(carriers)} perturbations with the setting "
            f"{sweep.setting!r} (its perturbations: {kinds}); {where}"
        )
    value = getattr(carriers[0], sweep.setting)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        shown = list(value) if isinstance(value, tuple) else value
        return (
            f"the {sweep.setting} of the {carriers[0].kind} in condition {condition!r} is "
            f"{shown!r}, not a number: an x value must be one fixed number (not a range)"
        )
    if sweep.relative_to == "go_cue" and sweep.setting not in type(carriers[0]).TIMES:
        return (
            f"relative_to: go_cue shifts a time, but {sweep.setting!r} is not one of the "
            f"{carriers[0].kind}'s times ({', '.join(type(carriers[0]).TIMES) or 'none'})"
        )
    return None


def check_condition_sweeps(
    settings: WorkflowConfig,
    experiments: Mapping[str, Any],
    specs: Mapping[str, Any],
    problems: Problems,
    *,
    unexpanded: Sequence[str] = (),
) -> None:
    """Each condition sweep names experiments of the config once each, evaluation
    conditions that each give one x value, a defined baseline, and asks for go-cue
    times and reaction times only of experiments with a go cue."""
    conditions = settings.evaluation.conditions
    for name, sweep in settings.condition_sweeps.items():
        path = f"condition_sweeps.{name}"
        seen: set[str] = set()
        for index, condition in enumerate(sweep.conditions):
            problem = _condition_problem(conditions, condition, sweep)
            if condition in seen:
                problem = f"{condition!r} is listed twice; list each condition once"
            seen.add(condition)
            if problem:
                problems.errors.append(ConfigError(f"{path}.conditions[{index}]", problem))
        if not any(
            _carrier(conditions, c, sweep.setting) for c in sweep.conditions if c in conditions
        ):
            problems.errors.append(
                ConfigError(
                    f"{path}.setting",
                    f"no listed condition has a perturbation with the setting "
                    f"{sweep.setting!r}; name a setting of their perturbations (e.g. start)",
                )
            )
        if sweep.baseline is not None and sweep.baseline not in conditions:
            problems.errors.append(
                ConfigError(
                    f"{path}.baseline",
                    f"{sweep.baseline!r} is not an evaluation condition (defined in "
                    f"evaluation.conditions: {', '.join(conditions)})",
                )
            )
        needs_cue = [
            key
            for key, needed in (
                ("relative_to", sweep.relative_to == "go_cue"),
                ("metrics", any(METRICS[metric].NEEDS_GO_CUE for metric in sweep.metrics)),
            )
            if needed
        ]
        check_listed_experiments(
            f"{path}.experiments", sweep.experiments, specs, problems, unexpanded
        )
        for index, experiment in enumerate(sweep.experiments):
            task = experiments[experiment].task if experiment in experiments else None
            if needs_cue and task is not None and not task.has_go_cue:
                problems.errors.append(
                    ConfigError(
                        f"{path}.experiments[{index}]",
                        f"{experiment!r} reaches without a go cue (task kind {task.kind}), "
                        f"but the sweep's {' and '.join(needs_cue)} need one: use delayed "
                        "reaches, or drop it from the sweep",
                    )
                )


def condition_sweep_points(
    settings: WorkflowConfig, experiments: Mapping[str, Any], name: str
) -> dict[str, list[float]]:
    """Each of the condition sweep `name`'s experiments to the x value of each of its
    conditions, in order (a checked config: `check_condition_sweeps` passed)."""
    sweep = settings.condition_sweeps[name]
    conditions = settings.evaluation.conditions
    points = {}
    for experiment in sweep.experiments:
        shift = 0.0
        if sweep.relative_to == "go_cue":
            resolved = experiments[experiment]
            shift = resolved.task.evaluation_go_step * resolved.model.dt
        points[experiment] = [
            float(
                sweep.unperturbed_at
                if not conditions[condition]
                else getattr(_carrier(conditions, condition, sweep.setting)[0], sweep.setting)
            )
            - shift
            for condition in sweep.conditions
        ]
    return points


def condition_sweep_axis(settings: WorkflowConfig, name: str) -> tuple[str, dict[str, float]]:
    """The x axis's label of the condition sweep `name` and its marks (the go cue)."""
    sweep = settings.condition_sweeps[name]
    first = next(
        p
        for condition in sweep.conditions
        for p in _carrier(settings.evaluation.conditions, condition, sweep.setting)
    )
    units = type(first).UNITS.get(sweep.setting, "")
    label = f"{first.kind} {sweep.setting}".replace("_", " ")
    if sweep.relative_to == "go_cue":
        return f"{label} from the go cue ({units})", {"go cue": 0.0}
    return (f"{label} ({units})" if units and units != "1" else label), {}
