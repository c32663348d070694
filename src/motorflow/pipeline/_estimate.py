"""The preflight estimate: what each experiment will write to disk and the peak
memory of its train and evaluate jobs, computed from the config alone (array shapes
traced with ``jax.eval_shape``, which starts no JAX backend), before any job runs.

Each estimate names the key that drives it, for the preflight's refusal of a config
that cannot fit (:mod:`._preflight`).

The memory model is empirical: a JAX process's fixed footprint, plus what backpropagation
through the rollout keeps per replicate, trial, step and unit, plus a multiple of the
parameter count (parameters, gradients, optimizer moments, compiled constants), plus
the trial specs held in host memory. Its constants were fitted on measured peaks
(Snakemake benchmark files, ``max_rss``) of the train and evaluate jobs of configs from
32 to 512 units, 50 to 400 steps, 2 to 8 replicates, 32 to 256 trials per batch and the
three plants (benchmarks/README.md, "Preflight estimate"); the disk model counts
float32 arrays, uncompressed (Zarr's compression only makes them smaller).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import equinox as eqx
import jax
import jax.numpy as jnp

from .._config_errors import ConfigError
from .._model._ensemble import make_ensemble
from .._tasks import Task
from ._experiment_checks import trial_spec_bytes

if TYPE_CHECKING:
    from ._experiments import Experiment
    from ._workflow_config import WorkflowConfig

FLOAT = 4  # bytes of a float32
MB = 2**20

# The fitted constants of the memory model (see the module docstring). Those that
# differ by plant (a train job's base, the plant's floats per step) are its config's
# `TRAIN_BASE_MEMORY` and `TRAIN_FLOATS_PER_STEP` (motorflow._plants).
EVALUATE_BASE = 420 * MB
# Floats kept for the backward pass per (replicate, trial, step) and hidden unit.
TRAIN_FLOATS_PER_UNIT_STEP = 4
# Parameters, gradients, optimizer moments, checkpoint copies and compiled constants.
TRAIN_FLOATS_PER_PARAMETER = 30
EVALUATE_FLOATS_PER_PARAMETER = 4
# The states are assembled once in the job and written (xarray and Zarr copy them).
EVALUATE_COPIES_OF_STATES = 2
# A checkpoint holds the parameters and the optimizer's state (Adam: two moments).
CHECKPOINT_FLOATS_PER_PARAMETER = 3


@dataclasses.dataclass(frozen=True)
class Estimate:
    """One experiment's estimate, in bytes.

    - `disk`: what its jobs write, by part (``trials``, ``checkpoints``, ``model``,
      ``snapshots``, ``states``, ``analysis``).
    - `train_memory`, `evaluate_memory`: the peak resident memory of its train and
      evaluate jobs.
    - `drivers`: for each of ``train_memory``, ``evaluate_memory`` and ``disk``, the
      config key (path) whose value drives it most, and that value.
    """

    experiment: str
    disk: dict[str, int]
    train_memory: int
    evaluate_memory: int
    drivers: dict[str, tuple[str, int]]

    @property
    def total_disk(self) -> int:
        return sum(self.disk.values())

    def sizes(self) -> str:
        """Its disk and both jobs' peak memory, in words."""
        return (
            f"writes ~{size_text(self.total_disk)}, train peak ~{size_text(self.train_memory)}, "
            f"evaluate peak ~{size_text(self.evaluate_memory)}"
        )

    def line(self) -> str:
        """One line: the experiment and its sizes."""
        return f"{self.experiment}: {self.sizes()}"


def size_text(n: float) -> str:
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{max(n, 0) / 2**10:,.0f} KiB"


# Traced shapes by (model, replicates, inputs): a sweep's experiments mostly share them.
_SHAPES: dict[tuple[str, int, int], tuple[int, int]] = {}


def _shapes(experiment: Experiment, n_inputs: int) -> tuple[int, int]:
    """The ensemble's parameter count and the floats the plant records per step
    (traced, not built)."""
    key = (
        json.dumps(experiment.model.to_dict(), sort_keys=True, default=str),
        experiment.train.n_replicates,
        n_inputs,
    )
    if key not in _SHAPES:
        _SHAPES[key] = _traced_shapes(experiment, n_inputs)
    return _SHAPES[key]


def _traced_shapes(experiment: Experiment, n_inputs: int) -> tuple[int, int]:
    ensemble = eqx.filter_eval_shape(
        make_ensemble,
        experiment.model,
        n_replicates=experiment.train.n_replicates,
        n_task_inputs=n_inputs,
        key=jax.eval_shape(lambda: jax.random.key(0)),
    )
    n_parameters = sum(
        math.prod(leaf.shape)
        for leaf in jax.tree.leaves(ensemble)
        if isinstance(leaf, jax.ShapeDtypeStruct) and jnp.issubdtype(leaf.dtype, jnp.floating)
    )
    recorded = _recorded_floats(experiment)
    return n_parameters, recorded


def _recorded_floats(experiment: Experiment) -> int:
    """Floats the plant records per trial and step beyond the hand's position and
    velocity: its own variables (joint angles, muscle forces, ...) and the control."""

    def record():
        plant = experiment.model.plant.build()
        state = plant.init(jnp.zeros(2), jnp.zeros(2))
        return plant.record(state)

    try:
        recorded = eqx.filter_eval_shape(record)
        plant = eqx.filter_eval_shape(experiment.model.plant.build)
        n_actuators = len(plant.labels()["actuator"])
    except Exception:  # noqa: BLE001 - an estimate must never stop a valid config
        return 32
    own = sum(math.prod(leaf.shape) for leaf in jax.tree.leaves(recorded))
    # The control and the network's output, one each per actuator.
    return own + 2 * n_actuators


