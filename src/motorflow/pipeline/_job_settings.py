"""The settings each pipeline job depends on: its rule params, hence its rerun trigger."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._config import ModelConfig, TaskConfig
from .._identity import canonical_json, code_version
from .._training._config import RESUME_ONLY_KEYS
from ._condition_sweeps import condition_sweep_axis, condition_sweep_points
from ._experiments import Experiment
from ._setting_params import SETTING_PARAM_PREFIX, parse_setting_params
from ._workflow_config import EvaluationConfig, WorkflowConfig

JobKey = tuple[str, str]


def flatten_settings(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested mappings as ``{"a.b.c": leaf}`` (lists and empty mappings are leaves), in
    sorted key order; :func:`parse_setting_params` nests them back."""
    if not isinstance(value, Mapping) or (prefix and not value):
        return {prefix: value}
    flat: dict[str, Any] = {}
    for key in sorted(value):
        flat.update(flatten_settings(value[key], f"{prefix}.{key}" if prefix else str(key)))
    return flat


def is_arm(model: ModelConfig) -> bool:
    """Whether the model's plant is an arm (with joints to draw): its `HAS_JOINTS`."""
    return model.plant.HAS_JOINTS


def job_settings(
    config: WorkflowConfig, experiments: Mapping[str, Experiment]
) -> dict[JobKey, dict[str, Any]]:
    """Flat settings (``{"model.feedback.delay": 2, ...}``) per job ``(rule, wildcard)``.

    Each job gets exactly the settings its outputs depend on, so Snakemake reruns it
    when one of them changes and never otherwise: the train job its experiment's
    task, model, training (without the checkpoint cadence) and seed; evaluate the
    task, seed and `evaluation` (with the conditions' order); analysis the
    `analysis` options, task and seed; the summary the `statistics`, the experiments
    and what pairs them; figures the `figures` options (and a sweep's figure its
    sweep). With `track_code`,
    the library's code version is a setting of the train, evaluate and analysis jobs.
    """
    code = {"code": code_version()} if config.track_code else {}
    # Which experiments a full run draws is the targets' business, not a figure's.
    drawing = {k: v for k, v in config.figures.to_dict().items() if k != "experiments"}
    figures = flatten_settings({"figures": drawing})
    # What the analyses compute; the replicate drawn is the figures' business.
    analysis = {k: v for k, v in config.analysis.to_dict().items() if k != "replicate"}
    replicate = config.analysis.replicate
    settings: dict[JobKey, dict[str, Any]] = {}
    for name, experiment in experiments.items():
        settings[("trials", experiment.dataset)] = flatten_settings(experiment.dataset_spec())
        settings[("train", name)] = {**flatten_settings(experiment.train_settings()), **code}
        evaluate = {
            **experiment.evaluate_settings(),
            "evaluation": config.evaluation.to_dict(),
            # Flattening sorts keys; the conditions' order is the states' `condition` order.
            "condition_order": list(config.evaluation.conditions),
        }
        settings[("evaluate", name)] = {**flatten_settings(evaluate), **code}
        if experiment.train.snapshots is not None:
            # Each snapshot evaluated as the final model is: the same settings.
            settings[("learning_curve", name)] = dict(settings[("evaluate", name)])
        settings[("experiment_figures", name)] = dict(figures)
        if is_arm(experiment.model):
            settings[("arm_figure", name)] = dict(figures)
        # The steady inputs of the fixed points come from the task; the starts' key
        # from the seed.
        settings[("analysis", name)] = (
            flatten_settings(
                {
                    "analysis": analysis,
                    "task": experiment.task.to_dict(),
                    "seed": experiment.seed,
                }
            )
            | code
        )
        settings[("analysis_figures", name)] = {**figures, "analysis.replicate": replicate}
    settings[("comparison_figure", "")] = {**figures, "experiments": list(experiments)}
    # Experiments with as many replicates that share a seed, or descend from the same
    # experiment, are paired.
    settings[("summary", "")] = {
        **flatten_settings({"statistics": config.statistics.to_dict()}),
        "experiments": list(experiments),
        **flatten_settings(
            {
                "pairing": {
                    name: [experiment.seed, experiment.train.n_replicates, experiment.init_from]
                    for name, experiment in experiments.items()
                }
            }
        ),
    }
    for name, sweep in config.sweeps.items():
        # The grid as [setting, values] pairs: its order names the experiments and
        # puts the first setting on the x axis, and flattening would sort (and split
        # at the dots of) its keys.
        settings[("sweep_figure", name)] = {
            **figures,
            "sweep.experiment": sweep.experiment,
            "sweep.grid": [[setting, values] for setting, values in sweep.grid.items()],
            "sweep.metrics": list(sweep.metrics),
            # As pairs, in order: flattening would split a label at its dots.
            "sweep.marks": [[label, value] for label, value in sweep.marks.items()],
            "sweep.x_scale": sweep.x_scale,
        }
    # The learning curves' intervals are bootstrapped as the summary's; a protocol
    # without one reads neither the statistics nor the stages' lengths.
    statistics = flatten_settings({"statistics": config.statistics.to_dict()})
    for name, comparison in config.comparisons.items():
        settings[("analysis_comparison", name)] = {
            **figures,
            **statistics,
            "analysis.replicate": replicate,
            **flatten_settings({"comparison": comparison.to_dict()}),
        }
    for name, sweep in config.condition_sweeps.items():
        x_label, marks = condition_sweep_axis(config, name)
        settings[("condition_sweep_figure", name)] = {
            **figures,
            **statistics,
            **flatten_settings({"condition_sweep": sweep.to_dict()}),
            # As pairs, in order: flattening would sort the experiments and labels.
            "x": [[e, x] for e, x in condition_sweep_points(config, experiments, name).items()],
            "x_label": x_label,
            "marks": [[label, value] for label, value in marks.items()],
        }
    for name, protocol in config.protocols.items():
        curve_stages = protocol_curve_stages(protocol.stages, experiments)
        settings[("protocol_figure", name)] = {
            **figures,
            **(statistics if curve_stages else {}),
            **flatten_settings({"protocol": protocol.to_dict()}),
            # Where each stage's learning curve starts after the ones before it.
            **flatten_settings(
                {
                    "stage_batches": {
                        stage: experiments[stage].train.n_batches for stage in curve_stages
                    }
                }
            ),
        }
    return settings


