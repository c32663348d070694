"""Reaches from rest: between random points of a workspace, or out from a center."""

from __future__ import annotations

import math
from typing import ClassVar, Literal

import jax
import jax.numpy as jnp
from jaxtyping import PRNGKeyArray
from pydantic import Field, model_validator

from .._config_base import Point
from .._config_errors import ConfigError, plain
from ._base import TaskConfig
from ._trials import Trials

# Positions per side of the workspace grid whose reachability is checked.
_GRID_PER_SIDE = 11
# Directions per distance at which a center-out task's reachability is checked.
_CIRCLE_SAMPLES = 72


class WorkspaceTask(TaskConfig):
    """A task whose positions are uniform in a rectangular `workspace`
    ``[[x_min, y_min], [x_max, y_max]]``, which must hold the evaluation positions."""

    workspace: tuple[Point, Point] = Field(
        ((-1.0, -1.0), (1.0, 1.0)),
        description="`[[x_min, y_min], [x_max, y_max]]` of start and goal positions",
    )

    positions_key: ClassVar[str] = "workspace"

    @model_validator(mode="after")
    def _evaluated_where_trained(self) -> WorkspaceTask:
        lower, upper = self.workspace
        if not (lower[0] < upper[0] and lower[1] < upper[1]):
            raise ConfigError(
                "workspace",
                f"needs x_min < x_max and y_min < y_max, got {plain(self.workspace)}",
            )

        def inside(point: tuple[float, float]) -> bool:
            return all(lower[i] - 1e-9 <= point[i] <= upper[i] + 1e-9 for i in range(2))

        for goal in [self.eval.center, *self.eval.goals()]:
            if not inside(goal):
                raise ConfigError(
                    "eval",
                    f"the center-out positions (center {list(self.eval.center)}, distance "
                    f"{max(self.eval.distances)}) leave the workspace "
                    f"{plain(self.workspace)}: the one at [{goal[0]:.3g}, {goal[1]:.3g}] "
                    "was never trained; move the center, shorten the distances or widen "
                    "the workspace",
                )
        return self

    def uniform(self, n_trials: int, *, key: PRNGKeyArray) -> jax.Array:
        """`n_trials` positions uniform in the workspace, `(n_trials, 2)`."""
        lower, upper = (jnp.asarray(c, jnp.float32) for c in self.workspace)
        return jax.random.uniform(key, (n_trials, 2), minval=lower, maxval=upper)

    def reach_points(self) -> list[tuple[float, float]]:
        """A grid over the workspace (corners and edges included), the evaluation
        center and the farthest evaluation positions."""
        (x0, y0), (x1, y1) = self.workspace
        n = _GRID_PER_SIDE - 1
        grid = [
            (x0 + (x1 - x0) * i / n, y0 + (y1 - y0) * j / n)
            for i in range(_GRID_PER_SIDE)
            for j in range(_GRID_PER_SIDE)
        ]
        return [*grid, self.eval.center, *self.eval.goals()]

    def positions_note(self) -> str:
        return f"the workspace {plain(self.workspace)} or the evaluation positions"


class ReachConfig(WorkspaceTask):
    """Reach from rest between a start and a goal, both uniform in the `workspace`."""

    kind: Literal["reach"] = "reach"

    def draw(self, n_trials: int, *, key: PRNGKeyArray) -> Trials:
        start_key, goal_key = jax.random.split(key)
        init_pos = self.uniform(n_trials, key=start_key)
        return Trials(
            init_pos=init_pos,
            init_vel=jnp.zeros_like(init_pos),
            goal_pos=self.uniform(n_trials, key=goal_key),
        )


class CenterOutTaskConfig(TaskConfig):
    """Reach from rest at `eval.center` to a goal at one of `eval.distances` (chosen
    uniformly) in a uniformly random direction: the evaluation's layout, with every
    direction trained rather than only the evaluated ones."""

    kind: Literal["center_out"] = "center_out"

    def draw(self, n_trials: int, *, key: PRNGKeyArray) -> Trials:
        angle_key, distance_key = jax.random.split(key)
        angle = jax.random.uniform(angle_key, (n_trials,), maxval=2 * math.pi)
        distances = jnp.asarray(self.eval.distances, jnp.float32)
        distance = jax.random.choice(distance_key, distances, (n_trials,))
        center = jnp.broadcast_to(jnp.asarray(self.eval.center, jnp.float32), (n_trials, 2))
        direction = jnp.stack([jnp.cos(angle), jnp.sin(angle)], -1)
        return Trials(
            init_pos=center,
            init_vel=jnp.zeros_like(center),
            goal_pos=center + distance[:, None] * direction,
        )

    def reach_points(self) -> list[tuple[float, float]]:
        """The center and each distance's circle, sampled densely."""
        (cx, cy), points = self.eval.center, [self.eval.center]
        for distance in self.eval.distances:
            for i in range(_CIRCLE_SAMPLES):
                angle = 2 * math.pi * i / _CIRCLE_SAMPLES
                points.append((cx + distance * math.cos(angle), cy + distance * math.sin(angle)))
        return points
