"""What the figures share: colours, the reach-direction colour map, condition labels,
log axes, titles and legends. Every figure function builds a standalone
`matplotlib.figure.Figure` (no pyplot, so the global backend is never touched) and
leaves saving to the caller."""

from __future__ import annotations

import json
import textwrap
from typing import Any

import matplotlib as mpl
import numpy as np
import xarray as xr
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.ticker import LogFormatterSciNotation, LogLocator

ANGLE_CMAP = "hsv"  # cyclic, and unlike "twilight" never fades into a white background
TRAIN_COLOR = "tab:blue"
VALIDATION_COLOR = "tab:orange"


def axis_label(name: str, units: str) -> str:
    """An axis label naming quantity and unit, "max lateral deviation (m)": a stored
    variable's name with spaces for underscores, its ``units`` attribute in brackets."""
    quantity = name.replace("_", " ")
    return f"{quantity} ({units})" if units else quantity


def angle_colors(goal_angle: xr.DataArray) -> np.ndarray:
    """RGBA per trial from its goal angle on a cyclic colormap, shape `(trial, 4)`."""
    turns = np.mod(np.asarray(goal_angle, dtype=float), 2 * np.pi) / (2 * np.pi)
    return mpl.colormaps[ANGLE_CMAP](turns)


def add_angle_colorbar(fig: Figure, axes: Axes | list[Axes]) -> None:
    mappable = mpl.cm.ScalarMappable(
        norm=mpl.colors.Normalize(0, 2 * np.pi), cmap=mpl.colormaps[ANGLE_CMAP]
    )
    colorbar = fig.colorbar(mappable, ax=axes, shrink=0.8)
    colorbar.set_label("goal angle (rad)")
    colorbar.set_ticks(
        [0, np.pi / 2, np.pi, 3 * np.pi / 2, 2 * np.pi], labels=["0", "π/2", "π", "3π/2", "2π"]
    )


class _FittingMinorLabels(LogFormatterSciNotation):
    """Minor tick labels of a log axis, as many as fit its height: all of those
    matplotlib would label, else those at 2 and 5 (or 5) times a power of ten, else none (a
    short panel within a decade got eight labels on top of each other)."""

    def set_locs(self, locs: Any = None) -> None:
        super().set_locs(locs)
        if self.axis is None or self._sublabels is None or locs is None:
            return
        low, high = sorted(self.axis.get_view_interval())
        shown = [loc for loc in locs if low <= loc <= high and loc > 0]
        coefficients = [round(loc / 10 ** np.floor(np.log10(loc))) for loc in shown]
        figure = self.axis.axes.figure
        points = FontProperties(size=mpl.rcParams["ytick.labelsize"]).get_size_in_points()
        room = self.axis.axes.bbox.height / (2.2 * points * figure.dpi / 72)
        for subset in (set(self._sublabels), {2, 5}, {5}, set()):
            if sum(coefficient in subset for coefficient in coefficients) <= room - 1:
                break
        self._sublabels = subset


def log_scale_if_possible(ax: Axes, values: np.ndarray) -> None:
    """Log y when every finite value is positive; symlog when some are zero; else linear.

    A loss term that is switched off is exactly zero, which a plain log axis would
    silently drop.
    """
    finite = values[np.isfinite(values)]
    nonzero = np.abs(finite[finite != 0])
    if finite.size and np.all(finite > 0):
        ax.set_yscale("log")
        # Minor ticks at 2 and 5 times each power of ten, not at every integer multiple
        # (matplotlib's): as readable, and each tick is an artist that the layout and
        # the drawing measure, most of a loss figure's time on a span of many decades.
        # Within two decades those leave one or two labels (or none): there every
        # integer multiple gets a tick, and the minor ticks are labelled (all of them
        # within a decade, some within two; matplotlib's default labels them within one).
        short = finite.max() < 100 * finite.min()
        subs = tuple(float(k) for k in range(2, 10)) if short else (2.0, 5.0)
        ax.yaxis.set_minor_locator(LogLocator(subs=subs))
        ax.yaxis.set_minor_formatter(_FittingMinorLabels(minor_thresholds=(2, 1)))
    elif nonzero.size:
        ax.set_yscale("symlog", linthresh=float(nonzero.min()))


def no_data(ax: Axes, text: str = "no data") -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", color="0.5")


def suptitle(fig: Figure, title: str) -> None:
    if title:
        fig.suptitle(title)


def diverged_replicates(dataset: xr.Dataset) -> dict[int, int]:
    """Replicate -> the batch it diverged at, from `dataset`'s ``diverged_at`` (a
    history variable or a states/metrics coord; none: nothing diverged)."""
    if "diverged_at" not in dataset.variables:
        return {}
    diverged_at = dataset["diverged_at"]
    return {
        int(replicate): int(batch)
        for replicate, batch in zip(diverged_at.replicate.values, diverged_at.values)
        if batch >= 0
    }


