"""The workflow config as one typed model, and the JSON Schema generated from it.

Named blocks (``tasks``, ``models``, ``trainings``) are the typed blocks of
`_config`; ``experiments`` combine them (with partial ``override`` blocks, checked
once merged, see `_experiments`); ``sweeps`` expand an experiment over a grid. The
schema Snakemake validates (`workflow/schemas/config.schema.yaml`) is
:func:`config_json_schema`'s output, never edited by hand.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Iterator, Mapping
from typing import Annotated, Any, Literal

import pydantic
from pydantic import AfterValidator, BeforeValidator, Field, WithJsonSchema, model_validator
from pydantic.json_schema import GenerateJsonSchema

from .._analysis._config import ANALYSES, AnalysisConfig, StatisticsConfig, SummaryMetric
from .._config import ModelConfig
from .._config_base import Block, Boolean, NonNegativeInt, Number, PositiveInt, PositiveNumber, Text
from .._config_errors import ConfigError, config_error, one_error
from .._metrics import METRIC_UNITS
from .._perturbations import AnyPerturbation
from .._tasks import MAX_PERTURBATIONS, AnyTaskConfig
from .._training._config import TrainConfig
from ._results_folder import FOLDER_PATTERN as RESULTS_FOLDER_PATTERN
from ._results_folder import check_results_folder

# The schema's patterns (JSON Schema's `$` ends the text); Python checks the whole
# string with `re.fullmatch` (a Python `$` alone also matches before a final newline).
NAME_PATTERN = r"^[A-Za-z0-9_-]+$"
MAX_NAME_LENGTH = 64
GRID_SETTING_PATTERN = r"^(seed|(task|model|training)(\.[A-Za-z_][A-Za-z0-9_]*)+)$"


def check_name(name: Any, path: str = "") -> str:
    """Names become paths: only letters, digits, ``_`` and ``-``, at most 64 characters."""
    if not isinstance(name, str) or not re.fullmatch(NAME_PATTERN, name):
        raise ConfigError(
            path,
            f"{name!r} is not a valid name: use only letters, digits, '_' and '-' "
            "(names become file paths)",
        )
    if len(name) > MAX_NAME_LENGTH:
        raise ConfigError(
            path,
            f"{name[:20]!r}... is {len(name)} characters long; names have at most "
            f"{MAX_NAME_LENGTH} characters (they become file paths)",
        )
    return name


def _grid_setting(setting: str) -> str:
    if not re.fullmatch(GRID_SETTING_PATTERN, setting):
        raise ConfigError(
            "",
            f"{setting!r} is not a sweep setting: use 'seed' or a dotted path starting "
            "with task., model. or training. (e.g. model.feedback.noise_std)",
        )
    return setting


def _not_a_yaml_value(name: Any) -> Any:
    if name is None or isinstance(name, bool):
        raise ConfigError(
            "",
            f"a name read as {name!r}: YAML reads a bare null, ~, true or false as a "
            'value; quote it ("null": ...) or choose another name',
        )
    return name


Name = Annotated[
    str,
    BeforeValidator(_not_a_yaml_value),
    AfterValidator(check_name),
    WithJsonSchema({"type": "string", "pattern": NAME_PATTERN, "maxLength": MAX_NAME_LENGTH}),
]
GridSetting = Annotated[
    str,
    AfterValidator(_grid_setting),
    WithJsonSchema({"type": "string", "pattern": GRID_SETTING_PATTERN}),
]
Seed = Annotated[NonNegativeInt, Field(lt=2**31)]
PartialBlock = dict[str, Any]


class Override(Block):
    """Partial task, model and training blocks merged over an experiment's named ones."""

    task: PartialBlock | None = Field(
        None, description="keys merged into the named task block for this experiment only"
    )
    model: PartialBlock | None = Field(
        None, description="keys merged into the named model block for this experiment only"
    )
    training: PartialBlock | None = Field(
        None, description="keys merged into the named training block for this experiment only"
    )


