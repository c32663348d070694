"""Trial specs as plain arrays, and the center-out layout every task evaluates on."""

from __future__ import annotations

import math

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from .._perturbations import AbstractPerturbation, Params


class Trials(eqx.Module):
    """Trial specs; every array shares the leading dims (e.g. replicate, batch, trial).

    **Arguments:**

    - `init_pos`: start position, shape `(..., 2)`.
    - `init_vel`: start velocity, shape `(..., 2)`.
    - `goal_pos`: goal position, shape `(..., 2)`.
    - `perturbations`: the perturbations every trial carries (static settings).
    - `params`: for each perturbation, its values per trial (``active`` and each
      drawn setting), each shape `(...)`.
    - `go_step`: the step at which the go cue appears, shape `(...)`, for tasks that
      give one (delayed reaches); `None` otherwise.
    """

    init_pos: Float[Array, "*trials 2"]
    init_vel: Float[Array, "*trials 2"]
    goal_pos: Float[Array, "*trials 2"]
    perturbations: tuple[AbstractPerturbation, ...] = eqx.field(static=True, default=())
    params: tuple[Params, ...] = ()
    go_step: Int[Array, "*trials"] | None = None

    def perturbed_by(
        self, perturbations: tuple[AbstractPerturbation, ...], params: tuple[Params, ...]
    ) -> Trials:
        """These trials carrying `perturbations` with their per-trial `params` instead."""
        return Trials(
            self.init_pos,
            self.init_vel,
            self.goal_pos,
            tuple(perturbations),
            params,
            self.go_step,
        )

    def program_form(self) -> Trials:
        """These trials as a compiled program takes them: their perturbations in their
        program form (:meth:`AbstractPerturbation.program_form`), so trials of other
        perturbation strengths (drawn into `params`) are arguments of the same program."""
        if not self.perturbations:
            return self
        return self.perturbed_by(tuple(p.program_form() for p in self.perturbations), self.params)

    def with_go_step(self, go_step: Int[Array, "*trials"]) -> Trials:
        """These trials with the go cue at `go_step` (as int32)."""
        return Trials(
            self.init_pos,
            self.init_vel,
            self.goal_pos,
            self.perturbations,
            self.params,
            jnp.asarray(go_step, jnp.int32),
        )


class CenterOut(eqx.Module):
    """Evaluation trials laid out around a center, with their labels (dim `trial`).

    Trials are ordered distance-major: all directions at the first distance, then
    the next distance. `goal_angle` and `goal_distance` place each trial's goal
    relative to the center.
    """

    trials: Trials
    goal_angle: Float[Array, " trial"]
    goal_distance: Float[Array, " trial"]


def center_out_layout(
    center: tuple[float, float], n_directions: int, distances: tuple[float, ...]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Angles (rad), distances and positions `(trial, 2)` of every direction at every
    distance from `center`, distance-major, in float64."""
    angles = 2 * math.pi * np.arange(n_directions) / n_directions
    angle, distance = (a.ravel() for a in np.meshgrid(angles, np.asarray(distances), indexing="xy"))
    points = np.asarray(center, np.float64) + distance[:, None] * np.stack(
        [np.cos(angle), np.sin(angle)], -1
    )
    return angle, distance, points


def labelled(
    start: np.ndarray, goal: np.ndarray, angle: np.ndarray, distance: np.ndarray
) -> CenterOut:
    """Center-out trials from rest at `start` to `goal` (both `(trial, 2)`), labelled."""
    return CenterOut(
        trials=Trials(
            init_pos=jnp.asarray(start, jnp.float32),
            init_vel=jnp.zeros(goal.shape, jnp.float32),
            goal_pos=jnp.asarray(goal, jnp.float32),
        ),
        goal_angle=jnp.asarray(angle, jnp.float32),
        goal_distance=jnp.asarray(distance, jnp.float32),
    )
