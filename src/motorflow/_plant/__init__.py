"""Plants: the bodies a network drives (point mass, torque-driven arm, muscle-driven arm).

Pure dynamics: each plant is a vector field over an explicit state pytree, stepped by
:func:`step`. `PLANTS` maps the config's plant names to their classes.
"""

from __future__ import annotations

from ._arm import ArmState, TwoLinkArm
from ._base import AbstractPlant
from ._integrate import METHODS, step
from ._muscles import MuscleArm, MuscleArmState, hill_force
from ._point_mass import PointMass, PointMassState

PLANTS: dict[str, type[AbstractPlant]] = {
    "point_mass": PointMass,
    "arm": TwoLinkArm,
    "muscle_arm": MuscleArm,
}

__all__ = [
    "METHODS",
    "PLANTS",
    "AbstractPlant",
    "ArmState",
    "MuscleArm",
    "MuscleArmState",
    "PointMass",
    "PointMassState",
    "TwoLinkArm",
    "hill_force",
    "step",
]
