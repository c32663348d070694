"""Target jumps: the goal moves at a given time of the trial."""

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
    TrialGeometry,
    shown,
)


class TargetJump(AbstractPerturbation):
    """The goal jumps by `distance` metres at `angle` degrees in `frame` (``reach``: from
    the start-to-goal direction, 90 = to its left) at `time` seconds and stays there:
    from then on the network is shown the new goal and the loss measures against it."""

    kind: Literal["target_jump"] = "target_jump"
    time: NonNegativeDrawn = Field(0.1, description="s from the trial's start")
    distance: NonNegativeDrawn = Field(0.05, description="m")
    angle: Drawn = Field(90.0, description="degrees counter-clockwise")
    frame: Frame = "reach"

    DRAWN: ClassVar[tuple[str, ...]] = ("time", "distance", "angle")
    UNITS: ClassVar[dict[str, str]] = {"time": "s", "distance": "m", "angle": "degree"}
    TIMES: ClassVar[tuple[str, ...]] = ("time",)

    @classmethod
    def describe(cls, settings: Mapping[str, Any]) -> str:
        return (
            f"jump {shown(settings['distance'])} m at {shown(settings['angle'])}° "
            f"at {shown(settings['time'])} s"
        )

    def effects(self, params: dict[str, Array], trial: TrialGeometry) -> Effects:
        jump = params["active"] * params["distance"] * trial.direction(params["angle"], self.frame)
        return Effects.only(
            trial.n_steps,
            goal=trial.from_step(params["time"])[:, None] * jump,
        )
