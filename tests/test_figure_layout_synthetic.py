"""The figures the tiny run does not draw, checked as tests/test_figure_layout.py checks
the run's: a sweep's (a line per setting, and past ten seeds their pooled mean), a
ranked comparison of many experiments, the preferred-direction comparison's roses and
the arms' postures, each drawn from the inputs their own tests build, at the tiny run's
resolution. No legend covers a label, a title, a tick label or a data point, and each
saves as vector graphics."""

from __future__ import annotations

import jax
import matplotlib
import numpy as np
import pytest
from figure_checks import check_saves_as_vector_graphics, layout_problems
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from test_plants_in_the_loop import setup as plant_setup
from test_ranked_comparison import summary_of
from test_sweep_figures import seeded_sweep, sweep
from test_tuning_comparison import two_experiments

import motorflow as mf
from motorflow import ANALYSES
from motorflow._figures import plot_ranked_comparison, plot_sweep

METRICS = ["final_validation_loss", "endpoint_error"]


def arm_postures(kind: str) -> Figure:
    model, task, ensemble = plant_setup(kind)
    states = mf.evaluate(ensemble, task, model, key=jax.random.key(1))
    return mf.plot_arm_postures(states, replicate=1, n_postures=3)


FIGURES = {
    "sweep": lambda: plot_sweep(*sweep(), metrics=METRICS, title="grid"),
    "sweep of 12 seeds": lambda: plot_sweep(*seeded_sweep(12), metrics=METRICS, title="seeds"),
    "ranked, 40 experiments": lambda: plot_ranked_comparison(summary_of(40), condition="curl"),
    "tuning comparison": lambda: ANALYSES["tuning"].comparison_figure(
        two_experiments(), replicate=0, title="tuning"
    ),
    "arm postures": lambda: arm_postures("arm"),
    "muscle arm postures": lambda: arm_postures("muscle_arm"),
}


@pytest.fixture(scope="module")
def figures() -> dict[str, Figure]:
    matplotlib.use("Agg")
    drawn = {}
    for name, draw in FIGURES.items():
        drawn[name] = draw()
        drawn[name].set_dpi(40)
    return drawn


@pytest.mark.parametrize("name", list(FIGURES))
def test_no_legend_covers_a_label_a_title_or_data(figures, name):
    problems = layout_problems(figures[name])
    assert not problems, problems


@pytest.mark.parametrize("suffix", [".pdf", ".svg"])
def test_each_saves_as_vector_graphics(figures, tmp_path, suffix):
    check_saves_as_vector_graphics(figures, tmp_path, suffix)


def test_a_long_condition_label_wraps_above_the_titles_and_the_panels_keep_their_size():
    """A condition whose perturbations take many words (an intervention on units, two
    perturbations) is labelled above its row's titles, not over them, and its lines
    (the height they take shrinks the square panels a little) do not squeeze the
    panels to make room for their width (as one line: to 0.28 of their width)."""
    model, task, ensemble = plant_setup("point_mass", n_replicates=2)
    long = [
        mf.Stimulation(fraction=0.25, seed=1, amplitude=0.5, start=0.2),
        mf.ForcePulse(amplitude=2.0, start=0.3),
    ]
    sizes = {}
    for name, conditions in {
        "short": {"a": [], "b": []},
        "long": {"a": [], "stimulated_and_pushed": long},
    }.items():
        states = mf.evaluate(ensemble, task, model, key=jax.random.key(1), conditions=conditions)
        figure = mf.plot_trajectories(states)
        canvas = FigureCanvasAgg(figure)  # a figure made as Figure() has no renderer
        canvas.draw()
        renderer = canvas.get_renderer()
        panels = [ax for ax in figure.axes if ax.get_title().startswith("replicate")]
        sizes[name] = [ax.get_window_extent(renderer).width for ax in panels]
        labels = [text for ax in panels for text in ax.texts]  # the rows' labels
        assert len(labels) == 2
        for label in labels:
            box = label.get_window_extent(renderer)
            for ax in panels:
                assert not box.overlaps(ax.title.get_window_extent(renderer)), label.get_text()
    assert "\n" in labels[-1].get_text()  # the long one wrapped
    assert min(sizes["long"]) > 0.8 * min(sizes["short"]), sizes
