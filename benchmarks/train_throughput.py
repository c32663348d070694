"""Training throughput: motorflow's train stage against a bare-JAX floor, side by side.

Both train on the same trial specs in one process, interleaved repeat by repeat,
so machine load hits both alike. Reports the median seconds per batch over the
repeats, trial-steps per second and the ratio motorflow / bare. Usage:

    python benchmarks/train_throughput.py [--sizes tutorial small] [--repeats 5]
        [--replicates 5 20] [--vectorize {auto,on,off,both}]

`--replicates` overrides the sizes' replicate counts (each count given is run in
turn); `--vectorize` picks motorflow's `Trainer(vectorize_replicates=...)`: `auto`
(the trainer's own default: on unless JAX's backend is the CPU), `on`, `off`, or
`both`, which times the two paths side by side, interleaved with the floor.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import motorflow as mf

sys.path.insert(0, str(Path(__file__).parent))
import bare_jax

SIZES = {
    # feedbax tutorial: 5 replicates x 250 trials x 100 steps, GRU 50
    "tutorial": {"n_replicates": 5, "batch_size": 250, "n_steps": 100, "hidden": 50},
    "small": {"n_replicates": 5, "batch_size": 32, "n_steps": 50, "hidden": 16},
}


def setup(size: dict, batches_per_call: int):
    model = mf.ModelConfig.from_dict(
        {"network": {"hidden_size": size["hidden"]}, "feedback": {"delay": 1}}
    )
    task = mf.Task(mf.TaskConfig.from_dict({"n_steps": size["n_steps"]}))
    n_batches = 2 * batches_per_call
    config = mf.TrainConfig.from_dict(
        {
            "n_replicates": size["n_replicates"],
            "batch_size": size["batch_size"],
            "n_batches": n_batches,
            "validation": {"every": batches_per_call},
            "log": {"every": batches_per_call},
            "checkpoint": {"every": batches_per_call},
        }
    )
    keys = jax.random.split(jax.random.key(0), 3)
    ensemble = mf.make_ensemble(
        model, n_replicates=size["n_replicates"], n_task_inputs=2, key=keys[0]
    )
    trials = task.training_trials(
        key=keys[1],
        n_replicates=size["n_replicates"],
        n_batches=n_batches,
        batch_size=size["batch_size"],
    )
    return model, task, config, ensemble, trials, keys[2]


def time_motorflow(trainer, state, trials, batches_per_call: int) -> tuple[float, object]:
    chunk = jax.tree.map(
        lambda x: jnp.asarray(np.swapaxes(np.asarray(x)[:, :batches_per_call], 0, 1)), trials
    )
    index = jnp.arange(batches_per_call)
    start = time.perf_counter()
    state, records = trainer.run_chunk(state, chunk, index)
    jax.block_until_ready(records)
    return (time.perf_counter() - start) / batches_per_call, state


def time_bare(step, params, opt_state, trials, batches_per_call: int):
    init_pos = jnp.asarray(trials.init_pos)
    goal = jnp.asarray(trials.goal_pos)
    start = time.perf_counter()
    for b in range(batches_per_call):
        params, opt_state, value = step(params, opt_state, init_pos[:, b], goal[:, b])
    jax.block_until_ready(value)
    return (time.perf_counter() - start) / batches_per_call, params, opt_state


VECTORIZE = {"auto": [None], "on": [True], "off": [False], "both": [True, False]}


def path_name(vectorize: bool | None) -> str:
    return {None: "auto", True: "vmap", False: "map"}[vectorize]


def measure(
    name: str, size: dict, repeats: int, batches_per_call: int, vectorize: str = "auto"
) -> list[dict]:
    """One result per motorflow path in `VECTORIZE[vectorize]`, each against the same floor."""
    model, task, config, ensemble, trials, key = setup(size, batches_per_call)
    paths = VECTORIZE[vectorize]
    trainers = [mf.Trainer(ensemble, task, config, vectorize_replicates=v) for v in paths]
    states = [trainer.init(key=key) for trainer in trainers]
    optimizer, step = bare_jax.make_step(n_steps=size["n_steps"], delay=1, dt=model.dt)
    params = bare_jax.init_params(jax.random.key(1), size["n_replicates"], size["hidden"])
    opt_state = jax.vmap(optimizer.init)(params)
    # Warm-up calls compile every program.
    for i, trainer in enumerate(trainers):
        _, states[i] = time_motorflow(trainer, states[i], trials, batches_per_call)
    _, params, opt_state = time_bare(step, params, opt_state, trials, batches_per_call)
    ours, bare = [[] for _ in trainers], []
    for _ in range(repeats):
        seconds, params, opt_state = time_bare(step, params, opt_state, trials, batches_per_call)
        bare.append(seconds)
        for i, trainer in enumerate(trainers):
            seconds, states[i] = time_motorflow(trainer, states[i], trials, batches_per_call)
            ours[i].append(seconds)
    trial_steps = size["n_replicates"] * size["batch_size"] * size["n_steps"]
    results = []
    for vectorize_replicates, times in zip(paths, ours):
        result = {
            "size": name,
            "replicates": size["n_replicates"],
            "path": path_name(vectorize_replicates),
            "bare_s_per_batch": statistics.median(bare),
            "motorflow_s_per_batch": statistics.median(times),
        }
        result["ratio"] = result["motorflow_s_per_batch"] / result["bare_s_per_batch"]
        result["bare_trial_steps_per_s"] = trial_steps / result["bare_s_per_batch"]
        result["motorflow_trial_steps_per_s"] = trial_steps / result["motorflow_s_per_batch"]
        results.append(result)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=list(SIZES), choices=list(SIZES))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batches-per-call", type=int, default=10)
    parser.add_argument(
        "--replicates",
        type=int,
        nargs="+",
        default=None,
        help="replicate counts to run each size at (default: each size's own, 5)",
    )
    parser.add_argument(
        "--vectorize",
        choices=list(VECTORIZE),
        default="auto",
        help="motorflow's vectorize_replicates: the trainer's default, on, off, or both",
    )
    args = parser.parse_args()
    print(f"jax {jax.__version__}, backend {jax.default_backend()}, devices: {jax.devices()}")
    print(
        f"{'size':9} {'reps':>4} {'path':>4} {'bare s/batch':>12} {'motorflow s/batch':>17} "
        f"{'ratio':>6} {'bare trial-steps/s':>18} {'motorflow trial-steps/s':>23}"
    )
    for n_replicates in args.replicates or [None]:
        for name in args.sizes:
            size = dict(SIZES[name])
            if n_replicates is not None:
                size["n_replicates"] = n_replicates
            for r in measure(name, size, args.repeats, args.batches_per_call, args.vectorize):
                print(
                    f"{r['size']:9} {r['replicates']:4d} {r['path']:>4} "
                    f"{r['bare_s_per_batch']:12.4f} {r['motorflow_s_per_batch']:17.4f} "
                    f"{r['ratio']:6.3f} {r['bare_trial_steps_per_s']:18.0f} "
                    f"{r['motorflow_trial_steps_per_s']:23.0f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
