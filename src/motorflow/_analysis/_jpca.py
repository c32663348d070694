"""jPCA: how much of the hidden dynamics is rotation (Churchland et al. 2012, Nature 487:51).

Per replicate and evaluation condition, the reach directions are jPCA's conditions.
The steps follow the Churchland lab's jPCA code (as the notes in shared/ describe it):

1. soft-normalise each unit by its range over all conditions and all the trial's
   times (not only the analysed window, as jPCA.m does) plus `soft_norm` (5-10
   spikes/s in the paper; here a fraction of the hidden units' range, which is at
   most 2 for tanh units);
2. subtract the mean over conditions at each time;
3. project onto the first `n_pcs` principal components (6 in the paper);
4. fit the first differences ``dX = X(t+1) - X(t)`` by ``dX ≈ M X`` twice: with any
   `M` (least squares) and with a skew-symmetric `M` (least squares over its free
   entries, a convex problem: the rotational fit);
5. the top jPC plane is spanned by the real and imaginary parts of the eigenvector of
   the skew-symmetric fit with the fastest rotation, turned so that the rotation is
   counter-clockwise and the first step's states spread most along jPC1, then turned
   by half a turn where needed so that the largest excursion along jPC2 is positive.

R² is ``1 - |dX - M X|² / |dX|²`` for each fit (dX not mean-centred); their ratio
(Michaels et al. 2016's R²_skew / R²_best) says how much of what a linear dynamical
system explains is rotation. The top plane's variance share is its projections'
squared norm over that of the normalised, mean-removed data (all units).

R² alone does not prove rotational dynamics (Michaels et al. 2016, PLoS Comput Biol
12:e1005175; Lebedev et al. 2019, Sci Rep 9:18978): as a control, the fits are repeated
on data whose conditions are shuffled independently per unit (each unit keeps its own
time courses, but which reach each belongs to is drawn anew per unit: Michaels et al.'s
condition shuffle without their covariance matching), and the 95th percentiles of
R²_skew and of the ratio over the shuffles are stored beside the data's.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, ClassVar

import numpy as np
import xarray as xr
from pydantic import Field

from .._config_base import NonNegativeNumber, PositiveInt
from .._config_errors import ConfigError
from ._base import AbstractAnalysis, AnalysisInputs

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
}

# The percentile of the shuffled fits stored as the control's level.
SHUFFLE_PERCENTILE = 95.0


def _r2(dx: np.ndarray, x: np.ndarray, m: np.ndarray) -> float:
    """The share of the first differences `dx` (samples, k) that ``x @ m.T`` explains."""
    residual = dx - x @ m.T
    return float(1 - (residual**2).sum() / (dx**2).sum())


def fit_skew_symmetric(x: np.ndarray, dx: np.ndarray) -> np.ndarray:
    """The skew-symmetric `M` (k, k) minimising ``|dx - x @ M.T|²`` over samples of `x`
    and `dx` (samples, k): the least-squares fit over its k(k-1)/2 free entries (the
    problem Cunningham's skewSymRegress.m solves iteratively; convex, with one
    minimum where `x` has full rank).

    Setting the objective's gradient within the skew-symmetric matrices to zero gives
    the Sylvester equation ``M C + C M = B - Bᵀ`` with ``C = xᵀx`` and ``B = dxᵀx``; in
    the eigenbasis ``C = U Λ Uᵀ`` it is diagonal: ``(UᵀMU)_ij = (Uᵀ(B - Bᵀ)U)_ij / (λ_i
    + λ_j)``. Where `x` lacks full rank, least squares over the free entries instead."""
    c, b = x.T @ x, dx.T @ x
    eigenvalues, basis = np.linalg.eigh(c)
    if eigenvalues[0] > 1e-10 * max(eigenvalues[-1], 1e-300):
        rotated = basis.T @ (b - b.T) @ basis / (eigenvalues[:, None] + eigenvalues[None, :])
        m = basis @ rotated @ basis.T
        return (m - m.T) / 2
    k = x.shape[1]
    pairs = list(itertools.combinations(range(k), 2))
    # Column (i, j) of the design: dx = Σ m_ij (E_ij x), with E_ij = e_i e_jᵀ - e_j e_iᵀ.
    design = np.zeros((x.shape[0], k, len(pairs)))
    for column, (i, j) in enumerate(pairs):
        design[:, i, column] = x[:, j]
        design[:, j, column] = -x[:, i]
    entries, *_ = np.linalg.lstsq(design.reshape(-1, len(pairs)), dx.reshape(-1), rcond=None)
    m = np.zeros((k, k))
    for value, (i, j) in zip(entries, pairs):
        m[i, j], m[j, i] = value, -value
    return m


def _top_plane(m_skew: np.ndarray, states: np.ndarray) -> tuple[np.ndarray, float]:
    """The orthonormal basis `(k, 2)` of the fastest rotation of `m_skew`, turned so
    that it rotates counter-clockwise (jPC1 towards jPC2), the first step's states
    spread most along jPC1 and the largest excursion of `states` (conditions, time, k)
    along jPC2 is positive; and its angular speed (rad/step)."""
    start = states[:, 0]
    values, vectors = np.linalg.eig(m_skew)
    fastest = int(np.argmax(values.imag))  # of each conjugate pair, the +iω one
    omega = float(values[fastest].imag)
    vector = vectors[:, fastest]
    plane = np.stack([vector.real, vector.imag], axis=1)
    plane /= np.linalg.norm(plane, axis=0)
    # With M v = iω v for v = a + ib, M a = -ω b and M b = ω a: in the basis (a, b) the
    # state turns clockwise; flip jPC2 wherever the fit's plane turns clockwise.
    in_plane = plane.T @ m_skew @ plane
    if in_plane[1, 0] < 0:
        plane[:, 1] *= -1
    # Turn within the plane so the first step's states spread most along jPC1 (their
    # principal axis).
    points = start @ plane
    points = points - points.mean(axis=0)
    _, _, axes = np.linalg.svd(points, full_matrices=False)
    angle = np.arctan2(axes[0, 1], axes[0, 0])
    turn = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    plane = plane @ turn
    # Half a turn (both axes flipped, the rotation stays counter-clockwise) where the
    # largest excursion along jPC2 is negative, as jPCA.m does.
    along = (states @ plane)[..., 1].ravel()
    if along[np.argmax(np.abs(along))] < 0:
        plane = -plane
    return plane, abs(omega)


def _reduce(centred: np.ndarray, k: int) -> np.ndarray:
    """`centred` (conditions, time, unit) projected onto its first `k` PCs."""
    loading = np.linalg.svd(centred.reshape(-1, centred.shape[-1]), full_matrices=False)[2]
    return centred @ loading[:k].T


def _fits(reduced: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, float]:
    """The unconstrained and skew-symmetric fits of `reduced` (conditions, time, k)'s
    first differences, and their R²."""
    k = reduced.shape[-1]
    x = reduced[:, :-1].reshape(-1, k)
    dx = np.diff(reduced, axis=1).reshape(-1, k)
    m_best = np.linalg.lstsq(x, dx, rcond=None)[0].T
    m_skew = fit_skew_symmetric(x, dx)
    return m_best, m_skew, _r2(dx, x, m_best), _r2(dx, x, m_skew)


def jpca(
    hidden: np.ndarray,
    *,
    n_pcs: int,
    soft_norm: float,
    unit_range: np.ndarray | None = None,
    n_shuffles: int = 0,
    seed: int = 0,
) -> dict[str, np.ndarray | float]:
    """jPCA of `hidden` (conditions, time, unit) of one replicate; NaN throughout if any
    value is not finite. `unit_range` (unit): each unit's range to normalise by (None:
    its range in `hidden`). Returns the R² of both fits, their ratio, the top plane's
    share of the normalised data's variance, its angular speed (rad/step), the
    projections (conditions, time, 2) onto it, and the `SHUFFLE_PERCENTILE`th
    percentiles of R²_skew and of the ratio over `n_shuffles` condition shuffles
    (NaN for none)."""
    n_conditions, n_steps, n_units = hidden.shape
    k = min(n_pcs, n_units) // 2 * 2
    names = ("r2_skew", "r2_best", "r2_ratio", "plane_variance", "omega")
    nan = {name: np.nan for name in (*names, "shuffled_r2_skew", "shuffled_r2_ratio")}
    if not np.isfinite(hidden).all() or k < 2 or n_steps < 3:
        return {**nan, "projection": np.full((n_conditions, n_steps, 2), np.nan)}
    if unit_range is None:
        flat = hidden.reshape(-1, n_units)
        unit_range = flat.max(axis=0) - flat.min(axis=0)
    normalised = hidden / (unit_range + soft_norm)
    centred = normalised - normalised.mean(axis=0, keepdims=True)
    reduced = _reduce(centred, k)
    _, m_skew, r2_best, r2_skew = _fits(reduced)
    if np.max(np.abs(np.linalg.eigvals(m_skew).imag), initial=0.0) <= 1e-12:
        # No rotation at all (M_skew = 0): no plane to show.
        plane, omega = np.full((k, 2), np.nan), 0.0
    else:
        plane, omega = _top_plane(m_skew, reduced)
    projection = reduced @ plane
    total = (centred**2).sum()
    shuffled = _shuffled_fits(centred, k, n_shuffles, seed)
    return {
        **nan,
        "r2_skew": r2_skew,
        "r2_best": r2_best,
        "r2_ratio": r2_skew / r2_best if r2_best > 0 else np.nan,
        "plane_variance": float((projection**2).sum() / total) if total > 0 else np.nan,
        "omega": omega,
        "projection": projection,
        **shuffled,
    }


def shuffle_conditions(centred: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """`centred` (conditions, time, unit) with each unit's conditions permuted
    independently (its whole time course moves with its condition; Michaels et al.
    2016's condition shuffle). The mean over conditions is unchanged."""
    n_conditions, _, n_units = centred.shape
    order = rng.permuted(np.tile(np.arange(n_conditions)[:, None], (1, n_units)), axis=0)
    return np.take_along_axis(centred, order[:, None, :], axis=0)


def _shuffled_fits(centred: np.ndarray, k: int, n_shuffles: int, seed: int) -> dict[str, float]:
    """The `SHUFFLE_PERCENTILE`th percentiles of R²_skew and of R²_skew / R²_best over
    `n_shuffles` condition shuffles of `centred`."""
    if n_shuffles < 1:
        return {}
    rng = np.random.default_rng(seed)
    skew, ratio = np.empty(n_shuffles), np.empty(n_shuffles)
    for index in range(n_shuffles):
        *_, best, skew[index] = _fits(_reduce(shuffle_conditions(centred, rng), k))
        ratio[index] = skew[index] / best if best > 0 else np.nan
    return {
        "shuffled_r2_skew": float(np.percentile(skew, SHUFFLE_PERCENTILE)),
        "shuffled_r2_ratio": float(np.nanpercentile(ratio, SHUFFLE_PERCENTILE)),
    }


def hidden_jpca(
    states: xr.Dataset,
    *,
    n_pcs: int = 6,
    soft_norm: float = 0.1,
    start: float = 0.0,
    stop: float | None = None,
    n_shuffles: int = 0,
    seed: int = 0,
) -> xr.Dataset:
    """jPCA of the hidden states of each replicate and condition, the trials (reach
    directions) as its conditions, over the steps whose time is in [`start`, `stop`]
    (seconds from the trial's start; `stop` None: to the end). Each unit is
    normalised by its range over the whole trial. With `n_shuffles`, the condition
    shuffles' percentiles (``jpca_shuffled_r2_skew``, ``jpca_shuffled_r2_ratio``;
    NaN without) come from a generator seeded by `seed`, the replicate and condition.

    Returns ``jpca_r2_skew``, ``jpca_r2_best``, ``jpca_r2_ratio``,
    ``jpca_plane_variance``, ``jpca_frequency`` (Hz) and the shuffle control's
    ``jpca_shuffled_r2_skew`` and ``jpca_shuffled_r2_ratio`` `(replicate, condition)`, and
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
    for r, c in itertools.product(range(n_rep), range(n_cond)):
        fit = jpca(
            values[r, c],
            n_pcs=n_pcs,
            soft_norm=soft_norm,
            unit_range=unit_range[r, c],
            n_shuffles=n_shuffles,
            seed=int(np.random.SeedSequence([seed, r, c]).generate_state(1)[0]),
        )
        for name in (
            "r2_skew",
            "r2_best",
            "r2_ratio",
            "plane_variance",
            "shuffled_r2_skew",
            "shuffled_r2_ratio",
        ):
            scalars[f"jpca_{name}"][r, c] = fit[name]
        scalars["jpca_frequency"][r, c] = fit["omega"] / (2 * np.pi * dt)
        projection[r, c] = fit["projection"]
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
