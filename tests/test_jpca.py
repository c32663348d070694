"""jPCA (Churchland et al. 2012): rotation is told from decay, and the fit is the
least-squares skew-symmetric one."""

from __future__ import annotations

import jax
import numpy as np
import pytest
import xarray as xr
from scipy.stats import special_ortho_group

import motorflow as mf
from motorflow._analysis._jpca_fit import fit_skew_symmetric

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
    assert ax.get_title().endswith(f"ratio {ratio:.2f}")


def test_the_plane_is_turned_so_its_largest_excursion_along_jpc2_is_positive():
    """As jPCA.m: the plane keeps its counter-clockwise rotation and its start spread
    along jPC1, and half a turn puts the largest excursion along jPC2 on its + side."""
    for omega in (2 * np.pi * 3, -2 * np.pi * 3, 2 * np.pi * 1.3):
        result = mf.hidden_jpca(embedded(rotation(omega=omega)), n_pcs=4)
        along = result.jpca_projection.isel(condition=0).sel(jpc=2).values
        for replicate in along:
            assert replicate.ravel()[np.argmax(np.abs(replicate))] > 0
        assert (turning(result) > 0).all()


def test_units_are_normalised_by_their_range_over_the_whole_trial():
    """A unit's activity outside the window changes its normalisation (as in jPCA.m),
    so an outlying unit outside the window no longer dominates inside it."""
    states = embedded(rotation(), noise=0.01)
    hidden = states.hidden.values.copy()
    hidden[..., N_STEPS - 1, 0] += 50.0  # unit 0 spikes on the last step only
    spiking = states.copy(data={"hidden": hidden})
    window = {"n_pcs": 4, "start": 0.0, "stop": (N_STEPS - 3) * DT}
    before, after = mf.hidden_jpca(states, **window), mf.hidden_jpca(spiking, **window)
    # Unit 0 shrinks 50-fold, so the fit sees one unit fewer: a different projection.
    assert not np.allclose(before.jpca_projection, after.jpca_projection, atol=1e-3)
    single = mf.hidden_jpca(spiking.isel(time=slice(0, N_STEPS - 2)), n_pcs=4, start=0.0, stop=None)
    assert not np.allclose(single.jpca_projection, after.jpca_projection, atol=1e-3)


def test_a_condition_shuffle_destroys_a_rotation_shared_across_conditions():
    """The control (Michaels et al. 2016): with each unit's conditions shuffled on its
    own, the rotational fit explains far less of a rotation (each unit still oscillates,
    so the ratio alone stays high: R²_skew is what the control tells apart), while the
    shuffle keeps every unit's own time courses and the mean over conditions."""
    from motorflow._analysis._jpca_fit import shuffle_conditions

    result = mf.hidden_jpca(embedded(rotation(), noise=0.01), n_pcs=4, n_shuffles=50, seed=1)
    assert float(result.jpca_r2_skew.min()) > 0.75  # measured 0.83-0.84
    assert float(result.jpca_shuffled_r2_skew.max()) < 0.5  # measured 0.34-0.35
    data = np.random.default_rng(0).normal(size=(N_TRIALS, N_STEPS, N_UNITS))
    shuffled = shuffle_conditions(data, np.random.default_rng(1))
    np.testing.assert_allclose(shuffled.mean(axis=0), data.mean(axis=0))
    for unit in range(N_UNITS):
        assert sorted(map(tuple, shuffled[:, :, unit])) == sorted(map(tuple, data[:, :, unit]))
    assert not np.allclose(shuffled, data)
    # Without shuffles the control is NaN (not a number that looks like chance).
    assert np.isnan(mf.hidden_jpca(embedded(rotation()), n_pcs=4).jpca_shuffled_r2_skew).all()


