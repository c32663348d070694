import itertools
import json
import warnings

import jax
import numpy as np
import pytest
import xarray as xr
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure

import motorflow as mf
from motorflow._analysis._replicate_values import replicate_values
from motorflow._analysis._statistics import summarise
from motorflow._figures import (
    condition_label,
    plot_comparison,
    plot_loss_history,
    plot_speed_profiles,
    plot_trajectories,
)
from motorflow._metrics import reach_metrics

N_BATCHES, LOG_EVERY = 30, 10


@pytest.fixture(scope="module")
def states() -> xr.Dataset:
    """Shaped like `evaluate`'s output: 3 replicates of smooth center-out reaches, 7 goals."""
    n_replicates, n_trials, n_steps, dt = 3, 7, 20, 0.05
    angle = np.linspace(0, 2 * np.pi, n_trials, endpoint=False)
    goal = 0.5 * np.stack([np.cos(angle), np.sin(angle)], -1)
    s = np.linspace(0, 1, n_steps)
    progress = 10 * s**3 - 15 * s**4 + 6 * s**5  # minimum-jerk profile
    gain = np.array([0.8, 1.0, 1.1])[:, None, None, None]
    pos = gain * progress[None, None, :, None] * goal[None, :, None, :]
    vel = np.gradient(pos, dt, axis=2)
    vector = ("replicate", "trial", "time", "component")
    return xr.Dataset(
        {"pos": (vector, pos), "vel": (vector, vel), "goal": (("trial", "component"), goal)},
        coords={
            "replicate": np.arange(n_replicates),
            "trial": np.arange(n_trials),
            "time": ("time", (np.arange(n_steps) * dt).astype(np.float32), {"units": "s"}),
            "component": np.array(["x", "y"], dtype=object),
            "goal_angle": ("trial", angle, {"units": "rad"}),
            "goal_distance": ("trial", np.full(n_trials, 0.5)),
        },
    )


def history(terms=("position", "effort"), *, n_replicates=2, batches_run=20) -> xr.Dataset:
    """A history whose first `batches_run` batches ran, with positive losses."""
    arrays = mf.empty_history(
        list(terms),
        n_batches=N_BATCHES,
        n_replicates=n_replicates,
        validation_steps=np.r_[0:N_BATCHES:LOG_EVERY, N_BATCHES],
    )
    rng = np.random.default_rng(0)
    for name in arrays["loss"]:
        arrays["loss"][name][:batches_run] = rng.uniform(0.1, 1.0, (batches_run, n_replicates))
        n_measured = batches_run // LOG_EVERY + 1
        arrays["validation"][name][:n_measured] = rng.uniform(0.1, 1.0, (n_measured, n_replicates))
    arrays["learning_rate"][:batches_run] = 1e-3
    return mf.history_dataset(arrays)


def panels(fig: Figure) -> list:
    return [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]


def weighted_history(weights: dict[str, float], **kwargs) -> xr.Dataset:
    """A history whose ``experiment`` attribute holds the loss weights, as
    `train_experiment` writes it."""
    data = history(terms=tuple(weights), **kwargs)
    loss = {term: {"weight": weight} for term, weight in weights.items()}
    data.attrs["experiment"] = json.dumps({"name": "demo", "training": {"loss": loss}})
    return data


def term_of(title: str) -> str:
    """The loss term a loss panel's title names."""
    return title.split(",")[0].split(" (")[0]


def assert_saves(fig: Figure, path) -> None:
    fig.savefig(path)
    assert path.stat().st_size > 1000


def test_loss_history_has_a_panel_per_term_total_first(tmp_path):
    fig = plot_loss_history(history(), title="demo")
    assert isinstance(fig, Figure)
    axes = panels(fig)
    assert [ax.get_title() for ax in axes] == [
        "total (weighted sum of the terms)",
        "position, unweighted",
        "effort, unweighted",
    ]
    for ax in axes:
        assert ax.get_yscale() == "log"
        assert ax.get_xlabel() == "batch"
        # Without weights in the history, the total panel has no weighted parts to draw.
        train, validation = ax.lines
        # Batches that never ran are dropped rather than drawn as NaN.
        np.testing.assert_array_equal(train.get_xdata(), np.arange(20))
        np.testing.assert_array_equal(validation.get_xdata(), [0, 10, 20])
        assert sum(isinstance(c, PolyCollection) for c in ax.collections) == 1
    assert len(fig.legends) == 1 and all(ax.get_legend() is None for ax in axes)
    assert fig.get_suptitle() == "demo"
    assert_saves(fig, tmp_path / "loss.png")


def test_loss_history_mean_and_spread_are_across_replicates():
    data = history(terms=("position",))
    ax = panels(plot_loss_history(data))[1]
    loss = data.loss.sel(term="position").isel(batch=slice(0, 20))
    np.testing.assert_allclose(ax.lines[0].get_ydata(), loss.mean("replicate"), rtol=1e-6)
    band = ax.collections[0].get_paths()[0].vertices[:, 1]
    np.testing.assert_allclose(band.max(), loss.max(), rtol=1e-6)
    np.testing.assert_allclose(band.min(), loss.min(), rtol=1e-6)


