"""jPCA: how much of the hidden dynamics is rotation (Churchland et al. 2012, Nature 487:51).

Per replicate and evaluation condition, the reach directions are jPCA's conditions.
The steps follow the Churchland lab's jPCA code (as the notes in shared/ describe it):

1. soft-normalise each unit by its range over all conditions and times plus
   `soft_norm` (5-10 spikes/s in the paper; here a fraction of the hidden units'
   range, which is at most 2 for tanh units);
2. subtract the mean over conditions at each time;
3. project onto the first `n_pcs` principal components (6 in the paper);
4. fit the first differences ``dX = X(t+1) - X(t)`` by ``dX ≈ M X`` twice: with any
   `M` (least squares) and with a skew-symmetric `M` (least squares over its free
   entries, a convex problem: the rotational fit);
5. the top jPC plane is spanned by the real and imaginary parts of the eigenvector of
   the skew-symmetric fit with the fastest rotation, turned so that the rotation is
   counter-clockwise and the first step's states spread most along jPC1.

R² is ``1 - |dX - M X|² / |dX|²`` for each fit; their ratio (Michaels et al. 2016's
R²_skew / R²_best) says how much of what a linear dynamical system explains is
rotation.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Annotated, ClassVar

import numpy as np
import xarray as xr
from pydantic import Field

from .._config_base import NonNegativeNumber, PositiveInt
from ._base import AbstractAnalysis, AnalysisInputs

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# The variables jPCA adds per (replicate, condition), and their units.
_SCALARS = {
    "jpca_r2_skew": "1",
    "jpca_r2_best": "1",
    "jpca_r2_ratio": "1",
    "jpca_plane_variance": "1",
    "jpca_frequency": "Hz",
}


def _r2(dx: np.ndarray, x: np.ndarray, m: np.ndarray) -> float:
    """The share of the first differences `dx` (samples, k) that ``x @ m.T`` explains."""
    residual = dx - x @ m.T
    return float(1 - (residual**2).sum() / (dx**2).sum())


def fit_skew_symmetric(x: np.ndarray, dx: np.ndarray) -> np.ndarray:
    """The skew-symmetric `M` (k, k) minimising ``|dx - x @ M.T|²`` over samples of `x`
    and `dx` (samples, k): least squares over its k(k-1)/2 free entries."""
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


def _top_plane(m_skew: np.ndarray, start: np.ndarray) -> tuple[np.ndarray, float]:
    """The orthonormal basis `(k, 2)` of the fastest rotation of `m_skew`, turned so
    that it rotates counter-clockwise (jPC1 towards jPC2) and the first step's states
    `start` (conditions, k) spread most along jPC1; and its angular speed (rad/step)."""
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
    # principal axis), then pick the sign that puts the first condition's start on +jPC1.
    points = start @ plane
    points = points - points.mean(axis=0)
    _, _, axes = np.linalg.svd(points, full_matrices=False)
    angle = np.arctan2(axes[0, 1], axes[0, 0])
    turn = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    plane = plane @ turn
    if (start[0] @ plane)[0] < 0:
        plane = -plane
    return plane, abs(omega)


def jpca(hidden: np.ndarray, *, n_pcs: int, soft_norm: float) -> dict[str, np.ndarray | float]:
    """jPCA of `hidden` (conditions, time, unit) of one replicate; NaN throughout if any
    value is not finite. Returns the R² of both fits, their ratio, the top plane's
    share of the normalised data's variance, its angular speed (rad/step) and the
    projections (conditions, time, 2) onto it."""
    n_conditions, n_steps, n_units = hidden.shape
    k = min(n_pcs, n_units) // 2 * 2
    nan = {name: np.nan for name in ("r2_skew", "r2_best", "r2_ratio", "plane_variance", "omega")}
    if not np.isfinite(hidden).all() or k < 2 or n_steps < 3:
        return {**nan, "projection": np.full((n_conditions, n_steps, 2), np.nan)}
    flat = hidden.reshape(-1, n_units)
    normalised = hidden / (flat.max(axis=0) - flat.min(axis=0) + soft_norm)
    centred = normalised - normalised.mean(axis=0, keepdims=True)
    samples = centred.reshape(-1, n_units)
    loading = np.linalg.svd(samples, full_matrices=False)[2]
    pcs = loading[:k].T  # (unit, k)
    reduced = centred @ pcs  # (conditions, time, k)
    x = reduced[:, :-1].reshape(-1, k)
    dx = np.diff(reduced, axis=1).reshape(-1, k)
    m_best = np.linalg.lstsq(x, dx, rcond=None)[0].T
    m_skew = fit_skew_symmetric(x, dx)
    r2_best, r2_skew = _r2(dx, x, m_best), _r2(dx, x, m_skew)
    if np.max(np.abs(np.linalg.eigvals(m_skew).imag), initial=0.0) <= 1e-12:
        # No rotation at all (M_skew = 0): no plane to show.
        plane, omega = np.full((k, 2), np.nan), 0.0
    else:
        plane, omega = _top_plane(m_skew, reduced[:, 0])
    projection = reduced @ plane
    total = (samples**2).sum()
    return {
        "r2_skew": r2_skew,
        "r2_best": r2_best,
        "r2_ratio": r2_skew / r2_best if r2_best > 0 else np.nan,
        "plane_variance": float((projection**2).sum() / total) if total > 0 else np.nan,
        "omega": omega,
        "projection": projection,
    }


def hidden_jpca(
    states: xr.Dataset,
    *,
    n_pcs: int = 6,
    soft_norm: float = 0.1,
    start: float = 0.0,
    stop: float | None = None,
) -> xr.Dataset:
    """jPCA of the hidden states of each replicate and condition, the trials (reach
    directions) as its conditions, over the steps whose time is in [`start`, `stop`]
    (seconds from the trial's start; `stop` None: to the end).

    Returns ``jpca_r2_skew``, ``jpca_r2_best``, ``jpca_r2_ratio``,
    ``jpca_plane_variance`` and ``jpca_frequency`` (Hz) `(replicate, condition)`, and
    ``jpca_projection`` `(replicate, condition, trial, jpca_time, jpc)` onto the top
    plane (jPC1, jPC2), with the window's times as the ``jpca_time`` coord.
    """
    hidden = states.hidden
    if "condition" not in hidden.dims:
        hidden = hidden.expand_dims(condition=[""])
    time = states.time.values
    window = (time >= start - 1e-9) & (True if stop is None else time <= stop + 1e-9)
    hidden = hidden.isel(time=np.flatnonzero(window))
    hidden = hidden.transpose("replicate", "condition", "trial", "time", "unit")
    values = np.asarray(hidden.values, dtype=np.float64)
    n_rep, n_cond, n_trials, n_steps, _ = values.shape
    dt = float(time[1] - time[0]) if len(time) > 1 else np.nan
    scalars = {name: np.full((n_rep, n_cond), np.nan) for name in _SCALARS}
    projection = np.full((n_rep, n_cond, n_trials, n_steps, 2), np.nan)
    for r, c in itertools.product(range(n_rep), range(n_cond)):
        fit = jpca(values[r, c], n_pcs=n_pcs, soft_norm=soft_norm)
        for name in ("r2_skew", "r2_best", "r2_ratio", "plane_variance"):
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

    NAME: ClassVar[str] = "jpca"

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

    def run(self, inputs: AnalysisInputs) -> xr.Dataset:
        return hidden_jpca(
            inputs.states,
            n_pcs=self.n_pcs,
            soft_norm=self.soft_norm,
            start=self.start,
            stop=self.stop,
        )

    @classmethod
    def figure(cls, analysis: xr.Dataset, *, replicate: int, title: str) -> Figure:
        from .._figures import plot_jpca

        return plot_jpca(analysis, replicate=replicate, title=title)
