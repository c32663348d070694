"""Each learning rule's best learning rate (or RLS's alpha) from a config's sweeps.

Reads the outputs of a run of a config with `sweeps` (config/learning-rules-tuning.yaml)
and prints, for each sweep, every value of its first grid setting (a line per
combination of the others, e.g. RLS's reservoir size): the final total validation
loss and the endpoint error, mean [range] over replicates, the seconds per batch, and
the validation loss at a common wall-clock budget (the fastest training's whole run)
and the value `best_setting` picks by validation loss (issue 30, point 5). Usage:

    python benchmarks/lr_sweep.py config/learning-rules-tuning.yaml [--results DIR]
"""

import argparse
import itertools
import json
from pathlib import Path

import numpy as np
import xarray as xr

import motorflow.pipeline as mfp
from motorflow._analysis._best_setting import (
    best_setting,
    final_validation_losses,
    validation_loss_at_budget,
)


def spread(values: np.ndarray, scale: float = 1.0) -> str:
    finite = values[np.isfinite(values)] * scale
    if not finite.size:
        return "diverged"
    note = f" ({values.size - finite.size} diverged)" if finite.size < values.size else ""
    return f"{finite.mean():.4g} [{finite.min():.4g}-{finite.max():.4g}]{note}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", type=Path)
    parser.add_argument("--results", type=Path, help="default: results/<config stem>")
    parser.add_argument("--budget", type=float, help="seconds (default: the median whole run)")
    args = parser.parse_args()
    config = mfp.load_config_file(args.config)
    results = args.results or Path("results") / (config.get("results") or args.config.stem)
    runs = {}  # experiment -> (history, endpoint error, final speed, seconds per batch)
    for name, sweep in config["sweeps"].items():
        for experiment in mfp.grid_points(name, mfp.SweepSpec.model_validate(sweep)):
            folder = results / experiment
            if not (folder / "metrics.zarr").exists():
                continue
            history = xr.open_zarr(folder / "history.zarr")
            metrics = xr.open_zarr(folder / "metrics.zarr")
            error, speed = (
                metrics[v].mean([d for d in metrics[v].dims if d != "replicate"]).values
                for v in ("endpoint_error", "final_speed")
            )
            timing = json.loads(history.attrs.get("run_record", "{}")).get("timing", {})
            per_batch = timing.get("seconds_per_batch_median", np.nan)
            runs[experiment] = (history, error, speed, per_batch)
    # The common wall-clock budget: a typical training's whole run.
    whole_runs = [h.sizes["batch"] * s for h, _, _, s in runs.values() if np.isfinite(s)]
    budget = args.budget or (float(np.median(whole_runs)) if whole_runs else np.nan)
    print(f"wall-clock budget: {budget:.3g} s" + ("" if args.budget else " (the median whole run)"))
    for name, sweep in config["sweeps"].items():
        spec = mfp.SweepSpec.model_validate(sweep)
        points = mfp.grid_points(name, spec)
        tuned, *others = list(spec.grid)
        for rest in itertools.product(*(spec.grid[o] for o in others)):
            label = ", ".join(f"{o.split('.')[-1]} {v}" for o, v in zip(others, rest))
            print(f"\n{name}{' (' + label + ')' if label else ''}: {tuned}")
            losses = {}
            for experiment, point in points.items():
                if [point[o] for o in others] != list(rest):
                    continue
                value = point[tuned]
                if experiment not in runs:
                    print(f"  {value:<10g} not run (or not evaluated) yet")
                    continue
                history, error, speed, seconds = runs[experiment]
                losses[value] = final_validation_losses(history)
                error = np.where(np.isnan(losses[value]), np.nan, error)
                speed = np.where(np.isnan(losses[value]), np.nan, speed)
                at_budget = (
                    spread(validation_loss_at_budget(history, seconds, budget))
                    if np.isfinite(seconds * budget)
                    else "no timing"
                )
                print(
                    f"  {value:<10g} validation loss {spread(losses[value])}, "
                    f"endpoint error (mm) {spread(error, 1000)}, final speed (m/s) "
                    f"{spread(speed)}, {seconds * 1000:.3g} ms/batch, "
                    f"validation loss at the budget {at_budget}"
                )
            if losses:
                print(f"  best: {best_setting(losses)}")


if __name__ == "__main__":
    main()
