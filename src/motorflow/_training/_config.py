"""The training block of an experiment's config: the optimizer and its learning-rate
schedule, training stages, snapshots and :class:`TrainConfig` itself.

Frozen pydantic blocks as every config block (see `_config_base`); the checks of a
training block against its experiment's model and task are in `motorflow._config`.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, StringConstraints, model_validator

from .._config_base import (
    Block,
    Boolean,
    NonNegativeInt,
    NonNegativeNumber,
    PositiveInt,
    PositiveNumber,
    Text,
)
from .._config_errors import ConfigError
from .._losses import LossConfig
from .._program_form import ARGUMENT, with_arguments
from ._schedule import BatchSchedule, TimedSchedule
from .constraints import AnyConstraint
from .rules import BPTT, AnyLearningRule
from .update_rules import AnyUpdateRule


class ScheduleConfig(Block):
    """Learning-rate schedule over batches.

    - ``constant``: the optimizer's `learning_rate` throughout.
    - ``warmup_cosine``: linear from 0 to `learning_rate` over `warmup_steps`, then
      cosine decay to ``learning_rate * end_factor`` at the last batch.
    - ``exponential``: ``learning_rate * decay_rate ** (batch / decay_steps)``.
    """

    kind: Literal["constant", "warmup_cosine", "exponential"] = Field(
        "constant",
        description="`constant`, `warmup_cosine` (linear warm-up then cosine decay) or "
        "`exponential`",
    )
    warmup_steps: NonNegativeInt = Field(
        0,
        description="`warmup_cosine`: batches of linear warm-up (at most the training's "
        "`n_batches`). Partner `kind`: set for another kind, an error",
    )
    end_factor: NonNegativeNumber = Field(
        0.0,
        description="`warmup_cosine`: final rate as a fraction of the peak. Partner "
        "`kind`: set for another kind, an error",
    )
    decay_rate: PositiveNumber = Field(
        0.1,
        description="`exponential`: factor per `decay_steps` batches. Partner `kind`: "
        "set for another kind, an error",
    )
    decay_steps: PositiveInt = Field(
        1000,
        description="`exponential`: batches per `decay_rate` factor. Partner `kind`: set "
        "for another kind, an error",
    )


# Trainable parts are dotted attribute paths into the model.
TRAINABLE_PATH = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$"
ModelPath = Annotated[Text, StringConstraints(pattern=TRAINABLE_PATH)]


class OptimizerConfig(Block):
    """Optax optimizer: `name`, `learning_rate`, schedule and optional clipping.

    `learning_rates` gives parts of the model (paths, as in `trainable`) a peak rate
    of their own; the schedule scales it as it scales `learning_rate`. Where paths
    nest, the longer one decides.
    """

    name: Literal["adam", "adamw", "sgd"] = Field("adam", description="the optax optimizer")
    learning_rate: PositiveNumber = Field(1e-2, description="peak learning rate")
    learning_rates: dict[ModelPath, PositiveNumber] = Field(
        {},
        max_length=20,
        description="a rate of their own for parts of the model (`{path: rate}`), each on "
        "the schedule; see Staged training and learning rates per part",
    )
    weight_decay: NonNegativeNumber = Field(
        1e-4, description="`adamw` only. Partner `name`: set for another optimizer, an error"
    )
    momentum: NonNegativeNumber = Field(
        0.0,
        lt=1,
        description="`sgd` only (0 = none). Partner `name`: set for another optimizer, an error",
    )
    clip_global_norm: PositiveNumber | None = Field(
        None, description="clip each replicate's gradient to this global norm"
    )
    schedule: ScheduleConfig = ScheduleConfig()

    def program_form(self) -> OptimizerConfig:
        """The block as it keys a compiled program: its learning rates
        :data:`motorflow._program_form.ARGUMENT` (arrays of the optimizer's:
        :class:`motorflow._training._optimizer.LeafOptimizer`)."""
        groups = dict.fromkeys(self.learning_rates, ARGUMENT)
        return with_arguments(self, ["learning_rate"]).model_copy(update={"learning_rates": groups})


# Training keys that shape only the resume state (checkpoints) and the logs, never the
# results.
RESUME_ONLY_KEYS = ("checkpoint", "keep_checkpoints", "log", "tensorboard")


class StageConfig(Block):
    """A training stage: from batch `at` on, only the `trainable` parts train (the others
    keep their values and their optimizer state until a later stage trains them)."""

    at: PositiveInt = Field(description="the batch from which the stage trains")
    trainable: tuple[ModelPath, ...] = Field(
        min_length=1, description="the parts of the model that train in the stage"
    )


class SnapshotConfig(Block):
    """Copies of the trainable parameters, and the trial specs that trained them, kept
    in ``history.zarr`` at the `batches` of a schedule (and before the first batch), so
    learning can be analysed without training again.

    A snapshot at batch count b holds the parameters after b batches and (with
    `trials`) the trial specs of the b-th batch (batch index b - 1).
    """

    batches: BatchSchedule = Field(
        description="a schedule: the batch counts after which the parameters are copied"
    )
    trials: Boolean = Field(
        True,
        description="also keep the trial specs of the batch each snapshot's parameters "
        "last trained on",
    )


class TrainConfig(Block):
    """How an ensemble trains.

    `trainable` lists paths into the model (``network``, ``network.readout``, ...) that
    train from the first batch; `stages` change that set at given batches.
    Three schedules (see :mod:`motorflow._training._schedule`) say when the validation loss is
    measured (`validation`, also before the first batch and after the last), when a
    log line is written (`log`) and when a checkpoint is (`checkpoint`, also after
    the last batch), keeping the newest `keep_checkpoints` plus the best by
    validation loss. `on_divergence` says what a non-finite loss or parameter of one
    replicate does: ``stop`` the run with an error, or ``isolate`` the replicate
    (frozen at its last finite parameters and flagged) while the others train on.
    `constraints` (:mod:`motorflow._training.constraints`) hold from initialisation and after
    every update; `update_rules` (:mod:`motorflow._training.update_rules`) change weights from
    the batch's network states after the optimizer's step. `snapshots` keeps the parameters at scheduled batches; the norm of
    each replicate's loss gradient is recorded every batch, with `gradient_norms:
    per_term` also that of each loss term's (weighted) part, at an extra backward pass
    per term. With `tensorboard`, the run also writes TensorBoard event files
    (:mod:`motorflow._training._tensorboard`). `learning` (:mod:`motorflow._training.rules`) is how
    the gradient the optimizer steps with is computed: backpropagation through the
    whole rollout, or through at most a window of its steps.
    """

    key_hints: ClassVar[dict[str, str]] = {
        "log_every": "replaced by validation: {every: N} (when the validation loss is "
        "measured) and log: {every: N} (when a log line is written)",
        "checkpoint_every": "replaced by checkpoint: {every: N}",
    }

    n_replicates: PositiveInt = Field(
        5, description="independently initialised networks trained together"
    )
    n_batches: PositiveInt = Field(1000, description="training batches (optimizer steps)")
    batch_size: PositiveInt = Field(250, description="trials per batch")
    shared_trials: Boolean = Field(
        False,
        description="all replicates train on the same trials (otherwise each gets its own)",
    )
    trainable: tuple[ModelPath, ...] = Field(
        ("network",),
        min_length=1,
        description="parts of the model that train (from the first batch), as paths: "
        "`network`, `network.readout`, `network.cell`, ...",
    )
    stages: tuple[StageConfig, ...] = Field(
        (),
        max_length=100,
        description="from given batches on, train other parts: "
        "`[{at: 200, trainable: [network]}]`; see Staged training and learning rates per "
        "part",
    )
    optimizer: OptimizerConfig = OptimizerConfig()
    learning: AnyLearningRule = Field(
        BPTT(),
        description="how the gradient is computed, a learning rule chosen by its `kind` "
        "(see Learning rules)",
    )
    loss: LossConfig = LossConfig()
    validation: BatchSchedule = Field(
        BatchSchedule(every=100),
        description="when the validation loss is measured, a schedule (see Schedules); also "
        "before the first batch and after the last",
    )
    on_divergence: Literal["stop", "isolate"] = Field(
        "stop",
        description="a replicate's loss or parameters become non-finite: `stop` training "
        "with an error, or `isolate` the replicate (frozen at its last finite parameters "
        "and flagged; the others train on)",
    )
    log: TimedSchedule = Field(
        TimedSchedule(every=100),
        description="when a log line is written, a schedule; also after the last batch",
    )
    checkpoint: TimedSchedule = Field(
        TimedSchedule(every=100),
        description="when a checkpoint is written, a schedule; also after the last batch",
    )
    keep_checkpoints: PositiveInt = Field(
        2, description="newest checkpoints kept (the best by validation loss is kept too)"
    )
    constraints: tuple[AnyConstraint, ...] = Field(
        (),
        max_length=10,
        description="constraints on the recurrent (and readout) weights, holding from "
        "initialisation and after every update; see Weight constraints",
    )
    update_rules: tuple[AnyUpdateRule, ...] = Field(
        (),
        max_length=10,
        description="activity-dependent updates of a weight matrix after each optimizer "
        "step (Hebbian, Oja), each on its own schedule; see Update rules",
    )
    tensorboard: Boolean = Field(
        False,
        description="also write TensorBoard event files to "
        '`results/<config>/<experiment>/tensorboard/` (needs `pip install -e ".[tensorboard]"`); '
        "see TensorBoard",
    )
    snapshots: SnapshotConfig | None = Field(
        None,
        description="keep the trainable parameters (and trial specs) at the batches of a "
        "schedule in `history.zarr`: `{batches: {every: 100}}`; see Snapshots and gradient "
        "norms",
    )
    gradient_norms: Literal["total", "per_term"] = Field(
        "total",
        description="record each replicate's gradient norm every batch: of the `total` "
        "loss, or `per_term` too (an extra backward pass per term)",
    )

    @model_validator(mode="after")
    def _schedules_within_the_run(self) -> TrainConfig:
        schedule = self.optimizer.schedule
        if schedule.kind == "warmup_cosine" and schedule.warmup_steps > self.n_batches:
            raise ConfigError(
                "optimizer.schedule.warmup_steps",
                f"the warm-up ({schedule.warmup_steps} batches) is longer than the training "
                f"(n_batches {self.n_batches}), so the learning rate never reaches its peak; "
                "lower warmup_steps to at most n_batches or raise n_batches",
            )
        for name in ("validation", "log", "checkpoint"):
            getattr(self, name).check_batches(self.n_batches, name)
        for index, rule in enumerate(self.update_rules):
            rule.batches.check_batches(self.n_batches, f"update_rules[{index}].batches")
        if self.snapshots is not None:
            self.snapshots.batches.check_batches(self.n_batches, "snapshots.batches")
        if self.learning.segment_length() is not None:
            for name, present, what in (
                ("update_rules", self.update_rules, "update rules read a whole rollout"),
                (
                    "gradient_norms",
                    self.gradient_norms == "per_term",
                    "per-term norms are of one backward pass over the whole rollout",
                ),
            ):
                if present:
                    raise ConfigError(
                        name,
                        f"{what}, so they do not combine with learning.update_every (updates "
                        "within the rollout); drop one of them",
                    )
        previous = 0
        for index, stage in enumerate(self.stages):
            if not previous < stage.at < self.n_batches:
                raise ConfigError(
                    f"stages[{index}].at",
                    f"a stage starts after the previous one (batch {previous}) and before "
                    f"the last batch ({self.n_batches}), got {stage.at}; `trainable` "
                    "says what trains from batch 0",
                )
            previous = stage.at
        return self

    @property
    def trained_paths(self) -> tuple[str, ...]:
        """Every path that trains in some stage, in order of first mention."""
        paths = [*self.trainable, *(p for stage in self.stages for p in stage.trainable)]
        return tuple(dict.fromkeys(paths))

    def program_form(self) -> TrainConfig:
        """The block as it keys a compiled program: the optimizer's and the loss's
        program forms (learning rates and loss weights are the trainer's arrays), so
        trainings that differ only in them share their programs."""
        return self.model_copy(
            update={"optimizer": self.optimizer.program_form(), "loss": self.loss.program_form()}
        )

    def result_settings(self) -> dict[str, Any]:
        """`to_dict` without the keys that shape only the resume state and the log
        (`RESUME_ONLY_KEYS`)."""
        settings = self.to_dict()
        for name in RESUME_ONLY_KEYS:
            settings.pop(name)
        return settings
