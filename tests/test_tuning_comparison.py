"""The preferred-direction comparison across experiments: its table recovers the
bimodality and axis of known distributions, and its figure draws every experiment."""

import jax
import numpy as np
import pytest
import xarray as xr

from motorflow import ANALYSES
from motorflow._analysis._bimodality import bimodality_p
from motorflow._analysis._tuning import directional_tuning, preferred_direction_axis
from motorflow._analysis._tuning_comparison import axial_mean, preferred_direction_table
from motorflow._plants._arm import TwoLinkArm

N_REP, N_UNITS = 4, 200
AXIS = np.radians(117.0)  # Scott et al. (2001)'s axis


def analysis_store(preferred: np.ndarray, r_squared: np.ndarray) -> xr.Dataset:
    """An analysis store's tuning variables from preferred directions `(replicate, unit)`."""
    tuning = xr.Dataset(
        {
            "preferred_direction": (("replicate", "condition", "unit"), preferred[:, None]),
            "r_squared": (("replicate", "condition", "unit"), r_squared[:, None]),
        },
        coords={"condition": ["unperturbed"]},
    )
    axis = preferred_direction_axis(tuning, min_r_squared=0.5)
    axis["pd_bimodality_p"] = bimodality_p(
        axis.pd_bimodality, axis.pd_n_tuned, key=jax.random.key(0), n_draws=2000
    )
    return xr.merge([tuning, axis])


@pytest.fixture
def analyses() -> dict[str, xr.Dataset]:
    return two_experiments()


def two_experiments() -> dict[str, xr.Dataset]:
    """Analysis stores of an experiment of uniform preferred directions and of one
    bimodal on AXIS, whose other half of units is untuned."""
    rng = np.random.default_rng(0)
    uniform = rng.uniform(0, 2 * np.pi, (N_REP, N_UNITS))
    # Two opposite modes on AXIS: von Mises around AXIS and AXIS + π.
    bimodal = (
        AXIS + np.pi * rng.integers(0, 2, (N_REP, N_UNITS)) + rng.vonmises(0, 8, uniform.shape)
    )
    # Half the units untuned: their directions, all on the perpendicular, must not count.
    r_squared = np.where(np.arange(N_UNITS) % 2 == 0, 0.9, 0.1) * np.ones((N_REP, 1))
    bimodal = np.where(r_squared > 0.5, bimodal, AXIS + np.pi / 2)
    return {
        "uniform": analysis_store(np.mod(uniform, 2 * np.pi), np.full(uniform.shape, 0.9)),
        "bimodal": analysis_store(np.mod(bimodal, 2 * np.pi), r_squared),
    }


def table_of(analyses):
    table = preferred_direction_table(analyses, confidence=0.9, n_resamples=500, seed=0)
    return table.set_index(["experiment", "statistic"])


def test_the_table_finds_the_bimodal_experiment_and_its_axis(analyses):
    table = table_of(analyses)
    assert list(dict.fromkeys(table.index.get_level_values(0))) == ["uniform", "bimodal"]
    # von Mises with concentration 8 around each mode: the doubled angles' expected r
    # is I2(8) / I0(8), about 0.77.
    assert table.loc[("bimodal", "bimodality_r"), "mean"] > 0.6
    assert table.loc[("uniform", "bimodality_r"), "mean"] < 0.15
    assert table.loc[("bimodal", "rayleigh_p"), "mean"] < 1e-6
    assert table.loc[("uniform", "rayleigh_p"), "mean"] > 1e-3
    # Against 2,000 sets of uniform directions: none as bimodal as the modes, many
    # more than the uniform units, pooled or not.
    for where in ("mean", "pooled"):
        assert table.loc[("bimodal", "bimodality_p"), where] == pytest.approx(1 / 2001)
        assert table.loc[("uniform", "bimodality_p"), where] > 0.01
    assert table.loc[("bimodal", "n_tuned"), "mean"] == N_UNITS / 2
    assert table.loc[("bimodal", "n_tuned"), "pooled"] == N_REP * N_UNITS / 2
    assert table.loc[("bimodal", "axis_deg"), "mean"] == pytest.approx(117, abs=3)
    assert table.loc[("bimodal", "axis_deg"), "pooled"] == pytest.approx(117, abs=3)
    assert table.loc[("bimodal", "axis_sd_deg"), "mean"] < 5
    low, mean, high = table.loc[("bimodal", "bimodality_r"), ["low", "mean", "high"]]
    assert low <= mean <= high
    replicates = table.loc[("bimodal", "bimodality_r"), [f"replicate_{k}" for k in range(N_REP)]]
    assert np.mean(replicates.to_numpy(float)) == pytest.approx(mean)
    assert set(table.units) == {"1", "units", "deg"}


def test_the_axial_mean_wraps_at_180_degrees():
    mean, spread = axial_mean(np.radians([178.0, 2.0, 180.0 + 178.0]))
    # Axes at 178° and 2° lie 4° apart, not 176°: their mean is near 180°, not 90°.
    assert np.degrees(mean) == pytest.approx(179.33, abs=0.1)
    assert np.degrees(spread) < 3
    assert np.isnan(axial_mean(np.array([np.nan]))[0])


