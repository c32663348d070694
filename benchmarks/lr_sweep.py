"""Each learning rule's best learning rate (or RLS's alpha) from a config's sweeps.

Reads the outputs of a run of a config with `sweeps` (config/learning-rules-tuning.yaml)
and prints, for each sweep, every value of its first grid setting (a line per
combination of the others, e.g. RLS's reservoir size): the final total validation
loss and the endpoint error, mean [range] over replicates, the seconds per batch, and
the value `best_setting` picks by validation loss (issue 30, point 5). Usage:

    python benchmarks/lr_sweep.py config/learning-rules-tuning.yaml [--results DIR]
"""

import argparse
import itertools
import json
from pathlib import Path

import numpy as np
import xarray as xr

import motorflow.pipeline as mfp
from motorflow._analysis._best_setting import best_setting, final_validation_losses


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
    args = parser.parse_args()
    config = mfp.load_config_file(args.config)
    results = args.results or Path("results") / (config.get("results") or args.config.stem)
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
                folder = results / experiment
                if not (folder / "metrics.zarr").exists():
                    print(f"  {point[tuned]:<10g} not run (or not evaluated) yet")
                    continue
                history = xr.open_zarr(folder / "history.zarr")
                losses[point[tuned]] = final_validation_losses(history)
                error = xr.open_zarr(folder / "metrics.zarr").endpoint_error
                error = error.mean([d for d in error.dims if d != "replicate"]).values
                error = np.where(np.isnan(losses[point[tuned]]), np.nan, error)
                timing = json.loads(history.attrs.get("run_record", "{}")).get("timing", {})
                seconds = timing.get("seconds_per_batch_median", float("nan"))
                print(
                    f"  {point[tuned]:<10g} validation loss {spread(losses[point[tuned]])}, "
                    f"endpoint error (mm) {spread(error, 1000)}, {seconds * 1000:.3g} ms/batch"
                )
            if losses:
                print(f"  best: {best_setting(losses)}")


if __name__ == "__main__":
    main()
