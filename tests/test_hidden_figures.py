"""The hidden-state figures build from tiny datasets, show what they say, and survive NaN."""

import numpy as np
import pytest
import xarray as xr
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PathCollection
from matplotlib.figure import Figure
from matplotlib.projections.polar import PolarAxes

from motorflow._analysis._fixed_points import end_state_plane
from motorflow._analysis._pca import hidden_pca
from motorflow._figures._fixed_points import plot_fixed_points
from motorflow._figures._hidden_states import plot_pca_trajectories, plot_tuning

N_REP, N_TRIALS, N_STEPS, N_UNITS = 2, 4, 15, 5
ANGLE = np.linspace(0, 2 * np.pi, N_TRIALS, endpoint=False)
CONDITIONS = np.array(["unperturbed", "curl"], dtype=object)


def states(*, nan_replicate: int | None = None) -> xr.Dataset:
    rng = np.random.default_rng(0)
    shape = (N_REP, len(CONDITIONS), N_TRIALS, N_STEPS, N_UNITS)
    hidden = np.cumsum(rng.normal(size=shape), axis=3).astype(np.float32)
    if nan_replicate is not None:
        hidden[nan_replicate] = np.nan
    return xr.Dataset(
        {"hidden": (("replicate", "condition", "trial", "time", "unit"), hidden)},
        coords={
            "replicate": np.arange(N_REP),
            "condition": CONDITIONS,
            "trial": np.arange(N_TRIALS),
            "time": np.arange(N_STEPS) * 0.01,
            "unit": np.arange(N_UNITS),
            "goal_angle": ("trial", ANGLE),
        },
        attrs={"conditions": '{"unperturbed": [], "curl": []}'},
    )


def fixed_points(stable: np.ndarray, *, nan_replicate: int | None = None) -> xr.Dataset:
    """Points `(replicate, trial, start)`, every other start a duplicate (not distinct)."""
    n_starts = stable.shape[-1]
    points = np.random.default_rng(1).normal(size=(*stable.shape, N_UNITS))
    converged = np.ones(stable.shape, bool)
    if nan_replicate is not None:
        points[nan_replicate] = np.nan
        converged[nan_replicate] = False
    distinct = np.broadcast_to(np.arange(n_starts) % 2 == 0, stable.shape) & converged
    per_start = ("replicate", "trial", "start")
    return xr.Dataset(
        {
            "fixed_point": ((*per_start, "unit"), points),
            "converged": (per_start, converged),
            "distinct": (per_start, distinct),
            "stable": (per_start, stable & converged),
        },
        coords={"goal_angle": ("trial", ANGLE)},
    )


