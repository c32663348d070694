"""A trained experiment's folder (``results/<config>/<experiment>/``): find it, and describe it
in a few readable lines (settings, run, each replicate's losses and metrics)."""

from __future__ import annotations

import json
import math
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from .._losses import LossConfig
from .._metrics import METRIC_UNITS
from .._model._saved_ensembles import load_training_record
from .._tasks import TASKS
from ._datasets import StoreError, opened_store

HISTORY = "history.zarr"
STATES = "states.zarr"
METRICS_TABLE = "metrics.csv"
MODELS = {"final": "model", "best": "model_best"}
# What `info` reads of the history (not its snapshots, which can be large).
FINAL_LOSS_VARIABLES = (
    "loss",
    "validation_loss",
    "best_batch",
    "best_validation_loss",
    "diverged_at",
)


class ResultsError(Exception):
    """A request about a results folder that cannot be met; the message says why."""


def trained_experiments(folder: str | Path) -> list[str]:
    """The names of `folder`'s directories that hold a trained experiment (a
    ``history.zarr``), sorted."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return sorted(d.name for d in folder.iterdir() if (d / HISTORY).is_dir())


def experiment_folder(path: str | Path) -> Path:
    """`path`, checked to be a trained experiment's folder.

    Raises :class:`ResultsError` naming the folder and listing the trained
    experiments beside it (or in it, for a results folder given by mistake).
    """
    path = Path(path)
    if (path / HISTORY).is_dir():
        return path
    inside = trained_experiments(path)
    if inside:
        raise ResultsError(
            f"{path} is not a trained experiment; it holds the trained experiments: "
            f"{', '.join(inside)}"
        )
    beside = trained_experiments(path.parent)
    listing = (
        f"trained experiments in {path.parent}: {', '.join(beside)}"
        if beside
        else f"{path.parent} holds no trained experiment"
    )
    raise ResultsError(f"{path} is not a trained experiment; {listing}")


def _read_history(path: Path, variables: tuple[str, ...] = ()) -> xr.Dataset:
    """The experiment's history with only `variables` loaded (its snapshots can be large)."""
    try:
        with opened_store(path / HISTORY) as history:
            loaded = history[list(variables)].load()
    except Exception as error:  # noqa: BLE001 - zarr raises many kinds for damaged stores
        raise StoreError(
            path / HISTORY, f"cannot be read ({type(error).__name__}: {error})"
        ) from None
    if "experiment" not in loaded.attrs:
        raise StoreError(path / HISTORY, "it has no 'experiment' attribute (the settings)")
    return loaded


def experiment_settings(path: Path) -> dict[str, Any]:
    """The settings the training's result depends on (the history's ``experiment``)."""
    return json.loads(_read_history(path).attrs["experiment"])


def _number(value: float) -> str:
    return "nan" if not math.isfinite(value) else f"{value:.6g}"


def _seconds(value: float) -> str:
    if value < 60:
        return f"{value:.3g} s"
    minutes, seconds = divmod(round(value), 60)
    return f"{minutes} min {seconds} s" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