def rose(ax) -> np.ndarray:
    """A rose's bars: the fraction of units per bin, by bin."""
    return np.array([bar.get_height() for bar in ax.patches])


def test_the_comparison_figure_has_a_pooled_rose_and_a_rose_per_replicate(analyses):
    figure = ANALYSES["tuning"].comparison_figure(analyses, replicate=0, title="t")
    polar = [ax for ax in figure.axes if ax.name == "polar"]
    assert len(polar) == len(analyses) * (1 + N_REP)
    assert ANALYSES["tuning"].COMPARES and not ANALYSES["pca"].COMPARES
    # Each experiment's column: its pooled rose, then one per replicate, in order.
    pooled, *replicates = polar_of(figure, "bimodal")
    edges = np.linspace(0, 2 * np.pi, rose(pooled).size + 1)
    store = analyses["bimodal"].isel(condition=0)
    tuned = store.preferred_direction.where(store.r_squared >= 0.5).values
    histogram = np.histogram(tuned[np.isfinite(tuned)], edges)[0]
    np.testing.assert_allclose(rose(pooled), histogram / histogram.sum())
    for replicate, ax in enumerate(replicates):
        own = tuned[replicate][np.isfinite(tuned[replicate])]
        np.testing.assert_allclose(rose(ax), np.histogram(own, edges)[0] / own.size)
    # The two modes are the tallest bins; the untuned units, all on the perpendicular,
    # are not drawn; the axis is drawn solid through them (uniformity rejected).
    first, second = edges[np.argsort(rose(pooled))[-2:]] + np.pi / rose(pooled).size
    off_axis = np.mod(np.array([first, second]) - AXIS, np.pi)
    assert np.degrees(np.minimum(off_axis, np.pi - off_axis)).max() < 15
    assert np.degrees(abs(np.mod(first - second, 2 * np.pi) - np.pi)) < 30  # one each side
    perpendicular = int(np.mod(AXIS + np.pi / 2, 2 * np.pi) // (2 * np.pi / rose(pooled).size))
    assert rose(pooled)[perpendicular] < 0.02
    (axis_line, _) = pooled.lines
    assert axis_line.get_xdata()[0] == pytest.approx(AXIS, abs=np.radians(3))
    assert axis_line.get_linestyle() == "-"
    uniform_line = polar_of(figure, "uniform")[0].lines[0]
    assert uniform_line.get_linestyle() == "--"  # uniformity not rejected: dashed


def polar_of(figure, experiment: str) -> list:
    """The roses of `experiment`'s column: the pooled one, then each replicate's."""
    polar = [ax for ax in figure.axes if ax.name == "polar"]
    pooled = [ax for ax in polar if ax.get_title().startswith(experiment)]
    (top,) = pooled
    start = polar.index(top)
    return polar[start : start + 1 + N_REP]


def test_the_arms_mobility_is_largest_across_the_forearm():
    """At the start posture of config/preferred-directions.yaml the hand moves most
    easily perpendicular to the forearm (Hogan 1985): the forearm's inertia resists
    least across it."""
    arm = TwoLinkArm()
    shoulder, elbow = np.asarray(arm.inverse_kinematics(np.array([0.0, 0.42], np.float32)))
    forearm = np.mod(shoulder + elbow, np.pi)
    axis = arm.mobility_axis([0.0, 0.42])
    # Within 10° of the perpendicular to the forearm (the upper arm pulls it a little).
    assert abs(np.mod(axis - forearm, np.pi) - np.pi / 2) < np.radians(10)
    mobility = np.asarray(arm.hand_mobility(np.array([shoulder, elbow], np.float32)))
    np.testing.assert_allclose(mobility, mobility.T, rtol=1e-5)
    assert np.all(np.linalg.eigvalsh(mobility) > 0)


def test_the_acceleration_window_leaves_out_the_braking():
    """A unit that is the cosine of the reach direction while the hand speeds up and
    its opposite while it slows down: over the acceleration its preferred direction
    is the cosine's, over the whole movement the two halves cancel."""
    angle = np.linspace(0, 2 * np.pi, 8, endpoint=False)
    speed = np.sin(np.linspace(0, np.pi, 21)[1:-1])  # peak at step 9
    sign = np.where(np.arange(speed.size) <= 9, 1.0, -1.0)
    hidden = np.cos(angle - 1.0)[:, None] * sign[None, :]
    direction = np.stack([np.cos(angle), np.sin(angle)], -1)
    states = xr.Dataset(
        {
            "hidden": (("replicate", "trial", "time", "unit"), hidden[None, :, :, None]),
            "vel": (
                ("replicate", "trial", "time", "component"),
                (speed[None, :, None] * direction[:, None, :])[None],
            ),
        },
        coords={"goal_angle": ("trial", angle)},
    )
    accel = directional_tuning(states, speed_threshold=0.2, window="acceleration")
    assert float(accel.preferred_direction.squeeze()) == pytest.approx(1.0, abs=1e-6)
    assert float(accel.r_squared.squeeze()) == pytest.approx(1.0)
    whole = directional_tuning(states, speed_threshold=0.2)
    assert float(whole.tuning_depth.squeeze()) < 0.2 * float(accel.tuning_depth.squeeze())