def test_loss_history_survives_zero_and_unrecorded_terms_with_one_replicate(tmp_path):
    data = history(terms=("position", "hidden", "unused"), n_replicates=1)
    data["loss"].loc[{"term": "hidden"}] = data.loss.sel(term="hidden").where(
        data.loss.sel(term="hidden").isnull(), 0.0
    )
    data["validation_loss"].loc[{"term": "hidden"}] = 0.0
    data["loss"].loc[{"term": "unused"}] = np.nan
    data["validation_loss"].loc[{"term": "unused"}] = np.nan
    fig = plot_loss_history(data)
    axes = {term_of(ax.get_title()): ax for ax in panels(fig)}
    # A term that is 0 throughout gets no panel; one never recorded says so.
    assert set(axes) == {"total", "position", "unused"}
    assert not axes["unused"].lines and axes["unused"].texts[0].get_text() == "no data"
    assert_saves(fig, tmp_path / "loss.png")


def test_loss_history_titles_carry_each_terms_weight_from_the_settings():
    data = weighted_history({"position": 1.0, "effort": 1e-05, "hold": 100.0})
    titles = [ax.get_title() for ax in panels(plot_loss_history(data))]
    assert titles == [
        "total (weighted sum of the terms)",
        "position, unweighted (weight 1)",
        "effort, unweighted (weight 1e-05)",
        "hold, unweighted (weight 100)",
    ]


def test_loss_history_total_panel_shows_each_terms_weighted_part():
    weights = {"position": 2.0, "effort": 1e-3, "hidden": 0.0}
    data = weighted_history(weights, n_replicates=3)
    total = panels(plot_loss_history(data))[0]
    parts = {
        line.get_label().removeprefix("part of total: ").split(" × ")[0]: line
        for line in total.lines
        if line.get_label().startswith("part of total: ")
    }
    # A term of weight 0 adds nothing to the total: no line for it.
    assert set(parts) == {"position", "effort"}
    for term, line in parts.items():
        expected = weights[term] * data.loss.sel(term=term).isel(batch=slice(0, 20))
        np.testing.assert_array_equal(line.get_xdata(), np.arange(20))
        np.testing.assert_allclose(line.get_ydata(), expected.mean("replicate"), rtol=1e-6)
        assert line.get_linewidth() < total.lines[0].get_linewidth()
        assert line.get_label() == f"part of total: {term} × {weights[term]:g}"


def test_loss_history_legend_lies_outside_every_panel():
    data = weighted_history({"position": 1.0, "effort": 0.5, "hold": 2.0, "hidden": 1.0})
    data["diverged_at"][:] = [-1, 12]
    fig = plot_loss_history(data)
    fig.draw_without_rendering()
    axes = panels(fig)
    assert all(ax.get_legend() is None for ax in axes)
    (legend,) = fig.legends
    labels = [text.get_text() for text in legend.get_texts()]
    assert {"train, mean", "validation, mean", "a replicate diverged"} <= set(labels)
    assert "part of total: hold × 2" in labels
    box = legend.get_window_extent()
    for ax in axes:
        assert not box.overlaps(ax.get_tightbbox()), ax.get_title()


def test_loss_history_before_any_batch_ran():
    fig = plot_loss_history(history(batches_run=0).where(False))
    assert all(not ax.lines for ax in panels(fig))


def test_trajectories_one_panel_per_shown_replicate(states, tmp_path):
    n_trials = states.sizes["trial"]
    fig = plot_trajectories(states, max_replicates=2, title="demo")
    axes = panels(fig)
    assert [ax.get_title() for ax in axes] == ["replicate 0", "replicate 1"]
    for ax in axes:
        assert len(ax.lines) == n_trials
        assert ax.get_aspect() == 1.0
        assert (ax.get_xlabel(), ax.get_ylabel()) == ("x (m)", "y (m)")
    assert "first 2 of 3" in fig.get_suptitle()
    goals = axes[0].collections[0].get_offsets()
    np.testing.assert_allclose(goals, states.goal.values)
    assert len(panels(plot_trajectories(states))) == 3
    with pytest.raises(ValueError, match="max_replicates"):
        plot_trajectories(states, max_replicates=0)
    assert_saves(fig, tmp_path / "trajectories.png")


def test_trajectories_lines_follow_positions_and_colour_by_angle(states):
    one = states.isel(replicate=[1])
    ax = panels(plot_trajectories(one))[0]
    pos = one.pos.isel(replicate=0)
    for trial, line in enumerate(ax.lines):
        np.testing.assert_allclose(line.get_xdata(), pos.sel(trial=trial, component="x"))
        np.testing.assert_allclose(line.get_ydata(), pos.sel(trial=trial, component="y"))
    assert len({tuple(line.get_color()) for line in ax.lines}) == states.sizes["trial"]


def test_speed_profiles_line_per_trial_is_replicate_mean(states, tmp_path):
    fig = plot_speed_profiles(states, title="speed")
    (ax,) = panels(fig)
    assert len(ax.lines) == states.sizes["trial"]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("time (s)", "speed (m/s)")
    speed = np.sqrt((states.vel**2).sum("component"))
    np.testing.assert_allclose(ax.lines[2].get_xdata(), states.time)
    np.testing.assert_allclose(
        ax.lines[2].get_ydata(), speed.isel(trial=2).mean("replicate"), rtol=1e-5
    )
    assert_saves(fig, tmp_path / "speed.png")
    assert len(panels(plot_speed_profiles(states.isel(replicate=[0])))[0].lines) == 7


