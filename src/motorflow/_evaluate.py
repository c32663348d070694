"""Run an ensemble on evaluation trials under named conditions into a labelled xarray Dataset."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr
from jaxtyping import Array, Float, PRNGKeyArray

from ._config import ModelConfig
from ._model._ensemble import n_replicates
from ._model._episode import run_trials
from ._model._loop import Rollout
from ._perturbations import AbstractPerturbation, draw_conditions
from ._tasks import CenterOut, Task, Trials

COMPONENTS = np.array(["x", "y"], dtype=object)
# The condition an experiment is evaluated in when the config names none.
DEFAULT_CONDITIONS: dict[str, tuple[AbstractPerturbation, ...]] = {"unperturbed": ()}


def condition_trials(
    trials: Trials,
    conditions: Mapping[str, Sequence[AbstractPerturbation]],
    *,
    key: PRNGKeyArray,
) -> tuple[Trials, tuple[int, ...]]:
    """`trials` (dim `trial`) repeated under each condition: dims `(condition, trial)`.

    Every condition's perturbations become slots of the returned trials, active only
    in their own condition (see :func:`draw_conditions`). Returns the trials and each
    slot's condition index.
    """
    n_conditions, n_trials = len(conditions), trials.init_pos.shape[0]
    repeated = jax.tree.map(lambda x: jnp.broadcast_to(x, (n_conditions, *x.shape)), trials)
    slots, params, owners = draw_conditions(conditions, n_trials, key=key)
    return repeated.perturbed_by(slots, params), owners


def rollout_ensemble(
    ensemble: eqx.Module, trials: Trials, task: Task, *, key: PRNGKeyArray
) -> tuple[Rollout, Float[Array, "condition trial time 2"]]:
    """Every replicate on every trial of every condition.

    `trials` has dims `(condition, trial)`. Returns the rollout, leaves
    `(replicate, condition, trial, time, ...)`, and the goal at each step
    `(condition, trial, time, 2)`. Replicate r, trial i uses the key
    ``split(split(key, R)[r], n_trials)[i]`` in every condition, so conditions differ
    by their perturbations only, never by their noise. Ensembles of the same
    structure (e.g. one model's snapshots along its training) share one compilation.
    """
    rollout, goal = _rollout_ensemble(ensemble, trials, task, key)
    return rollout, goal[0]


@eqx.filter_jit
def _rollout_ensemble(ensemble, trials, task, key):
    n_trials = trials.init_pos.shape[1]

    # One condition after another (lax.map), each a batch of the trials: a condition's
    # arithmetic never depends on how many conditions run beside it (XLA's CPU kernels
    # block a batch of 3n trials differently from one of n), so a condition evaluated
    # with others is bitwise the condition evaluated alone.
    def one_replicate(model, key):
        keys = jax.random.split(key, n_trials)

        def one_condition(condition_trials):
            rollout, targets = run_trials(model, task, condition_trials, keys)
            return rollout, targets.goal

        return jax.lax.map(one_condition, trials)

    return eqx.filter_vmap(one_replicate)(ensemble, jax.random.split(key, n_replicates(ensemble)))


def _perturbation_variables(
    trials: Trials, owners: Sequence[int], names: Sequence[str]
) -> dict[str, Any]:
    """Each slot's per-trial values as variables ``perturbation<j>_<setting>`` over
    `(condition, trial)`, labelled with the slot's condition and kind."""
    variables = {}
    for slot, (perturbation, params) in enumerate(zip(trials.perturbations, trials.params)):
        for name, values in params.items():
            variables[f"perturbation{slot}_{name}"] = xr.Variable(
                ("condition", "trial"),
                np.asarray(values),
                {
                    "condition": names[owners[slot]],
                    "kind": perturbation.kind,
                    "units": {"active": "1", **perturbation.UNITS}[name],
                },
            )
    return variables


def _go_time(trials: Trials, dt: float) -> dict[str, Any]:
    """The ``go_time`` coord (s) along `trial`, for trials with a go cue."""
    if trials.go_step is None:
        return {}
    go_time = (np.asarray(trials.go_step) * dt).astype(np.float32)
    return {"go_time": ("trial", go_time, {"units": "s"})}


def evaluate(
    ensemble: eqx.Module,
    task: Task,
    model_config: ModelConfig,
    *,
    key: PRNGKeyArray,
    trials: CenterOut | None = None,
    conditions: Mapping[str, Sequence[AbstractPerturbation]] | None = None,
    conditions_key: PRNGKeyArray | None = None,
    attrs: dict[str, Any] | None = None,
) -> xr.Dataset:
    """The ensemble's states on the task's center-out set (or `trials`) in each condition.

    **Arguments:**

    - `ensemble`, `task`, `model_config`: what to run.
    - `key`: the noise of the rollouts (the same in every condition).
    - `trials`: the evaluation reaches; by default the task's center-out set.
    - `conditions`: named lists of perturbations, in order; by default one
      condition, ``unperturbed``.
    - `conditions_key`: draws the conditions' settings that are ranges.
    - `attrs`: more attributes to store (as JSON strings).

    Returns a Dataset with dims `replicate`, `condition`, `trial`, `time`, `component`
    (x, y), `actuator` (one per plant control, labelled) and `unit`; variables
    ``pos``, ``vel`` `(replicate, condition, trial, time, component)`, ``control``
    (what the plant received) and ``output`` (the network's readout) `(replicate,
    condition, trial, time, actuator)`, ``hidden`` `(replicate, condition, trial,
    time, unit)`, ``goal`` `(condition, trial, time, component)` (the goal at each
    step: it moves when a target jumps), the plant's own variables (e.g.
    ``joint_angle`` along `joint`, ``muscle_force`` along `muscle`), and each
    perturbation's per-trial values (``perturbation<j>_<setting>``, `(condition,
    trial)`); coords ``time`` in seconds, ``condition`` names, ``goal_angle``
    (radians) and ``goal_distance`` per trial, and ``go_time`` (s) per trial for
    tasks with a go cue. The model and task configs, the
    conditions and any extra `attrs` are stored as JSON strings in the attributes.
    """
    center_out = task.eval_trials() if trials is None else trials
    conditions = DEFAULT_CONDITIONS if conditions is None else conditions
    if conditions_key is None:
        conditions_key = jax.random.fold_in(key, 1)
    condition_set, owners = condition_trials(center_out.trials, conditions, key=conditions_key)
    rollout, goal = rollout_ensemble(ensemble, condition_set, task, key=key)
    rollout = jax.tree.map(np.asarray, rollout)
    n_rep, _, n_trials, n_steps, n_units = rollout.hidden.shape
    leading = ("replicate", "condition", "trial", "time")
    plant = ensemble.plant
    names = list(conditions)
    stored_attrs = {
        name: json.dumps(value, sort_keys=True)
        for name, value in {
            "model_config": model_config.to_dict(),
            "task_config": task.config.to_dict(),
            "conditions": {
                name: [p.to_dict() for p in perturbations]
                for name, perturbations in conditions.items()
            },
            **(attrs or {}),
        }.items()
    }
    return xr.Dataset(
        {
            "pos": ((*leading, "component"), rollout.pos, {"units": "m"}),
            "vel": ((*leading, "component"), rollout.vel, {"units": "m/s"}),
            "control": ((*leading, "actuator"), rollout.control, {"units": plant.control_units}),
            # the readout before any squashing into the control range: network units
            "output": ((*leading, "actuator"), rollout.output, {"units": "a.u."}),
            "hidden": ((*leading, "unit"), rollout.hidden, {"units": "a.u."}),
            "goal": (
                ("condition", "trial", "time", "component"),
                np.asarray(goal),
                {"units": "m"},
            ),
            **{
                name: (
                    (*leading, plant.record_dims[name]),
                    values,
                    {"units": plant.record_units[name]},
                )
                for name, values in rollout.plant.items()
            },
            **_perturbation_variables(condition_set, owners, names),
        },
        coords={
            "replicate": np.arange(n_rep),
            "condition": np.array(names, dtype=object),
            "trial": np.arange(n_trials),
            "time": (
                "time",
                (np.arange(n_steps) * model_config.dt).astype(np.float32),
                {"units": "s"},
            ),
            "component": COMPONENTS,
            **{dim: np.array(labels, dtype=object) for dim, labels in plant.labels().items()},
            "unit": np.arange(n_units),
            "goal_angle": ("trial", np.asarray(center_out.goal_angle), {"units": "rad"}),
            "goal_distance": ("trial", np.asarray(center_out.goal_distance), {"units": "m"}),
            **_go_time(center_out.trials, model_config.dt),
        },
        attrs=stored_attrs,
    )
