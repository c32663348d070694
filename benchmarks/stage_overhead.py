"""Per-stage overhead at the feedbax tutorial sizes: imports, compilation, I/O.

Reports (medians over repeats): import time; compile time of the training chunk
without a persistent cache, with a cold one and with a warm one (each in a fresh
process); trial-spec load; checkpoint save (blocking part and total); model save;
history write; and the evaluate stage beyond its imports with a warm cache. Usage:

    python benchmarks/stage_overhead.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
TUTORIAL = {"n_replicates": 5, "batch_size": 250, "n_steps": 100, "hidden": 50}


def _child(code: str, env: dict | None = None) -> dict:
    output = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, **(env or {})},
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(output.stdout.strip().splitlines()[-1])


IMPORT = """
import time, json
start = time.perf_counter()
import motorflow, orbax.checkpoint
from motorflow import *  # its names load on first use: all of them, as a stage's imports do
print(json.dumps({"import_s": time.perf_counter() - start}))
"""

COMPILE = """
import time, json, sys
start = time.perf_counter()
import jax, motorflow as mf, motorflow.pipeline as mfp
imported = time.perf_counter()
mfp.enable_compilation_cache({cache!r})
sys.path.insert(0, {here!r})
from train_throughput import setup
import numpy as np, jax.numpy as jnp
_, task, config, ensemble, trials, key = setup({size!r}, 100)
trainer = mf.Trainer(ensemble, task, config)
state = trainer.init(key=key)
chunk = jax.tree.map(lambda x: jnp.asarray(np.swapaxes(np.asarray(x)[:, :100], 0, 1)), trials)
t0 = time.perf_counter()
trainer.run_chunk.lower(state, chunk, jnp.arange(100)).compile()
print(json.dumps({{"compile_s": time.perf_counter() - t0}}))
"""

EVALUATE = """
import time, json
start = time.perf_counter()
import jax, motorflow as mf, motorflow.pipeline as mfp
from motorflow.pipeline import *  # its names load on first use: load them with the imports
imported = time.perf_counter()
mfp.enable_compilation_cache({cache!r})
experiment = mfp.Experiment.from_dict(json.loads({experiment!r}))
mfp.evaluate_experiment(experiment.name, task=experiment.task, seed=experiment.seed,
    model_path={model!r}, eval_path={eval!r},
    states_path={out!r} + "/states.zarr", metrics_path={out!r} + "/metrics.zarr",
    table_path={out!r} + "/metrics.csv", evaluation=mfp.EvaluationConfig())
print(json.dumps({{"stage_s": time.perf_counter() - imported, "import_s": imported - start}}))
"""


def timed(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="motorflow-overhead-"))
    rows: list[tuple[str, float]] = []

    rows.append(
        (
            "import motorflow + orbax",
            statistics.median(_child(IMPORT)["import_s"] for _ in range(args.repeats)),
        )
    )
    code = {"here": str(HERE.parent), "size": TUTORIAL}
    rows.append(
        ("compile train chunk, no cache", _child(COMPILE.format(cache="", **code))["compile_s"])
    )
    cache = str(work / "jax_cache")
    rows.append(
        (
            "compile train chunk, cold cache",
            _child(COMPILE.format(cache=cache, **code))["compile_s"],
        )
    )
    rows.append(
        (
            "compile train chunk, warm cache",
            statistics.median(
                _child(COMPILE.format(cache=cache, **code))["compile_s"]
                for _ in range(args.repeats)
            ),
        )
    )

    import jax

    import motorflow as mf
    import motorflow.pipeline as mfp

    sys.path.insert(0, str(HERE.parent))
    from train_throughput import setup

    model, task, config, ensemble, _, key = setup(TUTORIAL, 100)
    trials = task.training_trials(key=key, n_replicates=5, n_batches=1000, batch_size=250)
    mfp.write_trials(trials, work / "train.zarr")
    rows.append(
        (
            "load trial specs (5 x 1000 x 250)",
            timed(lambda: mfp.read_trials(work / "train.zarr"), args.repeats),
        )
    )

    trainer = mf.Trainer(ensemble, task, config)
    state = trainer.init(key=key)
    history = mf.empty_history(
        list(config.loss.terms),
        n_batches=1000,
        n_replicates=5,
        validation_steps=list(range(0, 1001, 100)),
    )
    blocking, total = [], []
    with mfp.Checkpoints(work / "ckpt", fingerprint={"benchmark": 1}, keep=2) as checkpoints:
        for step in range(args.repeats):
            start = time.perf_counter()
            checkpoints.save(step + 1, state=state, history=history, loss=1.0)
            blocking.append(time.perf_counter() - start)
            checkpoints._manager.wait_until_finished()
            total.append(time.perf_counter() - start)
    rows.append(("checkpoint save, blocking part", statistics.median(blocking)))
    rows.append(("checkpoint save, until written", statistics.median(total)))
    rows.append(
        (
            "save model",
            timed(
                lambda: mf.save_ensemble(work / "model", ensemble, model, n_task_inputs=2),
                args.repeats,
            ),
        )
    )
    history_ds = mf.history_dataset(history)
    rows.append(
        (
            "write history.zarr",
            timed(lambda: mfp.write_dataset(history_ds, work / "history.zarr"), args.repeats),
        )
    )

    experiment = mfp.Experiment("bench", "reach", task.config, model, config, 0)
    mfp.write_dataset(mfp.center_out_dataset(task.eval_trials()), work / "eval.zarr")
    evaluate = EVALUATE.format(
        cache=cache,
        experiment=json.dumps(experiment.to_dict()),
        model=str(work / "model"),
        eval=str(work / "eval.zarr"),
        out=str(work),
    )
    _child(evaluate)  # fills the cache
    rows.append(
        (
            "evaluate stage beyond imports, warm cache",
            statistics.median(_child(evaluate)["stage_s"] for _ in range(args.repeats)),
        )
    )

    print(f"devices: {jax.devices()}")
    for name, seconds in rows:
        print(f"{name:45} {seconds:8.3f} s")


if __name__ == "__main__":
    main()