def test_speed_profiles_mark_a_delayed_reachs_go_cue(states):
    delayed = states.assign_coords(go_time=("trial", np.full(states.sizes["trial"], 0.35)))
    (ax,) = panels(plot_speed_profiles(delayed))
    cue = [line for line in ax.lines if line.get_label() == "go cue"]
    assert len(cue) == 1 and list(cue[0].get_xdata()) == [0.35, 0.35]
    assert len(ax.lines) == states.sizes["trial"] + 1


def test_replicate_values_pick_final_total_validation_and_mean_endpoint_error(states):
    data = history(n_replicates=3, batches_run=N_BATCHES)
    metrics = reach_metrics(states)
    values = replicate_values(data, metrics)
    assert values.sizes["replicate"] == 3
    np.testing.assert_array_equal(
        values.final_validation_loss,
        data.validation_loss.sel(term="total", validation_step=N_BATCHES),
    )
    expected = metrics.endpoint_error.mean("trial")
    if "condition" not in expected.dims:  # a store without conditions: one, named ""
        expected = expected.expand_dims(condition=[""])
    np.testing.assert_allclose(values.endpoint_error, expected.transpose("replicate", "condition"))
    with pytest.raises(ValueError):
        replicate_values(data, metrics.isel(replicate=[0, 1]))


def comparison_values(n_replicates: int, scale: float, *, seed: int = 0) -> xr.Dataset:
    rng = np.random.default_rng(seed)
    return xr.Dataset(
        {
            "final_validation_loss": ("replicate", scale * rng.uniform(1, 2, n_replicates)),
            "endpoint_error": (
                ("replicate", "condition"),
                scale * rng.uniform(0.01, 0.02, (n_replicates, 2)),
                {"units": "m"},
            ),
        },
        coords={"replicate": np.arange(n_replicates), "condition": ["null", "curl"]},
    )


def drawn(ax, gid: str) -> list:
    return [artist for artist in ax.get_children() if artist.get_gid() == gid]


def test_comparison_draws_replicates_mean_and_the_summarys_interval(tmp_path):
    values = {
        "baseline": comparison_values(5, 1e-2),
        "delay": comparison_values(1, 1e-1),
        "noise": comparison_values(3, 1.0),
    }
    summary = summarise(values, {"baseline": 0, "delay": 0, "noise": 0}, key=jax.random.key(0))
    fig = plot_comparison(values, summary, condition="curl", title="compare")
    (loss_ax, error_ax), (loss_difference_ax, error_difference_ax) = np.reshape(panels(fig), (2, 2))
    assert loss_ax.get_yscale() == "log" and error_ax.get_yscale() == "linear"
    assert error_ax.get_title() == "evaluated in: curl"
    assert error_ax.get_ylabel() == "endpoint error (m)"
    for ax, (metric, condition) in [
        (loss_ax, ("final_validation_loss", "")),
        (error_ax, ("endpoint_error", "curl")),
    ]:
        cell = summary.sel(metric=metric, condition=condition)
        assert [t.get_text() for t in ax.get_xticklabels()] == ["baseline", "delay", "noise"]
        dots = drawn(ax, "replicates")
        assert [len(d.get_offsets()) for d in dots] == [5, 1, 3]
        noise = values["noise"][metric]
        noise = noise.sel(condition=condition) if condition else noise
        np.testing.assert_allclose(dots[2].get_offsets()[:, 1], noise)
        means = [c.get_segments()[0][0, 1] for c in drawn(ax, "mean")]
        np.testing.assert_allclose(means, cell["mean"])
        # One replicate has no interval; the others' are the summary's, not recomputed.
        intervals = [c.get_segments()[0][:, 1] for c in drawn(ax, "interval")]
        expected = cell.sel(experiment=["baseline", "noise"])
        np.testing.assert_allclose(intervals, np.stack([expected.ci_low, expected.ci_high], -1))
        assert not drawn(ax, "pairing")
    for ax, metric, condition in [
        (loss_difference_ax, "final_validation_loss", ""),
        (error_difference_ax, "endpoint_error", "curl"),
    ]:
        cell = summary.sel(metric=metric, condition=condition, reference="baseline")
        labels = [t.get_text() for t in ax.get_xticklabels()]
        # Different replicate counts: nothing to pair even with one seed.
        assert labels == ["baseline\n(reference)", "delay\nunpaired", "noise\nunpaired"]
        assert len(drawn(ax, "zero")) == 1 and not drawn(ax, "replicates")
        means = [c.get_segments()[0][0, 1] for c in drawn(ax, "mean")]
        np.testing.assert_allclose(means, cell.difference.sel(experiment=["delay", "noise"]))
        (interval,) = [c.get_segments()[0][:, 1] for c in drawn(ax, "interval")]
        noise = cell.sel(experiment="noise")
        np.testing.assert_allclose(interval, [noise.difference_ci_low, noise.difference_ci_high])
    assert_saves(fig, tmp_path / "comparison.png")