def _settings_lines(settings: Mapping[str, Any]) -> list[str]:
    task, model, training = settings["task"], settings["model"], settings["training"]
    perturbations = [p["kind"] for p in task.get("perturbations", [])]
    network, feedback, plant = model["network"], model["feedback"], model["plant"]
    optimizer = training["optimizer"]
    # A cell is a block (its kind) in results written since cells had blocks, a kind before.
    cell = network["cell"]["kind"] if isinstance(network["cell"], Mapping) else network["cell"]
    # The terms that can add to this task's loss: not those of weight 0, nor the hold
    # term of a task that never holds.
    terms = LossConfig.model_validate(training["loss"]).terms
    weights = ", ".join(
        f"{name} {terms[name].weight:g}"
        for name in training["loss"]
        if terms[name].counts_in(TASKS[task["kind"]])
    )
    lines = [
        f"task: {task['kind']}, {task['n_steps']} steps of {model['dt']:g} s, "
        f"perturbations: {', '.join(perturbations) or 'none'}",
        f"model: {cell} with {network['hidden_size']} units "
        f"(hidden noise {network['hidden_noise_std']:g}), {plant['kind']} plant, "
        f"feedback delay {feedback['delay']} step{'s' * (feedback['delay'] != 1)}, "
        f"noise {feedback['noise_std']:g}",
        f"training: {training['n_replicates']} replicates x {training['n_batches']} batches "
        f"x {training['batch_size']} trials, {optimizer['name']} learning rate "
        f"{optimizer['learning_rate']:g} ({optimizer['schedule']['kind']}), "
        f"trains {', '.join(training['trainable'])}",
        f"loss weights: {weights or 'none'}",
        f"seed: {settings['seed']}",
    ]
    if settings.get("init_from"):
        reset = ", optimizer reset" if settings.get("reset_optimizer") else ""
        lines.append(f"starts from: {settings['init_from']}{reset}")
    return lines


def _run_lines(record: Mapping[str, Any], n_batches: int) -> list[str]:
    timing = record.get("timing", {})
    lines = []
    if "total_seconds" in timing:
        lines.append(
            f"time: {_seconds(timing['total_seconds'])} in all, "
            f"{_seconds(timing['compile_seconds'])} compiling"
        )
    if "seconds_per_batch_median" in timing:
        lines.append(
            f"seconds per batch: {timing['seconds_per_batch_median']:.3g} median "
            f"(p10 {timing['seconds_per_batch_p10']:.3g}, p90 "
            f"{timing['seconds_per_batch_p90']:.3g}; {timing['timed_batches']} batches timed)"
        )
    resumed = record.get("resumed_from_batch", 0)
    if resumed >= n_batches:
        lines.append(f"nothing was left to train: all {n_batches} batches came from a checkpoint")
    elif resumed:
        lines.append(f"resumed from the checkpoint at batch {resumed} of {n_batches}")
    lines.append(f"devices: {', '.join(record.get('devices', [])) or 'not recorded'}")
    if record.get("command"):
        lines.append(f"command: {shlex.join(record['command'])}")
    if record.get("rule"):
        wildcards = ", ".join(f"{k}={v}" for k, v in record.get("wildcards", {}).items())
        lines.append(f"workflow job: rule {record['rule']}" + (f" ({wildcards})" * bool(wildcards)))
    versions = record.get("versions", {})
    if versions:
        lines.append("versions: " + ", ".join(f"{n} {v}" for n, v in versions.items()))
    return lines


def final_losses(history: xr.Dataset) -> pd.DataFrame:
    """Per replicate: the total training loss of the last batch that ran, the total
    validation loss at the last validation step, its step, the best validation loss
    and its batch, and ``diverged_at`` (-1: never)."""
    loss = history.loss.sel(term="total")
    ran = np.flatnonzero(loss.notnull().any("replicate").values)
    validation = history.validation_loss.sel(term="total")
    validated = np.flatnonzero(validation.notnull().any("replicate").values)
    nan = np.full(history.sizes["replicate"], np.nan)
    return pd.DataFrame(
        {
            "final_batch": ran[-1] if ran.size else -1,
            "final_training_loss": loss.isel(batch=ran[-1]).values if ran.size else nan,
            "final_validation_step": (
                int(history.validation_step[validated[-1]]) if validated.size else -1
            ),
            "final_validation_loss": (
                validation.isel(validation_step=validated[-1]).values if validated.size else nan
            ),
            "best_batch": history.best_batch.values,
            "best_validation_loss": history.best_validation_loss.values,
            "diverged_at": history.diverged_at.values,
        },
        index=pd.Index(history.replicate.values, name="replicate"),
    )


