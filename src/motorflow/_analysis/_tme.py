"""Tensor maximum entropy surrogates (Elsayed & Cunningham 2017, Nat Neurosci 20:1310,
"Structure in neural population recordings: an expected byproduct of simpler
phenomena?"): random data with the same covariance across time, across units and
across conditions as the data, and nothing else.

For a tensor ``X`` (time, unit, condition) each mode's marginal covariance is the
product of its unfolding with itself, e.g. ``Σ_T[t, t'] = Σ_{n,c} X[t,n,c] X[t',n,c]``.
The distribution of maximum entropy with those three covariances is Gaussian with a
precision that is a Kronecker sum, diagonal in the product of the marginals'
eigenbases: an entry ``(a, b, c)`` of that basis has variance
``1 / (λ_T[a] + λ_N[b] + λ_C[c])``. The multipliers λ make each mode's marginal
eigenvalues the data's: ``s_T[a] = Σ_{b,c} 1 / (λ_T[a] + λ_N[b] + λ_C[c])`` and
alike for the other modes, the stationary point of the convex
``f(λ) = Σ_k λ_k · s_k - Σ_{a,b,c} log(λ_T[a] + λ_N[b] + λ_C[c])``, found here by
Newton's method. A mode's directions of zero variance (the condition mean the data
had removed) stay at zero in every surrogate.

The paper's code (github.com/gamaleldin/TME) removes the data's marginal means first;
the caller passes data whose mean over conditions is already removed, as jPCA's is.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import numpy as np

# Eigenvalues below this fraction of a mode's largest are that mode's null directions.
_NULL = 1e-10
_MAX_NEWTON_STEPS = 200
_TOLERANCE = 1e-10
# Newton's method stops short of `_TOLERANCE` where the double-precision rounding of
# the margins and of the step's solve is larger: a decrement below `_STALLED` moves
# nothing, and there every eigenvalue within `_ROUNDED` (relative) is converged. (The
# delayed reaches of a 32-unit network over 38 steps and 7 condition directions,
# eigenvalues 6e-8 to 2e2, stalled at 1.2e-10 on the largest after 20 steps.)
_STALLED = 1e-20
_ROUNDED = 1e-8


class MaxEntropy(NamedTuple):
    """The maximum entropy distribution of a tensor's marginal covariances: per mode,
    its kept eigenvectors `(size, kept)` and the entries' variances in their product
    basis `(kept_T, kept_N, kept_C)`."""

    bases: tuple[np.ndarray, ...]
    variance: np.ndarray

    def marginal_eigenvalues(self) -> tuple[np.ndarray, ...]:
        """Each mode's eigenvalues (kept directions) under the distribution."""
        axes = range(self.variance.ndim)
        return tuple(self.variance.sum(axis=tuple(a for a in axes if a != mode)) for mode in axes)

    def sample(self, key: jax.Array, n: int) -> np.ndarray:
        """`n` surrogates `(n, *shape)` drawn from `key`."""
        shape = self.variance.shape
        z = np.asarray(jax.random.normal(key, (n, *shape)), np.float64)
        z = z * np.sqrt(self.variance)
        # Back from the eigenbases: X[t, n, c] = Σ U_T[t, a] U_N[n, b] U_C[c, c'] z[a, b, c'].
        return np.einsum("...abc,ta,nb,kc->...tnk", z, *self.bases, optimize=True)


def marginal_covariances(tensor: np.ndarray) -> tuple[np.ndarray, ...]:
    """Each mode's covariance: the mode's unfolding times its transpose."""
    covariances = []
    for mode in range(tensor.ndim):
        unfolded = np.moveaxis(tensor, mode, 0).reshape(tensor.shape[mode], -1)
        covariances.append(unfolded @ unfolded.T)
    return tuple(covariances)


