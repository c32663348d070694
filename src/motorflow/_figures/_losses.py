"""The training history's figure: each loss term's mean and spread across replicates."""

from __future__ import annotations

import json
import math

import numpy as np
import xarray as xr
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ._style import (
    TRAIN_COLOR,
    VALIDATION_COLOR,
    diverged_note,
    diverged_replicates,
    figure_legend,
    log_scale_if_possible,
    no_data,
    suptitle,
)

# Thin lines for each term's weighted part of the total; none of the panels' own colours.
CONTRIBUTION_COLORS = ("tab:green", "tab:purple", "tab:brown", "tab:pink", "tab:olive", "tab:cyan")


def _loss_weights(history: xr.Dataset) -> dict[str, float]:
    """Each loss term's weight in the total, from the history's ``experiment`` settings
    (empty when the history does not carry them)."""
    try:
        loss = json.loads(history.attrs["experiment"])["training"]["loss"]
        return {term: float(settings["weight"]) for term, settings in loss.items()}
    except (KeyError, TypeError, ValueError):
        return {}


def _loss_panel_title(term: str, weights: dict[str, float]) -> str:
    if term == "total":
        return "total (weighted sum of the terms)"
    if term in weights:
        return f"{term}, unweighted (weight {weights[term]:g})"
    return f"{term}, unweighted"


def _plot_contributions(
    ax: Axes, loss: xr.DataArray, batches: np.ndarray, weights: dict[str, float]
) -> list[np.ndarray]:
    """On the total's panel, each term's weighted part of it (weight × mean across
    replicates) as a thin line; terms that add nothing (all zero, or unrecorded) are
    left out. Returns the values drawn."""
    drawn = []
    terms = [t for t in loss.term.values if t != "total" and t in weights]
    for index, term in enumerate(terms):
        part = weights[term] * loss.sel(term=term, batch=batches).mean("replicate").values
        finite = part[np.isfinite(part)]
        if not finite.size or not np.any(finite != 0):
            continue
        color = CONTRIBUTION_COLORS[index % len(CONTRIBUTION_COLORS)]
        label = f"part of total: {term} × {weights[term]:g}"
        ax.plot(batches, part, color=color, lw=0.8, label=label)
        drawn.append(part)
    return drawn


def _zero_throughout(history: xr.Dataset, term: str) -> bool:
    """Whether every recorded value of `term` is 0 (a term the task never uses, such as
    ``hold`` for reaches without a hold); a term with nothing recorded yet is not."""
    values = np.concatenate(
        [
            history.loss.sel(term=term).values.ravel(),
            history.validation_loss.sel(term=term).values.ravel(),
        ]
    )
    recorded = values[~np.isnan(values)]
    return recorded.size > 0 and not np.any(recorded != 0)


def plot_loss_history(history: xr.Dataset, *, title: str = "") -> Figure:
    """Training and validation loss against batch, one panel per loss term.

    Each panel shows the training loss as its mean across replicates with the
    min–max range across replicates shaded, and the validation loss (mean across
    replicates) at its validation steps. Batches that have not run (NaN) are left
    out, and so are the terms that are 0 throughout (a task's unused terms, such as
    ``hold`` for a reach without a hold). The ``total`` term (the weighted sum) comes first, with each term's weighted
    part of it (weight × the term's mean across replicates) as thin lines, so that
    the term that dominates shows; the other panels hold a term's unweighted values,
    their titles its weight (read from the history's ``experiment`` attribute). A
    replicate that diverged (``diverged_at``) is marked by a dotted red line at its
    batch and named in the title. One legend sits below the panels.

    **Arguments:**

    - `history`: the Dataset from `history_dataset`, with ``loss`` `(term, batch,
      replicate)` and ``validation_loss`` `(term, validation_step, replicate)`.
    - `title`: figure title.
    """
    diverged = diverged_replicates(history)
    weights = _loss_weights(history)
    terms = [t for t in history.term.values if t == "total" or not _zero_throughout(history, t)]
    terms = ["total", *(t for t in terms if t != "total")] if "total" in terms else terms
    n_cols = min(len(terms), 3)
    n_rows = math.ceil(len(terms) / n_cols)
    fig = Figure(figsize=(4.2 * n_cols, 3.2 * n_rows + 0.6), layout="constrained")
    grid = fig.subplots(n_rows, n_cols, squeeze=False)
    for ax in grid.flat[len(terms) :]:
        fig.delaxes(ax)
    n_replicates = history.sizes["replicate"]
    for ax, term in zip(grid.flat, terms):
        loss = history.loss.sel(term=term)
        loss = loss.isel(batch=loss.notnull().any("replicate").values)
        validation = history.validation_loss.sel(term=term)
        validation = validation.isel(validation_step=validation.notnull().any("replicate").values)
        ax.set_title(_loss_panel_title(term, weights))
        ax.set_xlabel("batch")
        ax.set_ylabel("loss (a.u.)")
        if loss.sizes["batch"] == 0 and validation.sizes["validation_step"] == 0:
            no_data(ax)
            continue
        ax.fill_between(
            loss.batch,
            loss.min("replicate"),
            loss.max("replicate"),
            color=TRAIN_COLOR,
            alpha=0.25,
            linewidth=0,
            label=f"train, min–max of {n_replicates}",
        )
        ax.plot(loss.batch, loss.mean("replicate"), color=TRAIN_COLOR, lw=1, label="train, mean")
        ax.plot(
            validation.validation_step,
            validation.mean("replicate"),
            "o-",
            color=VALIDATION_COLOR,
            ms=4,
            lw=1.5,
            label="validation, mean",
        )
        parts = []
        if term == "total":
            parts = _plot_contributions(ax, history.loss, loss.batch.values, weights)
        for index, batch in enumerate(sorted(set(diverged.values()))):
            ax.axvline(
                batch, color="tab:red", ls=":", lw=1.2, label="a replicate diverged" * (index == 0)
            )
        values = [loss.values.ravel(), validation.values.ravel(), *parts]
        log_scale_if_possible(ax, np.concatenate(values))
    figure_legend(fig, list(grid.flat[: len(terms)]))
    suptitle(fig, "\n".join(filter(None, [title, diverged_note(diverged)])))
    return fig
