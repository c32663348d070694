"""A training run's identity: everything its result depends on, and its digest."""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import numpy as np
from jaxtyping import PRNGKeyArray

from .._identity import code_version, json_digest, tree_digest
from .._tasks import CenterOut, Task, Trials
from ._config import TrainConfig


def trials_to_validate_on(task: Task, validation: CenterOut | None, key: PRNGKeyArray) -> Trials:
    """The given validation set's trials, else the task's, perturbed as in training."""
    if validation is None:
        validation = task.validation_set(key=jax.random.fold_in(key, 1))
    return validation.trials


def run_fingerprint(
    ensemble: eqx.Module,
    trials: Trials,
    task: Task,
    config: TrainConfig,
    *,
    key: PRNGKeyArray,
    validation: CenterOut | None = None,
    initial_opt_state: Any = None,
) -> dict[str, Any]:
    """Everything a training run's result depends on, as plain values.

    The initial ensemble's structure with its settings (static fields) and arrays,
    the trial specs, the validation set, the key, the training config except the
    checkpoint cadence and retention (which only shape the resume state), the task,
    and the library's code version. Its digest is the run's identity (:func:`run_id`).
    """
    validation_trials = trials_to_validate_on(task, validation, key)
    continued = (
        {} if initial_opt_state is None else {"initial_opt_state": tree_digest(initial_opt_state)}
    )
    return {
        **continued,
        "train": config.result_settings(),
        "task": task.config.to_dict(),
        "initial_ensemble": tree_digest(ensemble),
        "trials": tree_digest(jax.tree.map(np.asarray, trials)),
        "validation": tree_digest(validation_trials),
        "key": tree_digest(key),
        "code": code_version(),
    }


def run_id(fingerprint: dict[str, Any]) -> str:
    """The identity of a training run: the digest of its :func:`run_fingerprint`."""
    return json_digest(fingerprint)
