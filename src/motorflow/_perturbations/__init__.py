"""Perturbations: force fields, force pulses, feedback offsets, target jumps, and
interventions on the network's units (clamp, stimulation, lesion, extra noise).

Each is a config block (its settings, some drawn per trial) that says what it does
to a trial at every step (:class:`Effects`). `PERTURBATIONS` maps the config's
``kind`` names to their classes; adding one is a module and one line here.
"""

from __future__ import annotations

from .._config_base import registry, tagged_union
from ._base import AbstractPerturbation, Effects, TrialGeometry, endpoint_force
from ._draw import Params, draw_all, draw_conditions, draw_params, total_effects
from ._fields import SHADMEHR_1994_FIELD, ConstantField, CurlField, ViscousField
from ._target import TargetJump
from ._units import Clamp, Lesion, Stimulation, UnitEffects, UnitNoise, UnitTerm
from ._windows import FeedbackOffset, ForcePulse

PERTURBATIONS: dict[str, type[AbstractPerturbation]] = registry(
    CurlField,
    ViscousField,
    ConstantField,
    ForcePulse,
    FeedbackOffset,
    TargetJump,
    Clamp,
    Stimulation,
    Lesion,
    UnitNoise,
)
"""Every perturbation kind (a perturbation block's `kind`) to its config block."""
# One perturbation block of a config: a registered kind, chosen by its `kind` key.
AnyPerturbation = tagged_union(list(PERTURBATIONS.values()))

__all__ = [
    "PERTURBATIONS",
    "SHADMEHR_1994_FIELD",
    "AbstractPerturbation",
    "AnyPerturbation",
    "Clamp",
    "ConstantField",
    "CurlField",
    "Effects",
    "FeedbackOffset",
    "ForcePulse",
    "Lesion",
    "Params",
    "Stimulation",
    "TargetJump",
    "TrialGeometry",
    "UnitEffects",
    "UnitNoise",
    "UnitTerm",
    "ViscousField",
    "draw_all",
    "draw_conditions",
    "draw_params",
    "endpoint_force",
    "total_effects",
]
