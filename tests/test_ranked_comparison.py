"""The comparison of a large sweep: each metric's means ranked, bounded in size."""

import jax
import numpy as np
import pytest
import xarray as xr
from matplotlib.backends.backend_agg import FigureCanvasAgg

import motorflow.pipeline as mfp
from motorflow._analysis._statistics import summarise
from motorflow._figures import plot_ranked_comparison
from motorflow.pipeline import EACH_EXPERIMENT_UP_TO


def many_values(n: int) -> dict[str, xr.Dataset]:
    """`n` experiments of 3 replicates; `e7` diverged (every replicate NaN)."""
    rng = np.random.default_rng(n)
    values = {}
    for index in range(n):
        loss = rng.uniform(0.5, 2.0) * rng.uniform(0.9, 1.1, 3)
        error = rng.uniform(0.01, 0.03, (3, 2))
        if index == 7:
            loss, error = np.full(3, np.nan), np.full((3, 2), np.nan)
        values[f"e{index}"] = xr.Dataset(
            {
                "final_validation_loss": ("replicate", loss),
                "endpoint_error": (("replicate", "condition"), error, {"units": "m"}),
            },
            coords={"replicate": np.arange(3), "condition": ["null", "curl"]},
        )
    return values


def summary_of(n: int) -> xr.Dataset:
    values = many_values(n)
    seeds = dict.fromkeys(values, 0)
    return summarise(values, seeds, key=jax.random.key(0), n_resamples=100, max_references=1)


def drawn(ax, gid: str) -> list:
    return [artist for artist in ax.get_children() if artist.get_gid() == gid]


def test_each_metrics_means_are_drawn_ranked_with_the_summarys_intervals():
    summary = summary_of(40)
    fig = plot_ranked_comparison(summary, condition="curl")
    loss_ax, error_ax = fig.axes
    assert error_ax.get_title() == "evaluated in: curl" and loss_ax.get_yscale() == "log"
    for ax, (metric, condition) in [
        (loss_ax, ("final_validation_loss", "")),
        (error_ax, ("endpoint_error", "curl")),
    ]:
        cell = summary.sel(metric=metric, condition=condition).drop_sel(experiment="e7")
        order = np.argsort(cell["mean"].values)
        (means,) = drawn(ax, "means")
        np.testing.assert_allclose(means.get_ydata(), cell["mean"].values[order])
        np.testing.assert_array_equal(means.get_xdata(), np.arange(39))
        (intervals,) = drawn(ax, "intervals")
        segments = np.array([segment[:, 1] for segment in intervals.get_segments()])
        expected = np.stack([cell.ci_low.values[order], cell.ci_high.values[order]], -1)
        np.testing.assert_allclose(segments, expected)
        # The first experiment (every contrast's reference) circled at its rank.
        (first,) = drawn(ax, "first")
        rank = int(np.flatnonzero(order == 0)[0])
        assert (first.get_xdata()[0], first.get_ydata()[0]) == (rank, cell["mean"].values[0])
        names = [str(name) for name in cell.experiment.values]
        assert [text.get_text() for text in drawn(ax, "extreme")] == [
            names[order[0]],
            names[order[-1]],
        ]
        left_out = "(1 without a finite mean left out)"
        assert ax.get_xlabel() == f"39 experiments ranked by mean\n{left_out}"


def test_the_figure_keeps_its_size_whatever_the_number_of_experiments(tmp_path):
    sizes = set()
    for n in (EACH_EXPERIMENT_UP_TO + 1, 4 * EACH_EXPERIMENT_UP_TO):
        fig = plot_ranked_comparison(summary_of(n))
        FigureCanvasAgg(fig).draw()
        sizes.add(tuple(fig.get_size_inches()))
    assert len(sizes) == 1


def test_the_comparison_stage_ranks_a_large_sweep_from_the_summary_alone(tmp_path):
    """Past EACH_EXPERIMENT_UP_TO experiments the stage reads only the summary: the
    experiments' stores (here missing) are never opened."""
    n = EACH_EXPERIMENT_UP_TO + 1
    summary = tmp_path / "summary.zarr"
    mfp.write_dataset(summary_of(n), summary)
    names = [f"e{index}" for index in range(n)]
    missing = [tmp_path / "missing" / name for name in names]
    output = tmp_path / "comparison.png"
    mfp.comparison_figure(
        names,
        history_paths=missing,
        metrics_paths=missing,
        summary_path=summary,
        output_path=output,
        options={"dpi": 40},
    )
    assert output.stat().st_size > 0
    with pytest.raises(mfp.StoreError):  # side by side, it reads every store
        mfp.comparison_figure(
            names[:EACH_EXPERIMENT_UP_TO],
            history_paths=missing[:EACH_EXPERIMENT_UP_TO],
            metrics_paths=missing[:EACH_EXPERIMENT_UP_TO],
            summary_path=summary,
            output_path=tmp_path / "side-by-side.png",
            options={"dpi": 40},
        )
