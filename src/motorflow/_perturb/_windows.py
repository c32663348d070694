"""Perturbations confined to a time window of the trial: force pulses and feedback offsets."""

from __future__ import annotations

from typing import ClassVar, Literal

from jaxtyping import Array
from pydantic import Field

from ._base import (
    AbstractPerturbation,
    Drawn,
    Effects,
    Frame,
    NonNegativeDrawn,
    PositiveDrawn,
    TrialGeometry,
)


class _Windowed(AbstractPerturbation):
    """A vector of `size` at `angle` in `frame`, on during ``[start, start + duration)``."""

    angle: Drawn = Field(90.0, description="degrees counter-clockwise")
    frame: Frame = "reach"
    start: NonNegativeDrawn = Field(0.1, description="s from the trial's start")
    duration: PositiveDrawn = Field(0.05, description="s")

    TIMES: ClassVar[tuple[str, ...]] = ("start",)

    def _vector_per_step(self, params: dict[str, Array], size: Array, trial: TrialGeometry):
        vector = params["active"] * size * trial.direction(params["angle"], self.frame)
        return trial.window(params["start"], params["duration"])[:, None] * vector


class ForcePulse(_Windowed):
    """A force pulse on the effector: `amplitude` newtons at `angle` degrees in `frame`
    (``reach``: from the movement direction, 90 = to its left), during
    ``[start, start + duration)``."""

    kind: Literal["force_pulse"] = "force_pulse"
    amplitude: NonNegativeDrawn = Field(1.0, description="N")

    DRAWN: ClassVar[tuple[str, ...]] = ("amplitude", "angle", "start", "duration")

    def effects(self, params: dict[str, Array], trial: TrialGeometry) -> Effects:
        return Effects.only(
            trial.n_steps,
            force=self._vector_per_step(params, params["amplitude"], trial),
        )


class FeedbackOffset(_Windowed):
    """A shift of the sensed effector position by `distance` metres at `angle` degrees in
    `frame`, during ``[start, start + duration)``: the position the network receives
    is offset, the effector itself is not. The shift enters the feedback channel, so
    the network sees it `model.feedback.delay` steps later."""

    kind: Literal["feedback_offset"] = "feedback_offset"
    distance: NonNegativeDrawn = Field(0.02, description="m")
    duration: PositiveDrawn = Field(0.1, description="s")

    DRAWN: ClassVar[tuple[str, ...]] = ("distance", "angle", "start", "duration")

    def effects(self, params: dict[str, Array], trial: TrialGeometry) -> Effects:
        return Effects.only(
            trial.n_steps,
            feedback=self._vector_per_step(params, params["distance"], trial),
        )
