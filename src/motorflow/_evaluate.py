"""Run an ensemble on evaluation trials into a labelled xarray Dataset."""

from __future__ import annotations

import json
from typing import Any

import equinox as eqx
import jax
import numpy as np
import xarray as xr
from jaxtyping import PRNGKeyArray

from ._config import ModelConfig
from ._ensemble import n_replicates
from ._loop import Rollout
from ._tasks import CenterOut, ReachTask, Trials

COMPONENTS = np.array(["x", "y"], dtype=object)


def rollout_ensemble(
    ensemble: eqx.Module, trials: Trials, task: ReachTask, *, key: PRNGKeyArray
) -> Rollout:
    """Every replicate on every trial: leaves are `(replicate, trial, time, ...)`.

    Replicate r, trial i uses the key ``split(split(key, R)[r], n_trials)[i]``.
    """
    n_trials = trials.init_pos.shape[0]

    @eqx.filter_jit
    def run(ensemble, trials, key):
        inputs = task.inputs(trials)

        def one_replicate(model, key):
            keys = jax.random.split(key, n_trials)
            return jax.vmap(lambda p, v, u, k: model.rollout(p, v, u, key=k))(
                trials.init_pos, trials.init_vel, inputs, keys
            )

        return eqx.filter_vmap(one_replicate)(
            ensemble, jax.random.split(key, n_replicates(ensemble))
        )

    return run(ensemble, trials, key)


def evaluate(
    ensemble: eqx.Module,
    task: ReachTask,
    model_config: ModelConfig,
    *,
    key: PRNGKeyArray,
    trials: CenterOut | None = None,
    attrs: dict[str, Any] | None = None,
) -> xr.Dataset:
    """The ensemble's states on the task's center-out set (or `trials`).

    Returns a Dataset with dims `replicate`, `trial`, `time`, `component` (x, y),
    `actuator` (one per plant control, labelled) and `unit`; variables ``pos``,
    ``vel`` `(replicate, trial, time, component)`, ``control`` (what the plant
    received) and ``output`` (the network's readout) `(replicate, trial, time,
    actuator)`, ``hidden`` `(replicate, trial, time, unit)`, ``goal`` `(trial,
    component)`, and the plant's own variables (e.g. ``joint_angle`` along `joint`,
    ``muscle_force`` along `muscle`); coords ``time`` in seconds, ``goal_angle``
    (radians) and ``goal_distance`` per trial. The model and task configs, and any
    extra `attrs`, are stored as JSON strings in the attributes.
    """
    trials = task.eval_trials() if trials is None else trials
    rollout = jax.tree.map(np.asarray, rollout_ensemble(ensemble, trials.trials, task, key=key))
    n_rep, n_trials, n_steps, n_units = rollout.hidden.shape
    vector = ("replicate", "trial", "time", "component")
    controls = ("replicate", "trial", "time", "actuator")
    plant = ensemble.plant
    stored_attrs = {
        name: json.dumps(value, sort_keys=True)
        for name, value in {
            "model_config": model_config.to_dict(),
            "task_config": task.config.to_dict(),
            **(attrs or {}),
        }.items()
    }
    return xr.Dataset(
        {
            "pos": (vector, rollout.pos),
            "vel": (vector, rollout.vel),
            "control": (controls, rollout.control),
            "output": (controls, rollout.output),
            "hidden": (("replicate", "trial", "time", "unit"), rollout.hidden),
            "goal": (("trial", "component"), np.asarray(trials.trials.goal_pos)),
            **{
                name: (("replicate", "trial", "time", plant.record_dims[name]), values)
                for name, values in rollout.plant.items()
            },
        },
        coords={
            "replicate": np.arange(n_rep),
            "trial": np.arange(n_trials),
            "time": (
                "time",
                (np.arange(n_steps) * model_config.dt).astype(np.float32),
                {"units": "s"},
            ),
            "component": COMPONENTS,
            **{dim: np.array(labels, dtype=object) for dim, labels in plant.labels().items()},
            "unit": np.arange(n_units),
            "goal_angle": ("trial", np.asarray(trials.goal_angle), {"units": "rad"}),
            "goal_distance": ("trial", np.asarray(trials.goal_distance)),
        },
        attrs=stored_attrs,
    )
