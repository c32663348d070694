"""The training panels of the comparison figure: each experiment's validation loss
against batch (or trials, or seconds of training) and its gradient alignment, one colour
per experiment."""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib as mpl
import numpy as np
import xarray as xr
from matplotlib.axes import Axes

from ._comparison_layout import legend_columns
from ._style import log_scale_if_possible


def experiment_color(index: int, n_experiments: int) -> object:
    """An experiment's colour in the curves: the default cycle up to 10 experiments,
    past that the 20 of ``tab20`` (so that no two of up to 20 share one)."""
    if n_experiments <= 10:
        return f"C{index}"
    return mpl.colormaps["tab20"](index % 20)


def draw_curves(
    ax: Axes,
    curves: Mapping[str, xr.DataArray],
    order: list[str],
    *,
    per_batch: Mapping[str, float] | None = None,
    xlabel: str = "batch",
    legend: bool = True,
) -> None:
    """Each experiment's validation loss against batch (or, with `per_batch`, against
    batch times each experiment's value there: trials or seconds; an experiment without
    one is left out): a thin line per replicate and a thick one for their mean, one
    colour per experiment (its place in `order`), named in a legend beside the panel
    (with `legend`)."""
    drawn = []
    for name, curve in curves.items():
        if per_batch is not None and name not in per_batch:
            continue
        color = experiment_color(order.index(name), len(order))
        curve = curve.isel(validation_step=curve.notnull().any("replicate").values)
        x = curve.validation_step.values * (1 if per_batch is None else per_batch[name])
        for replicate in curve.replicate.values:
            ax.plot(
                x,
                curve.sel(replicate=replicate),
                color=color,
                lw=0.6,
                alpha=0.4,
                gid="replicate curve",
            )
        ax.plot(x, curve.mean("replicate"), color=color, lw=2, label=name, gid="mean curve")
        drawn.append(np.ravel(curve.values))
    if drawn:
        log_scale_if_possible(ax, np.concatenate(drawn))
    ax.set_xlabel(xlabel)
    ax.set_ylabel("validation loss, total (a.u.)")
    ax.set_title(
        (
            "training: replicates (thin) and mean"
            if per_batch is None
            else f"the same against {xlabel.split(' (')[0]}"
        ),
        fontsize="medium",
    )
    if legend:
        ax.legend(
            fontsize="small",
            title="experiment",
            title_fontsize="small",
            loc="upper left",
            bbox_to_anchor=(1.02, 1.0),
            ncols=legend_columns(len(curves)),
        )


# A line style per trained array: eight that tell apart (a GRU's e-prop trains six).
_GROUP_STYLES = (
    "-", "--", ":", "-.",
    (0, (5, 1)), (0, (1, 3)), (0, (3, 1, 1, 1, 1, 1)), (0, (8, 2, 1, 2)),
)  # fmt: skip


def draw_alignment(ax: Axes, alignment: Mapping[str, xr.DataArray], order: list[str]) -> None:
    """Each experiment's gradient alignment against batch: the mean over replicates of
    the cosine between its rule's update and the BPTT gradient, a line per trained
    array (line style) in the experiment's colour (as in the training curves)."""
    groups: list[str] = []
    for name, cosine in alignment.items():
        index = order.index(name)
        cosine = cosine.isel(validation_step=cosine.notnull().any(("group", "replicate")).values)
        for group in cosine.group.values:
            if str(group) not in groups:
                groups.append(str(group))
            ax.plot(
                cosine.validation_step.values,
                cosine.sel(group=group).mean("replicate"),
                color=experiment_color(index, len(order)),
                ls=_GROUP_STYLES[groups.index(str(group)) % len(_GROUP_STYLES)],
                lw=1.4,
                gid="alignment curve",
            )
    ax.axhline(0.0, color="0.3", lw=0.8, ls="--", zorder=1)
    ax.set_ylim(-1.05, 1.05)
    ax.set_xlabel("batch")
    ax.set_ylabel("cosine with the BPTT gradient (1)")
    ax.set_title("gradient alignment: mean of the replicates", fontsize="medium")
    handles = [
        mpl.lines.Line2D([], [], color="0.2", ls=_GROUP_STYLES[i % len(_GROUP_STYLES)], label=g)
        for i, g in enumerate(groups)
    ]
    ax.legend(
        handles=handles,
        fontsize="small",
        title="trained array",
        title_fontsize="small",
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),
    )