def diverged_note(diverged: dict[int, int]) -> str:
    if not diverged:
        return ""
    which = ", ".join(f"{r} at batch {b}" for r, b in diverged.items())
    return f"diverged and frozen: replicate {which}"


def figure_legend(fig: Figure, axes: list[Axes]) -> None:
    """One legend below the panels (never over data), each label once."""
    entries: dict[str, object] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    if entries:
        fig.legend(
            list(entries.values()),
            list(entries),
            loc="outside lower center",
            ncols=min(len(entries), 4),
            fontsize="small",
        )


def settled(fig: Figure, *, draws: int = 5) -> Figure:
    """`fig` with its constrained layout run until its panels stop moving (at most
    `draws` draws, ~0.1 s each). A panel of fixed aspect is shrunk into its cell after
    the layout has measured its labels' room at the last draw's shape, so one layout can
    leave an x label under the legend below (seen in the arm's postures, 1 x 3 panels
    near square); each further layout starts from the last and they converge.

    After the first draw only the layout runs again (it measures the labels and fits
    the fixed-aspect panels itself): the same positions as a draw each, in two thirds
    of the time."""
    previous = None
    fig.draw_without_rendering()
    engine = fig.get_layout_engine()
    for draw in range(draws):
        if draw and engine is not None:
            engine.execute(fig)
        now = np.array([ax.get_position().bounds for ax in fig.axes])
        if previous is not None and np.allclose(now, previous, atol=1e-3):
            break
        previous = now
    return fig


def square_limits(ax: Axes, points: np.ndarray) -> None:
    if len(points):
        low, high = points.min(0), points.max(0)
        half = max(float((high - low).max()) / 2 * 1.1, 1e-3)
        center = (low + high) / 2
        ax.set_xlim(center[0] - half, center[0] + half)
        ax.set_ylim(center[1] - half, center[1] + half)
    ax.set_aspect("equal", adjustable="box")


def by_condition(states: xr.Dataset) -> xr.Dataset:
    """`states` with a `condition` dim (a store from before conditions gets one, unnamed)."""
    if "condition" in states.dims:
        return states
    return states.expand_dims(condition=[""])


def condition_label(states: xr.Dataset, condition: str) -> str:
    """The condition's name and what its perturbations are (from the states' attrs)."""
    described = json.loads(states.attrs.get("conditions", "{}")).get(condition)
    if not described:
        return condition or "unperturbed"
    return f"{condition}: " + ", ".join(_describe(p) for p in described)


# How far above its panel's top a row label's last line sits (points): above the
# panel's own title (a medium title and its 6 pt pad).
_ROW_LABEL_RISE = 20
# A bold character's mean width, in ems, with room to spare (DejaVu Sans: about 0.62).
_BOLD_CHARACTER_EMS = 0.7


def label_condition_row(ax, states: xr.Dataset, condition: str) -> None:
    """Name a small-multiples row's condition above its first panel and its title, in
    bold. A label wider than a panel wraps, growing upward: as one line it would widen
    the first column, and the layout would shrink every panel to make room for it."""
    figure = ax.get_figure(root=True)
    panel_points = 0.8 * figure.get_figwidth() * 72 / ax.get_gridspec().ncols
    size = FontProperties(size=mpl.rcParams["font.size"]).get_size_in_points()
    per_line = max(12, int(panel_points / (_BOLD_CHARACTER_EMS * size)))
    ax.annotate(
        textwrap.fill(condition_label(states, condition), per_line),
        xy=(0, 1),
        xycoords="axes fraction",
        xytext=(0, _ROW_LABEL_RISE),
        textcoords="offset points",
        verticalalignment="bottom",
        fontweight="bold",
        annotation_clip=False,
    )


def _describe(perturbation: dict) -> str:
    """A perturbation's settings in a few words, e.g. ``curl ↻ 10 N s/m``: its kind's
    :meth:`~motorflow._perturbations.AbstractPerturbation.describe` (a kind this
    version does not know: its name)."""
    # Imported here: the perturbations load JAX, which a figure of a store without
    # conditions never needs.
    from .._perturbations import PERTURBATIONS, AbstractPerturbation

    kind = PERTURBATIONS.get(perturbation["kind"], AbstractPerturbation)
    return kind.describe(perturbation)


def final_goal(states: xr.Dataset) -> xr.DataArray:
    """The goal at the last step (where a jumped target ended up), without a time dim."""
    return states.goal.isel(time=-1) if "time" in states.goal.dims else states.goal
