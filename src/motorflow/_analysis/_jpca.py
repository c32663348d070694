"""jPCA as an analysis: how much of each replicate's hidden dynamics is rotation
(Churchland et al. 2012, Nature 487:51), per evaluation condition, with the reach
directions as jPCA's conditions (the fits: :mod:`._jpca_fit`).

R² alone does not prove rotational dynamics (Michaels et al. 2016, PLoS Comput Biol
12:e1005175; Lebedev et al. 2019, Sci Rep 9:18978). Two controls are stored beside the
data's fits: the fits repeated on data whose conditions are shuffled independently per
unit (each unit keeps its own time courses, but which reach each belongs to is drawn
anew per unit: Michaels et al.'s condition shuffle without their covariance matching),
as the 95th percentiles of R²_skew and of the ratio; and on tensor maximum entropy
surrogates (Elsayed & Cunningham 2017, Nat Neurosci 20:1310: random data keeping the
covariances across time, units and conditions and nothing else), each surrogate's
ratio and the share of surrogates whose ratio reaches the data's (its p-value).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, ClassVar

import jax
import numpy as np
import xarray as xr
from pydantic import Field

from .._config_base import NonNegativeNumber, PositiveInt
from .._config_errors import ConfigError
from ._base import AbstractAnalysis, AnalysisInputs
from ._jpca_fit import jpca

# The analysis key's stream for the surrogates (see _tuning.BIMODALITY_STREAM).
SURROGATE_STREAM = 2

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from .._config import ModelConfig
    from .._tasks import TaskConfig

# The variables jPCA adds per (replicate, condition), and their units.
_SCALARS = {
    "jpca_r2_skew": "1",
    "jpca_r2_best": "1",
    "jpca_r2_ratio": "1",
    "jpca_plane_variance": "1",
    "jpca_frequency": "Hz",
    "jpca_shuffled_r2_skew": "1",
    "jpca_shuffled_r2_ratio": "1",
    "jpca_surrogate_p": "1",
}


def hidden_jpca(
    states: xr.Dataset,
    *,
    n_pcs: int = 6,
    soft_norm: float = 0.1,
    start: float = 0.0,
    stop: float | None = None,
    n_shuffles: int = 0,
    n_surrogates: int = 0,
    seed: int = 0,
    key: jax.Array | None = None,
) -> xr.Dataset:
    """jPCA of the hidden states of each replicate and condition, the trials (reach
    directions) as its conditions, over the steps whose time is in [`start`, `stop`]
    (seconds from the trial's start; `stop` None: to the end). Each unit is
    normalised by its range over the whole trial. With `n_shuffles`, the condition
    shuffles' percentiles (``jpca_shuffled_r2_skew``, ``jpca_shuffled_r2_ratio``;
    NaN without) come from a generator seeded by `seed`, the replicate and condition;
    with `n_surrogates`, the tensor maximum entropy surrogates from `key` (None:
    ``jax.random.key(seed)``) folded with the replicate and condition.

    Returns ``jpca_r2_skew``, ``jpca_r2_best``, ``jpca_r2_ratio``,
    ``jpca_plane_variance``, ``jpca_frequency`` (Hz) and the shuffle control's
    ``jpca_shuffled_r2_skew`` and ``jpca_shuffled_r2_ratio``, and the surrogates'
    ``jpca_surrogate_p`` `(replicate, condition)`; with surrogates, each one's ratio
    ``jpca_surrogate_r2_ratio`` `(replicate, condition, surrogate)`; and
    ``jpca_projection`` `(replicate, condition, trial, jpca_time, jpc)` onto the top
    plane (jPC1, jPC2), with the window's times as the ``jpca_time`` coord.
    """
    hidden = states.hidden
    if "condition" not in hidden.dims:
        hidden = hidden.expand_dims(condition=[""])
    time = states.time.values
    window = (time >= start - 1e-9) & (True if stop is None else time <= stop + 1e-9)
    hidden = hidden.transpose("replicate", "condition", "trial", "time", "unit")
    whole = np.asarray(hidden.values, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        unit_range = whole.max(axis=(2, 3)) - whole.min(axis=(2, 3))  # (rep, cond, unit)
    hidden = hidden.isel(time=np.flatnonzero(window))
    values = whole[:, :, :, np.flatnonzero(window)]
    n_rep, n_cond, n_trials, n_steps, _ = values.shape
    dt = float(time[1] - time[0]) if len(time) > 1 else np.nan
    scalars = {name: np.full((n_rep, n_cond), np.nan) for name in _SCALARS}
    projection = np.full((n_rep, n_cond, n_trials, n_steps, 2), np.nan)
    surrogates = np.full((n_rep, n_cond, n_surrogates), np.nan)
    key = jax.random.key(seed) if key is None else key
    for r, c in itertools.product(range(n_rep), range(n_cond)):
        fit = jpca(
            values[r, c],
            n_pcs=n_pcs,
            soft_norm=soft_norm,
            unit_range=unit_range[r, c],
            n_shuffles=n_shuffles,
            seed=int(np.random.SeedSequence([seed, r, c]).generate_state(1)[0]),
            n_surrogates=n_surrogates,
            key=jax.random.fold_in(jax.random.fold_in(key, r), c),
        )
        for name in (
            "r2_skew",
            "r2_best",
            "r2_ratio",
            "plane_variance",
            "shuffled_r2_skew",
            "shuffled_r2_ratio",
            "surrogate_p",
        ):
            scalars[f"jpca_{name}"][r, c] = fit[name]
        scalars["jpca_frequency"][r, c] = fit["omega"] / (2 * np.pi * dt)
        projection[r, c] = fit["projection"]
        surrogates[r, c] = fit["surrogate_r2_ratio"]
    dtype = hidden.dtype
    variables = {
        name: xr.Variable(("replicate", "condition"), values.astype(dtype), {"units": units})
        for (name, units), values in zip(_SCALARS.items(), scalars.values())
    }
    variables["jpca_projection"] = xr.Variable(
        ("replicate", "condition", "trial", "jpca_time", "jpc"),
        projection.astype(dtype),
        {"units": "a.u."},
    )
    if n_surrogates:
        variables["jpca_surrogate_r2_ratio"] = xr.Variable(
            ("replicate", "condition", "surrogate"), surrogates.astype(dtype), {"units": "1"}
        )
    coords = {
        name: coord
        for name, coord in hidden.coords.items()
        if "time" not in coord.dims and name != "time"
    }
    return xr.Dataset(
        variables,
        coords={**coords, "jpca_time": hidden.time.values, "jpc": [1, 2]},
    )


class JPCAAnalysis(AbstractAnalysis):
    """jPCA (Churchland et al. 2012): how well a rotation explains the hidden dynamics
    across reach directions, against an unconstrained linear fit."""

    KIND: ClassVar[str] = "jpca"
    COMPARES: ClassVar[bool] = True

    n_pcs: Annotated[PositiveInt, Field(ge=2, le=20)] = Field(
        6,
        description="principal components the dynamics are fitted in (6 in the paper; an odd "
        "number is rounded down to pairs)",
    )
    soft_norm: NonNegativeNumber = Field(
        0.1,
        description="added to each unit's range before normalising by it, so that "
        "barely active units do not dominate (a.u.)",
    )
    start: NonNegativeNumber = Field(0.0, description="the window's first time (s) in the trial")
    stop: NonNegativeNumber | None = Field(
        None,
        description="the window's last time (s) in the trial (none: its end); after `start`, "
        "and the window must hold at least 3 steps of every experiment's trials",
    )
    n_shuffles: Annotated[int, Field(ge=0, le=10000)] = Field(
        100,
        description="condition shuffles (each unit's reach directions permuted on its own; "
        "Michaels et al. 2016) whose 95th percentiles of the rotational R² and of the "
        "ratio are stored as the control (0: none)",
    )
    n_surrogates: Annotated[int, Field(ge=0, le=10000)] = Field(
        100,
        description="tensor maximum entropy surrogates (Elsayed & Cunningham 2017: random "
        "data with the hidden states' covariances across time, units and reach directions) "
        "fitted as the data are: each one's ratio and the data's p-value among them are "
        "stored (0: none)",
    )

    def check(self, experiments: Mapping[str, tuple[ModelConfig, TaskConfig]]) -> None:
        """The window (`start` to `stop`) holds at least 3 steps of every experiment's
        trials: the fit needs successive states."""
        if self.stop is not None and self.stop <= self.start:
            raise ConfigError(
                f"analysis.{self.KIND}.stop",
                f"is {self.stop:g} s, not after start ({self.start:g} s); the window runs "
                "from start to stop: make stop later than start, or null for the trial's end",
            )
        for name, (model, task) in experiments.items():
            end = task.n_steps * model.dt
            stop = end if self.stop is None else min(self.stop, end)
            if (stop - self.start) / model.dt < 3 - 1e-9:
                raise ConfigError(
                    f"analysis.{self.KIND}.start",
                    f"the window from {self.start:g} s to {stop:g} s holds fewer than 3 steps "
                    f"of experiment {name!r}'s trials ({end:g} s long, dt {model.dt:g}); make "
                    "it start earlier or end later",
                )

    def run(self, inputs: AnalysisInputs) -> xr.Dataset:
        return hidden_jpca(
            inputs.states,
            n_pcs=self.n_pcs,
            soft_norm=self.soft_norm,
            start=self.start,
            stop=self.stop,
            n_shuffles=self.n_shuffles,
            n_surrogates=self.n_surrogates,
            key=jax.random.fold_in(inputs.key, SURROGATE_STREAM),
        )

    @classmethod
    def figure(cls, analysis: xr.Dataset, *, replicate: int, title: str) -> Figure:
        from .._figures import plot_jpca

        return plot_jpca(analysis, replicate=replicate, title=title)

    @classmethod
    def comparison_figure(
        cls, analyses: Mapping[str, xr.Dataset], *, replicate: int, title: str
    ) -> Figure:
        """Each experiment's trajectories in its top jPC plane (replicate `replicate`)
        side by side, and every replicate's R²_skew, R²_best and ratio per experiment."""
        from .._figures._jpca_comparison import plot_jpca_comparison

        return plot_jpca_comparison(analyses, replicate=replicate, title=title)

    @classmethod
    def comparison_table(
        cls, analyses: Mapping[str, xr.Dataset], *, confidence: float, n_resamples: int, seed: int
    ) -> pd.DataFrame:
        """R²_skew, R²_best, their ratio, the top plane's variance share, its frequency
        and the shuffle control per experiment (`rotation_table`)."""
        from ._jpca_comparison import rotation_table

        return rotation_table(analyses, confidence=confidence, n_resamples=n_resamples, seed=seed)
