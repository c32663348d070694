"""Posture: hold the effector where it starts, against whatever perturbs it.

The postural task of perturbation studies (e.g. Crevecoeur, Kurtzer & Scott 2012;
MotorNet's and feedbax's tasks with a goal equal to the start): the goal is the
start, shown as the network's goal input, and the loss's ``hold`` term weighs the
distance from it at every step.
"""

from __future__ import annotations

from typing import Literal

import jax.numpy as jnp
from jaxtyping import Array, Bool, PRNGKeyArray
from pydantic import Field

from .._config_base import Point
from ._reach import WorkspaceTask
from ._trials import CenterOut, Trials, labelled


class PostureConfig(WorkspaceTask):
    """Hold still at a position uniform in the `workspace`; the evaluation trials hold
    at each center-out position of `eval` (labelled by its angle and distance)."""

    kind: Literal["posture"] = "posture"
    workspace: tuple[Point, Point] = Field(
        ((-1.0, -1.0), (1.0, 1.0)),
        description="`[[x_min, y_min], [x_max, y_max]]` of the positions to hold",
    )

    def draw(self, n_trials: int, *, key: PRNGKeyArray) -> Trials:
        pos = self.uniform(n_trials, key=key)
        return Trials(init_pos=pos, init_vel=jnp.zeros_like(pos), goal_pos=pos)

    def evaluation(self) -> CenterOut:
        angle, distance, positions = self.eval.layout()
        return labelled(positions, positions, angle, distance)

    def hold(self, trial: Trials) -> Bool[Array, " time"]:
        """Every step."""
        return jnp.ones(self.n_steps, bool)
