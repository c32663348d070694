"""The output-space figure (Kaufman et al. 2014): how the reaches' activity in the
readout's potent and null spaces grows over the trial, and the potent share of each
epoch's activity in every replicate."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import xarray as xr
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ._style import by_condition, condition_label, no_data, settled, suptitle

_COLORS = {"potent": "tab:red", "null": "tab:blue"}


def plot_output_spaces(analysis: xr.Dataset, *, replicate: int = 0, title: str = "") -> Figure:
    """A row per condition. Left: one replicate's variance across reaches in the potent
    and in the null space at each step, each over its own largest (so that both show
    how they grow), the go cue dashed. Right: every replicate's potent share of each
    epoch's variance (dots; bars their mean), against the share that activity spread
    evenly over every direction would give (dotted).

    **Arguments:**

    - `analysis`: a store with the ``output_spaces`` analysis's variables.
    - `replicate`: the replicate of the left panels.
    - `title`: figure title.
    """
    analysis = by_condition(analysis)
    conditions = list(analysis.condition.values)
    fig = Figure(figsize=(9.0, 3.0 * len(conditions) + 0.9), layout="constrained")
    grid = fig.subplots(len(conditions), 2, squeeze=False, width_ratios=[1.6, 1])
    go = np.unique(analysis.go_time.values) if "go_time" in analysis.coords else []
    for row, condition in enumerate(conditions):
        one = analysis.sel(condition=condition)
        curves, shares = grid[row]
        variance = one.output_space_variance.sel(replicate=replicate)
        time = one.time.values
        for space, color in _COLORS.items():
            values = variance.sel(space=space).values
            peak = np.nanmax(values) if np.isfinite(values).any() else np.nan
            label = f"{space} (peak {peak:.2g} a.u.²)"
            curves.plot(time, values / peak if peak > 0 else values, color=color, label=label)
        for cue in go:
            curves.axvline(float(cue), color="0.4", ls="--", lw=0.8)
        curves.set_xlabel("time (s)")
        curves.set_ylabel("variance across reaches\n(each over its peak)")
        curves.set_title(
            f"{condition_label(analysis, condition)}: replicate {replicate}", fontsize="medium"
        )
        curves.set_ylim(0, 1.35)  # room above the curves for the legend
        curves.legend(fontsize="small", loc="upper left", ncols=2)
        _draw_shares(shares, one)
        shares.set_title("every replicate", fontsize="medium")
    suptitle(fig, f"{title} output-potent and output-null activity".strip())
    return settled(fig)


def plot_output_spaces_comparison(analyses: Mapping[str, xr.Dataset], *, title: str = "") -> Figure:
    """Each experiment's potent shares of the preparatory and movement epochs (first
    condition): every replicate a dot, their mean a bar, and the share activity spread
    evenly would give, a panel per experiment."""
    fig = Figure(figsize=(2.6 * len(analyses) + 0.8, 3.6), layout="constrained")
    axes = fig.subplots(1, len(analyses), squeeze=False, sharey=True)[0]
    for ax, (name, analysis) in zip(axes, analyses.items()):
        _draw_shares(ax, by_condition(analysis).isel(condition=0))
        ax.set_title(name, fontsize="medium")
        if ax is not axes[0]:
            ax.set_ylabel("")
    what = "the readout's potent share of the variance across reaches"
    suptitle(fig, "\n".join(filter(None, [title, what])))
    return settled(fig)


def _draw_shares(ax: Axes, one: xr.Dataset) -> None:
    """One condition's potent share per epoch: every replicate a dot, their mean a bar,
    the even spread's share dotted."""
    share = one.output_potent_share.transpose("epoch", "replicate").values
    if not np.isfinite(share).any():
        no_data(ax)
    for index, values in enumerate(share):
        finite = values[np.isfinite(values)]
        if finite.size:
            ax.bar(index, finite.mean(), 0.6, color=_COLORS["potent"], alpha=0.35)
        ax.scatter(np.full(values.shape, index), values, s=14, color=_COLORS["potent"], zorder=3)
    isotropic = float(one.output_isotropic_share.mean())
    ax.axhline(isotropic, color="0.3", ls=":", lw=1, label="spread evenly")
    ax.set_xticks(range(len(one.epoch)), list(one.epoch.values))
    ax.set_ylim(0, 1.25)  # room above the dots for the legend
    ax.set_ylabel("potent share of the variance")
    ax.legend(fontsize="small", loc="upper left")