def test_comparison_joins_replicates_only_of_paired_adjacent_experiments():
    values = {name: comparison_values(4, 1.0, seed=index) for index, name in enumerate("abc")}
    values["b"]["final_validation_loss"][2] = np.nan
    summary = summarise(values, {"a": 7, "b": 7, "c": 8}, key=jax.random.key(1))
    fig = plot_comparison(values, summary, metrics=["final_validation_loss"])
    top, bottom = panels(fig)
    (pairing,) = drawn(top, "pairing")
    a, b = (values[name].final_validation_loss.values for name in "ab")
    # Each finite pair of a's and b's replicates, joined from column 0 to column 1.
    segments = pairing.get_segments()
    assert len(segments) == 3
    for segment in segments:
        replicate = int(np.argmin(np.abs(a - segment[0, 1])))
        np.testing.assert_allclose(segment[:, 1], [a[replicate], b[replicate]])
        np.testing.assert_allclose(segment[1, 0] - segment[0, 0], 1.0)
    labels = [t.get_text() for t in bottom.get_xticklabels()]
    assert labels == ["a\n(reference)", "b\npaired", "c\nunpaired"]
    # Paired: the per-replicate differences are drawn too; unpaired has none to draw.
    (differences,) = drawn(bottom, "replicates")
    np.testing.assert_allclose(differences.get_offsets()[:, 1], b - a)
    legend_labels = [text.get_text() for text in fig.legends[0].get_texts()]
    assert "same replicate (paired)" in legend_labels
    unpaired = plot_comparison(values, summarise(values, {}, key=jax.random.key(1)))
    assert not any(drawn(ax, "pairing") for ax in panels(unpaired))
    # A chain pairs as the summary does, whatever the seeds: c starts from b, b from a.
    chain = summarise(values, {}, key=jax.random.key(1), init_from={"b": "a", "c": "b"})
    chained = plot_comparison(values, chain, metrics=["final_validation_loss"])
    top, bottom = panels(chained)
    assert len(drawn(top, "pairing")) == 2  # a to b, b to c
    labels = [t.get_text() for t in bottom.get_xticklabels()]
    assert labels == ["a\n(reference)", "b\npaired", "c\npaired"]


def test_comparison_legend_explains_the_marks_below_the_panels():
    values = {"a": comparison_values(4, 1.0), "b": comparison_values(4, 2.0, seed=1)}
    summary = summarise(values, {"a": 0, "b": 0}, key=jax.random.key(0), confidence=0.9)
    fig = plot_comparison(values, summary)
    fig.draw_without_rendering()
    axes = panels(fig)
    assert all(ax.get_legend() is None for ax in axes)
    (legend,) = fig.legends
    labels = [text.get_text() for text in legend.get_texts()]
    assert labels[:3] == ["a replicate", "mean of the replicates", "90% bootstrap interval"]
    box = legend.get_window_extent()
    for ax in axes:
        assert not box.overlaps(ax.get_tightbbox())
        assert box.y1 <= ax.get_tightbbox().y0


def test_comparison_of_real_replicate_values_and_a_single_experiment(states, tmp_path):
    data = history(n_replicates=3, batches_run=N_BATCHES)
    values = {"only": replicate_values(data, reach_metrics(states))}
    summary = summarise(values, {"only": 0}, key=jax.random.key(0), n_resamples=200)
    fig = plot_comparison(values, summary, metrics=["endpoint_error", "not_a_metric"])
    (ax,) = panels(fig)
    assert len(drawn(ax, "replicates")[0].get_offsets()) == 3
    assert ax.get_title() == ""  # no condition dim: the single condition ""
    assert_saves(fig, tmp_path / "comparison.png")


def test_comparison_survives_zero_and_nan_values(tmp_path):
    values = {
        "zero": xr.Dataset(
            {
                "final_validation_loss": ("replicate", [0.0, 1.0]),
                "endpoint_error": ("replicate", [0.1, 0.2]),
            }
        ),
        "diverged": xr.Dataset(
            {
                "final_validation_loss": ("replicate", [np.nan]),
                "endpoint_error": ("replicate", [np.nan]),
            }
        ),
    }
    fig = plot_comparison(values, summarise(values, {}, key=jax.random.key(0)))
    assert panels(fig)[0].get_yscale() == "symlog"
    assert_saves(fig, tmp_path / "comparison.png")


def test_figures_draw_a_row_per_condition_labelled_with_its_perturbation(states):
    conditions = {"unperturbed": [], "curl_cw": [mf.CurlField(direction="cw").to_dict()]}
    two = xr.concat(
        [states.assign(pos=states.pos + shift) for shift in (0.0, 0.05)],
        dim=xr.DataArray(list(conditions), dims="condition", name="condition"),
        data_vars="all",
    )
    two.attrs["conditions"] = json.dumps(conditions)
    fig = plot_trajectories(two, max_replicates=2)
    assert len(panels(fig)) == 2 * 2
    labels = [text.get_text() for ax in fig.axes for text in ax.texts]
    assert "unperturbed" in labels
    assert any(label.startswith("curl_cw: curl ↻ 10 N s/m") for label in labels)
    speed = plot_speed_profiles(two)
    assert len(panels(speed)) == 2
    assert "curl ↻" in panels(speed)[1].get_title()