def protocol_curve_stages(
    stages: Sequence[str], experiments: Mapping[str, Experiment]
) -> list[str]:
    """The stages (of a protocol's `stages`) that keep training snapshots: those its
    learning curve draws, in order."""
    return [stage for stage in stages if experiments[stage].train.snapshots is not None]


def setting_param(name: str, value: Any) -> str:
    """One setting as the text ``name=<canonical JSON value>`` (one rule param)."""
    return f"{name}={canonical_json(value)}"


def rule_params(settings: Mapping[JobKey, Mapping[str, Any]], rule: str) -> list[dict[str, str]]:
    """The params of `rule`: param i maps each job's wildcard value to a setting text.

    Snakemake records a job's params as the *set* of their values (names play no
    part) and reruns the job when that set changes. Every job of a rule has the same
    number of params, so a job with fewer settings than another repeats its last one:
    the set each job records is exactly its own settings, and adding a job with
    settings of its own (another kind of plant, say) changes nothing recorded for
    the others.
    """
    jobs = {
        key: [setting_param(name, value) for name, value in flat.items()]
        for (name, key), flat in settings.items()
        if name == rule
    }
    count = max((len(texts) for texts in jobs.values()), default=0)
    return [
        {key: texts[min(index, len(texts) - 1)] for key, texts in jobs.items()}
        for index in range(count)
    ]


# The rules whose jobs run JAX (and so use the compilation cache).
JAX_RULES = ("trials", "train", "evaluate", "learning_curve", "analysis")