def render(fig: Figure):
    """Draw `fig` for real (a bare `Figure`'s canvas draws nothing); returns the renderer."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def markers(fig: Figure, label: str) -> int:
    (collection,) = [
        c
        for c in fig.axes[0].collections
        if isinstance(c, PathCollection) and c.get_label() == label
    ]
    return len(collection.get_offsets())


def test_pca_trajectories_have_a_panel_per_condition_and_a_path_per_trial():
    pca = hidden_pca(states(), n_components=3)

    fig = plot_pca_trajectories(pca, replicate=1, title="pca")

    panels = [ax for ax in fig.axes if ax.get_label() != "<colorbar>"][: len(CONDITIONS)]
    for ax, condition in zip(panels, CONDITIONS, strict=True):
        assert len(ax.lines) == N_TRIALS
        share = float(pca.explained_variance_ratio.sel(replicate=1, pc=1))
        assert ax.get_xlabel() == f"PC1 (a.u.; {100 * share:.1f}% of variance)"
        assert ax.get_ylabel().startswith("PC2 (")
        assert condition in ax.get_title()
    assert "replicate 1" in fig.get_suptitle()


def test_pca_figure_shows_every_replicate_in_its_own_space_and_its_variance_shares():
    pca = hidden_pca(states(), n_components=3)
    fig = plot_pca_trajectories(pca, replicate=1)
    by_title = {ax.get_title(): ax for ax in fig.axes}
    for replicate in range(N_REP):
        ax = by_title[f"replicate {replicate}"]
        # The first condition's paths, in that replicate's own plane.
        lines = ax.lines
        assert len(lines) == N_TRIALS
        own = pca.projection.sel(replicate=replicate, pc=1).isel(condition=0, trial=0)
        np.testing.assert_allclose(lines[0].get_xdata(), own, rtol=1e-5)
    (shares,) = [ax for ax in fig.axes if ax.get_ylabel() == "variance explained (%)"]
    dots = [c for c in shares.collections if c.get_gid() == "replicate share"]
    assert len(dots) == pca.sizes["pc"]
    np.testing.assert_allclose(
        dots[0].get_offsets()[:, 1],
        100 * pca.explained_variance_ratio.sel(pc=1),
        rtol=1e-5,
    )


def test_fixed_points_are_filled_when_stable_and_open_when_not_and_only_distinct_ones():
    pca = hidden_pca(states(), n_components=2)
    stable = np.zeros((N_REP, N_TRIALS, 6), bool)
    stable[0, :, :2] = True  # distinct starts 0 (stable), 2 and 4 (unstable) per trial

    fig = plot_fixed_points(fixed_points(stable), pca, replicate=0, title="fp")

    assert markers(fig, "stable") == N_TRIALS
    assert markers(fig, "unstable") == 2 * N_TRIALS
    assert f"{3 * N_TRIALS} fixed points found, {N_TRIALS} stable" in fig.get_suptitle()
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == [
        "hidden trajectory",
        "end state",
        "stable fixed point",
        "unstable fixed point",
    ]
    # Outside the axes: the legend lies wholly below the panel.
    renderer = render(fig)
    assert legend.get_window_extent(renderer).y1 <= fig.axes[0].get_tightbbox(renderer).y0 + 1


def test_fixed_points_project_with_the_pca_mean_and_loadings():
    pca = hidden_pca(states(), n_components=2)
    stable = np.ones((N_REP, N_TRIALS, 2), bool)
    found = fixed_points(stable)

    fig = plot_fixed_points(found, pca)

    (collection,) = [c for c in fig.axes[0].collections if c.get_label() == "stable"]
    one = pca.isel(replicate=0, condition=0)
    points = found.fixed_point.isel(replicate=0, start=0).values
    expected = (points - one["mean"].values) @ one.loading.values.T
    np.testing.assert_allclose(collection.get_offsets(), expected, rtol=1e-5)


def test_points_apart_only_off_the_trajectories_main_plane_are_drawn_apart_on_the_end_plane():
    # Trajectories: a large excursion along units 0-1, back to where they started,
    # then a small goal-dependent offset along units 2-3 (the end states); the stable
    # point of each goal sits on its end state. On the trajectories' PC1-PC2 the
    # points would collapse; on the end states' plane they must keep their distances.
    time = np.linspace(0, np.pi, N_STEPS)
    hidden = np.zeros((1, N_TRIALS, N_STEPS, N_UNITS))
    hidden[0, :, :, 0] = 3 * np.sin(time) * np.cos(ANGLE)[:, None]
    hidden[0, :, :, 1] = 3 * np.sin(time) * np.sin(ANGLE)[:, None]
    offset = 0.2 * np.stack([np.cos(ANGLE), np.sin(ANGLE)], axis=-1)
    hidden[0, :, :, 2:4] = (time / np.pi)[None, :, None] * offset[:, None]
    states = xr.Dataset(
        {"hidden": (("replicate", "trial", "time", "unit"), hidden)},
        coords={"goal_angle": ("trial", ANGLE)},
    )
    stable = np.ones((1, N_TRIALS, 1), bool)
    found = fixed_points(stable).isel(replicate=[0])
    found["fixed_point"] = (("replicate", "trial", "start", "unit"), hidden[:, :, -1:, :])
    found = xr.merge([found, end_state_plane(states)])

    fig = plot_fixed_points(found, hidden_pca(states, n_components=2))

    (collection,) = [c for c in fig.axes[0].collections if c.get_label() == "stable"]
    drawn = collection.get_offsets()
    true = hidden[0, :, -1]
    pairs = np.triu_indices(N_TRIALS, 1)
    drawn_apart = np.linalg.norm(drawn[:, None] - drawn[None], axis=-1)[pairs]
    true_apart = np.linalg.norm(true[:, None] - true[None], axis=-1)[pairs]
    np.testing.assert_allclose(drawn_apart, true_apart, rtol=1e-4)
    # The end states lie on a circle: two components share their variance.
    assert fig.axes[0].get_xlabel().startswith("end-state PC1 (a.u.; 50.0%")
    assert float(found.end_plane_ratio.sum()) == pytest.approx(1.0)
    (ends,) = [c for c in fig.axes[0].collections if c.get_label() == "end state"]
    np.testing.assert_allclose(ends.get_offsets(), drawn, atol=1e-6)


def test_the_eigenvalue_panel_draws_the_unit_circle_and_every_mode_of_the_kept_points():
    stable = np.ones((N_REP, N_TRIALS, 2), bool)
    found = fixed_points(stable)
    n_modes = 3
    rng = np.random.default_rng(2)
    for part in ("eigenvalue_real", "eigenvalue_imag"):
        found[part] = (
            ("replicate", "trial", "start", "mode"),
            rng.normal(size=(N_REP, N_TRIALS, 2, n_modes)),
        )

    fig = plot_fixed_points(found, hidden_pca(states(), n_components=2))

    eig_ax = fig.axes[1]
    (circle,) = eig_ax.lines
    np.testing.assert_allclose(np.hypot(*circle.get_data()), 1.0, atol=1e-9)
    (dots,) = eig_ax.collections
    kept = found.isel(replicate=0, start=0)  # start 1 of each trial is a duplicate
    np.testing.assert_allclose(
        np.sort(dots.get_offsets()[:, 0]), np.sort(kept.eigenvalue_real.values.ravel())
    )


@pytest.mark.parametrize("replicate", [0, 1])
def test_a_nan_replicate_draws_without_raising(replicate):
    pca = hidden_pca(states(nan_replicate=1), n_components=2)
    found = fixed_points(np.ones((N_REP, N_TRIALS, 2), bool), nan_replicate=1)

    paths = plot_pca_trajectories(pca, replicate=replicate)
    points = plot_fixed_points(found, pca, replicate=replicate)
    for fig in (paths, points):
        render(fig)
    drawn = [line.get_xydata() for line in paths.axes[0].lines]
    if replicate == 1:  # the NaN one: nothing to draw, and said so
        assert markers(points, "stable") == 0
        assert "0 fixed points found, 0 stable" in points.get_suptitle()
        assert all(np.isnan(xy).all() for xy in drawn)
    else:  # the finite one, whole: the other's NaN reaches none of its paths or points
        assert len(drawn) == N_TRIALS and all(np.isfinite(xy).all() for xy in drawn)
        own = pca.projection.sel(replicate=0, pc=1).isel(condition=0, trial=0)
        np.testing.assert_allclose(drawn[0][:, 0], own, rtol=1e-5)
        # one distinct start a trial, each stable
        assert markers(points, "stable") == N_TRIALS
        assert f"{N_TRIALS} fixed points found, {N_TRIALS} stable" in points.get_suptitle()


def tuning(*, nan_replicate: int | None = None) -> xr.Dataset:
    rng = np.random.default_rng(2)
    shape = (N_REP, len(CONDITIONS), N_UNITS)
    data = {
        "preferred_direction": rng.uniform(0, 2 * np.pi, shape),
        "tuning_depth": rng.uniform(0, 1, shape),
        "baseline": rng.normal(size=shape),
        "r_squared": rng.uniform(0, 1, shape),
    }
    if nan_replicate is not None:
        for values in data.values():
            values[nan_replicate] = np.nan
    dims = ("replicate", "condition", "unit")
    return xr.Dataset(
        {name: (dims, values) for name, values in data.items()},
        coords={"condition": CONDITIONS},
        attrs={"conditions": '{"unperturbed": [], "curl": []}'},
    )


@pytest.mark.parametrize("nan_replicate", [None, 0])
def test_tuning_has_a_polar_histogram_per_condition_over_every_unit(nan_replicate):
    fig = plot_tuning(tuning(nan_replicate=nan_replicate), title="tuning")

    polar = [ax for ax in fig.axes if isinstance(ax, PolarAxes)]
    flat = [ax for ax in fig.axes if not isinstance(ax, PolarAxes)]
    assert len(polar) == len(CONDITIONS) and len(flat) == 1
    n_units = N_UNITS * (N_REP if nan_replicate is None else N_REP - 1)
    for ax in polar:
        heights = [bar.get_height() for bar in ax.patches]
        np.testing.assert_allclose(sum(heights), 1)  # fractions of the units
    assert flat[0].get_xlabel() == "tuning depth of the hidden activity (a.u.)"
    assert flat[0].get_ylabel() == "fraction of units (1)"
    (legend,) = fig.legends
    assert all(f"({n_units} units" in text.get_text() for text in legend.get_texts())
    render(fig)


def test_tuning_with_nothing_finite_says_so():
    all_nan = tuning(nan_replicate=0).isel(replicate=[0])

    fig = plot_tuning(all_nan)

    assert all("no data" in [t.get_text() for t in ax.texts] for ax in fig.axes)


def test_a_single_conditions_pca_panel_is_square_however_wide_the_ensemble_rows():
    many = xr.concat([states()] * 3, "replicate").assign_coords(replicate=np.arange(3 * N_REP))
    pca = hidden_pca(many.isel(condition=[0]), n_components=3)
    fig = plot_pca_trajectories(pca, replicate=0)
    render(fig)
    top = fig.axes[0].get_window_extent()
    assert fig.get_figwidth() / fig.get_figheight() > 1.3  # six replicates: a wide figure
    assert top.width / top.height == pytest.approx(1, abs=0.02)


def test_pca_panels_as_wide_as_the_ensemble_rows_draw_square():
    # Three conditions of two replicates: the panels fill the figure's width.
    three = xr.concat([states(), states().isel(condition=[0])], "condition")
    three = three.assign_coords(condition=np.array(["a", "b", "c"], dtype=object))
    three.attrs["conditions"] = '{"a": [], "b": [], "c": []}'
    fig = plot_pca_trajectories(hidden_pca(three, n_components=3), replicate=0)
    render(fig)
    for ax in fig.axes[:3]:
        box = ax.get_window_extent()
        assert box.width / box.height == pytest.approx(1, abs=0.02)


def test_the_rose_plots_radial_labels_sit_off_the_bars():
    # Most units prefer one half of the circle: bars there, labels in the other half.
    crowded = tuning()
    rng = np.random.default_rng(3)
    crowded["preferred_direction"] = (
        crowded.preferred_direction.dims,
        rng.uniform(0, np.pi, crowded.preferred_direction.shape),
    )
    fig = plot_tuning(crowded)
    renderer = render(fig)
    for ax in [ax for ax in fig.axes if isinstance(ax, PolarAxes)]:
        labels = [t for t in ax.yaxis.get_ticklabels() if t.get_visible() and t.get_text()]
        assert labels
        for label in labels:
            box = label.get_window_extent(renderer)
            corners = [(x, y) for x in (box.x0, box.x1) for y in (box.y0, box.y1)]
            for bar in ax.patches:
                assert not any(bar.contains_point(corner) for corner in corners), (
                    label.get_text()
                )
