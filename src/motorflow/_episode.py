"""One trial of a task run through a closed-loop model, with its perturbations applied."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, PRNGKeyArray

from ._loop import ClosedLoop, Probe, Rollout
from ._perturb import TrialGeometry, total_effects
from ._task import Task, Trials


class Targets(eqx.Module):
    """Where the effector should be during a trial, as the loss and the metrics use it.

    - `goal`: the goal at each step, `(..., time, 2)` (it moves when a target jumps).
    - `hold`: the steps on which the effector should stay at its start, `(..., time)`
      (before a delayed reach's go cue; every step of a posture trial), or `None`
      for tasks without any.
    """

    goal: Float[Array, "*trials time 2"]
    hold: Bool[Array, "*trials time"] | None = None


def run_trial(
    model: ClosedLoop,
    task: Task,
    trial: Trials,
    *,
    key: PRNGKeyArray,
    gradient_window: int | None = None,
    probe: Probe | None = None,
) -> tuple[Rollout, Targets]:
    """Roll out one trial (no leading dims); returns the rollout and its targets.

    The trial's perturbations become per-step effects (:func:`total_effects`): forces
    and feedback offsets go to the loop, goal displacements to the task's inputs and
    to the returned goal, which the loss and the metrics measure against. A trial
    without perturbations runs exactly as before they existed. `gradient_window`
    truncates the gradient through the rollout and a `probe` cuts the network out of
    it (see :meth:`ClosedLoop.rollout`).
    """
    n_steps = task.n_steps
    if trial.perturbations:
        geometry = TrialGeometry(
            start=trial.init_pos, goal=trial.goal_pos, n_steps=n_steps, dt=model.dt
        )
        effects = total_effects(trial.perturbations, trial.params, geometry)
        goal = trial.goal_pos + effects.goal
    else:
        effects = None
        goal = jnp.broadcast_to(trial.goal_pos, (n_steps, trial.goal_pos.shape[-1]))
    rollout = model.rollout(
        trial.init_pos,
        trial.init_vel,
        task.inputs(trial, goal),
        key=key,
        effects=effects,
        gradient_window=gradient_window,
        probe=probe,
    )
    return rollout, Targets(goal, task.hold(trial))


def run_trials(
    model: ClosedLoop,
    task: Task,
    trials: Trials,
    keys: PRNGKeyArray,
    *,
    gradient_window: int | None = None,
    probe: Probe | None = None,
) -> tuple[Rollout, Targets]:
    """:func:`run_trial` over the leading trial dim of `trials`, trial i with ``keys[i]``
    (and the `probe` with leading trial dim, if any)."""

    def one(trial, key, probe):
        return run_trial(model, task, trial, key=key, gradient_window=gradient_window, probe=probe)

    return jax.vmap(one)(trials, keys, probe)
