"""jPCA's fits of one replicate's hidden states (Churchland et al. 2012, Nature 487:51),
and their controls: condition shuffles (Michaels et al. 2016) and tensor maximum
entropy surrogates (Elsayed & Cunningham 2017, :mod:`._tme`).

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
"""

from __future__ import annotations

import itertools

import jax
import numpy as np

from ._tme import fit_max_entropy

# The percentile of the shuffled fits stored as the control's level.
SHUFFLE_PERCENTILE = 95.0
# Surrogates drawn per random call.
_SURROGATE_BLOCK = 25


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
    n_surrogates: int = 0,
    key: jax.Array | None = None,
) -> dict[str, np.ndarray | float]:
    """jPCA of `hidden` (conditions, time, unit) of one replicate; NaN throughout if any
    value is not finite. `unit_range` (unit): each unit's range to normalise by (None:
    its range in `hidden`). Returns the R² of both fits, their ratio, the top plane's
    share of the normalised data's variance, its angular speed (rad/step), the
    projections (conditions, time, 2) onto it, the `SHUFFLE_PERCENTILE`th percentiles
    of R²_skew and of the ratio over `n_shuffles` condition shuffles (NaN for none),
    and the ratio of each of `n_surrogates` tensor maximum entropy surrogates drawn from
    `key` (``surrogate_r2_ratio``, `(n_surrogates,)`) with the share of them at least the
    data's, counting the data (``surrogate_p``: ``(1 + #{ratio_s >= ratio}) / (1 +
    n_surrogates)``; NaN for none)."""
    n_conditions, n_steps, n_units = hidden.shape
    k = min(n_pcs, n_units) // 2 * 2
    names = ("r2_skew", "r2_best", "r2_ratio", "plane_variance", "omega")
    nan = {
        name: np.nan for name in (*names, "shuffled_r2_skew", "shuffled_r2_ratio", "surrogate_p")
    }
    nan["surrogate_r2_ratio"] = np.full(n_surrogates, np.nan)
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
    ratio = r2_skew / r2_best if r2_best > 0 else np.nan
    surrogates = {}
    if n_surrogates > 0:
        if key is None:
            raise ValueError("n_surrogates needs a key to draw them from")
        ratios = surrogate_ratios(centred, k, n_surrogates, key)
        surrogates = {
            "surrogate_r2_ratio": ratios,
            "surrogate_p": float((1 + np.sum(ratios >= ratio)) / (1 + n_surrogates)),
        }
    return {
        **nan,
        "r2_skew": r2_skew,
        "r2_best": r2_best,
        "r2_ratio": ratio,
        "plane_variance": float((projection**2).sum() / total) if total > 0 else np.nan,
        "omega": omega,
        "projection": projection,
        **shuffled,
        **surrogates,
    }


def surrogate_ratios(centred: np.ndarray, k: int, n: int, key: jax.Array) -> np.ndarray:
    """R²_skew / R²_best of `n` tensor maximum entropy surrogates of `centred`
    (conditions, time, unit: normalised, its condition mean removed), drawn from `key`,
    each fitted as the data are (its own top `k` PCs)."""
    distribution = fit_max_entropy(np.transpose(centred, (1, 2, 0)))  # (time, unit, condition)
    ratios = np.empty(n)
    # Drawn in blocks: one random call per block (a call a surrogate cost 2 ms each),
    # memory bounded at any n.
    for start in range(0, n, _SURROGATE_BLOCK):
        block = distribution.sample(
            jax.random.fold_in(key, start // _SURROGATE_BLOCK), min(_SURROGATE_BLOCK, n - start)
        )
        for index, surrogate in enumerate(block, start):
            *_, best, skew = _fits(_reduce(np.transpose(surrogate, (2, 0, 1)), k))
            ratios[index] = skew / best if best > 0 else np.nan
    return ratios


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
