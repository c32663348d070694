"""Reaching tasks: trial specs as plain arrays, drawn from a key or laid out on a grid."""

from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, PRNGKeyArray

from ._config import TaskConfig
from ._perturb import AbstractPerturbation, Params, draw_all


class Trials(eqx.Module):
    """Trial specs; every array shares the leading dims (e.g. replicate, batch, trial).

    **Arguments:**

    - `init_pos`: start position, shape `(..., 2)`.
    - `init_vel`: start velocity, shape `(..., 2)`.
    - `goal_pos`: goal position, shape `(..., 2)`.
    - `perturbations`: the perturbations every trial carries (static settings).
    - `params`: for each perturbation, its values per trial (``active`` and each
      drawn setting), each shape `(...)`.
    """

    init_pos: Float[Array, "*trials 2"]
    init_vel: Float[Array, "*trials 2"]
    goal_pos: Float[Array, "*trials 2"]
    perturbations: tuple[AbstractPerturbation, ...] = eqx.field(static=True, default=())
    params: tuple[Params, ...] = ()

    def perturbed_by(
        self, perturbations: tuple[AbstractPerturbation, ...], params: tuple[Params, ...]
    ) -> Trials:
        """These trials carrying `perturbations` with their per-trial `params` instead."""
        return Trials(self.init_pos, self.init_vel, self.goal_pos, tuple(perturbations), params)


class CenterOut(eqx.Module):
    """Center-out evaluation trials with their labels (dim `trial`).

    Trials are ordered distance-major: all directions at the first distance, then
    the next distance.
    """

    trials: Trials
    goal_angle: Float[Array, " trial"]
    goal_distance: Float[Array, " trial"]


class ReachTask(eqx.Module):
    """Reach from a start to a goal, both uniform in a rectangular workspace.

    **Arguments:**

    - `config`: the task's :class:`TaskConfig`.
    """

    config: TaskConfig

    @property
    def n_steps(self) -> int:
        return self.config.n_steps

    @property
    def n_inputs(self) -> int:
        """Task inputs the network receives each step: the goal position."""
        return 2

    def sample(self, key: PRNGKeyArray, n_trials: int) -> Trials:
        """`n_trials` reaches from rest, start and goal uniform in the workspace."""
        lower, upper = (jnp.asarray(c, jnp.float32) for c in self.config.workspace)
        start_key, goal_key = jax.random.split(key)

        def uniform(k):
            return jax.random.uniform(k, (n_trials, 2), minval=lower, maxval=upper)

        init_pos = uniform(start_key)
        trials = Trials(
            init_pos=init_pos, init_vel=jnp.zeros_like(init_pos), goal_pos=uniform(goal_key)
        )
        return self._perturbed(trials, jax.random.fold_in(key, 1), (n_trials,))

    def _perturbed(self, trials: Trials, key: PRNGKeyArray, shape: tuple[int, ...]) -> Trials:
        """`trials` carrying the task's perturbations, drawn from `key`."""
        perturbations = self.config.perturbations
        if not perturbations:
            return trials
        return trials.perturbed_by(perturbations, draw_all(perturbations, key, shape))

    def training_trials(
        self,
        key: PRNGKeyArray,
        *,
        n_replicates: int,
        n_batches: int,
        batch_size: int,
        shared: bool = False,
    ) -> Trials:
        """Training specs with dims `(replicate, batch, trial)`.

        Batch b of replicate r is drawn from ``fold_in(fold_in(key, r), b)``, so any
        batch can be regenerated alone. With `shared`, the replicate dim has size 1
        and every replicate trains on the same trials.
        """
        n_sets = 1 if shared else n_replicates

        def one(r, b):
            return self.sample(jax.random.fold_in(jax.random.fold_in(key, r), b), batch_size)

        grid = jax.vmap(jax.vmap(one, in_axes=(None, 0)), in_axes=(0, None))
        return jax.jit(grid)(jnp.arange(n_sets), jnp.arange(n_batches))

    def eval_trials(self) -> CenterOut:
        """Center-out reaches from the configured center (dims: `trial`)."""
        spec = self.config.eval
        angles = 2 * math.pi * np.arange(spec.n_directions) / spec.n_directions
        angle, distance = (
            a.ravel() for a in np.meshgrid(angles, np.asarray(spec.distances), indexing="xy")
        )
        center = np.asarray(spec.center, np.float64)
        goal = center + distance[:, None] * np.stack([np.cos(angle), np.sin(angle)], -1)
        start = np.broadcast_to(center, goal.shape)
        return CenterOut(
            trials=Trials(
                init_pos=jnp.asarray(start, jnp.float32),
                init_vel=jnp.zeros(goal.shape, jnp.float32),
                goal_pos=jnp.asarray(goal, jnp.float32),
            ),
            goal_angle=jnp.asarray(angle, jnp.float32),
            goal_distance=jnp.asarray(distance, jnp.float32),
        )

    def validation_set(self, key: PRNGKeyArray) -> CenterOut:
        """The center-out reaches under the task's (training) perturbations, drawn from `key`."""
        center_out = self.eval_trials()
        n_trials = center_out.trials.init_pos.shape[0]
        perturbed = self._perturbed(center_out.trials, key, (n_trials,))
        return eqx.tree_at(lambda c: c.trials, center_out, perturbed)

    def inputs(self, trial: Trials, goal: Float[Array, "time 2"]) -> Float[Array, "time 2"]:
        """What the network receives at every step of one trial: the goal position
        (`goal`, per step: it moves when the target jumps)."""
        return goal