def _replicate_lines(row: Any, metrics: pd.DataFrame | None, evaluated: str) -> list[str]:
    """`row`: one replicate's row of :func:`final_losses` (as `itertuples` gives it)."""
    diverged = "no" if row.diverged_at < 0 else f"yes, at batch {row.diverged_at} (frozen there)"
    lines = [
        f"final training loss    {_number(row.final_training_loss)} (batch {row.final_batch})",
        f"final validation loss  {_number(row.final_validation_loss)} "
        f"(after {row.final_validation_step} batches)",
        f"best validation loss   {_number(row.best_validation_loss)} "
        f"(after {row.best_batch} batches)",
        f"diverged               {diverged}",
    ]
    if metrics is not None:
        lines.append(f"metrics (mean over trials{evaluated}; NaN: no trial had one):")
        lines += ["  " + line for line in metrics.to_string(float_format=_number).splitlines()]
    return lines


def _metrics_by_replicate(path: Path) -> dict[int, pd.DataFrame]:
    """From metrics.csv, per replicate a table of metric rows by condition columns."""
    table = pd.read_csv(path)
    if "condition" not in table:
        table["condition"] = "unperturbed"
    names = [c for c in table.columns if c not in ("replicate", "condition")]
    labels = {
        name: name if METRIC_UNITS.get(name, "1") == "1" else f"{name} ({METRIC_UNITS[name]})"
        for name in names
    }
    return {
        int(replicate): rows.set_index("condition")[names]
        .T.rename(index=labels)
        .rename_axis(index=None, columns=None)
        for replicate, rows in table.groupby("replicate")
    }


def _evaluated_parameters(path: Path) -> str:
    """Which parameters the states were evaluated with, as a remark ("" if unknown)."""
    try:
        with opened_store(path / STATES) as states:
            return f", of the {json.loads(states.attrs['parameters'])} parameters"
    except Exception:  # noqa: BLE001 - a missing or foreign store only loses this remark
        return ""


def experiment_report(path: str | Path) -> str:
    """What a trained experiment is and how it went, as readable text.

    The settings (task, model, training, seed), the run (time, seconds per batch,
    devices), then per replicate the final training and validation loss, the best
    validation loss and its batch, divergence, and each metric's mean per
    condition from ``metrics.csv``. Parts not written yet (the model, the
    evaluation) are said to be missing.

    **Arguments:**

    - `path`: the experiment's folder, ``results/<config>/<experiment>``.
    """
    path = experiment_folder(path)
    history = _read_history(path, FINAL_LOSS_VARIABLES)
    settings = json.loads(history.attrs["experiment"])
    record = json.loads(history.attrs.get("run_record", "{}"))
    sections = [
        f"experiment {settings.get('name', path.name)} ({path})",
        "settings",
        *("  " + line for line in _settings_lines(settings)),
        "run",
        *("  " + line for line in _run_lines(record, settings["training"]["n_batches"])),
        "models",
        *("  " + line for line in _model_lines(path)),
    ]
    metrics, evaluated = None, _evaluated_parameters(path)
    if (path / METRICS_TABLE).is_file():
        metrics = _metrics_by_replicate(path / METRICS_TABLE)
    else:
        sections.append(f"metrics: not evaluated yet (no {path / METRICS_TABLE})")
    sections.append("replicates (losses: the weighted total)")
    for row in final_losses(history).itertuples():
        table = None if metrics is None else metrics.get(int(row.Index))
        sections.append(f"  replicate {row.Index}")
        sections += ["    " + line for line in _replicate_lines(row, table, evaluated)]
    return "\n".join(sections) + "\n"


def _model_lines(path: Path) -> list[str]:
    lines = []
    for parameters, folder in MODELS.items():
        if not (path / folder).is_dir():
            lines.append(f"{folder}/: missing")
            continue
        training = load_training_record(path / folder)
        lines.append(f"{folder}/: {training.get('parameters', parameters)} parameters")
    return lines