def test_maximum_entropy_surrogates_tell_a_rotation_from_chance_and_decay_not():
    """The field's control (Elsayed & Cunningham 2017): surrogates with the data's
    covariances across time, units and reach directions rotate far less consistently
    than a rotation shared across reaches (p < 0.05 with 50 surrogates: measured 0.02,
    0.04), while a decay is no more rotational than its surrogates (measured 0.98, 0.69)."""
    turning_ = mf.hidden_jpca(embedded(rotation(), noise=0.01), n_pcs=4, n_surrogates=50, seed=1)
    assert turning_.jpca_surrogate_r2_ratio.dims == ("replicate", "condition", "surrogate")
    assert turning_.sizes["surrogate"] == 50
    assert (turning_.jpca_surrogate_p < 0.05).all()
    # p counts the data among the surrogates: (1 + those at least the data's) / (1 + n).
    ratios, observed = turning_.jpca_surrogate_r2_ratio, turning_.jpca_r2_ratio
    np.testing.assert_allclose(
        turning_.jpca_surrogate_p, (1 + (ratios >= observed).sum("surrogate")) / 51, rtol=1e-6
    )
    decaying = mf.hidden_jpca(embedded(decay(), noise=0.01), n_pcs=4, n_surrogates=50, seed=1)
    assert (decaying.jpca_surrogate_p > 0.2).all()
    again = mf.hidden_jpca(embedded(rotation(), noise=0.01), n_pcs=4, n_surrogates=50, seed=1)
    xr.testing.assert_identical(again, turning_)
    other = mf.hidden_jpca(embedded(rotation(), noise=0.01), n_pcs=4, n_surrogates=50, seed=2)
    assert not np.array_equal(other.jpca_surrogate_r2_ratio, turning_.jpca_surrogate_r2_ratio)
    # Without surrogates: no such variable, and p is NaN (not a number that looks like chance).
    plain = mf.hidden_jpca(embedded(rotation()), n_pcs=4)
    assert "jpca_surrogate_r2_ratio" not in plain and np.isnan(plain.jpca_surrogate_p).all()


def test_the_analysis_draws_its_surrogates_from_the_experiments_analysis_key():
    from motorflow._analysis._jpca import SURROGATE_STREAM

    states = embedded(rotation(), noise=0.01)
    analysis = mf.JPCAAnalysis(n_pcs=4, n_shuffles=0, n_surrogates=10)

    def run(seed: int) -> xr.Dataset:
        key = jax.random.key(seed)
        inputs = mf.AnalysisInputs(states, ensemble=None, task=None, center_out=None, key=key)
        return analysis.run(inputs)

    expected = mf.hidden_jpca(
        states,
        n_pcs=4,
        n_surrogates=10,
        key=jax.random.fold_in(jax.random.key(3), SURROGATE_STREAM),
    )
    xr.testing.assert_identical(run(3), expected)
    assert not np.array_equal(run(4).jpca_surrogate_r2_ratio, expected.jpca_surrogate_r2_ratio)


def test_the_figure_shows_the_datas_ratio_against_its_surrogates():
    result = mf.hidden_jpca(embedded(rotation(), noise=0.01), n_pcs=4, n_surrogates=30, seed=1)
    figure = mf.JPCAAnalysis.figure(result, replicate=1, title="t")
    histogram = next(ax for ax in figure.axes if ax.get_ylabel() == "surrogates")
    assert sum(bar.get_height() for bar in histogram.patches) == 30
    (line,) = histogram.lines
    assert line.get_xdata()[0] == pytest.approx(float(result.jpca_r2_ratio[1, 0]))
    p = float(result.jpca_surrogate_p[1, 0])
    assert histogram.get_title().endswith(f"p = {p:.2g}")


def stores() -> dict[str, xr.Dataset]:
    """Two experiments' jPCA stores: a rotation and a decay, two replicates each."""
    options = {"n_pcs": 4, "n_shuffles": 20, "n_surrogates": 20}
    turning_ = mf.hidden_jpca(embedded(rotation(), noise=0.01), **options)
    decaying = mf.hidden_jpca(
        embedded(np.concatenate([decay(), decay(rate=6.0)]), noise=0.01), **options
    )
    return {"rotation": turning_, "decay": decaying}


