"""One trial of a task run through a closed-loop model, with its perturbations applied."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, Int, PRNGKeyArray

from .._perturbations import Effects, TrialGeometry, total_effects
from .._tasks import Task, Trials
from ._loop import PLAIN, ClosedLoop, LoopState, Rollout, RolloutOptions


class Targets(eqx.Module):
    """Where the effector should be during a trial, as the loss and the metrics use it.

    - `goal`: the goal at each step, `(..., time, 2)` (it moves when a target jumps).
    - `hold`: the steps on which the effector should stay at its start, `(..., time)`
      (before a delayed reach's go cue; every step of a posture trial), or `None`
      for tasks without any.
    """

    goal: Float[Array, "*trials time 2"]
    hold: Bool[Array, "*trials time"] | None = None


def _effects_and_goal(model: ClosedLoop, task: Task, trial: Trials):
    """The trial's per-step effects (None without perturbations) and goal at each step."""
    n_steps = task.n_steps
    if not trial.perturbations:
        return None, jnp.broadcast_to(trial.goal_pos, (n_steps, trial.goal_pos.shape[-1]))
    geometry = TrialGeometry(
        start=trial.init_pos,
        goal=trial.goal_pos,
        n_steps=n_steps,
        dt=model.dt,
        n_units=model.network.cell.hidden_size,
    )
    effects = total_effects(trial.perturbations, trial.params, geometry)
    return effects, trial.goal_pos + effects.goal


def held_units(model: ClosedLoop, task: Task, trials: Trials) -> tuple[Array, Array] | None:
    """Per trial (leading dim) and step, which hidden units' states the cell's update
    reaches and which keep their state from before the step under the trials'
    interventions on the units (:meth:`UnitEffects.held`), or None where the trials
    carry none (the steps' derivatives are then the cell's own)."""
    if not any(p.ON_UNITS for p in trials.perturbations):
        return None
    n_units = model.network.cell.hidden_size

    def one(trial):
        effects, _ = _effects_and_goal(model, task, trial)
        return effects.network.held(n_units)

    return jax.vmap(one)(trials)


def run_trial(
    model: ClosedLoop,
    task: Task,
    trial: Trials,
    *,
    key: PRNGKeyArray,
    options: RolloutOptions = PLAIN,
) -> tuple[Rollout, Targets]:
    """Roll out one trial (no leading dims); returns the rollout and its targets.

    The trial's perturbations become per-step effects (:func:`total_effects`): forces
    and feedback offsets go to the loop, goal displacements to the task's inputs and
    to the returned goal, which the loss and the metrics measure against. A trial
    without perturbations runs exactly as before they existed. `options` truncate the
    gradient through the rollout or cut the network out of it (:class:`RolloutOptions`).
    """
    effects, goal = _effects_and_goal(model, task, trial)
    rollout = model.rollout(
        trial.init_pos,
        trial.init_vel,
        task.inputs(trial, goal),
        key=key,
        effects=effects,
        options=options,
    )
    return rollout, Targets(goal, task.hold(trial))


def run_trials(
    model: ClosedLoop,
    task: Task,
    trials: Trials,
    keys: PRNGKeyArray,
    *,
    options: RolloutOptions = PLAIN,
) -> tuple[Rollout, Targets]:
    """:func:`run_trial` over the leading trial dim of `trials`, trial i with ``keys[i]``
    (and the options' probe, if any, with leading trial dim)."""

    def one(trial, key, options):
        return run_trial(model, task, trial, key=key, options=options)

    return jax.vmap(one)(trials, keys, options)


class TrialDrive(eqx.Module):
    """What one trial feeds the loop at each step, for running it in pieces
    (:func:`run_segment`): the task input, one key per step (those
    :meth:`ClosedLoop.rollout` draws from the trial's key), the perturbations'
    effects (None without any), the targets, and where the effector starts."""

    task_input: Float[Array, "time input"]
    keys: PRNGKeyArray
    effects: Effects | None
    targets: Targets
    start_pos: Float[Array, " xy"]


def trial_drive(model: ClosedLoop, task: Task, trial: Trials, *, key: PRNGKeyArray) -> TrialDrive:
    """One trial's :class:`TrialDrive` (no leading dims), as :func:`run_trial` runs it."""
    effects, goal = _effects_and_goal(model, task, trial)
    start = model.plant.effector(model.plant.init(trial.init_pos, trial.init_vel))[0]
    return TrialDrive(
        task_input=task.inputs(trial, goal),
        keys=jax.random.split(key, task.n_steps),
        effects=effects,
        targets=Targets(goal, task.hold(trial)),
        start_pos=start,
    )


def run_segment(
    model: ClosedLoop,
    drive: TrialDrive,
    loop_state: LoopState,
    first: Int[Array, ""] | int,
    length: int,
    *,
    options: RolloutOptions = PLAIN,
) -> tuple[Rollout, Targets]:
    """Steps ``first .. first + length - 1`` of a trial from `loop_state` (the state
    its earlier steps ended in): their records, with the state after them as `end`,
    and their targets. Consecutive segments give the values of the whole rollout."""

    def piece(x):
        return jax.lax.dynamic_slice_in_dim(x, first, length)

    steps = first + jnp.arange(length)
    effects = None if drive.effects is None else jax.tree.map(piece, drive.effects)
    loop_state, rollout = model.run(
        loop_state,
        piece(drive.task_input),
        piece(drive.keys),
        steps,
        effects=effects,
        options=options,
    )
    rollout = eqx.tree_at(lambda r: r.end, rollout, loop_state, is_leaf=lambda x: x is None)
    return rollout, jax.tree.map(piece, drive.targets)