def _block_path(specs: Mapping, name: str, block: str, key: str) -> str:
    """The config path of `key` (dotted) of the experiment's `block`: in its override
    when that sets the key, else in the named block."""
    path, spec = specs[name]
    node = getattr(spec.override, block, None) or {}
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            break
        node = node[part]
    else:
        return f"{path}.override.{block}.{key}"
    plural = {"task": "tasks", "model": "models", "training": "trainings"}[block]
    return f"{plural}.{getattr(spec, block)}.{key}"


def estimate_experiment(
    name: str, experiment: Experiment, settings: WorkflowConfig, specs: Mapping
) -> Estimate:
    """The estimate of one experiment of `settings` (`specs`: each experiment's config
    path and spec, from ``_experiment_specs``)."""
    train, task, model = experiment.train, experiment.task, experiment.model
    n_replicates, batch, steps = train.n_replicates, train.batch_size, task.n_steps
    hidden = model.network.hidden_size
    n_inputs = Task(task).n_inputs
    n_parameters, recorded = _shapes(experiment, n_inputs)

    # Trial specs: written once, then held in host memory while training.
    sets = 1 if train.shared_trials else n_replicates
    trials = sets * train.n_batches * batch * trial_spec_bytes(task)
    rollout = n_replicates * batch * steps * FLOAT
    train_memory = (
        model.plant.TRAIN_BASE_MEMORY
        + rollout * (TRAIN_FLOATS_PER_UNIT_STEP * hidden + model.plant.TRAIN_FLOATS_PER_STEP)
        + TRAIN_FLOATS_PER_PARAMETER * FLOAT * n_parameters
        + trials
    )

    evaluation = settings.evaluation
    n_conditions = max(len(evaluation.conditions), 1)
    n_trials = task.eval.n_directions * len(task.eval.distances)
    state_floats = 4 + hidden + recorded  # pos, vel, hidden units, plant records
    states = n_replicates * n_conditions * n_trials * steps * state_floats * FLOAT
    evaluate_memory = (
        EVALUATE_BASE
        + EVALUATE_COPIES_OF_STATES * states
        + EVALUATE_FLOATS_PER_PARAMETER * FLOAT * n_parameters
    )

    parameters = n_parameters * FLOAT
    n_snapshots = (
        len(train.snapshots.batches.batches(train.n_batches)) + 1 if train.snapshots else 0
    )
    snapshot_trials = (
        batch * trial_spec_bytes(task) if train.snapshots and train.snapshots.trials else 0
    )
    pca = settings.analysis.pca.n_components
    disk = {
        "trials": trials,
        "checkpoints": (train.keep_checkpoints + 1) * CHECKPOINT_FLOATS_PER_PARAMETER * parameters,
        # The final and the best model, each with the optimizer's state.
        "model": 2 * CHECKPOINT_FLOATS_PER_PARAMETER * parameters,
        "snapshots": n_snapshots * (parameters + snapshot_trials),
        "states": states,
        "analysis": n_replicates * n_conditions * n_trials * steps * pca * FLOAT,
    }

    def driver(candidates: dict[str, tuple[str, int, int]]) -> tuple[str, int]:
        # The key whose value is furthest above its default drives the size.
        path, value, _ = max(candidates.values(), key=lambda c: c[1] / max(c[2], 1))
        return path, value

    common = {
        "n_replicates": (_block_path(specs, name, "training", "n_replicates"), n_replicates, 5),
        "n_steps": (_block_path(specs, name, "task", "n_steps"), steps, 100),
        "hidden_size": (_block_path(specs, name, "model", "network.hidden_size"), hidden, 100),
    }
    drivers = {
        "train_memory": driver(
            {
                **common,
                "batch_size": (_block_path(specs, name, "training", "batch_size"), batch, 250),
                "n_batches": (
                    _block_path(specs, name, "training", "n_batches"),
                    train.n_batches,
                    1000,
                ),
            }
        ),
        "evaluate_memory": driver(
            {
                **common,
                "n_directions": (
                    _block_path(specs, name, "task", "eval.n_directions"),
                    n_trials,
                    8,
                ),
                "conditions": ("evaluation.conditions", n_conditions, 4),
            }
        ),
    }
    largest = max(disk, key=disk.get)
    drivers["disk"] = {
        "trials": drivers["train_memory"],
        "checkpoints": common["hidden_size"][:2],
        "model": common["hidden_size"][:2],
        "snapshots": (f"{_block_path(specs, name, 'training', 'snapshots')}", n_snapshots),
        "states": drivers["evaluate_memory"],
        "analysis": drivers["evaluate_memory"],
    }[largest]
    return Estimate(name, disk, int(train_memory), int(evaluate_memory), drivers)


def estimate(settings: WorkflowConfig, experiments: Mapping[str, Experiment]) -> list[Estimate]:
    """Every experiment's estimate, in the config's order."""
    from ._experiments import _experiment_specs

    specs = _experiment_specs(settings)
    return [
        estimate_experiment(name, experiment, settings, specs)
        for name, experiment in experiments.items()
    ]


__all__ = ["Estimate", "estimate", "estimate_experiment"]