def job_run_settings(
    config: WorkflowConfig, experiments: Mapping[str, Experiment]
) -> dict[JobKey, dict[str, Any]]:
    """How each job runs, beside what it makes: per JAX job the compilation cache's
    folder, and per train job the training settings that shape only its resume state
    and its log (`RESUME_ONLY_KEYS`: checkpoint cadence, checkpoints kept, progress
    lines, TensorBoard).

    A job reads these from its description (``_job.describe_job``'s `run`), which
    Snakemake leaves out of its rerun trigger, so editing them reruns nothing, as
    editing `threads` does not; everything a job makes depends on is in its params
    (:func:`job_settings`).
    """
    cache = {"jax_cache_dir": config.jax_cache_dir}
    settings: dict[JobKey, dict[str, Any]] = {}
    for name, experiment in experiments.items():
        training = experiment.train.to_dict()
        settings[("trials", experiment.dataset)] = cache
        settings[("train", name)] = {
            **cache,
            "training": {key: training[key] for key in RESUME_ONLY_KEYS},
        }
        settings[("evaluate", name)] = cache
        settings[("learning_curve", name)] = cache
        settings[("analysis", name)] = cache
    return settings


def train_job_experiment(name: str, params: Any, run: Mapping[str, Any]) -> Experiment:
    """The experiment a train job trains: its params' settings
    (:meth:`Experiment.train_settings`) with its run settings' resume-only training keys.
    """
    settings = parse_setting_params(params)
    return Experiment.from_train_settings(name, settings, run["training"])


def pack_params(
    settings: Mapping[JobKey, Mapping[str, Any]], members: Sequence[str]
) -> dict[str, str]:
    """The params of a train pack (:func:`train_packs`): each member's train settings
    as ``setting<i>`` texts ``<member>:<name>=<value>``. The member's name in each text
    keeps the recorded set of params (Snakemake reruns a job when that set changes)
    one member's own: an edit of any member, even one that swaps two members' seeds,
    changes it."""
    texts = [
        f"{member}:{setting_param(name, value)}"
        for member in members
        for name, value in settings[("train", member)].items()
    ]
    return {f"{SETTING_PARAM_PREFIX}{index}": text for index, text in enumerate(texts)}


def pack_run_settings(
    run_settings: Mapping[JobKey, Mapping[str, Any]], members: Sequence[str]
) -> dict[str, Any]:
    """How a train pack's job runs: on one device (``cpu_devices``), with the
    compilation cache of its members, and each member's train job's run settings
    (``members``)."""
    own = {member: dict(run_settings[("train", member)]) for member in members}
    return {
        "cpu_devices": 1,
        "jax_cache_dir": own[members[0]]["jax_cache_dir"],
        "members": own,
    }


def pack_job_experiments(params: Any, run: Mapping[str, Any]) -> list[Experiment]:
    """The experiments a train pack's job trains, in its order: each member's settings
    from the job's params (:func:`pack_params`), with its run settings (`run`'s
    ``members``, each as a train job's run settings) read as :func:`train_job_experiment`
    reads one's."""
    texts: dict[str, list[str]] = {member: [] for member in run["members"]}
    for name, text in params.items():
        if name.startswith(SETTING_PARAM_PREFIX) and name[len(SETTING_PARAM_PREFIX) :].isdigit():
            member, _, setting = text.partition(":")
            texts[member].append(setting)
    return [
        Experiment.from_train_settings(member, parse_setting_params(texts[member]), own["training"])
        for member, own in run["members"].items()
    ]


def evaluate_job_settings(params: Any) -> tuple[TaskConfig, int, EvaluationConfig]:
    """An evaluate job's task, seed and evaluation settings, read from its params (the
    conditions in their config order, which flattening the settings had sorted)."""
    settings = parse_setting_params(params)
    evaluation = settings["evaluation"]
    conditions = {name: evaluation["conditions"][name] for name in settings["condition_order"]}
    return (
        TaskConfig.from_dict(settings["task"], "task"),
        settings["seed"],
        EvaluationConfig.from_dict({**evaluation, "conditions": conditions}, "evaluation"),
    )
