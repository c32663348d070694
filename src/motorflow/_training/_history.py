"""Training history: preallocated numpy arrays (checkpointable), and its xarray view."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jax
import numpy as np
import xarray as xr

from .._evaluate import COMPONENTS
from .._tasks import Trials
from .._tasks._dataset import trial_variables
from ._run_record import named_arrays

History = dict[str, dict[str, np.ndarray] | np.ndarray]

# Units (CF ``units`` attribute) of the stored numbers.
A_U, ONE = {"units": "a.u."}, {"units": "1"}


def empty_history(
    terms: Sequence[str],
    *,
    n_batches: int,
    n_replicates: int,
    validation_steps: Sequence[int],
    snapshot_steps: Sequence[int] = (),
    parameter_shapes: Mapping[str, Sequence[int]] | None = None,
    alignment_groups: Sequence[str] = (),
) -> History:
    """History arrays filled with NaN until their batch has run.

    - ``loss[term]`` and ``loss["total"]``: `(batch, replicate)`, training loss of
      each batch before its update.
    - ``grad_norm[term]`` and ``grad_norm["total"]``: `(batch, replicate)`, the global
      norm of the gradient of the total loss (and of each term's weighted part, when
      recorded) over the arrays trained in the batch, before clipping.
    - ``learning_rate``: `(batch,)`.
    - ``validation[term]`` and ``validation["total"]``: `(validation_step, replicate)`,
      loss on the validation set after ``validation_step`` batches.
    - ``validation_step``: those batch counts (0 is before the first batch).
    - ``diverged_at``: `(replicate,)`, -1, or the batch at which the replicate
      diverged and stopped training (``train.on_divergence: isolate``).
    - ``best_batch``, ``best_validation_loss``: `(replicate,)`, the batch count with the
      lowest validation loss so far, and that loss.
    - ``gradient_alignment[group]`` for each of `alignment_groups` (trained arrays by
      path): `(validation_step, replicate)`, the cosine between the learning rule's
      update and the BPTT gradient on the validation set at that validation
      (:meth:`Trainer.alignment`).
    - with `snapshot_steps`: ``snapshot_step``, those batch counts, and
      ``snapshot[name]``: `(snapshot_step, replicate, *shape)` for each trainable array
      in `parameter_shapes` (name -> shape per replicate), its value after that many
      batches.
    """
    names = [*terms, "total"]
    n_val = len(validation_steps)

    def filled(*shape):
        return np.full(shape, np.nan, np.float32)

    snapshots = {}
    if len(snapshot_steps):
        snapshots = {
            "snapshot_step": np.asarray(snapshot_steps, np.int64),
            "snapshot": {
                name: filled(len(snapshot_steps), n_replicates, *shape)
                for name, shape in (parameter_shapes or {}).items()
            },
        }
    return {
        "loss": {name: filled(n_batches, n_replicates) for name in names},
        "grad_norm": {name: filled(n_batches, n_replicates) for name in names},
        "learning_rate": filled(n_batches),
        "validation": {name: filled(n_val, n_replicates) for name in names},
        "validation_step": np.asarray(validation_steps, np.int64),
        "gradient_alignment": {name: filled(n_val, n_replicates) for name in alignment_groups},
        "diverged_at": np.full(n_replicates, -1, np.int64),
        "best_batch": np.full(n_replicates, -1, np.int64),
        "best_validation_loss": filled(n_replicates),
        **snapshots,
    }


def history_dataset(
    history: History, *, attrs: dict | None = None, trials: Trials | None = None
) -> xr.Dataset:
    """The history as a Dataset.

    Variables ``loss`` and ``grad_norm (term, batch, replicate)`` (a term's gradient
    norm NaN unless recorded per term), ``learning_rate (batch)``, ``validation_loss
    (term, validation_step, replicate)``, ``gradient_alignment (group, validation_step,
    replicate)`` (the cosine between the rule's update and the BPTT gradient per
    trained array, `group` its path; 1 for BPTT), and per replicate ``diverged_at`` (-1:
    trained to the end), ``best_batch`` and ``best_validation_loss``; `term` lists the
    loss terms then ``total``.

    With snapshots, ``snapshot.<array> (snapshot_step, replicate, <array>_dim0, ...)``
    per trainable array (its path into the model, e.g. ``network.readout.weight``);
    given the training `trials` (dims ``(replicate or 1, batch, trial)``), also the
    specs of the batch each snapshot's parameters were last trained on, as
    ``trials.<field> (trials_batch, replicate, trial, ...)``, where `trials_batch` is
    the batch index (as `batch`): b - 1 for each snapshot step b > 0.
    """
    terms = list(history["loss"])
    n_batches, n_replicates = history["loss"][terms[0]].shape
    term_coord = np.array(terms, dtype=object)

    def per_term(name):
        return np.stack([history[name][t] for t in terms])

    dataset = xr.Dataset(
        {
            # losses weight terms of different units into one number: arbitrary units
            "loss": (("term", "batch", "replicate"), per_term("loss"), A_U),
            "grad_norm": (
                ("term", "batch", "replicate"),
                per_term("grad_norm"),
                {
                    "description": "global norm of the gradient over the arrays trained in "
                    "the batch, before clipping; per term: of its weighted part",
                    **A_U,
                },
            ),
            "learning_rate": ("batch", np.asarray(history["learning_rate"]), ONE),
            "validation_loss": (
                ("term", "validation_step", "replicate"),
                per_term("validation"),
                A_U,
            ),
            "diverged_at": (
                "replicate",
                np.asarray(history["diverged_at"]),
                {
                    "description": "batch at which the replicate diverged and was frozen; -1: never",
                    **ONE,
                },
            ),
            "best_batch": (
                "replicate",
                np.asarray(history["best_batch"]),
                {"description": "batches trained when the validation loss was lowest", **ONE},
            ),
            "best_validation_loss": (
                "replicate",
                np.asarray(history["best_validation_loss"]),
                A_U,
            ),
        },
        coords={
            "term": term_coord,
            "batch": np.arange(n_batches),
            "replicate": np.arange(n_replicates),
            "validation_step": np.asarray(history["validation_step"]),
        },
        attrs=attrs or {},
    )
    alignment = history.get("gradient_alignment") or {}
    if alignment:
        dataset["gradient_alignment"] = (
            ("group", "validation_step", "replicate"),
            np.stack([np.asarray(v) for v in alignment.values()]),
            {
                "description": "cosine between the learning rule's update and the BPTT "
                "gradient on the validation set, per trained array (group)",
                **ONE,
            },
        )
        dataset = dataset.assign_coords(group=np.array(list(alignment), dtype=object))
    if "snapshot_step" not in history:
        return dataset
    steps = np.asarray(history["snapshot_step"])
    dataset = dataset.assign_coords(snapshot_step=steps)
    for name, values in history["snapshot"].items():
        dims = ("snapshot_step", "replicate", *(f"{name}_dim{i}" for i in range(values.ndim - 2)))
        # the network's trained arrays: network units
        dataset[f"snapshot.{name}"] = (dims, np.asarray(values), A_U)
    if trials is not None:
        dataset = dataset.assign(_trial_snapshots(trials, steps, n_replicates))
    return dataset


def _trial_snapshots(trials: Trials, steps: np.ndarray, n_replicates: int) -> xr.Dataset:
    """The specs of batch b - 1 for each snapshot step b > 0, one set per replicate."""
    index = steps[steps > 0] - 1

    def select(x):
        x = np.asarray(x)[:, index]
        return np.broadcast_to(x, (n_replicates, *x.shape[1:]))

    selected = jax.tree.map(select, trials)
    variables = trial_variables(selected, ("replicate", "trials_batch", "trial"))
    snapshot = xr.Dataset(variables, coords={"trials_batch": index, "component": COMPONENTS})
    order = ("trials_batch", "replicate", "trial", ...)
    return snapshot.transpose(*order).rename({n: f"trials.{n}" for n in snapshot.data_vars})


def _step_index(history: History, steps: str, batch: int) -> int:
    """Where `batch` is among the history's `steps` (``validation_step``, ``snapshot_step``)."""
    return int(np.searchsorted(history[steps], batch))


