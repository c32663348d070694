"""The figure stages of one experiment or protocol, as functions of paths: they read
the stores and draw, loading no JAX (a protocol's learning-curve interval loads it
where there is a curve), so a figure job starts in a fraction of a second's imports.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import xarray as xr

from .._figures import (
    curve_interval,
    plot_arm_postures,
    plot_loss_history,
    plot_protocol,
    plot_speed_profiles,
    plot_trajectories,
    protocol_curve,
    protocol_summary,
)
from ._datasets import open_dataset, read_states
from ._outputs import save_figure, write_csv


def experiment_figures(
    *,
    history_path: Path,
    states_path: Path,
    loss_path: Path,
    trajectories_path: Path,
    speed_path: Path,
    options: Mapping[str, Any],
    title: str = "",
) -> None:
    """Loss history, center-out trajectories and speed profiles of one experiment."""
    history = open_dataset(history_path)
    states = read_states(states_path)
    dpi = options["dpi"]
    save_figure(plot_loss_history(history, title=title), loss_path, dpi=dpi)
    save_figure(
        plot_trajectories(states, max_replicates=options["max_replicates"], title=title),
        trajectories_path,
        dpi=dpi,
    )
    save_figure(plot_speed_profiles(states, title=title), speed_path, dpi=dpi)


def arm_figure(
    *, states_path: Path, figure_path: Path, options: Mapping[str, Any], title: str = ""
) -> None:
    """The arm's postures during the center-out reaches of one experiment (arm plants)."""
    figure = plot_arm_postures(read_states(states_path), title=title)
    save_figure(figure, figure_path, dpi=options["dpi"])


def protocol_figure(
    stages: Sequence[str],
    *,
    metrics_paths: Sequence[Path],
    figure_path: Path,
    table_path: Path,
    curve_table_path: Path,
    metric: str,
    options: Mapping[str, Any],
    statistics: Mapping[str, Any] | None = None,
    panels: Sequence[Mapping[str, str]] = (),
    conditions: Sequence[str] = (),
    states_paths: Mapping[str, Path] | None = None,
    curve_paths: Mapping[str, Path] | None = None,
    stage_batches: Mapping[str, int] | None = None,
    title: str = "",
) -> None:
    """A protocol's figure (see :func:`plot_protocol`) and its numbers: the metric per
    stage, condition and replicate (`table_path`), and along the learning curve of
    the stages in `curve_paths` (`curve_table_path`; only its header without them).

    **Arguments:**

    - `stages`, `metrics_paths`: the stages in order and their metrics stores.
    - `states_paths`: the states of the stages the `panels` draw.
    - `curve_paths`: the learning curves (:func:`evaluate_snapshots`) of the stages
      that kept snapshots, in order; `stage_batches`: each stage's batches.
    - `statistics`: the ``statistics`` settings (the curve's bootstrap intervals);
      needed only with `curve_paths`.
    - `conditions`: the evaluation conditions the summary and the curve keep (all if
      empty).
    """

    def chosen(metrics: xr.Dataset) -> xr.Dataset:
        return metrics.sel(condition=list(conditions)) if conditions else metrics

    summary = protocol_summary(
        {
            name: chosen(open_dataset(path))
            for name, path in zip(stages, metrics_paths, strict=True)
        },
        metric=metric,
    )
    states = {name: read_states(path) for name, path in (states_paths or {}).items()}
    curve = interval = None
    if curve_paths:
        import jax  # the curve's bootstrap interval only

        curve = protocol_curve(
            {name: chosen(open_dataset(path)) for name, path in curve_paths.items()},
            metric=metric,
            stage_batches=stage_batches or {},
        )
        interval = curve_interval(
            curve,
            key=jax.random.key(statistics["seed"]),
            n_resamples=statistics["n_resamples"],
            confidence=statistics["confidence"],
        )
    figure = plot_protocol(
        summary, states=states, panels=panels, curve=curve, interval=interval, title=title
    )
    save_figure(figure, figure_path, dpi=options["dpi"])
    write_csv(summary.to_dataframe().reset_index(), table_path)
    columns = ["stage", "batch", "condition", "replicate", metric]
    if curve is None:
        table = pd.DataFrame(columns=columns)
    else:
        table = curve.to_dataframe().reset_index()[columns]
    write_csv(table, curve_table_path)