class ExperimentSpec(Block):
    """An experiment: the names of its task, model and training blocks, and its seed.

    With `init_from`, training starts from that experiment's trained model (its
    descendants rerun when it does); `reset_optimizer: false` also continues its
    optimizer state.
    """

    task: Name = Field(description="a name from `tasks`")
    model: Name = Field(description="a name from `models`")
    training: Name = Field(description="a name from `trainings`")
    seed: Seed = Field(
        0,
        description="every random stream of the experiment (trials, initial weights, noise, "
        "evaluation) derives from it",
    )
    override: Override = Override()
    init_from: Name | None = Field(
        None,
        description="start training from this experiment's trained model (its weights; the "
        "settings without weights, such as noise, delay or mass, are this experiment's "
        "own). The network and plant must have the same shapes and the replicate count "
        "must agree. Whenever that experiment retrains, this one does too",
    )
    reset_optimizer: Boolean = Field(
        True,
        description="with `init_from`: a fresh optimizer state; `false` continues the "
        "parent's (its moments and step count; needs the same `optimizer.name`, clipping, "
        "momentum and `trainable`). Only with `init_from`: set without it, an error",
    )


MAX_MARKS = 10
MAX_MARK_LABEL = 60


def _is_grid_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class SweepSpec(Block):
    """A base experiment expanded over every combination of the `grid`'s values."""

    experiment: Name = Field(description="the base experiment")
    grid: dict[GridSetting, Annotated[list[Any], Field(min_length=1)]] = Field(
        min_length=1,
        description="setting paths (`seed`, or `task.…`, `model.…`, `training.…`) mapped to "
        "lists of values",
    )
    metrics: tuple[SummaryMetric, ...] = Field(
        ("endpoint_error", "final_validation_loss"),
        min_length=1,
        max_length=len(SummaryMetric.__args__),
        description="what the sweep's figure draws against the swept values, a panel each: "
        "`final_validation_loss` or a per-trial metric of `metrics.zarr` (averaged over "
        "trials, in the first evaluation condition)",
    )
    marks: dict[Annotated[Text, Field(min_length=1, max_length=MAX_MARK_LABEL)], Number] = Field(
        {},
        max_length=MAX_MARKS,
        description="values of the first grid setting marked on the figure, each by a "
        "dashed vertical line in every panel with its label: label mapped to value (e.g. "
        "`feedback loop: 3` over a window in steps). Needs numeric first-setting values",
    )
    x_scale: Literal["auto", "linear", "log"] = Field(
        "auto",
        description="the figure's x axis: `auto` is logarithmic when the first setting's "
        "values are positive numbers spanning a factor of 100 or more, else linear; `log` "
        "needs positive numbers (values and marks)",
    )

    @model_validator(mode="after")
    def _marks_and_scale_fit_the_axis(self) -> SweepSpec:
        setting, values = next(iter(self.grid.items()))
        numeric = all(_is_grid_number(value) for value in values)
        if (self.marks or self.x_scale == "log") and not numeric:
            key = "marks" if self.marks else "x_scale"
            raise ConfigError(
                key,
                f"the figure's x axis is the first grid setting, {setting}, whose values "
                f"{values} are not all numbers: {key} needs a numeric axis; put a numeric "
                f"setting first in grid, or remove {key}",
            )
        if self.x_scale == "log":
            below = [("grid." + setting, v) for v in values if v <= 0] + [
                (f"marks.{label}", v) for label, v in self.marks.items() if v <= 0
            ]
            if below:
                raise ConfigError(
                    "x_scale",
                    f"a logarithmic axis needs positive values, but {below[0][0]} has "
                    f"{below[0][1]}; use x_scale: linear (or auto)",
                )
        return self


MAX_CONDITIONS = 100


class EvaluationConfig(Block):
    """The conditions every experiment is evaluated in, and how reaches are scored.

    `conditions` maps a name to a list of perturbations (an empty list: none); every
    experiment runs its center-out reaches in each condition, in order, with the same
    noise. A condition's settings that are ranges are drawn per trial from the
    experiment's seed. `model` chooses the trained model evaluated: the ``final`` one
    or, per replicate, the ``best`` by validation loss.
    """

    model: Literal["final", "best"] = Field(
        "final",
        description="`final`: evaluate the trained model; `best`: each replicate at its "
        "lowest validation loss (see Diverged replicates and the best model)",
    )
    goal_radius: PositiveNumber = Field(
        0.05,
        description="distance to the goal within which a reach counts as settled (movement time)",
    )
    conditions: dict[
        Name, Annotated[tuple[AnyPerturbation, ...], Field(max_length=MAX_PERTURBATIONS)]
    ] = Field(
        {"unperturbed": ()},
        min_length=1,
        max_length=MAX_CONDITIONS,
        description="the conditions every experiment is evaluated in: names mapped to "
        "lists of perturbations (`[]`: none). States and metrics get a `condition` dim in "
        "this order; every condition runs the same reaches with the same noise",
    )