def record_validation(history: History, batch: int, validation: Mapping[str, Any]) -> None:
    """Copy the validation losses per term (after `batch` batches) into `history`."""
    index = _step_index(history, "validation_step", batch)
    for name, value in validation.items():
        history["validation"][name][index] = value


def record_alignment(history: History, batch: int, alignment: Mapping[str, Any]) -> None:
    """Copy the gradient alignment per trained array (after `batch` batches) into `history`."""
    index = _step_index(history, "validation_step", batch)
    for name, value in alignment.items():
        history["gradient_alignment"][name][index] = value


def validation_at(history: History, batch: int) -> dict[str, np.ndarray]:
    """The validation losses per term recorded after `batch` batches."""
    index = _step_index(history, "validation_step", batch)
    return {name: values[index] for name, values in history["validation"].items()}


def record_batches(history: History, start: int, stop: int, records: Any) -> None:
    """Copy the records of batches ``start:stop`` (a training chunk's `BatchRecords`:
    ``loss``, ``grad_norm`` per term and ``learning_rate``) into `history`."""
    for name, value in records.loss.items():
        history["loss"][name][start:stop] = value
    for name, value in records.grad_norm.items():
        history["grad_norm"][name][start:stop] = value
    history["learning_rate"][start:stop] = records.learning_rate


def record_snapshot(history: History, batch: int, params: Any) -> None:
    """Copy `params` (after `batch` batches) into the history's snapshots."""
    index = _step_index(history, "snapshot_step", batch)
    for name, value in named_arrays(params).items():
        history["snapshot"][name][index] = np.asarray(value)


def record_status(history: History, diverged_at: Any, best_batch: Any, best_loss: Any) -> None:
    """Copy the replicates' divergence and best-validation status into `history`."""
    history["diverged_at"][:] = np.asarray(diverged_at)
    history["best_batch"][:] = np.asarray(best_batch)
    best = np.asarray(best_loss)
    history["best_validation_loss"][:] = np.where(np.isfinite(best), best, np.nan)
