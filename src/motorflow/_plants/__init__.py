"""Plants: the bodies a network drives (point mass, torque-driven arm, muscle-driven arm).

Pure dynamics: each plant is a vector field over an explicit state pytree, stepped by
:func:`step`. `PLANTS` maps the config's plant names to their classes.
"""

from __future__ import annotations

from .._config_base import registry, tagged_union
from ._arm import ArmConfig, ArmState, TwoLinkArm
from ._base import AbstractPlant, PlantConfig
from ._hill_muscle import hill_force
from ._integrate import METHODS, step
from ._muscles import MuscleArm, MuscleArmConfig, MuscleArmState
from ._point_mass import PointMass, PointMassConfig, PointMassState

# Adding a plant is one module with the plant and its config, plus one line here.
PLANTS: dict[str, type[PlantConfig]] = registry(PointMassConfig, ArmConfig, MuscleArmConfig)
"""Every plant kind (a model's `plant.kind`) to its config block, which builds the plant."""
# A model's `plant:` block: one of the registered kinds, chosen by its `kind` key.
AnyPlantConfig = tagged_union(list(PLANTS.values()))

__all__ = [
    "METHODS",
    "PLANTS",
    "AbstractPlant",
    "AnyPlantConfig",
    "ArmConfig",
    "ArmState",
    "MuscleArm",
    "MuscleArmConfig",
    "MuscleArmState",
    "PlantConfig",
    "PointMass",
    "PointMassConfig",
    "PointMassState",
    "TwoLinkArm",
    "hill_force",
    "step",
]