@pytest.mark.parametrize(
    "perturbation, label",
    [
        ({"kind": "curl", "strength": 10.0, "direction": "cw"}, "curl ↻ 10 N s/m"),
        ({"kind": "curl", "strength": [5.0, 15.0], "direction": "ccw"}, "curl ↺ 5–15 N s/m"),
        (
            {"kind": "viscous_field", "matrix": [[-10.1, -11.2], [-11.2, 11.1]], "scale": [0.5, 1]},
            "viscous field 0.5–1 × [[-10.1, -11.2], [-11.2, 11.1]] N s/m",
        ),
        ({"kind": "constant_field", "strength": 2.0, "angle": [0, 90.0]}, "field 2 N at 0–90°"),
        (
            {"kind": "force_pulse", "amplitude": 1.5, "angle": 90.0, "start": [0.1, 0.2]},
            "pulse 1.5 N at 90° from 0.1–0.2 s",
        ),
        (
            {"kind": "feedback_offset", "distance": 0.02, "angle": -90.0, "start": 0.1},
            "feedback +0.02 m at -90° from 0.1 s",
        ),
        (
            {"kind": "target_jump", "time": [0.1, 0.3], "distance": 0.05, "angle": 90.0},
            "jump 0.05 m at 90° at 0.1–0.3 s",
        ),
        ({"kind": "a_later_kind", "strength": 1.0}, "a_later_kind"),
    ],
)
def test_a_condition_label_says_what_each_perturbation_does(states, perturbation, label):
    # The labels as the figures drew them before each kind described itself (issue 46).
    stored = states.assign_attrs(conditions=json.dumps({"c": [perturbation, perturbation]}))
    assert condition_label(stored, "c") == f"c: {label}, {label}"


def test_every_perturbation_kind_describes_itself():
    # A kind without its own `describe` would be labelled by its bare name.
    for kind, perturbation in mf.PERTURBATIONS.items():
        assert perturbation.describe(perturbation().to_dict()) != kind


def test_the_protocol_figure_shows_each_stage_in_each_condition(states):
    metrics = reach_metrics(states)
    by_stage = {
        "baseline": metrics.expand_dims(condition=["null", "curl"]),
        "adapt": (metrics * 0.5).expand_dims(condition=["null", "curl"]),
    }
    summary = mf.protocol_summary(by_stage, metric="path_length_ratio")
    assert summary.dims == ("stage", "condition", "replicate")
    assert list(summary.stage.values) == ["baseline", "adapt"]
    np.testing.assert_allclose(
        summary.sel(stage="adapt"), 0.5 * summary.sel(stage="baseline"), rtol=1e-6
    )
    fig = mf.plot_protocol(summary, title="adaptation")
    axes = panels(fig)
    assert len(axes) == 2
    # one thin line per replicate, the mean, the zero line (and the legend's entry)
    mean = next(line for line in axes[0].lines if line.get_label() == "mean")
    np.testing.assert_allclose(mean.get_ydata(), summary.sel(condition="null").mean("replicate"))


def test_the_protocol_learning_curve_follows_the_stages_and_the_panels_draw_their_reaches(states):
    metrics = reach_metrics(states).expand_dims(condition=["null", "curl"])
    # Two stages with snapshots after 0, 5 and 10 batches; the lateral deviation of
    # replicate r at snapshot s is (s + 1) * (r + 1) mm in the first stage, twice that
    # in the second.
    factor = xr.DataArray(
        [1.0, 2.0, 3.0], dims="snapshot_step", coords={"snapshot_step": [0, 5, 10]}
    )
    curves = {
        "adapt": (metrics * 0 + 1e-3) * factor * (metrics.replicate + 1),
        "washout": (metrics * 0 + 2e-3) * factor * (metrics.replicate + 1),
    }
    curve = mf.protocol_curve(
        curves, metric="max_lateral_deviation", stage_batches={"adapt": 10, "washout": 10}
    )
    assert curve.dims == ("point", "condition", "replicate")
    assert curve.batch.values.tolist() == [0, 5, 10, 10, 15, 20]
    assert curve.stage.values.tolist() == ["adapt"] * 3 + ["washout"] * 3
    np.testing.assert_allclose(
        curve.sel(condition="null", replicate=1).values, [2e-3, 4e-3, 6e-3, 4e-3, 8e-3, 12e-3]
    )
    interval = mf.curve_interval(curve, key=jax.random.key(0), n_resamples=200, confidence=0.9)
    mean = curve.mean("replicate")
    assert np.all(interval.sel(bound="low") <= mean + 1e-12)
    assert np.all(interval.sel(bound="high") >= mean - 1e-12)
    assert np.all(interval.sel(bound="high") > interval.sel(bound="low"))
    summary = mf.protocol_summary(
        {"adapt": metrics, "washout": metrics}, metric="max_lateral_deviation"
    )
    panel_list = [
        {"stage": "adapt", "condition": "curl", "title": "late exposure"},
        {"stage": "washout", "condition": "null", "title": ""},
    ]
    shifted = states.assign(pos=states.pos + 0.01).expand_dims(condition=["null", "curl"])
    fig = mf.plot_protocol(
        summary,
        states={"adapt": states.expand_dims(condition=["null", "curl"]), "washout": shifted},
        panels=panel_list,
        curve=curve,
        interval=interval,
    )
    axes = panels(fig)
    assert len(axes) == 2 + 2 + 2  # paths, learning curve and stages, per panel/condition
    assert [ax.get_title() for ax in axes[:2]] == [
        "late exposure\nadapt in curl",
        "washout in null",
    ]
    # The stage's metric is read below its panel, never over the paths.
    assert axes[0].get_xlabel().startswith("x (m)\nmax lateral deviation: ")
    # Issue 27: the learning curve's axis names the quantity and its unit, not a variable.
    assert axes[2].get_ylabel() == "max lateral deviation (m)"
    assert not axes[0].texts
    # Each trial: a thin path per replicate and their mean, thick.
    thick = [line for line in axes[1].lines if line.get_linewidth() > 1.5]
    assert len(thick) == states.sizes["trial"]
    np.testing.assert_allclose(
        thick[0].get_xydata(),
        shifted.pos.isel(condition=0, trial=0).mean("replicate").values,
        rtol=1e-6,
    )
    curve_null = axes[2]
    means = [line for line in curve_null.lines if line.get_linewidth() == 2.0]
    np.testing.assert_allclose(
        np.concatenate([line.get_ydata() for line in means]), mean.sel(condition="null").values
    )
    assert [text.get_text().strip() for text in curve_null.texts] == ["adapt", "washout"]
    # Legends sit beside the panels: no legend's drawn box overlaps any panel's.
    FigureCanvasAgg(fig).draw()
    legends = [ax.get_legend() for ax in axes if ax.get_legend() is not None]
    assert len(legends) == 2  # the learning curve's and the stages'
    for legend in legends:
        box = legend.get_window_extent()
        assert not any(box.overlaps(ax.get_window_extent()) for ax in axes)


