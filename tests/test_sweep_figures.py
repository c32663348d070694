import itertools

import jax
import numpy as np
import pytest
import xarray as xr
from matplotlib.figure import Figure

from motorflow._analysis._statistics import summarise
from motorflow._figures import plot_sweep

NOISE = "model.feedback.noise_std"
HIDDEN = "model.network.hidden_size"
N_REPLICATES = 4


def replicate_values(noise: float, hidden: int) -> xr.Dataset:
    """Numbers that grow with the noise and shrink with the network, per replicate."""
    rng = np.random.default_rng(int(1000 * noise) + hidden)
    error = 0.01 + noise / hidden + rng.normal(0, 1e-3, (N_REPLICATES, 2))
    return xr.Dataset(
        {
            "final_validation_loss": ("replicate", np.exp(rng.normal(noise, 0.1, N_REPLICATES))),
            "endpoint_error": (("replicate", "condition"), error, {"units": "m"}),
        },
        coords={"condition": ["null", "curl"]},
    )


def sweep(noises=(0.0, 0.05, 0.1), hiddens=(16, 64)):
    points = {
        f"grid-noise{noise}-hidden{hidden}": {NOISE: noise, HIDDEN: hidden}
        for noise, hidden in itertools.product(noises, hiddens)
    }
    values = {name: replicate_values(p[NOISE], p[HIDDEN]) for name, p in points.items()}
    summary = summarise(
        values, {name: 0 for name in values}, key=jax.random.key(0), n_resamples=500
    )
    return values, points, summary


def drawn(ax, gid: str) -> list:
    return [artist for artist in ax.get_children() if artist.get_gid() == gid]


def test_a_panel_per_metric_and_a_line_per_combination_of_the_other_settings(tmp_path):
    values, points, summary = sweep()
    fig = plot_sweep(
        values, points, summary, metrics=["final_validation_loss", "endpoint_error"], title="grid"
    )
    assert isinstance(fig, Figure) and fig.get_suptitle() == "grid"
    loss_ax, error_ax = fig.axes
    assert loss_ax.get_ylabel() == "final validation loss, total (a.u.)"
    assert error_ax.get_title() == "evaluated in: null"  # the first condition
    for ax, metric, condition in [
        (loss_ax, "final_validation_loss", ""),
        (error_ax, "endpoint_error", "null"),
    ]:
        assert ax.get_xlabel() == NOISE and ax.get_xscale() == "linear"
        lines = drawn(ax, "mean")
        assert [line.get_label() for line in lines] == ["hidden_size = 16", "hidden_size = 64"]
        for line, hidden in zip(lines, (16, 64)):
            # On a numeric axis, at the swept values themselves.
            np.testing.assert_array_equal(line.get_xdata(), [0.0, 0.05, 0.1])
            names = [f"grid-noise{noise}-hidden{hidden}" for noise in (0.0, 0.05, 0.1)]
            cell = summary.sel(experiment=names, metric=metric, condition=condition)
            np.testing.assert_allclose(line.get_ydata(), cell["mean"])
        intervals = drawn(ax, "interval")
        assert len(intervals) == 2
        lows_highs = [segment[:, 1] for segment in intervals[1].get_segments()]
        names = [f"grid-noise{noise}-hidden64" for noise in (0.0, 0.05, 0.1)]
        cell = summary.sel(experiment=names, metric=metric, condition=condition)
        np.testing.assert_allclose(lows_highs, np.stack([cell.ci_low, cell.ci_high], -1))
        dots = drawn(ax, "replicates")
        assert len(dots) == 6 and all(len(d.get_offsets()) == N_REPLICATES for d in dots)
        # Each replicate near its own grid value, never as far as the next one.
        for dot, point in zip(dots, [0.0, 0.05, 0.1] * 2):
            assert np.all(np.abs(dot.get_offsets()[:, 0] - point) < 0.025)
    labels = [text.get_text() for text in fig.legends[0].get_texts()]
    assert labels[:2] == ["hidden_size = 16", "hidden_size = 64"]
    assert labels[2:] == ["a replicate", "mean of the replicates", "95% bootstrap interval"]
    fig.savefig(tmp_path / "sweep.png")
    assert (tmp_path / "sweep.png").stat().st_size > 1000


