"""Figures fit for a paper: no legend covers an axis label, a tick label, a title or a
drawn data point, in any figure a run draws (each experiment's, its analyses' and the
comparison across experiments and a protocol's figure), at the resolution of the tiny run's figures; and every
figure saves as vector graphics too."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import pytest
import xarray as xr
from figure_checks import check_saves_as_vector_graphics, layout_problems
from matplotlib.figure import Figure
from workflow_helpers import finished_tiny_pipeline

import motorflow.pipeline._figure_stages as stages
from motorflow import ANALYSES

pytestmark = pytest.mark.workflow
EXPERIMENTS = ("quiet", "noisy")


@pytest.fixture(scope="module")
def figures(tmp_path_factory) -> dict[str, Figure]:
    """Every figure of the tiny run, by its file's name, drawn from its stores as the
    figure jobs draw them (their `save_figure` kept the figure instead)."""
    matplotlib.use("Agg")
    results = finished_tiny_pipeline() / "results"
    drawn: dict[str, Figure] = {}

    def keep(figure, path, *, dpi):
        drawn[Path(path).as_posix()] = figure
        figure.set_dpi(dpi)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(stages, "save_figure", keep)
        for name in EXPERIMENTS:
            stages.experiment_figures(
                history_path=results / name / "history.zarr",
                states_path=results / name / "states.zarr",
                loss_path=f"{name}/loss.png",
                trajectories_path=f"{name}/trajectories.png",
                speed_path=f"{name}/speed.png",
                options={"dpi": 40, "max_replicates": 5},
                title=name,
            )
            analysis = xr.open_zarr(results / name / "analysis.zarr")
            for kind, analysis_class in ANALYSES.items():
                figure = analysis_class.figure(analysis, replicate=0, title=name)
                figure.set_dpi(40)
                drawn[f"{name}/{kind}.png"] = figure
        stages.comparison_figure(
            list(EXPERIMENTS),
            history_paths=[results / name / "history.zarr" for name in EXPERIMENTS],
            metrics_paths=[results / name / "metrics.zarr" for name in EXPERIMENTS],
            summary_path=results / "summary.zarr",
            output_path="comparison.png",
            options={"dpi": 40},
        )
        tables = tmp_path_factory.mktemp("protocol")
        stages.protocol_figure(
            list(EXPERIMENTS),
            metrics_paths=[results / name / "metrics.zarr" for name in EXPERIMENTS],
            figure_path="protocol-noise.png",
            table_path=tables / "protocol-noise.csv",
            curve_table_path=tables / "protocol-noise-learning-curve.csv",
            metric="max_lateral_deviation",
            options={"dpi": 40},
            title="noise",
        )
    return drawn


def test_the_run_draws_every_figure_it_writes(figures):
    kinds = [*ANALYSES, "loss", "trajectories", "speed"]
    expected = {f"{name}/{kind}.png" for name in EXPERIMENTS for kind in kinds}
    assert expected | {"comparison.png", "protocol-noise.png"} == set(figures)


def test_no_legend_covers_a_label_a_title_or_data(figures):
    problems = {name: layout_problems(figure) for name, figure in figures.items()}
    problems = {name: found for name, found in problems.items() if found}
    assert not problems, problems


@pytest.mark.parametrize("suffix", [".pdf", ".svg"])
def test_every_figure_saves_as_vector_graphics(figures, tmp_path, suffix):
    check_saves_as_vector_graphics(figures, tmp_path, suffix)