def test_a_diverged_replicate_is_marked_in_the_loss_trajectory_and_speed_figures(states):
    data = history(n_replicates=3)
    data["diverged_at"][:] = [-1, 12, -1]
    fig = plot_loss_history(data, title="demo")
    assert fig.get_suptitle() == "demo\ndiverged and frozen: replicate 1 at batch 12"
    for ax in panels(fig):
        marks = [line for line in ax.lines if list(line.get_xdata()) == [12, 12]]
        assert len(marks) == 1 and marks[0].get_linestyle() == ":"
    marked = states.assign_coords(diverged_at=("replicate", [-1, -1, 7]))
    titles = [ax.get_title() for ax in panels(plot_trajectories(marked))]
    assert titles == ["replicate 0", "replicate 1", "replicate 2: diverged at batch 7"]
    assert "replicate 2 at batch 7" in plot_speed_profiles(marked).get_suptitle()
    # Nothing diverged: no marks.
    assert not [line for ax in panels(plot_loss_history(history())) for line in ax.lines[2:]]
    assert [ax.get_title() for ax in panels(plot_trajectories(states))][2] == "replicate 2"


def test_comparison_draws_each_experiments_training_curves_in_a_last_column():
    values = {"a": comparison_values(4, 1.0), "b": comparison_values(3, 2.0, seed=1)}
    summary = summarise(values, {"a": 0, "b": 0}, key=jax.random.key(0))
    steps = [0, 10, 20]
    curves = {
        name: xr.DataArray(
            np.random.default_rng(index).uniform(0.1, 1, (3, n)),
            dims=("validation_step", "replicate"),
            coords={"validation_step": steps, "replicate": np.arange(n)},
        )
        for index, (name, n) in enumerate([("a", 4), ("b", 3)])
    }
    fig = plot_comparison(values, summary, curves=curves)
    grid = np.reshape(fig.axes, (2, -1))
    curve_ax, empty = grid[:, -1]
    assert not empty.axison
    # One thin line per replicate and a mean per experiment, in the experiment's colour.
    assert len(drawn(curve_ax, "replicate curve")) == 4 + 3
    means = drawn(curve_ax, "mean curve")
    assert [line.get_label() for line in means] == ["a", "b"]
    for line, name in zip(means, "ab", strict=True):
        np.testing.assert_allclose(line.get_ydata(), curves[name].mean("replicate"))
        np.testing.assert_array_equal(line.get_xdata(), steps)
    assert curve_ax.get_xlabel() == "batch" and curve_ax.get_yscale() == "log"
    # Without curves, the metric columns only (the comparison values lack lateral deviation).
    assert len(plot_comparison(values, summary).axes) == 2 * 2


