"""The layout of the comparison figure: panel widths, their columns wrapped into bands
no wider than a screen, and experiment names as tick labels that stay readable."""

from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

MAX_WIDTH = 16.0  # inches: a comparison of any size stays within a screen's width
_PANEL_HEIGHT = 3.6  # inches, per row of panels
_MAX_TILTED = 6  # experiments whose tick labels still fit tilted rather than upright
_MAX_TILTED_CHARACTERS = 14  # and the longest name that does
_LEGEND_ROWS = 12  # entries per legend column, so that a legend fits its panel's height


def legend_columns(n_entries: int) -> int:
    return max(1, -(-n_entries // _LEGEND_ROWS))


def metric_width(n_experiments: int) -> float:
    """A metric panel's width in inches: room for each experiment's tilted tick label
    (two lines of 8 pt text), never wider than the figure's bound."""
    return min(MAX_WIDTH, max(3.5, 0.42 * n_experiments + 1.5))


def tick_label_room(labels: list[str]) -> float:
    """Inches below a panel that its upright tick labels take (about 0.07 in per
    character at the default 10 pt), so that long names do not squash the data."""
    longest = max(len(line) for label in labels for line in label.split("\n"))
    if len(labels) <= _MAX_TILTED and longest <= _MAX_TILTED_CHARACTERS:
        return 0.0
    return 0.07 * longest


def wrapped_grid(
    fig: Figure,
    widths: list[float],
    n_rows: int,
    *,
    below: list[bool],
    label_room: list[float],
) -> np.ndarray:
    """Axes `(n_rows, len(widths))`: a column of `n_rows` panels per width, the columns
    wrapped into as many bands as keep each band within `MAX_WIDTH` inches; `fig` is
    sized to hold them. Each column's panels stay one above the other, and the axes are
    made row by row (every column's top panel first), so `fig.axes` reads like the grid.
    A band none of whose columns draws `below` (its lower panels) has the height of
    one row (its lower panels are empty stand-ins), and each band is as much taller as
    its columns' `label_room` (inches)."""
    bands: list[list[int]] = [[]]
    for column, width in enumerate(widths):
        if bands[-1] and sum(widths[c] for c in bands[-1]) + width > MAX_WIDTH:
            bands.append([])
        bands[-1].append(column)
    fig_width = max(sum(widths[c] for c in band) for band in bands)
    rows = [n_rows if any(below[c] for c in band) else 1 for band in bands]
    heights = [
        (_PANEL_HEIGHT + max(label_room[c] for c in band)) * used
        for band, used in zip(bands, rows, strict=True)
    ]
    fig.set_size_inches(fig_width, sum(heights) + 0.5)
    outer = fig.add_gridspec(len(bands), 1, height_ratios=heights)
    cells: dict[int, tuple] = {}
    for band_index, (band, used) in enumerate(zip(bands, rows, strict=True)):
        ratios = [widths[c] for c in band]
        spare = fig_width - sum(ratios)
        inner = outer[band_index].subgridspec(
            used, len(band) + (spare > 0.01), width_ratios=ratios + [spare] * (spare > 0.01)
        )
        cells.update({column: (inner, place, used) for place, column in enumerate(band)})

    def panel(row: int, column: int) -> Axes:
        inner, place, used = cells[column]
        if row < used:
            return fig.add_subplot(inner[row, place])
        # A band without lower panels: an empty stand-in, outside the layout and unseen.
        stand_in = fig.add_axes((0.0, 0.0, 1e-6, 1e-6))
        stand_in.set_in_layout(False)
        stand_in.set_axis_off()
        return stand_in

    return np.array(
        [[panel(row, c) for c in range(len(widths))] for row in range(n_rows)], dtype=object
    )


def experiment_ticks(ax: Axes, labels: list[str]) -> None:
    tilt = len(labels) > 3 or any(len(line) > 12 for label in labels for line in label.split("\n"))
    # Past a few experiments, upright labels: tilted ones would cross their neighbours'.
    long = any(len(line) > _MAX_TILTED_CHARACTERS for label in labels for line in label.split("\n"))
    rotation = 90 if len(labels) > _MAX_TILTED or long else 30 if tilt else 0
    ax.set_xticks(
        range(len(labels)),
        labels,
        rotation=rotation,
        ha="right" if tilt else "center",
        va="center" if rotation == 90 else "top",
        rotation_mode="anchor",
    )
    ax.set_xlim(-0.6, len(labels) - 0.4)
