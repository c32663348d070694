"""Training history: preallocated numpy arrays (checkpointable), and its xarray view."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

History = dict[str, dict[str, np.ndarray] | np.ndarray]


def empty_history(
    terms: Sequence[str], *, n_batches: int, n_replicates: int, validation_steps: Sequence[int]
) -> History:
    """History arrays filled with NaN until their batch has run.

    - ``loss[term]`` and ``loss["total"]``: `(batch, replicate)`, training loss of
      each batch before its update.
    - ``learning_rate``: `(batch,)`.
    - ``validation[term]`` and ``validation["total"]``: `(validation_step, replicate)`,
      loss on the validation set after ``validation_step`` batches.
    - ``validation_step``: those batch counts (0 is before the first batch).
    - ``diverged_at``: `(replicate,)`, -1, or the batch at which the replicate
      diverged and stopped training (``train.on_divergence: isolate``).
    - ``best_batch``, ``best_validation_loss``: `(replicate,)`, the batch count with the
      lowest validation loss so far, and that loss.
    """
    names = [*terms, "total"]
    n_val = len(validation_steps)

    def filled(*shape):
        return np.full(shape, np.nan, np.float32)

    return {
        "loss": {name: filled(n_batches, n_replicates) for name in names},
        "learning_rate": filled(n_batches),
        "validation": {name: filled(n_val, n_replicates) for name in names},
        "validation_step": np.asarray(validation_steps, np.int64),
        "diverged_at": np.full(n_replicates, -1, np.int64),
        "best_batch": np.full(n_replicates, -1, np.int64),
        "best_validation_loss": filled(n_replicates),
    }


def history_dataset(history: History, *, attrs: dict | None = None) -> xr.Dataset:
    """The history as a Dataset.

    Variables ``loss (term, batch, replicate)``, ``learning_rate (batch)``,
    ``validation_loss (term, validation_step, replicate)``, and per replicate
    ``diverged_at`` (-1: trained to the end), ``best_batch`` and
    ``best_validation_loss``; `term` lists the loss terms then ``total``.
    """
    terms = list(history["loss"])
    n_batches, n_replicates = history["loss"][terms[0]].shape
    term_coord = np.array(terms, dtype=object)
    return xr.Dataset(
        {
            "loss": (
                ("term", "batch", "replicate"),
                np.stack([history["loss"][t] for t in terms]),
            ),
            "learning_rate": ("batch", np.asarray(history["learning_rate"])),
            "validation_loss": (
                ("term", "validation_step", "replicate"),
                np.stack([history["validation"][t] for t in terms]),
            ),
            "diverged_at": (
                "replicate",
                np.asarray(history["diverged_at"]),
                {"description": "batch at which the replicate diverged and was frozen; -1: never"},
            ),
            "best_batch": (
                "replicate",
                np.asarray(history["best_batch"]),
                {"description": "batches trained when the validation loss was lowest"},
            ),
            "best_validation_loss": ("replicate", np.asarray(history["best_validation_loss"])),
        },
        coords={
            "term": term_coord,
            "batch": np.arange(n_batches),
            "replicate": np.arange(n_replicates),
            "validation_step": np.asarray(history["validation_step"]),
        },
        attrs=attrs or {},
    )