class FiguresConfig(Block):
    """Figure files: format, resolution and how many replicates to draw."""

    format: Literal["png", "pdf", "svg"] = Field("png", description="file format")
    dpi: Annotated[PositiveInt, Field(ge=10, le=1200)] = Field(
        120,
        description="resolution of raster figures, in dots per inch: at most 1200 (print "
        "quality is 300 to 600; a figure's memory grows with the square of its dpi)",
    )
    max_replicates: PositiveInt = Field(5, description="replicates drawn in the trajectory figure")


# Per-trial metrics a protocol figure can show: every metric of `reach_metrics` but
# reaction time, which only delayed reaches have.
ProtocolMetric = Literal[tuple(name for name in METRIC_UNITS if name != "reaction_time")]


class ProtocolPanel(Block):
    """One panel of a protocol's paths: a stage's reaches in one evaluation condition."""

    stage: Name = Field(description="one of the protocol's `stages`")
    condition: Name = Field(description="an evaluation condition (`evaluation.conditions`)")
    title: Annotated[Text, Field(max_length=60)] = Field(
        "", description="the panel's title (e.g. `early exposure`); by default stage and condition"
    )


class ProtocolSpec(Block):
    """A protocol: experiments as the stages of one story (e.g. baseline, adaptation,
    washout), drawn side by side in each evaluation condition.

    The protocol's figure shows the metric per stage in each condition; with
    `panels`, a row of hand paths above it (as force-field papers lay out null-field,
    early-exposure, late-exposure and after-effect reaches); and, when stages keep
    snapshots (``train.snapshots``), the learning curve: the metric along the
    batches of those stages, each snapshot evaluated as the final model is.
    """

    stages: tuple[Name, ...] = Field(
        min_length=1,
        max_length=100,
        description="experiment names, in order (e.g. `[baseline, adapt, washout]`, chained "
        "with `init_from`)",
    )
    metric: ProtocolMetric = Field(
        "max_lateral_deviation", description="the per-trial metric drawn, averaged over trials"
    )
    conditions: tuple[Name, ...] = Field(
        (),
        max_length=100,
        description="the evaluation conditions its summary and learning curve draw, in "
        "order (e.g. `[null_field, curl_cw]`); empty: all",
    )
    panels: tuple[ProtocolPanel, ...] = Field(
        (),
        max_length=12,
        description="hand-path panels, in order: each a `stage` in an evaluation `condition` "
        "with an optional `title`",
    )


class ComparisonSpec(Block):
    """A comparison: one hidden-state analysis drawn for several experiments side by
    side (``figures/comparison-<name>.<format>``), with its numbers in a CSV beside
    the figure (``figures/comparison-<name>.csv``: per experiment each replicate's
    value and the mean with its bootstrap interval, as `statistics` sets)."""

    analysis: Literal[tuple(ANALYSES)] = Field(
        description="the analysis compared; one that draws comparisons (`tuning`: the "
        "preferred directions' rose histograms and bimodality; `jpca`: the jPC planes and "
        "the rotational and linear fits)"
    )
    experiments: tuple[Name, ...] = Field(
        min_length=1,
        max_length=12,
        description="experiment names, in the figure's order (e.g. `[point_mass, arm, "
        "muscle_arm]`)",
    )
    title: Annotated[Text, Field(max_length=120)] = Field(
        "", description="the figure's title (by default none)"
    )


SITE_NAME = r"^[A-Za-z0-9_.]+$"