def test_the_comparison_table_gives_each_replicate_and_the_mean_with_its_interval():
    analyses = stores()
    table = mf.JPCAAnalysis.comparison_table(analyses, confidence=0.9, n_resamples=500, seed=0)
    assert mf.JPCAAnalysis.COMPARES
    assert list(table.experiment.unique()) == ["rotation", "decay"]
    statistics = {"r2_skew", "r2_best", "r2_ratio", "plane_variance", "frequency"}
    assert statistics <= set(table.statistic)
    controls = {"shuffled_r2_skew_p95", "shuffled_r2_ratio_p95", "surrogate_r2_ratio_p95"}
    assert controls | {"surrogate_p"} <= set(table.statistic)
    units = dict(zip(table.statistic, table.units))
    assert units["frequency"] == "Hz" and units["r2_ratio"] == "1"
    rows = table.set_index(["experiment", "statistic"])
    for experiment, analysis in analyses.items():
        values = analysis.jpca_r2_ratio.isel(condition=0).values
        row = rows.loc[(experiment, "r2_ratio")]
        np.testing.assert_allclose([row.replicate_0, row.replicate_1], values, rtol=1e-6)
        np.testing.assert_allclose(row["mean"], values.mean(), rtol=1e-6)
        assert row.low <= row["mean"] <= row.high
    assert rows.loc[("rotation", "r2_ratio"), "mean"] > 0.9
    assert rows.loc[("decay", "r2_ratio"), "mean"] < 0.1
    # Each replicate's surrogates' 95th percentile, and its p-value.
    surrogates = analyses["rotation"].jpca_surrogate_r2_ratio.isel(condition=0).values
    row = rows.loc[("rotation", "surrogate_r2_ratio_p95")]
    np.testing.assert_allclose(row.replicate_1, np.percentile(surrogates[1], 95), rtol=1e-6)
    p = analyses["rotation"].jpca_surrogate_p.isel(condition=0).values
    np.testing.assert_allclose(rows.loc[("rotation", "surrogate_p"), "replicate_0"], p[0])


def test_the_comparison_figure_draws_a_rosette_per_experiment_and_the_fits():
    analyses = stores()
    figure = mf.JPCAAnalysis.comparison_figure(analyses, replicate=1, title="test")
    rosettes, fits = figure.axes[:2], figure.axes[2]
    for ax, name in zip(rosettes, analyses):
        assert ax.get_title().startswith(name)
        assert len(ax.lines) == N_TRIALS + 1  # a trace per reach and the origin's cross
    ratio = float(analyses["rotation"].jpca_r2_ratio.isel(replicate=1, condition=0))
    assert rosettes[0].get_title().endswith(f"ratio {ratio:.2f}")
    assert [tick.get_text() for tick in fits.get_xticklabels()] == list(analyses)
    # Every replicate's three values, its shuffle control and its surrogates' p95, per
    # experiment; the last at the surrogates' 95th percentile of the ratio.
    assert sum(len(c.get_offsets()) for c in fits.collections) == 2 * 2 * 5
    p95 = np.percentile(analyses["decay"].jpca_surrogate_r2_ratio.isel(condition=0), 95, axis=-1)
    np.testing.assert_allclose(fits.collections[-1].get_offsets()[:, 1], p95)
    labels = [text.get_text() for text in figure.legends[0].get_texts()]
    assert "ratio, surrogates p95" in labels


def test_the_skew_fit_of_states_that_span_fewer_dimensions_is_still_least_squares():
    """With a state dimension that never varies (rank-deficient states) the fit is not
    unique; it is still skew-symmetric and no worse than the unconstrained fit's
    antisymmetric part."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(200, 4))
    x[:, 3] = 0.0
    dx = x @ rng.normal(size=(4, 4)).T
    fitted = fit_skew_symmetric(x, dx)
    np.testing.assert_allclose(fitted, -fitted.T, atol=1e-12)
    best = np.linalg.lstsq(x, dx, rcond=None)[0].T

    def residual(m):
        return ((dx - x @ m.T) ** 2).sum()

    assert residual(fitted) <= residual((best - best.T) / 2) + 1e-9
