"""Output-potent and output-null activity (Kaufman, Churchland, Ryu & Shenoy 2014, Nat
Neurosci 17:440, "Cortical activity in the null space: permitting preparation without
movement"): the hidden activity split into the part the readout sees and the part it
cannot.

The readout is linear, ``u = W h + b``, so the potent space is the row space of ``W``
(as many dimensions as its rank, at most the plant's controls) and the null space its
orthogonal complement: activity there moves no control. Kaufman et al. found the
potent dimensions by regressing muscle activity on neural activity; a network's
readout gives them exactly. Each replicate has its own spaces (its own ``W``).

The variance is the reaches' (the evaluation's trials: directions and distances), as
the paper's is the conditions': at every step the mean over reaches is removed, and a
space's variance at that step is the squared length of the centred states' projection,
averaged over reaches. The epochs split the trial at the go cue: preparatory before
it, movement from it on (a task without a go cue has no preparatory epoch: NaN).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import xarray as xr

from ._base import AbstractAnalysis, AnalysisInputs

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

EPOCHS = ("preparatory", "movement")
SPACES = ("potent", "null")
# Singular values below this fraction of the largest span no potent direction.
_RANK_TOLERANCE = 1e-10


def readout_spaces(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Orthonormal bases `(unit, dims)` of the potent space (the row space of the
    readout's `weight` `(control, unit)`) and of the null space (its complement)."""
    _, singular, rows = np.linalg.svd(np.asarray(weight, np.float64), full_matrices=True)
    largest = singular.max(initial=0.0)
    rank = int((singular > _RANK_TOLERANCE * largest).sum()) if largest > 0 else 0
    return rows[:rank].T, rows[rank:].T


def output_spaces(states: xr.Dataset, weight: np.ndarray) -> xr.Dataset:
    """Each replicate's hidden activity in the potent and null spaces of its readout.

    **Arguments:**

    - `states`: the Dataset from `evaluate`, with ``hidden`` `(replicate, condition,
      trial, time, unit)` and, for a task with a go cue, the ``go_time`` coord (s).
    - `weight`: the readouts' weights `(replicate, control, unit)`.

    Returns ``output_space_variance`` `(replicate, condition, time, space)` (the
    reaches' variance in each space at each step, a.u.²), ``output_epoch_variance``
    `(replicate, condition, epoch, space)` (its mean over the epoch's steps),
    ``output_potent_share`` `(replicate, condition, epoch)` (potent / (potent + null)),
    ``output_potent_dims`` `(replicate)` (the potent space's dimensions; NaN throughout
    for a replicate whose readout is not finite) and
    ``output_isotropic_share`` `(replicate)` (the share activity spread evenly over
    every direction would give: the potent dimensions over the units).
    """
    hidden = states.hidden
    if "condition" not in hidden.dims:
        hidden = hidden.expand_dims(condition=[""])
    hidden = hidden.transpose("replicate", "condition", "trial", "time", "unit")
    values = np.asarray(hidden.values, np.float64)
    weight = np.asarray(weight, np.float64)
    n_rep, _, _, n_steps, n_units = values.shape
    if weight.shape[0] != n_rep or weight.shape[-1] != n_units:
        raise ValueError(
            f"readout weights {weight.shape} do not match {n_rep} replicates of {n_units} units"
        )
    centred = values - values.mean(axis=2, keepdims=True)
    variance = np.empty((*values.shape[:2], n_steps, len(SPACES)))
    dims = np.full(n_rep, np.nan)
    for r in range(n_rep):
        if not np.isfinite(weight[r]).all():  # a diverged replicate: no spaces
            variance[r] = np.nan
            continue
        potent, null = readout_spaces(weight[r])
        dims[r] = potent.shape[1]
        for s, basis in enumerate((potent, null)):
            variance[r, ..., s] = ((centred[r] @ basis) ** 2).sum(-1).mean(axis=1)
    epochs = _epoch_masks(states, n_steps)
    with np.errstate(invalid="ignore"):
        by_epoch = np.stack(
            [
                variance[:, :, mask].mean(axis=2) if mask.any() else np.nan * variance[:, :, 0]
                for mask in epochs
            ],
            axis=2,
        )
        share = by_epoch[..., 0] / by_epoch.sum(-1)
    a_u2, one = {"units": "a.u.^2"}, {"units": "1"}
    coords = {
        name: coord
        for name, coord in hidden.coords.items()
        if set(coord.dims) <= {"replicate", "condition", "trial", "time"}
    }
    return xr.Dataset(
        {
            "output_space_variance": (("replicate", "condition", "time", "space"), variance, a_u2),
            "output_epoch_variance": (("replicate", "condition", "epoch", "space"), by_epoch, a_u2),
            "output_potent_share": (("replicate", "condition", "epoch"), share, one),
            "output_potent_dims": ("replicate", dims, one),
            "output_isotropic_share": ("replicate", dims / n_units, one),
        },
        # Object strings: zarr stores them as variable-length strings (fixed-width
        # unicode has no zarr v3 specification and warns).
        coords={
            **coords,
            "space": np.array(SPACES, dtype=object),
            "epoch": np.array(EPOCHS, dtype=object),
        },
        attrs=dict(states.attrs),
    )


