"""The task interface: what a kind of task draws, shows the network and holds it to."""

from __future__ import annotations

import abc
import math
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Self

import numpy as np
from jaxtyping import Array, Bool, Float, PRNGKeyArray
from pydantic import Field

from .._config_base import Block, Point, PositiveInt, PositiveNumber
from .._config_errors import plain
from .._perturbations import AnyPerturbation
from ._trials import CenterOut, Trials, center_out_layout, labelled

# A list of perturbations has at most this many entries (each is a slot every trial carries).
MAX_PERTURBATIONS = 32


class CenterOutConfig(Block):
    """Evaluation reaches from `center` in `n_directions` directions x `distances`."""

    center: Point = Field(
        (0.0, 0.0), description="center of the evaluation (and validation) trials"
    )
    n_directions: Annotated[PositiveInt, Field(le=3600)] = Field(
        7, description="directions, evenly spaced from angle 0"
    )
    distances: tuple[PositiveNumber, ...] = Field(
        (0.5,),
        min_length=1,
        max_length=100,
        description="distances from the center; trials are every direction at every "
        "distance. A task with a `workspace` must hold every such position (where the "
        "network was trained)",
    )

    def goals(self) -> list[tuple[float, float]]:
        """The farthest goal in each direction."""
        reach = max(self.distances)
        angles = (2 * math.pi * i / self.n_directions for i in range(self.n_directions))
        return [
            (self.center[0] + reach * math.cos(a), self.center[1] + reach * math.sin(a))
            for a in angles
        ]

    def layout(self) -> tuple[Any, Any, Any]:
        """Angles, distances and goal positions of the evaluation trials (distance-major)."""
        return center_out_layout(self.center, self.n_directions, self.distances)


class TaskConfig(Block):
    """A task: the trials a network trains on, what it sees, and where it must be.

    Each kind is a subclass with a ``kind`` literal (its registry name, see
    `motorflow.TASKS`) that draws its training trials (:meth:`draw`). Calling
    :meth:`from_dict` on this class picks the kind from the data's ``kind`` key
    (``reach`` when absent). Every kind trains for `n_steps` per trial, evaluates on
    the center-out layout of `eval`, and carries `perturbations` into its training
    trials (each with its `probability`) and its validation set.

    Class variables: `n_inputs`, the task inputs the network receives each step;
    `has_go_cue`, whether its trials carry a ``go_step``; `positions_key`, the key of
    the positions :meth:`reach_points` samples (where an unreachable one is reported).
    """

    kind: str
    n_steps: PositiveInt = Field(
        100, description="time steps per trial (the trial lasts `n_steps * dt` seconds)"
    )
    eval: CenterOutConfig = CenterOutConfig()
    perturbations: tuple[AnyPerturbation, ...] = Field(
        (),
        max_length=MAX_PERTURBATIONS,
        description="perturbations of the training trials, each with its `probability`; "
        "the validation trials get them too (see Perturbations)",
    )

    n_inputs: ClassVar[int] = 2
    has_go_cue: ClassVar[bool] = False
    positions_key: ClassVar[str] = "eval"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None = None, path: str = "") -> Self:
        """The block from plain values; on `TaskConfig` itself, of the kind `data` names."""
        if cls is TaskConfig:
            from . import parse_task  # the registry, which imports every kind

            return parse_task(data, path)
        return super().from_dict(data, path)

    def program_form(self) -> Self:
        """The block as it keys a compiled program: its perturbations' program forms
        (:meth:`AbstractPerturbation.program_form`: their drawn settings are the trials'
        arrays)."""
        if not self.perturbations:
            return self
        forms = tuple(p.program_form() for p in self.perturbations)
        return self.model_copy(update={"perturbations": forms})

    @abc.abstractmethod
    def draw(self, n_trials: int, *, key: PRNGKeyArray) -> Trials:
        """`n_trials` training trials from `key`, without perturbations."""

    def evaluation(self) -> CenterOut:
        """The evaluation trials: from rest at `eval.center` to each center-out goal."""
        angle, distance, goals = self.eval.layout()
        start = np.broadcast_to(np.asarray(self.eval.center, np.float64), goals.shape)
        return labelled(start, goals, angle, distance)

    def inputs(self, trial: Trials, goal: Float[Array, "time 2"]) -> Float[Array, "time input"]:
        """What the network receives at every step of one trial besides its feedback:
        by default the goal (`goal`, per step: it moves when the target jumps)."""
        return goal

    def hold(self, trial: Trials) -> Bool[Array, " time"] | None:
        """The steps of one trial on which the effector should stay where it started,
        or `None` if there are none (the loss's ``hold`` term measures them)."""
        return None

    @classmethod
    def holds(cls) -> bool:
        """Whether this kind's trials have steps to hold still (it overrides :meth:`hold`)."""
        return cls.hold is not TaskConfig.hold

    @abc.abstractmethod
    def reach_points(self) -> list[tuple[float, float]]:
        """Positions the plant must be able to reach for this task: every start, goal
        and evaluation position, or a dense sample of them (plain Python)."""

    def positions_note(self) -> str:
        """Where :meth:`reach_points` come from, for error messages."""
        return (
            f"the {self.kind} task's center {plain(self.eval.center)} or its circles of "
            f"radius {plain(self.eval.distances)}"
        )
