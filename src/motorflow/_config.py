"""Typed configuration blocks of an experiment: task, model and training.

Every block is a frozen pydantic model (see `_config_base`): ``from_dict`` rejects
unknown keys and bad values with a :class:`ConfigError` naming the key path, the
value and what is allowed; a partial block keeps every default it does not name.
The workflow's JSON Schema is generated from these classes (`config_json_schema`).
"""

from __future__ import annotations

import functools
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, StringConstraints, model_validator

from ._cells import CELLS
from ._config_base import (
    Block,
    Boolean,
    NonNegativeInt,
    NonNegativeNumber,
    PositiveInt,
    PositiveNumber,
    Text,
)
from ._config_errors import ConfigError, plain
from ._losses import LossConfig
from ._plants import AnyPlantConfig, PointMassConfig
from ._tasks import TaskConfig, WorkspaceTask
from ._training._schedule import BatchSchedule, TimedSchedule
from ._training.constraints import AnyConstraint
from ._training.rules import BPTT, AnyLearningRule
from ._training.update_rules import AnyUpdateRule


class NetworkConfig(Block):
    """Recurrent controller: cell type, size, leak time constant, hidden noise."""

    cell: Literal[tuple(CELLS)] = Field(
        "gru",
        description="`gru`, `rnn` (vanilla tanh), `leaky` (leaky tanh, time constant `tau`) "
        "or `reservoir` (FORCE's sparse random rate network with gain `gain`, time "
        "constant `tau`; Sussillo & Abbott 2009)",
    )
    hidden_size: PositiveInt = Field(50, description="hidden units")
    tau: PositiveNumber = Field(
        0.1,
        description="time constant of the `leaky` and `reservoir` cells in seconds (>= "
        "the cell's step, `dt / substeps`). Partner `cell`: set (not the default) for "
        "another cell, an error",
    )
    hidden_noise_std: NonNegativeNumber = Field(
        0.0, description="std of Gaussian noise added to the hidden state every step"
    )
    substeps: PositiveInt = Field(
        1,
        description="cell updates per step of the loop, each seeing the same input: the "
        "cell's own step is `dt / substeps` (FORCE integrates with a tenth of `tau`)",
    )
    gain: PositiveNumber = Field(
        1.5,
        description="`reservoir` only: gain g of the recurrent weights (chaotic above 1; "
        "FORCE's 1.5). Partner `cell`: set for another cell, an error",
    )
    connectivity: Annotated[float, Field(gt=0.0, le=1.0)] = Field(
        0.1,
        description="`reservoir` only: probability p that a recurrent weight is nonzero "
        "(nonzero weights drawn from N(0, 1/(p hidden_size)); FORCE's 0.1). Partner "
        "`cell`: set for another cell, an error",
    )
    output_feedback: Boolean = Field(
        False,
        description="`reservoir` only: feed the readout's output back into the cell at "
        "every sub-step through fixed U(-1, 1) weights (FORCE's feedback loop)",
    )

    @model_validator(mode="after")
    def _feedback_needs_a_reservoir(self) -> NetworkConfig:
        if self.output_feedback and self.cell != "reservoir":
            raise ConfigError(
                "output_feedback",
                f"output feedback needs the reservoir cell, got cell {self.cell}",
            )
        return self


class FeedbackConfig(Block):
    """Sensory feedback of position and velocity: `delay` in steps, additive noise."""

    delay: NonNegativeInt = Field(
        1,
        description="feedback delay in steps: at step t the network sees position and "
        "velocity of step t - delay (must be < the task's `n_steps`)",
    )
    noise_std: NonNegativeNumber = Field(
        0.0, description="std of Gaussian noise on each feedback channel"
    )


class ModelConfig(Block):
    """A closed-loop controller: plant + network + feedback, stepped every `dt` s.

    `plant` is one of the registered plants (`motorflow.PLANTS`), chosen by its
    ``kind``; a block naming another kind than its default replaces it whole.
    """

    dt: PositiveNumber = Field(
        0.05,
        description="the network's time step in seconds (one feedback sample and one "
        "control per step; the leak of the leaky cell)",
    )
    plant: AnyPlantConfig = Field(
        PointMassConfig(),
        description="the body, a plant chosen by its `kind` (each kind's keys are under Plants)",
    )
    network: NetworkConfig = NetworkConfig()
    feedback: FeedbackConfig = FeedbackConfig()

    @model_validator(mode="after")
    def _leak_no_faster_than_a_step(self) -> ModelConfig:
        cell_step = self.dt / self.network.substeps
        if self.network.cell in ("leaky", "reservoir") and self.network.tau < cell_step:
            raise ConfigError(
                "network.tau",
                f"the {self.network.cell} cell needs tau >= dt / substeps ({cell_step:g}), "
                f"got {self.network.tau}",
            )
        return self


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

    def result_settings(self) -> dict[str, Any]:
        """`to_dict` without the keys that shape only the resume state and the log
        (`RESUME_ONLY_KEYS`)."""
        settings = self.to_dict()
        for name in RESUME_ONLY_KEYS:
            settings.pop(name)
        return settings


