"""A sweep's work without the workflow around it: CPU-seconds per experiment when one
warm process does every stage itself.

`sweep_startup.py` measures what the sweep of `configs/sweep-startup.yaml` costs as a
Snakemake run; this measures the same experiments' work alone: their trial specs,
training, evaluation, analyses and seven figures each, then the run's summary,
comparison and sweep figures, each by the library's stage function that the job's
script calls, one after another in this process. A first pass imports everything,
fills the compile cache and traces each shape's programs; the measured passes then
write into fresh folders. The difference between the two benchmarks at the same hour
is the fixed cost of running the work as a workflow: Snakemake, the jobs' processes,
the workers' starts and each job's own set-up (its settings, logging, devices).
One CPU device, as a job of one thread. Usage:

    python benchmarks/sweep_work.py [--repeats 2] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "benchmarks" / "configs" / "sweep-startup.yaml"


def _one_pass(config: dict, out: Path, cost: dict[str, list[float]]) -> None:
    """Every stage of every experiment of `config` into `out`; CPU-s per stage kind."""
    import motorflow as mf
    import motorflow.pipeline as mfp

    def timed(kind: str, call, *args, **kwargs) -> None:
        start = time.process_time()
        call(*args, **kwargs)
        cost[kind].append(time.process_time() - start)

    settings = mfp.parse_config(config)
    experiments = mfp.resolve_experiments(config)
    figures = settings.figures.to_dict()
    trials: dict[str, tuple[Path, Path]] = {}
    for name, experiment in experiments.items():
        folder = out / name
        (folder / "figures").mkdir(parents=True)
        dataset = experiment.dataset
        if dataset not in trials:
            trials[dataset] = (out / f"{dataset}-train.zarr", out / f"{dataset}-eval.zarr")
            timed(
                "trials",
                mfp.make_trials,
                experiment.dataset_spec(),
                train_path=trials[dataset][0],
                eval_path=trials[dataset][1],
            )
        train, evaluation = trials[dataset]
        timed(
            "train",
            mfp.train_experiment,
            experiment,
            trials_path=train,
            eval_path=evaluation,
            model_path=folder / "model",
            best_model_path=folder / "model_best",
            history_path=folder / "history.zarr",
            checkpoint_dir=folder / "checkpoints",
            progress=False,
        )
        # What evaluating and analysing the trained model read or write alike.
        model_and_states = {
            "task": experiment.task,
            "seed": experiment.seed,
            "model_path": folder / "model",
            "eval_path": evaluation,
            "states_path": folder / "states.zarr",
        }
        timed(
            "evaluate",
            mfp.evaluate_experiment,
            name,
            **model_and_states,
            metrics_path=folder / "metrics.zarr",
            table_path=folder / "metrics.csv",
            evaluation=settings.evaluation,
        )
        timed(
            "analysis",
            mfp.analyse_experiment,
            name,
            **model_and_states,
            analysis_path=folder / "analysis.zarr",
            options=settings.analysis,
        )
        timed(
            "figures",
            mfp.experiment_figures,
            history_path=folder / "history.zarr",
            states_path=folder / "states.zarr",
            loss_path=folder / "figures" / "loss.png",
            trajectories_path=folder / "figures" / "trajectories.png",
            speed_path=folder / "figures" / "speed.png",
            options=figures,
            title=name,
        )
        timed(
            "figures",
            mfp.analysis_figures,
            analysis_path=folder / "analysis.zarr",
            figure_paths={kind: folder / "figures" / f"{kind}.png" for kind in mf.ANALYSES},
            replicate=settings.analysis.replicate,
            options=figures,
            title=name,
        )
    names = list(experiments)
    histories = [out / name / "history.zarr" for name in names]
    metrics = [out / name / "metrics.zarr" for name in names]
    timed(
        "summary",
        mfp.summary_stage,
        {name: experiment.seed for name, experiment in experiments.items()},
        init_from={name: experiment.init_from for name, experiment in experiments.items()},
        history_paths=histories,
        metrics_paths=metrics,
        table_path=out / "summary.csv",
        store_path=out / "summary.zarr",
        statistics=settings.statistics,
    )
    timed(
        "comparison_figure",
        mfp.comparison_figure,
        names,
        history_paths=histories,
        metrics_paths=metrics,
        summary_path=out / "summary.zarr",
        output_path=out / "comparison.png",
        options=figures,
    )
    for sweep_name, sweep in settings.sweeps.items():
        grid = {key: list(values) for key, values in sweep.grid.items()}
        points = mfp.grid_point_names(sweep_name, grid)
        timed(
            "sweep_figure",
            mfp.sweep_figure,
            points,
            history_paths=[out / name / "history.zarr" for name in points],
            metrics_paths=[out / name / "metrics.zarr" for name in points],
            summary_path=out / "summary.zarr",
            figure_path=out / f"sweep-{sweep_name}.png",
            metrics=list(sweep.metrics),
            marks=dict(sweep.marks),
            x_scale=sweep.x_scale,
            options=figures,
            title=f"sweep {sweep_name}",
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2, help="measured passes")
    parser.add_argument("--json", type=Path, help="also write the results there")
    args = parser.parse_args()

    import logging

    import motorflow.pipeline as mfp

    logging.getLogger("motorflow").setLevel(logging.WARNING)  # no line per file written
    mfp.use_devices(cpu_devices=1)
    config = mfp.load_config_file(CONFIG)
    n_experiments = len(mfp.resolve_experiments(config))
    passes = []
    with tempfile.TemporaryDirectory() as tmp:
        mfp.enable_compilation_cache(str(Path(tmp) / "jax_cache"))
        for index in range(args.repeats + 1):
            out = Path(tmp) / "results"
            shutil.rmtree(out, ignore_errors=True)
            cost: dict[str, list[float]] = defaultdict(list)
            start = time.process_time()
            _one_pass(config, out, cost)
            total = time.process_time() - start
            if index:  # the first pass warms up
                passes.append((total, cost))
    per_experiment = statistics.median(total for total, _ in passes) / n_experiments
    kinds = sorted({kind for _, cost in passes for kind in cost})
    result = {
        "experiments": n_experiments,
        "passes": len(passes),
        "cpu_s_per_experiment": round(per_experiment, 2),
        "median_cpu_s_per_call": {
            kind: round(statistics.median(t for _, cost in passes for t in cost[kind]), 3)
            for kind in kinds
        },
        "cpu_s_per_experiment_by_kind": {
            kind: round(statistics.median(sum(cost[kind]) for _, cost in passes) / n_experiments, 3)
            for kind in kinds
        },
    }
    print(json.dumps(result, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