class StageResources(Block):
    """A stage's job size and, on SLURM, where it runs."""

    threads: PositiveInt = Field(
        1,
        description="cores of the job (`--cpus-per-task` on SLURM). A train job on the CPU "
        "runs one XLA CPU device per thread and spreads the replicates over them (results "
        "are identical for any thread count)",
    )
    mem_mb: PositiveInt = Field(2000, description="memory in MB (`--mem`)")
    runtime: PositiveInt = Field(30, description="wall-time limit in minutes (`-t`)")
    gpus: NonNegativeInt = Field(
        0,
        description="GPUs the job needs. Locally, `snakemake --resources gpu=N` runs at most "
        "N GPUs' worth of jobs at once and each job claims GPUs of its own; on SLURM it "
        "becomes `--gpus=N`",
    )
    gpu_model: Annotated[Text, Field(pattern=SITE_NAME)] | None = Field(
        None,
        description="SLURM: ask for this GPU type, `--gpus=<gpu_model>:<gpus>` (needs `gpus` >= 1)",
    )
    gres: (
        Annotated[Text, Field(pattern=r"^[A-Za-z0-9_]+(:[A-Za-z0-9_.]+)?(:[0-9]+[TGM]?)?$")] | None
    ) = Field(
        None,
        description="SLURM: `--gres=<gres>` (e.g. `gpu:a100:1`) for sites that take only "
        "`--gres`; use it instead of `gpus`",
    )
    slurm_partition: Annotated[Text, Field(pattern=r"^[A-Za-z0-9_.,-]+$")] | None = Field(
        None,
        description="SLURM partition of this stage's jobs, e.g. a GPU partition for `train` "
        "(`null`: the profile's)",
    )

    @model_validator(mode="after")
    def _one_way_to_ask_for_gpus(self) -> StageResources:
        if self.gpu_model and self.gpus < 1:
            raise ConfigError(
                "gpu_model",
                f"{self.gpu_model!r} needs a GPU count: set gpus to 1 or more",
            )
        if self.gres and self.gpus:
            raise ConfigError(
                "gres",
                f"{self.gres!r} and gpus: {self.gpus} both ask for GPUs; use gpus (and "
                "gpu_model) or, where the site takes only --gres, gres alone",
            )
        return self


class ResourcesConfig(Block):
    """Job sizes per stage; a partial stage keeps the defaults it does not name."""

    trials: StageResources = StageResources(threads=1, mem_mb=2000, runtime=10)
    train: StageResources = StageResources(threads=2, mem_mb=4000, runtime=120)
    evaluate: StageResources = StageResources(threads=1, mem_mb=2000, runtime=30)
    figures: StageResources = StageResources(threads=1, mem_mb=1000, runtime=10)
    analysis: StageResources = StageResources(threads=1, mem_mb=2000, runtime=30)


class WorkflowConfig(Block):
    """A motorflow workflow config. Every key is explained in config/README.md.

    Named blocks (tasks, models, trainings) combine into experiments; sweeps expand
    an experiment over a grid. Unknown keys are errors.
    """

    tasks: dict[Name, AnyTaskConfig] = Field(min_length=1)
    models: dict[Name, ModelConfig] = Field(min_length=1)
    trainings: dict[Name, TrainConfig] = Field(min_length=1)
    experiments: dict[Name, ExperimentSpec] = Field(min_length=1)
    sweeps: dict[Name, SweepSpec] = {}
    protocols: dict[Name, ProtocolSpec] = {}
    comparisons: dict[Name, ComparisonSpec] = Field(
        {},
        description="analyses compared across experiments, by name: each draws one figure "
        "and a CSV of its numbers (see `comparisons.<name>`)",
    )
    evaluation: EvaluationConfig = EvaluationConfig()
    figures: FiguresConfig = FiguresConfig()
    analysis: AnalysisConfig = AnalysisConfig()
    statistics: StatisticsConfig = StatisticsConfig()
    resources: ResourcesConfig = ResourcesConfig()
    track_code: Boolean = Field(
        False,
        description="also rerun training and evaluation when the motorflow library's source "
        "changes",
    )
    results: (
        Annotated[
            Text,
            AfterValidator(check_results_folder),
            WithJsonSchema({"type": "string", "pattern": f"^{RESULTS_FOLDER_PATTERN}/?$"}),
        ]
        | None
    ) = Field(
        None,
        description="the folder this config's outputs go to, relative to the working "
        "directory (`null`: `results/<config file name without extension>`, e.g. "
        "`results/learning-rules` for config/learning-rules.yaml); see Results folders",
    )
    jax_cache_dir: Text = Field(
        ".jax_cache",
        description="persistent JAX compilation cache shared by all stages (`''` turns it off)",
    )

    @model_validator(mode="after")
    def _reset_optimizer_only_with_init_from(self) -> WorkflowConfig:
        # The experiments as written: a sweep's copies carry every key of their base.
        errors = [
            ConfigError(
                f"experiments.{name}.reset_optimizer",
                f"is set ({str(spec.reset_optimizer).lower()}) but init_from is not: "
                "reset_optimizer says whether a chained experiment continues its "
                "parent's optimizer state; set init_from to the experiment to start "
                "from, or remove reset_optimizer",
            )
            for name, spec in self.experiments.items()
            if "reset_optimizer" in spec.model_fields_set and spec.init_from is None
        ]
        if errors:
            raise one_error(errors)
        return self

    def filled_sections(self) -> dict[str, Any]:
        """The top-level settings other than the named blocks, every default filled in."""
        return self.model_dump(mode="json", exclude={"tasks", "models", "trainings", "experiments"})