def test_replicate_dots_show_each_replicates_value():
    values, points, summary = sweep(hiddens=(16,))
    (ax,) = plot_sweep(values, points, summary, metrics=["endpoint_error"], condition="curl").axes
    (line,) = drawn(ax, "mean")
    dots = drawn(ax, "replicates")
    for dot, name in zip(dots, points):
        np.testing.assert_allclose(
            dot.get_offsets()[:, 1], values[name].endpoint_error.sel(condition="curl")
        )
        assert len(np.unique(dot.get_offsets()[:, 0])) == N_REPLICATES


def test_a_wide_positive_range_is_logarithmic_and_words_are_categories():
    values, points, summary = sweep(noises=(0.001, 0.01, 0.1), hiddens=(16, 32, 64))
    # Swap the settings: the hidden size (16-64) leads, three noise lines.
    swapped = {name: {HIDDEN: p[HIDDEN], NOISE: p[NOISE]} for name, p in points.items()}
    (ax,) = plot_sweep(values, swapped, summary, metrics=["endpoint_error"]).axes
    assert ax.get_xscale() == "linear" and len(drawn(ax, "mean")) == 3
    np.testing.assert_array_equal(drawn(ax, "mean")[0].get_xdata(), [16, 32, 64])
    (ax,) = plot_sweep(values, points, summary, metrics=["endpoint_error"]).axes
    assert ax.get_xscale() == "log"
    for dot in drawn(ax, "replicates"):
        assert np.all(dot.get_offsets()[:, 0] > 0)
    words = {
        name: {"model.plant.kind": ["point_mass", "arm"][i % 2], "seed": i // 2}
        for i, name in enumerate(list(points)[:4])
    }
    (ax,) = plot_sweep(values, words, summary, metrics=["endpoint_error"]).axes
    assert [t.get_text() for t in ax.get_xticklabels()] == ["point_mass", "arm"]
    lines = drawn(ax, "mean")
    assert [line.get_label() for line in lines] == ["seed = 0", "seed = 1"]
    np.testing.assert_array_equal(lines[0].get_xdata(), [0, 1])


def test_a_single_setting_draws_one_unlabelled_line_and_mismatched_points_are_refused():
    values, points, summary = sweep(hiddens=(16,))
    single = {name: {NOISE: p[NOISE]} for name, p in points.items()}
    fig = plot_sweep(values, single, summary, metrics=["final_validation_loss"])
    (line,) = drawn(fig.axes[0], "mean")
    labels = [text.get_text() for text in fig.legends[0].get_texts()]
    assert labels == ["a replicate", "mean of the replicates", "95% bootstrap interval"]
    broken = {**single, "extra": {HIDDEN: 3}}
    with pytest.raises(ValueError, match="share their settings"):
        plot_sweep(values, broken, summary, metrics=["final_validation_loss"])


def test_marks_are_drawn_at_their_values_and_the_scale_can_be_chosen():
    values, points, summary = sweep(noises=(0.01, 0.02, 0.04), hiddens=(16,))
    swept = [0.01, 0.02, 0.04]
    marks = {"delay": 0.015, "braking": 0.03}
    metrics = ["final_validation_loss", "endpoint_error"]
    fig = plot_sweep(values, points, summary, metrics=metrics, marks=marks, x_scale="log")
    for ax in fig.axes:
        lines = drawn(ax, "mark")
        assert [line.get_xdata()[0] for line in lines] == [0.015, 0.03]
        assert [text.get_text().strip() for text in drawn(ax, "mark label")] == list(marks)
        # A span of 4 alone is linear by default: log only when asked, ticked at the values.
        assert ax.get_xscale() == "log"
        np.testing.assert_allclose(ax.get_xticks(), swept)
        assert [t.get_text() for t in ax.get_xticklabels()] == ["0.01", "0.02", "0.04"]
    (ax,) = plot_sweep(values, points, summary, metrics=["endpoint_error"]).axes
    assert ax.get_xscale() == "linear" and not drawn(ax, "mark")
    # A wide span is linear when asked.
    values, points, summary = sweep(noises=(0.001, 0.01, 0.1), hiddens=(16,))
    (ax,) = plot_sweep(values, points, summary, metrics=["endpoint_error"], x_scale="linear").axes
    assert ax.get_xscale() == "linear"
    words = {name: {"model.plant.kind": f"plant{i}"} for i, name in enumerate(points)}
    with pytest.raises(ValueError, match="marks need numeric"):
        plot_sweep(values, words, summary, metrics=["endpoint_error"], marks={"x": 1.0})
    with pytest.raises(ValueError, match="needs numeric"):
        plot_sweep(values, words, summary, metrics=["endpoint_error"], x_scale="log")
    through_zero = {name: {NOISE: i} for i, name in enumerate(points)}
    with pytest.raises(ValueError, match="positive"):
        plot_sweep(values, through_zero, summary, metrics=["endpoint_error"], x_scale="log")


def test_a_metric_spanning_decades_gets_a_log_axis_and_one_through_zero_does_not():
    values, points, _ = sweep(noises=(0.0, 0.05, 0.1), hiddens=(16,))
    # The error falling a thousandfold along the sweep, as a reach that learns to land.
    for scale, name in zip([1.0, 0.03, 0.001], points):
        values[name]["endpoint_error"] = values[name]["endpoint_error"] * scale
    summary = summarise(values, {name: 0 for name in values}, key=jax.random.key(0))
    (ax,) = plot_sweep(values, points, summary, metrics=["endpoint_error"]).axes
    assert ax.get_yscale() == "log"
    values[name]["endpoint_error"] = values[name]["endpoint_error"] * 0
    summary = summarise(values, {name: 0 for name in values}, key=jax.random.key(0))
    (ax,) = plot_sweep(values, points, summary, metrics=["endpoint_error"]).axes
    assert ax.get_yscale() == "linear"


def seeded_sweep(n_seeds: int, noises=(0.0, 0.1)):
    """A noise x seed grid (the seed last, as the large sweeps put it)."""
    points = {
        f"grid-noise{noise}-seed{seed}": {NOISE: noise, "seed": seed}
        for noise, seed in itertools.product(noises, range(n_seeds))
    }
    values = {
        name: replicate_values(p[NOISE], 16 + p["seed"]) for name, p in points.items()
    }
    summary = summarise(
        values, {name: 0 for name in values}, key=jax.random.key(0), n_resamples=200
    )
    return values, points, summary


def test_past_ten_lines_the_seeds_pool_into_a_mean_over_seeds_with_its_interval():
    """A sweep of 12 seeds drew 12 lines and a legend of 12 entries (at 40 seeds and
    1,000 experiments, unreadable): past ten lines the seeds are pooled."""
    values, points, summary = seeded_sweep(12)
    (ax,) = plot_sweep(values, points, summary, metrics=["endpoint_error"]).axes
    (line,) = drawn(ax, "mean")
    cells = summary.sel(metric="endpoint_error", condition="null")["mean"]
    for index, noise in enumerate((0.0, 0.1)):
        seed_means = cells.sel(experiment=[f"grid-noise{noise}-seed{s}" for s in range(12)])
        assert line.get_ydata()[index] == pytest.approx(float(seed_means.mean()))
        (interval,) = drawn(ax, "interval")
        low, high = interval.get_segments()[index][:, 1]
        half = 1.96 * float(seed_means.std(ddof=1)) / np.sqrt(12)
        assert (low, high) == pytest.approx((float(seed_means.mean()) - half,
                                             float(seed_means.mean()) + half))  # fmt: skip
    dots = drawn(ax, "replicates")
    assert [len(d.get_offsets()) for d in dots] == [12, 12]  # a dot per seed
    labels = [text.get_text() for text in ax.figure.legends[0].get_texts()]
    assert "mean over the seeds" in labels and not any(lab.startswith("seed") for lab in labels)
    # Ten seeds or fewer: a line each, as before.
    values, points, summary = seeded_sweep(3)
    (ax,) = plot_sweep(values, points, summary, metrics=["endpoint_error"]).axes
    assert len(drawn(ax, "mean")) == 3


def test_a_short_log_axis_labels_no_two_values_on_top_of_each_other():
    """A short panel within a decade got eight minor labels overlapping (the 1,000
    experiments' sweep figure): as many as fit its height are labelled."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from motorflow._figures._style import log_scale_if_possible

    fig = Figure(figsize=(4, 1.2), dpi=100)
    ax = fig.subplots()
    values = np.linspace(0.03, 0.12, 20)
    ax.plot(values)
    log_scale_if_possible(ax, values)
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()
    boxes = [
        tick.label1.get_window_extent(renderer)
        for tick in [*ax.yaxis.get_major_ticks(), *ax.yaxis.get_minor_ticks()]
        if tick.label1.get_visible() and tick.label1.get_text()
        and 0.03 <= tick.get_loc() <= 0.12
    ]  # fmt: skip
    assert boxes
    assert not any(a.overlaps(b) for a, b in itertools.combinations(boxes, 2))
