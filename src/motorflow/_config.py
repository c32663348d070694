"""Typed configuration blocks of an experiment's model (network, feedback, the closed
loop), and the checks across an experiment's task, model and training blocks.

Every block is a frozen pydantic model (see `_config_base`): ``from_dict`` rejects
unknown keys and bad values with a :class:`ConfigError` naming the key path, the
value and what is allowed; a partial block keeps every default it does not name.
The training block lives in `_training._config`, the task blocks in `_tasks`. The
workflow's JSON Schema is generated from these classes (`config_json_schema`).
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar

from pydantic import Field, model_validator

from ._cells import AnyCellConfig, GRUConfig, moved_cell_settings
from ._config_base import (
    Block,
    NonNegativeInt,
    NonNegativeNumber,
    PositiveInt,
    PositiveNumber,
)
from ._config_errors import ConfigError
from ._plants import AnyPlantConfig, PointMassConfig
from ._tasks import TaskConfig
from ._training._config import TrainConfig


class NetworkConfig(Block):
    """Recurrent controller: its cell (a block of its kind), size, hidden noise, substeps."""

    # A cell's settings given to the network (as they were before cells had blocks).
    key_hints: ClassVar[dict[str, str]] = moved_cell_settings()

    cell: AnyCellConfig = Field(
        GRUConfig(),
        description="the recurrent cell, a block chosen by its `kind` (each kind's keys "
        "are under Cells); a bare kind is that kind with its defaults (`cell: leaky` is "
        "`cell: {kind: leaky}`)",
    )
    hidden_size: PositiveInt = Field(50, description="hidden units")
    hidden_noise_std: NonNegativeNumber = Field(
        0.0, description="std of Gaussian noise added to the hidden state every step"
    )
    substeps: PositiveInt = Field(
        1,
        description="cell updates per step of the loop, each seeing the same input: the "
        "cell's own step is `dt / substeps` (FORCE integrates with a tenth of `tau`)",
    )


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
        "control per step; the cell steps every `dt / network.substeps`)",
    )
    plant: AnyPlantConfig = Field(
        PointMassConfig(),
        description="the body, a plant chosen by its `kind` (each kind's keys are under Plants)",
    )
    network: NetworkConfig = NetworkConfig()
    feedback: FeedbackConfig = FeedbackConfig()

    @model_validator(mode="after")
    def _cell_fits_its_step(self) -> ModelConfig:
        problem = self.network.cell.step_problem(self.dt / self.network.substeps)
        if problem is not None:
            key, message = problem
            raise ConfigError(f"network.cell.{key}", message)
        return self


def check_training_fits_model(train: TrainConfig, model: ModelConfig, path: str = "") -> None:
    """Weight constraints need a cell with one recurrent weight matrix (not a GRU's
    gates); the learning rule must suit the cell, the plant and the trained parts."""

    def key(name: str) -> str:
        return f"{path}.training.{name}" if path else f"training.{name}"

    cell = model.network.cell.CELL
    if train.constraints and cell.RECURRENT_WEIGHT is None:
        raise ConfigError(
            key("constraints"),
            f"weight constraints act on a recurrent weight matrix, which the "
            f"{cell.KIND} cell does not have (its gates each have one); use "
            "model network.cell rnn or leaky",
        )
    problem = train.learning.check_model(cell, model.plant.build(), train.trained_paths)
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
    a truncation window (`learning.window`) is no longer than they are, and the rule
    can train under the task's interventions on the units (RLS's targets do not know
    of them; e-prop's traces follow units, not a readout space's mix)."""
    on_units = [p for p in task.perturbations if p.ON_UNITS]
    problem = train.learning.intervention_problem(on_units) if on_units else None
    if problem is not None:
        raise ConfigError(f"{path}.training.learning" if path else "training.learning", problem)
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
            key(f"task.{task.positions_key}"),
            f"the {model.plant.kind} plant cannot reach [{point[0]:.3g}, {point[1]:.3g}], "
            f"a position of {task.positions_note()} ({model.plant.build().workspace_note}); "
            "choose positions inside its reach",
        )


@functools.lru_cache(maxsize=256)  # a sweep's experiments share their plant and task
def _unreachable_point(plant: Any, task: TaskConfig) -> tuple[float, float] | None:
    """The first position of `task` that the plant of config `plant` cannot reach."""
    is_reachable = plant.build().is_reachable  # a method of a Module: looked up once
    return next((point for point in task.reach_points() if not is_reachable(point)), None)