def _epoch_masks(states: xr.Dataset, n_steps: int) -> tuple[np.ndarray, np.ndarray]:
    """The steps of each epoch: before the go cue, and from it on (every step without
    one). The evaluation's reaches share their go cue; reaches with different cues are
    refused."""
    time = np.asarray(states.time.values, np.float64)
    if "go_time" not in states.coords:
        return np.zeros(n_steps, bool), np.ones(n_steps, bool)
    go = np.unique(np.asarray(states.go_time.values, np.float64))
    if len(go) != 1:
        raise ValueError(
            f"the reaches' go cues differ ({go.min():g} to {go.max():g} s): the epochs "
            "need one go cue for every reach, as the evaluation gives"
        )
    preparatory = time < go[0] - 1e-9
    return preparatory, ~preparatory


class OutputSpacesAnalysis(AbstractAnalysis):
    """Output-potent and output-null activity of each replicate's readout, per epoch
    (Kaufman et al. 2014)."""

    KIND: ClassVar[str] = "output_spaces"
    COMPARES: ClassVar[bool] = True

    def run(self, inputs: AnalysisInputs) -> xr.Dataset:
        weight = np.asarray(inputs.ensemble.network.readout.weight)
        return output_spaces(inputs.states, weight)

    @classmethod
    def figure(cls, analysis: xr.Dataset, *, replicate: int, title: str) -> Figure:
        from .._figures._output_spaces import plot_output_spaces

        return plot_output_spaces(analysis, replicate=replicate, title=title)

    @classmethod
    def comparison_figure(
        cls, analyses: Mapping[str, xr.Dataset], *, replicate: int, title: str
    ) -> Figure:
        """Every replicate's potent share of each epoch, experiments side by side
        (`replicate` plays no part)."""
        from .._figures._output_spaces import plot_output_spaces_comparison

        return plot_output_spaces_comparison(analyses, title=title)

    @classmethod
    def comparison_table(
        cls, analyses: Mapping[str, xr.Dataset], *, confidence: float, n_resamples: int, seed: int
    ) -> pd.DataFrame:
        """Per experiment and condition: each epoch's potent share, the share activity
        spread evenly would give, and each space's preparatory variance over its movement
        variance (the paper's contrast: preparation grows the null space, not the potent)."""
        import jax

        from ._comparison_table import comparison_table, each_condition, interval_row

        key = jax.random.key(seed)
        rows = []
        for experiment, analysis in analyses.items():
            for condition, one in each_condition(analysis):
                share = one.output_potent_share
                variance = one.output_epoch_variance
                statistics = {
                    **{f"potent_share_{epoch}": share.sel(epoch=epoch) for epoch in EPOCHS},
                    "isotropic_share": one.output_isotropic_share,
                    **{
                        f"{space}_preparatory_over_movement": variance.sel(
                            space=space, epoch="preparatory"
                        )
                        / variance.sel(space=space, epoch="movement")
                        for space in SPACES
                    },
                }
                for statistic, values in statistics.items():
                    rows.append(
                        interval_row(
                            experiment,
                            condition,
                            statistic,
                            "1",
                            np.asarray(values.transpose("replicate").values, np.float64),
                            key=key,
                            n_resamples=n_resamples,
                            confidence=confidence,
                        )
                    )
        return comparison_table(rows, confidence=confidence)
