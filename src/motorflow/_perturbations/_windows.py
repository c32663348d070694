"""Perturbations confined to a time window of the trial: force pulses and feedback offsets."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

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
    shown,
)


class _Windowed(AbstractPerturbation):
    """A vector at `angle` in `frame`, on during ``[start, start + duration)``: its length
    is the setting named by `SIZE`, and it is the effect named by `EFFECT`."""

    angle: Drawn = Field(90.0, description="degrees counter-clockwise")
    frame: Frame = "reach"
    start: NonNegativeDrawn = Field(0.1, description="s from the trial's start")
    duration: PositiveDrawn = Field(0.05, description="s")

    TIMES: ClassVar[tuple[str, ...]] = ("start",)
    SIZE: ClassVar[str]
    EFFECT: ClassVar[str]

    def effects(self, params: dict[str, Array], trial: TrialGeometry) -> Effects:
        size = params[self.SIZE]
        vector = params["active"] * size * trial.direction(params["angle"], self.frame)
        window = trial.window(params["start"], params["duration"])[:, None]
        return Effects.only(trial.n_steps, **{self.EFFECT: window * vector})


class ForcePulse(_Windowed):
    """A force pulse on the effector: `amplitude` newtons at `angle` degrees in `frame`
    (``reach``: from the movement direction, 90 = to its left), during
    ``[start, start + duration)``."""

    kind: Literal["force_pulse"] = "force_pulse"
    amplitude: NonNegativeDrawn = Field(1.0, description="N")

    DRAWN: ClassVar[tuple[str, ...]] = ("amplitude", "angle", "start", "duration")
    UNITS: ClassVar[dict[str, str]] = {
        "amplitude": "N",
        "angle": "degree",
        "start": "s",
        "duration": "s",
    }
    SIZE: ClassVar[str] = "amplitude"
    EFFECT: ClassVar[str] = "force"

    @classmethod
    def describe(cls, settings: Mapping[str, Any]) -> str:
        return (
            f"pulse {shown(settings['amplitude'])} N at {shown(settings['angle'])}° "
            f"from {shown(settings['start'])} s"
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
    UNITS: ClassVar[dict[str, str]] = {
        "distance": "m",
        "angle": "degree",
        "start": "s",
        "duration": "s",
    }
    SIZE: ClassVar[str] = "distance"
    EFFECT: ClassVar[str] = "feedback"

    @classmethod
    def describe(cls, settings: Mapping[str, Any]) -> str:
        return (
            f"feedback +{shown(settings['distance'])} m at {shown(settings['angle'])}° "
            f"from {shown(settings['start'])} s"
        )