def check_finite(value: Any) -> None:
    """Every number in the config is finite: NaN and infinities are never settings.

    This covers values no block types yet, such as a sweep's grid. Each non-finite
    number is named (one :class:`ConfigError`, or a :class:`ConfigErrors` of several).
    """
    errors = [
        ConfigError(path or "(top level)", f"must be a finite number, got {number!r}")
        for path, number in _non_finite(value, "")
    ]
    if errors:
        raise one_error(errors)


def _non_finite(value: Any, path: str) -> Iterator[tuple[str, float]]:
    """The key path and value of each NaN or infinite number in `value`."""
    if isinstance(value, float) and not math.isfinite(value):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _non_finite(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _non_finite(item, f"{path}[{index}]")


def parse_config(config: Mapping[str, Any]) -> WorkflowConfig:
    """The typed workflow config, or a :class:`ConfigError` naming the bad key (a
    :class:`ConfigErrors` naming each, when several are bad)."""
    if not isinstance(config, Mapping):
        raise ConfigError("(top level)", f"must be a mapping of sections, got {config!r}")
    check_finite(config)
    try:
        return WorkflowConfig.model_validate(config)
    except pydantic.ValidationError as error:
        raise config_error(error, data=config) from None


class _Schema(GenerateJsonSchema):
    """Titles off (the keys name themselves); each class's docstring is its description."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def model_schema(self, schema: Any) -> Any:
        json_schema = super().model_schema(schema)
        json_schema.pop("title", None)
        return json_schema


def _name_keyed(node: Any) -> Any:
    """Post-processing of pydantic's schema: constrained dict keys, written as
    ``patternProperties`` (which lets other keys through), become ``propertyNames``;
    a tagged union's ``oneOf`` becomes ``anyOf``."""
    if isinstance(node, dict):
        node = {key: _name_keyed(value) for key, value in node.items()}
        if "discriminator" in node and "oneOf" in node:
            # Every key of a block is optional, so a partial block without its `kind`
            # (e.g. {n_substeps: 2}) can fit several kinds; the typed config settles it.
            node["anyOf"] = node.pop("oneOf")
        patterns = node.pop("patternProperties", None)
        if patterns:
            ((pattern, values),) = patterns.items()
            names: dict[str, Any] = {"pattern": pattern}
            if pattern == NAME_PATTERN:
                names["maxLength"] = MAX_NAME_LENGTH
            node["propertyNames"] = names
            node["additionalProperties"] = values
        return node
    if isinstance(node, list):
        return [_name_keyed(value) for value in node]
    return node


def config_json_schema() -> dict[str, Any]:
    """The JSON Schema of a workflow config (draft 2020-12), from :class:`WorkflowConfig`.

    Overrides are described by their blocks' schemas: every key of a block is
    optional, so a partial block validates.
    """
    schema = _name_keyed(WorkflowConfig.model_json_schema(schema_generator=_Schema))
    override = schema["$defs"]["Override"]["properties"]
    for block, section in (("task", "tasks"), ("model", "models"), ("training", "trainings")):
        # A partial block of the section's kind (a task block's kinds are a union).
        block_schema = copy.deepcopy(schema["properties"][section]["additionalProperties"])
        override[block] = {"anyOf": [block_schema, {"type": "null"}]}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}