def test_comparison_draws_each_rules_gradient_alignment_below_the_curves():
    values = {"a": comparison_values(4, 1.0), "b": comparison_values(3, 2.0, seed=1)}
    summary = summarise(values, {"a": 0, "b": 0}, key=jax.random.key(0))
    steps, groups = [0, 10, 20], ["network.cell.weight", "network.readout.weight"]

    def per(n, shape, dims, **coords):
        values = np.random.default_rng(n).uniform(-1, 1, shape)
        return xr.DataArray(values, dims=dims, coords={**coords, "replicate": np.arange(n)})

    curves = {
        name: per(n, (3, n), ("validation_step", "replicate"), validation_step=steps)
        for name, n in [("a", 4), ("b", 3)]
    }
    # Only b's history has an alignment (a's was written before it was recorded).
    alignment = {
        "b": per(
            3,
            (2, 3, 3),
            ("group", "validation_step", "replicate"),
            group=groups,
            validation_step=steps,
        )
    }
    fig = plot_comparison(values, summary, curves=curves, alignment=alignment)
    grid = np.reshape(fig.axes, (2, -1))
    ax = grid[1, -1]
    assert ax.axison and ax.get_ylabel() == "cosine with the BPTT gradient (1)"
    lines = drawn(ax, "alignment curve")
    # A line per trained array, the mean of the replicates, in b's colour (C1, as its
    # training curve) and a line style per array.
    assert len(lines) == 2
    for line, group in zip(lines, groups, strict=True):
        np.testing.assert_allclose(
            line.get_ydata(), alignment["b"].sel(group=group).mean("replicate")
        )
        assert line.get_color() == "C1"
    assert lines[0].get_linestyle() != lines[1].get_linestyle()
    assert [t.get_text() for t in ax.get_legend().get_texts()] == groups
    # With one experiment (no contrasts row), the alignment takes a column of its own.
    single = {"b": values["b"]}
    alone = plot_comparison(
        single, summarise(single, {"b": 0}, key=jax.random.key(0)), alignment=alignment
    )
    assert alone.axes[-1].get_ylabel() == "cosine with the BPTT gradient (1)"


def test_comparison_draws_the_curves_against_trials_and_seconds_too():
    values = {"a": comparison_values(4, 1.0), "b": comparison_values(3, 2.0, seed=1)}
    summary = summarise(values, {"a": 0, "b": 0}, key=jax.random.key(0))
    steps = [0, 10, 20]
    curves = {
        name: xr.DataArray(
            np.random.default_rng(n).uniform(0.1, 1, (3, n)),
            dims=("validation_step", "replicate"),
            coords={"validation_step": steps, "replicate": np.arange(n)},
        )
        for name, n in [("a", 4), ("b", 3)]
    }
    # b's run record has no timing: it is left out of the seconds panel only.
    fig = plot_comparison(
        values,
        summary,
        curves=curves,
        trials_per_batch={"a": 64, "b": 32},
        seconds_per_batch={"a": 0.5},
    )
    grid = np.reshape(fig.axes, (2, -1))
    by_batch, by_trials, by_seconds = grid[0, -3:]
    assert [ax.get_xlabel() for ax in (by_batch, by_trials, by_seconds)] == [
        "batch",
        "trials",
        "training time (s)",
    ]
    trials = drawn(by_trials, "mean curve")
    assert [line.get_label() for line in trials] == ["a", "b"]
    np.testing.assert_array_equal(trials[0].get_xdata(), np.array(steps) * 64)
    np.testing.assert_array_equal(trials[1].get_xdata(), np.array(steps) * 32)
    seconds = drawn(by_seconds, "mean curve")
    assert [line.get_label() for line in seconds] == ["a"]
    assert seconds[0].get_color() == "C0"
    np.testing.assert_allclose(seconds[0].get_xdata(), np.array(steps) * 0.5)
    np.testing.assert_allclose(seconds[0].get_ydata(), curves["a"].mean("replicate"))
    assert not any(ax.axison for ax in grid[1, -3:])


def test_a_loss_term_that_is_zero_throughout_gets_no_panel():
    # A reach has no steps to hold: its hold term is 0 at every batch.
    data = history(terms=("position", "hold", "effort"))
    data["loss"].loc[{"term": "hold"}] = xr.where(data.loss.sel(term="hold").notnull(), 0.0, np.nan)
    data["validation_loss"].loc[{"term": "hold"}] = xr.where(
        data.validation_loss.sel(term="hold").notnull(), 0.0, np.nan
    )
    titles = [term_of(ax.get_title()) for ax in panels(plot_loss_history(data))]
    assert titles == ["total", "position", "effort"]
    # Not yet recorded is not zero: before any batch every term keeps its panel.
    empty = history(terms=("position", "hold"), batches_run=0).where(False)
    assert len(panels(plot_loss_history(empty))) == 3


