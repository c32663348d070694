"""What a figure fit for a paper must not do: a legend over a label, a title, a tick label
or a drawn data point (tests/test_figure_layout*.py)."""

from __future__ import annotations

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure


def layout_problems(figure: Figure) -> list[str]:
    """What each legend of `figure` covers: labels, titles, tick labels, data points."""
    canvas = FigureCanvasAgg(figure)  # a figure made as Figure() has no renderer of its own
    canvas.draw()
    renderer = canvas.get_renderer()
    legends = [*figure.legends, *(ax.get_legend() for ax in figure.axes if ax.get_legend())]
    texts = []
    for ax in figure.axes:
        if ax.axison:
            texts += [ax.xaxis.label, ax.yaxis.label, *ax.get_xticklabels(), *ax.get_yticklabels()]
        texts.append(ax.title)
    texts = [text for text in texts if text.get_visible() and text.get_text().strip()]
    problems = []
    for legend in legends:
        box = legend.get_window_extent(renderer)
        for text in texts:
            if box.overlaps(text.get_window_extent(renderer)):
                problems.append(f"a legend covers the text {text.get_text()!r}")
        for ax in figure.axes:
            for artist in [*ax.lines, *ax.collections]:
                points = _display_points(artist)
                inside = (
                    (points[:, 0] > box.x0)
                    & (points[:, 0] < box.x1)
                    & (points[:, 1] > box.y0)
                    & (points[:, 1] < box.y1)
                )
                if inside.any():
                    problems.append(f"a legend covers {int(inside.sum())} points of {artist}")
    return problems


def _display_points(artist) -> np.ndarray:
    """Where `artist`'s data points are drawn, in display coordinates (pixels)."""
    if hasattr(artist, "get_xydata"):
        points = np.asarray(artist.get_xydata(), float)
        transform = artist.get_transform()
    else:
        points = np.asarray(artist.get_offsets(), float)
        transform = artist.get_offset_transform()
    points = points[np.isfinite(points).all(axis=-1)] if points.size else points.reshape(0, 2)
    return transform.transform(points) if len(points) else points.reshape(0, 2)


def check_saves_as_vector_graphics(figures: dict, directory, suffix: str) -> None:
    """Each figure saves as `suffix` (.pdf or .svg) through the pipeline's save_figure,
    into a file that is not empty."""
    from motorflow.pipeline._outputs import save_figure

    for name, figure in figures.items():
        path = (directory / name.replace("/", "-").replace(" ", "-")).with_suffix(suffix)
        save_figure(figure, path, dpi=40)
        assert path.stat().st_size > 0, name
