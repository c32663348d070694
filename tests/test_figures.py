import json

import numpy as np
import pytest
import xarray as xr
from matplotlib.collections import LineCollection, PathCollection, PolyCollection
from matplotlib.figure import Figure

import motorflow as mf
from motorflow._figures import (
    comparison_summary,
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


def assert_saves(fig: Figure, path) -> None:
    fig.savefig(path)
    assert path.stat().st_size > 1000


def test_loss_history_has_a_panel_per_term_total_first(tmp_path):
    fig = plot_loss_history(history(), title="demo")
    assert isinstance(fig, Figure)
    axes = panels(fig)
    assert [ax.get_title() for ax in axes] == ["total", "position", "effort"]
    for ax in axes:
        assert ax.get_yscale() == "log"
        assert ax.get_xlabel() == "batch"
        train, validation = ax.lines
        # Batches that never ran are dropped rather than drawn as NaN.
        np.testing.assert_array_equal(train.get_xdata(), np.arange(20))
        np.testing.assert_array_equal(validation.get_xdata(), [0, 10, 20])
        assert sum(isinstance(c, PolyCollection) for c in ax.collections) == 1
    assert axes[0].get_legend() is not None
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
    axes = {ax.get_title(): ax for ax in panels(fig)}
    assert set(axes) == {"total", "position", "hidden", "unused"}
    assert axes["hidden"].get_yscale() == "linear"
    assert not axes["unused"].lines and axes["unused"].texts[0].get_text() == "no data"
    assert_saves(fig, tmp_path / "loss.png")


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


def test_comparison_summary_picks_final_total_validation_and_mean_endpoint_error(states):
    data = history(n_replicates=3, batches_run=N_BATCHES)
    metrics = reach_metrics(states)
    summary = comparison_summary(data, metrics)
    assert dict(summary.sizes) == {"replicate": 3}
    np.testing.assert_array_equal(
        summary.final_validation_loss,
        data.validation_loss.sel(term="total", validation_step=N_BATCHES),
    )
    np.testing.assert_allclose(summary.endpoint_error, metrics.endpoint_error.mean("trial"))
    with pytest.raises(ValueError):
        comparison_summary(data, metrics.isel(replicate=[0, 1]))


def test_comparison_has_a_tick_per_experiment_and_a_dot_per_replicate(tmp_path):
    def summary(n_replicates, scale):
        return xr.Dataset(
            {
                "final_validation_loss": ("replicate", scale * np.linspace(1, 2, n_replicates)),
                "endpoint_error": ("replicate", scale * np.linspace(0.01, 0.02, n_replicates)),
            },
            coords={"replicate": np.arange(n_replicates)},
        )

    summaries = {"baseline": summary(5, 1e-2), "delay": summary(1, 1e-1), "noise": summary(3, 1.0)}
    fig = plot_comparison(summaries, title="compare")
    loss_ax, error_ax = panels(fig)
    assert loss_ax.get_yscale() == "log" and error_ax.get_yscale() == "linear"
    for ax in (loss_ax, error_ax):
        assert [t.get_text() for t in ax.get_xticklabels()] == ["baseline", "delay", "noise"]
        dots = [len(c.get_offsets()) for c in ax.collections if isinstance(c, PathCollection)]
        assert dots == [5, 1, 3]
        assert sum(isinstance(c, LineCollection) for c in ax.collections) == 3  # mean bars
    assert_saves(fig, tmp_path / "comparison.png")


def test_comparison_survives_zero_and_nan_values(tmp_path):
    summaries = {
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
    fig = plot_comparison(summaries)
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
