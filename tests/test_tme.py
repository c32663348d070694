"""Tensor maximum entropy surrogates (Elsayed & Cunningham 2017): random tensors with the
data's covariances across each mode (time, unit, condition) and no other structure."""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np
import pytest

from motorflow._analysis._tme import _solve, _sums, fit_max_entropy, marginal_covariances


def structured(seed: int = 0) -> np.ndarray:
    """(time, unit, condition): travelling waves with per-unit gains and noise growing
    in time, the mean over conditions removed (as jPCA's data are)."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, 20)[:, None, None]
    phase = rng.uniform(0, 6, (1, 16, 1)) + rng.uniform(0, 6, (1, 1, 6))
    data = np.sin(6 * t + phase) * rng.uniform(0.2, 1, (1, 16, 1))
    data = data + 0.3 * t * rng.normal(size=(20, 16, 6))
    return data - data.mean(axis=2, keepdims=True)


def test_the_distribution_has_the_datas_marginal_covariances_exactly():
    data = structured()
    distribution = fit_max_entropy(data)
    for got, covariance in zip(distribution.marginal_eigenvalues(), marginal_covariances(data)):
        want = np.linalg.eigvalsh(covariance)
        want = want[want > 1e-10 * want[-1]]
        np.testing.assert_allclose(np.sort(got), want, rtol=1e-8, atol=1e-10 * want[-1])
    # The condition mean the data had removed is a direction of zero variance: 5 of 6 kept.
    assert [basis.shape[1] for basis in distribution.bases] == [20, 16, 5]


def test_variances_ten_orders_apart_are_fitted():
    # Early steps of a tiny network barely vary (the tiny pipeline's time mode spanned
    # 2e-10 to 1 of its largest variance, and an unscaled Newton step stalled there).
    data = structured(1) * np.logspace(-3, 0, 20)[:, None, None]
    distribution = fit_max_entropy(data)
    want = np.linalg.eigvalsh(marginal_covariances(data)[0])
    assert want[0] < 1e-9 * want[-1]  # 4.9e-10
    got = np.sort(distribution.marginal_eigenvalues()[0])
    # Eigenvalues are known to about 1e-15 of the largest (LAPACK's drivers differ so).
    np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-13 * want[-1])


def test_a_fit_that_stalls_at_rounding_short_of_the_tolerance_is_converged():
    # The marginal eigenvalues of a trained network's delayed reaches (32 GRU units, 38
    # steps, 8 directions; 6e-8 to 2e2): Newton's method reached 1.2e-10 relative on
    # the largest in 20 steps and stayed there, and the analysis job failed.
    stored = np.load(Path(__file__).parent / "data" / "tme_stall_targets.npz")
    targets = [stored["time"], stored["unit"], stored["condition"]]
    inverse = 1.0 / _sums(_solve(targets))
    margins = [inverse.sum(axis=(1, 2)), inverse.sum(axis=(0, 2)), inverse.sum(axis=(0, 1))]
    for got, want in zip(margins, targets):
        np.testing.assert_allclose(got, want, rtol=1e-8)


def test_surrogates_keep_the_marginal_covariances_on_average_and_nothing_else():
    data = structured()
    surrogates = fit_max_entropy(data).sample(jax.random.key(0), 800)
    for mode, covariance in enumerate(marginal_covariances(data)):
        mean = np.mean([marginal_covariances(s)[mode] for s in surrogates], axis=0)
        # Sampling error of 800 draws: measured 3-5% of the largest entry.
        assert np.abs(mean - covariance).max() < 0.12 * np.abs(covariance).max()
    np.testing.assert_allclose(surrogates.mean(axis=3), 0, atol=1e-12)
    # Not the data, and not one another: fresh draws of the distribution.
    assert np.abs(surrogates[0] - data).max() > 0.1 * np.abs(data).max()
    assert not np.allclose(surrogates[0], surrogates[1])


def test_the_draws_are_the_keys():
    distribution = fit_max_entropy(structured())
    first = distribution.sample(jax.random.key(3), 2)
    np.testing.assert_array_equal(first, distribution.sample(jax.random.key(3), 2))
    assert not np.allclose(first, distribution.sample(jax.random.key(4), 2))


def test_a_zero_tensor_or_another_rank_is_refused():
    with pytest.raises(ValueError, match="zero"):
        fit_max_entropy(np.zeros((4, 3, 2)))
    with pytest.raises(ValueError, match="3 modes"):
        fit_max_entropy(np.ones((4, 3)))
