"""The workflow config as one typed model.

Named blocks (``tasks``, ``models``, ``trainings``) are the typed blocks of
`_config`; ``experiments`` combine them (with partial ``override`` blocks, checked
once merged, see `_experiments`); ``sweeps`` expand an experiment over a grid
(`_cross_experiment_specs`, with protocols and comparisons). The JSON Schema
Snakemake validates is generated from :class:`WorkflowConfig` (`_config_schema`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Annotated, Any, Literal

import pydantic
from pydantic import AfterValidator, Field, WithJsonSchema, model_validator

from .._analysis._config import AnalysisConfig, StatisticsConfig
from .._config import ModelConfig
from .._config_base import Block, Boolean, NonNegativeInt, PositiveInt, PositiveNumber, Text
from .._config_errors import ConfigError, config_error, one_error
from .._perturbations import AnyPerturbation
from .._tasks import MAX_PERTURBATIONS, AnyTaskConfig
from .._training._config import TrainConfig
from ._config_names import Name
from ._cross_experiment_specs import (
    ComparisonSpec,
    ConditionSweepSpec,
    ProtocolSpec,
    SweepSpec,
)
from ._results_folder import FOLDER_PATTERN as RESULTS_FOLDER_PATTERN
from ._results_folder import check_results_folder

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
    experiments: tuple[Text, ...] | None = Field(
        None,
        description="the experiments that get their own figures (loss, trajectories, speed, "
        "each analysis's, the arm's) in a full run: glob patterns over the experiments' "
        "names (`*`, `?`, `[...]`, as the shell's), e.g. `[quiet, 'noise-*_seed0']`; `[]`: "
        "none; unset: every experiment. Each pattern must match an experiment. In a large "
        "sweep the experiments' figures are most of its time; every experiment is analysed "
        "and the summary, comparison and sweep figures cover every experiment either way, "
        "and another experiment's figure is made when asked for by its path",
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


class PackedStageResources(StageResources):
    """A per-experiment stage's job size, and how many experiments one job takes."""

    pack: Annotated[PositiveInt, Field(le=1000)] = Field(
        1,
        description="experiments per job of this stage (not `trials`). Each sweep's "
        "experiments (in grid order), then the others, are cut into packs of this many, each "
        "run by one job in one process: a sweep of hundreds of experiments then has tens of "
        "jobs per stage, not hundreds (Snakemake's own cost grows with its job count; see "
        "the large sweeps' guide). `train`: those with `init_from` train alone; a pack "
        "trains on one device, and its experiments that share a compiled program (every "
        "setting equal but the seed, noise levels, learning rates, loss weights and "
        "perturbations' drawn settings: put `seed` last in a grid) train as one call per "
        "chunk, vmapped over experiments on a GPU; each result is its run alone's (bitwise "
        "on the CPU; on a GPU expected within float rounding, not yet measured). The other "
        "stages run a pack's experiments one after another, each as its own job would "
        "(bitwise its results). Editing one experiment reruns its pack of each stage (the "
        "pack's other trainings resume their finished checkpoints); editing `pack` reruns "
        "the jobs it regroups. At most 1,000: a job's command names each member's log",
    )


class TrainResources(PackedStageResources):
    """The train stage's job size, and how many experiments a train job trains."""

    @model_validator(mode="after")
    def _a_pack_on_one_device(self) -> TrainResources:
        if self.pack > 1 and self.gpus > 1:
            raise ConfigError(
                "pack",
                f"{self.pack} experiments per job with gpus: {self.gpus}: a pack trains on "
                "one device; set gpus to 1 (packs then share no GPU), or pack to 1 to "
                "spread each experiment's replicates over several GPUs",
            )
        return self


class ResourcesConfig(Block):
    """Job sizes per stage; a partial stage keeps the defaults it does not name."""

    trials: StageResources = StageResources(threads=1, mem_mb=2000, runtime=10)
    train: TrainResources = TrainResources(threads=2, mem_mb=4000, runtime=120)
    evaluate: PackedStageResources = PackedStageResources(threads=1, mem_mb=2000, runtime=30)
    figures: PackedStageResources = PackedStageResources(threads=1, mem_mb=1000, runtime=10)
    analysis: PackedStageResources = PackedStageResources(threads=1, mem_mb=2000, runtime=30)


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
    condition_sweeps: dict[Name, ConditionSweepSpec] = Field(
        {},
        description="metrics against a setting that varies across evaluation conditions, "
        "by name: each draws one figure and a CSV of its numbers (see "
        "`condition_sweeps.<name>`)",
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