def test_a_comparison_of_many_experiments_wraps_into_a_bounded_readable_figure():
    from matplotlib.text import Text

    steps = [0, 10, 20]
    for n in (3, 14, 30):
        names = [f"eprop_symmetric_tau{i}" for i in range(n)]
        values = {name: comparison_values(3, 1.0 + i, seed=i) for i, name in enumerate(names)}
        summary = summarise(values, {}, key=jax.random.key(0), n_resamples=50)
        curves = {
            name: xr.DataArray(
                np.full((3, 3), 0.5),
                dims=("validation_step", "replicate"),
                coords={"validation_step": steps, "replicate": np.arange(3)},
            )
            for name in names
        }
        fig = plot_comparison(
            values,
            summary,
            curves=curves,
            trials_per_batch=dict.fromkeys(names, 64),
            seconds_per_batch=dict.fromkeys(names, 0.5),
        )
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # e.g. a layout that collapsed to fit a legend
            fig.draw_without_rendering()
        grid = np.reshape(panels(fig), (2, -1))
        # At most 16 in wide whatever the count (1,920 px at the default 120 dpi).
        width, height = fig.get_size_inches()
        assert width <= 16.0
        assert fig.get_tightbbox().width <= 16.0
        # The curves against trials and time, with nothing below, take one row's height.
        trials_ax = grid[0, -2]
        assert trials_ax.get_position().height * height > 2.0
        assert grid[1, -2].get_position().height * height < 0.1
        texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text()]
        assert min(t.get_fontsize() for t in texts) >= 8
        # Each metric panel's experiment names are legible: no two tick labels overlap
        # (long names stand upright, whose boxes do not overlap when the text does not).
        for ax in grid[:, :2].flat:
            boxes = [t.get_window_extent() for t in ax.get_xticklabels()]
            assert len(boxes) == n
            assert not any(a.overlaps(b) for a, b in itertools.pairwise(boxes))
        # No legend lies over a panel's drawing area.
        legends = [ax.get_legend() for ax in panels(fig) if ax.get_legend()] + fig.legends
        for legend in legends:
            box = legend.get_window_extent()
            assert not any(box.overlaps(ax.get_window_extent()) for ax in panels(fig))


def test_trajectory_and_speed_legends_cover_no_goal_path_or_curve(states):
    """Legends lie outside every panel: no goal marker, start or path under them."""
    delayed = states.assign_coords(go_time=("trial", np.full(states.sizes["trial"], 0.35)))
    for fig in (plot_trajectories(states), plot_speed_profiles(delayed)):
        fig.draw_without_rendering()
        legends = fig.legends + [ax.get_legend() for ax in panels(fig) if ax.get_legend()]
        assert legends
        for legend in legends:
            box = legend.get_window_extent()
            for ax in panels(fig):
                assert not box.overlaps(ax.get_window_extent())
                # Every goal marker's centre, in display coordinates, lies outside it.
                for collection in ax.collections:
                    points = collection.get_offset_transform().transform(collection.get_offsets())
                    assert not box.count_contains(points)
    labels = [t.get_text() for t in plot_trajectories(states).legends[0].get_texts()]
    assert labels == ["goal", "start"]


def test_comparison_draws_no_alignment_where_every_rule_is_bptt():
    # BPTT's alignment is 1 wherever recorded: a flat line that says nothing. A rule that
    # differs gets its panel, with a line style of its own per trained array.
    values = {"a": comparison_values(4, 1.0), "b": comparison_values(3, 2.0, seed=1)}
    summary = summarise(values, {"a": 0, "b": 0}, key=jax.random.key(0))
    steps, groups = [0, 10, 20], [f"network.array{i}" for i in range(6)]

    def alignment_of(n, value):
        cosine = np.full((6, 3, n), value)
        cosine[:, 1, :] = np.nan  # a validation step without the alignment
        coords = {"group": groups, "validation_step": steps, "replicate": np.arange(n)}
        return xr.DataArray(cosine, dims=("group", "validation_step", "replicate"), coords=coords)

    curves = {
        name: xr.DataArray(
            np.ones((3, n)), dims=("validation_step", "replicate"),
            coords={"validation_step": steps, "replicate": np.arange(n)},
        )
        for name, n in [("a", 4), ("b", 3)]
    }  # fmt: skip
    bptt = {"a": alignment_of(4, 1.0), "b": alignment_of(3, 1.0)}
    fig = plot_comparison(values, summary, curves=curves, alignment=bptt)
    assert not any(drawn(ax, "alignment curve") for ax in fig.axes)
    assert all(ax.get_ylabel() != "cosine with the BPTT gradient (1)" for ax in fig.axes)
    mixed = {"a": alignment_of(4, 1.0), "b": alignment_of(3, 0.4)}
    fig = plot_comparison(values, summary, curves=curves, alignment=mixed)
    (ax,) = [ax for ax in fig.axes if drawn(ax, "alignment curve")]
    lines = drawn(ax, "alignment curve")
    assert len(lines) == 6 and all(line.get_color() == "C1" for line in lines)  # b's only
    # Six dash patterns (matplotlib names custom ones all "--"; the pattern tells them apart).
    assert len({str(line._dash_pattern) for line in lines}) == 6


@pytest.mark.parametrize(("low", "high"), [(1.1, 1.9), (0.3, 0.9), (2.0, 7.5)])
def test_a_log_axis_within_a_decade_still_labels_several_values(low, high):
    # With minor ticks at 2 and 5 times each power of ten only, such an axis showed one
    # tick label or none (the loss panels of small terms).
    from motorflow._figures._style import log_scale_if_possible

    fig = Figure()
    ax = fig.subplots()
    values = np.linspace(low, high, 20)
    ax.plot(values)
    log_scale_if_possible(ax, values)
    FigureCanvasAgg(fig).draw()
    labels = [
        tick.label1.get_text()
        for tick in [*ax.yaxis.get_major_ticks(), *ax.yaxis.get_minor_ticks()]
        if tick.label1.get_visible() and tick.label1.get_text()
        and low * 0.9 <= tick.get_loc() <= high * 1.1
    ]
    assert ax.get_yscale() == "log" and len(labels) >= 3, labels