def check_training_fits_model(train: TrainConfig, model: ModelConfig, path: str = "") -> None:
    """Weight constraints need a cell with one recurrent weight matrix (not a GRU's
    gates); the learning rule must suit the cell, the plant and the trained parts."""

    def key(name: str) -> str:
        return f"{path}.training.{name}" if path else f"training.{name}"

    if train.constraints and model.network.cell == "gru":
        raise ConfigError(
            key("constraints"),
            "weight constraints act on a recurrent weight matrix, which the gru cell "
            "does not have (its gates each have one); use model network.cell rnn or leaky",
        )
    problem = train.learning.check_model(
        model.network.cell, model.plant.build(), train.trained_paths
    )
    if problem is not None:
        raise ConfigError(key("learning"), problem)
    if train.gradient_norms == "per_term" and not train.learning.exact_gradient:
        raise ConfigError(
            key("gradient_norms"),
            f"per-term norms are those of the loss's gradient, which {train.learning.kind} "
            "does not follow; use gradient_norms: total",
        )


def check_training_fits_task(train: TrainConfig, task: TaskConfig, path: str = "") -> None:
    """Updates within a rollout (`learning.update_every`) come within the task's trials,
    and a truncation window (`learning.window`) is no longer than they are."""
    window = getattr(train.learning, "window", None)
    if window is not None and window > task.n_steps:
        raise ConfigError(
            f"{path}.training.learning.window" if path else "training.learning.window",
            f"window ({window} steps) is longer than the task's n_steps ({task.n_steps}), "
            "so it truncates nothing; set it to at most n_steps (n_steps itself is "
            "backpropagation through the whole trial)",
        )
    every = train.learning.segment_length()
    if every is not None and every > task.n_steps:
        raise ConfigError(
            f"{path}.training.learning.update_every" if path else "training.learning.update_every",
            f"update_every ({every} steps) is longer than the task's n_steps ({task.n_steps}), "
            "so no update comes within a rollout; set it to at most n_steps, or null for "
            "one update per rollout",
        )


def check_model_fits_task(model: ModelConfig, task: TaskConfig, path: str = "") -> None:
    """Cross-block checks: a feedback delay must leave steps to act on, and the plant
    must reach every position of the task (checked on a sample of them, in plain
    Python: no JAX computation)."""

    def key(name: str) -> str:
        return f"{path}.{name}" if path else name

    if model.feedback.delay >= task.n_steps:
        raise ConfigError(
            key("model.feedback.delay"),
            f"delay ({model.feedback.delay} steps) must be smaller than the task's "
            f"n_steps ({task.n_steps})",
        )
    point = _unreachable_point(model.plant, task)
    if point is not None:
        raise ConfigError(
            key("task.workspace" if isinstance(task, WorkspaceTask) else "task.eval"),
            f"the {model.plant.kind} plant cannot reach [{point[0]:.3g}, {point[1]:.3g}], "
            f"a position of {_positions(task)} ({model.plant.build().workspace_note}); "
            "choose positions inside its reach",
        )


@functools.lru_cache(maxsize=256)  # a sweep's experiments share their plant and task
def _unreachable_point(plant: Any, task: TaskConfig) -> tuple[float, float] | None:
    """The first position of `task` that the plant of config `plant` cannot reach."""
    is_reachable = plant.build().is_reachable  # a method of a Module: looked up once
    return next((point for point in task.reach_points() if not is_reachable(point)), None)


def _positions(task: TaskConfig) -> str:
    """Where a task's positions come from, for error messages."""
    if isinstance(task, WorkspaceTask):
        return f"the workspace {plain(task.workspace)} or the evaluation positions"
    return (
        f"the {task.kind} task's center {plain(task.eval.center)} or its circles of "
        f"radius {plain(task.eval.distances)}"
    )