def fit_max_entropy(tensor: np.ndarray) -> MaxEntropy:
    """The maximum entropy distribution with `tensor`'s marginal covariances (a 3-mode
    tensor whose marginal means are removed). Raises ValueError where Newton's method
    does not converge (it is convex: a failure is a degenerate tensor, e.g. all zero)."""
    if tensor.ndim != 3:
        raise ValueError(f"a tensor of 3 modes is needed, got shape {tensor.shape}")
    bases, targets = [], []
    for covariance in marginal_covariances(np.asarray(tensor, np.float64)):
        values, vectors = np.linalg.eigh(covariance)
        kept = values > _NULL * max(values[-1], 0.0)
        if not kept.any():
            raise ValueError("the tensor is zero: it has no covariance to keep")
        bases.append(vectors[:, kept])
        targets.append(values[kept])
    multipliers = _solve(targets)
    return MaxEntropy(tuple(bases), 1.0 / _sums(multipliers))


def _sums(multipliers: list[np.ndarray]) -> np.ndarray:
    a, b, c = multipliers
    return a[:, None, None] + b[None, :, None] + c[None, None, :]


def _solve(targets: list[np.ndarray]) -> list[np.ndarray]:
    """The multipliers whose distribution has the marginal eigenvalues `targets`: a
    damped Newton minimisation of the convex dual (module docstring)."""
    sizes = [len(t) for t in targets]
    splits = np.cumsum(sizes)[:-1]
    s = np.concatenate(targets)
    # Each mode's multipliers as if it alone gave each entry a third of its variance:
    # within a factor of a few of the answer, however far apart the eigenvalues are.
    x = np.concatenate([np.prod(sizes) / len(t) / (3 * t) for t in targets])

    def objective(x: np.ndarray) -> float:
        sums = _sums(np.split(x, splits))
        if (sums <= 0).any():
            return np.inf
        return float(x @ s - np.log(sums).sum())

    for _ in range(_MAX_NEWTON_STEPS):
        inverse = 1.0 / _sums(np.split(x, splits))
        margins = [inverse.sum(axis=(1, 2)), inverse.sum(axis=(0, 2)), inverse.sum(axis=(0, 1))]
        gradient = s - np.concatenate(margins)
        error = (np.abs(gradient) / s).max()
        if error <= _TOLERANCE:
            return np.split(x, splits)
        # Scaled to a unit diagonal: a mode's direction of tiny variance has a tiny
        # curvature that an unscaled solve drops with the gauge's null directions
        # (adding a constant to one mode's multipliers and taking it from another's).
        hessian = _hessian(inverse**2)
        scale = 1.0 / np.sqrt(np.diag(hessian))
        scaled = hessian * scale[:, None] * scale[None, :]
        step = scale * np.linalg.lstsq(scaled, -gradient * scale, rcond=None)[0]
        if -gradient @ step < _STALLED and error <= _ROUNDED:
            return np.split(x, splits)
        # Near the answer (Newton decrement below 1/4) the full step is feasible and
        # converges quadratically; there the objective's rounding would stall a search.
        size = 1.0
        if -gradient @ step > 1 / 16:
            here = objective(x)
            while objective(x + size * step) > here + 1e-4 * size * (gradient @ step):
                size /= 2
                if size < 1e-12:
                    break
        x = x + size * step
    raise ValueError("the maximum entropy fit did not converge")


def _hessian(squared: np.ndarray) -> np.ndarray:
    """The dual's Hessian from ``1 / (λ_T[a] + λ_N[b] + λ_C[c])²`` `(T, N, C)`: entry
    ``(i, j)`` sums it over the entries both multipliers take part in."""
    blocks = [
        [np.diag(squared.sum(axis=(1, 2))), squared.sum(axis=2), squared.sum(axis=1)],
        [squared.sum(axis=2).T, np.diag(squared.sum(axis=(0, 2))), squared.sum(axis=0)],
        [squared.sum(axis=1).T, squared.sum(axis=0).T, np.diag(squared.sum(axis=(0, 1)))],
    ]
    return np.block(blocks)
