"""jPCA (Churchland et al. 2012): rotation is told from decay, and the fit is the
least-squares skew-symmetric one."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from scipy.stats import special_ortho_group

import motorflow as mf
from motorflow._analysis._jpca import fit_skew_symmetric

N_UNITS, N_TRIALS, N_STEPS, DT = 12, 8, 40, 0.01


def embedded(latent: np.ndarray, seed: int = 0, noise: float = 0.0) -> xr.Dataset:
    """States whose hidden units are a random orthonormal embedding of `latent`
    (replicate, trial, time, 2), plus a constant offset per unit and optional noise."""
    rng = np.random.default_rng(seed)
    basis = special_ortho_group.rvs(N_UNITS, random_state=seed)[:, :2]
    hidden = latent @ basis.T + rng.normal(size=N_UNITS) * 0.3
    hidden = hidden + noise * rng.normal(size=hidden.shape)
    return xr.Dataset(
        {"hidden": (("replicate", "trial", "time", "unit"), hidden)},
        coords={
            "time": np.arange(latent.shape[2]) * DT,
            "goal_angle": ("trial", np.linspace(0, 2 * np.pi, N_TRIALS, endpoint=False)),
        },
    ).expand_dims(condition=["unperturbed"], axis=1)


def rotation(omega: float = 2 * np.pi * 3, n_replicates: int = 2) -> np.ndarray:
    """Latent states turning counter-clockwise at `omega` rad/s from different phases
    and radii."""
    phases = np.linspace(0, np.pi, N_TRIALS)[:, None]
    radii = np.linspace(0.5, 1.0, N_TRIALS)[:, None]
    angle = phases + omega * np.arange(N_STEPS)[None] * DT
    latent = radii[..., None] * np.stack([np.cos(angle), np.sin(angle)], axis=-1)
    return np.broadcast_to(latent, (n_replicates, *latent.shape)).copy()


def decay(rate: float = 8.0) -> np.ndarray:
    """Latent states decaying straight toward the origin from different directions."""
    directions = np.linspace(0, 2 * np.pi, N_TRIALS, endpoint=False)
    starts = np.stack([np.cos(directions), np.sin(directions)], axis=-1)
    shrink = np.exp(-rate * np.arange(N_STEPS) * DT)
    return (starts[:, None] * shrink[None, :, None])[None]


def turning(result: xr.Dataset) -> np.ndarray:
    """The cross product of each step's jPC1-2 state with its next step's change."""
    path = result.jpca_projection.isel(replicate=0, condition=0).values
    step = np.diff(path, axis=1)
    return path[:, :-1, 0] * step[..., 1] - path[:, :-1, 1] * step[..., 0]


def test_a_rotation_is_all_rotation_but_what_first_differences_add():
    """Without per-unit normalisation (a huge soft norm), a rotation by θ per step is
    explained fully by a linear map, and by a skew-symmetric one up to the contraction
    that first differences add: R² = cos²(θ/2) exactly."""
    theta = 2 * np.pi * 3 * DT
    result = mf.hidden_jpca(embedded(rotation()), n_pcs=4, soft_norm=1e6)
    np.testing.assert_allclose(result.jpca_r2_best, 1, atol=1e-9)
    np.testing.assert_allclose(result.jpca_r2_skew, np.cos(theta / 2) ** 2, atol=1e-9)
    np.testing.assert_allclose(result.jpca_frequency, 3, rtol=0.01)
    np.testing.assert_allclose(result.jpca_plane_variance, 1, atol=1e-9)
    assert (turning(result) > 0).all()


def test_a_rotation_normalised_per_unit_stays_mostly_rotation():
    result = mf.hidden_jpca(embedded(rotation()), n_pcs=4)
    assert float(result.jpca_r2_ratio.min()) > 0.9
    assert (turning(result) > 0).all()


def test_a_rotation_the_other_way_is_drawn_counter_clockwise_too():
    result = mf.hidden_jpca(embedded(rotation(omega=-2 * np.pi * 3)), n_pcs=4)
    assert (turning(result) > 0).all()
    assert float(result.jpca_r2_ratio.min()) > 0.9


def test_decay_is_linear_dynamics_without_rotation():
    result = mf.hidden_jpca(embedded(decay()), n_pcs=2).isel(replicate=0, condition=0)
    assert float(result.jpca_r2_best) > 0.99
    assert float(result.jpca_r2_skew) < 0.05
    assert float(result.jpca_r2_ratio) < 0.05


def test_noisy_rotation_keeps_a_high_ratio_and_noise_alone_does_not():
    rotating = mf.hidden_jpca(embedded(rotation(), noise=0.02), n_pcs=2)
    noise = np.random.default_rng(3).normal(size=(1, N_TRIALS, N_STEPS, 2))
    random = mf.hidden_jpca(embedded(noise), n_pcs=2)
    assert float(rotating.jpca_r2_ratio.min()) > 0.9
    # White noise's first differences are mostly -x: linear, not rotation.
    assert float(random.jpca_r2_skew.max()) < 0.1
    assert float(random.jpca_r2_best.max()) > 0.3


def test_the_skew_fit_recovers_an_exact_rotation_and_beats_the_antisymmetric_part():
    rng = np.random.default_rng(0)
    k = 6
    generator = rng.normal(size=(k, k))
    skew = (generator - generator.T) / 2
    x = rng.normal(size=(300, k))
    np.testing.assert_allclose(fit_skew_symmetric(x, x @ skew.T), skew, atol=1e-10)
    # On data no skew matrix explains, the fit is the least-squares one: no worse than
    # the antisymmetric part of the unconstrained fit, and turning it any way is worse.
    dx = x @ rng.normal(size=(k, k)).T
    fitted = fit_skew_symmetric(x, dx)
    best = np.linalg.lstsq(x, dx, rcond=None)[0].T

    def residual(m):
        return ((dx - x @ m.T) ** 2).sum()

    assert residual(fitted) <= residual((best - best.T) / 2) + 1e-9
    for _ in range(20):
        step = rng.normal(size=(k, k)) * 1e-3
        assert residual(fitted) < residual(fitted + (step - step.T) / 2)


def test_time_reversed_dynamics_rotate_the_other_way():
    rng = np.random.default_rng(1)
    x = np.cumsum(rng.normal(size=(200, 4)), axis=0)
    skew = fit_skew_symmetric(x[:-1], np.diff(x, axis=0))
    reversed_ = x[::-1]
    np.testing.assert_allclose(
        fit_skew_symmetric(reversed_[:-1], np.diff(reversed_, axis=0)), -skew, atol=0.05
    )


def test_a_diverged_replicate_gives_nan_and_the_others_their_fit():
    latent = rotation()
    latent[1, 0, 5] = np.nan
    result = mf.hidden_jpca(embedded(latent), n_pcs=4)
    assert np.isnan(result.jpca_r2_ratio.sel(replicate=1)).all()
    assert float(result.jpca_r2_ratio.sel(replicate=0).min()) > 0.9


def test_the_window_selects_the_steps_analysed():
    result = mf.hidden_jpca(embedded(rotation()), n_pcs=4, start=0.1, stop=0.2)
    np.testing.assert_allclose(result.jpca_time, np.arange(10, 21) * DT)


@pytest.mark.parametrize("replicate", [0, 1])
def test_the_figure_draws_each_trial_in_the_plane(replicate):
    result = mf.hidden_jpca(embedded(rotation()), n_pcs=4)
    figure = mf.JPCAAnalysis.figure(result, replicate=replicate, title="rotation")
    (ax,) = figure.axes[:1]
    assert len(ax.lines) == N_TRIALS
    ratio = float(result.jpca_r2_ratio.isel(replicate=replicate, condition=0))
    assert ax.get_title().endswith(f"= {ratio:.2f}")
