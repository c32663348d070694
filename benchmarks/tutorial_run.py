"""Train the feedbax tutorial setup once and report the learning curve and reach accuracy.

Point mass, GRU 50, 100 steps, dt 0.05, feedback delay 1, workspace [-1, 1]^2,
adam lr 1e-2, 5 replicates x 250 trials x 1000 batches. Usage:

    python benchmarks/tutorial_run.py [--n-batches 1000]
"""

from __future__ import annotations

import argparse
import logging
import time

import jax
import numpy as np

import motorflow as mf


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-batches", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", force=True)

    model_config = mf.ModelConfig.from_dict(
        {"dt": 0.05, "network": {"cell": "gru", "hidden_size": 50}, "feedback": {"delay": 1}}
    )
    task = mf.Task(mf.TaskConfig.from_dict({"n_steps": 100}))
    config = mf.TrainConfig.from_dict(
        {
            "n_replicates": 5,
            "n_batches": args.n_batches,
            "batch_size": 250,
            "optimizer": {"name": "adam", "learning_rate": 1e-2},
            "validation": {"every": 100},
            "log": {"every": 100},
            "checkpoint": {"every": 1000},
        }
    )
    keys = jax.random.split(jax.random.key(args.seed), 4)
    ensemble = mf.make_ensemble(model_config, n_replicates=5, n_task_inputs=2, key=keys[0])
    trials = task.training_trials(
        key=keys[1], n_replicates=5, n_batches=config.n_batches, batch_size=config.batch_size
    )
    start = time.perf_counter()
    result = mf.train(ensemble, trials, task, config, key=keys[2], progress=False)
    wall = time.perf_counter() - start

    states = mf.evaluate(result.ensemble, task, model_config, key=keys[3])
    final = states.isel(time=-1)
    endpoint_error = np.hypot(*(final.pos - states.goal).transpose("component", ...).values)
    final_speed = np.hypot(*final.vel.transpose("component", ...).values)
    loss = result.history["loss"]["total"].mean(axis=1)
    steps = result.history["validation_step"]
    val = result.history["validation"]["total"].mean(axis=1)
    print(f"wall time (train incl. compile): {wall:.1f} s")
    print("batch  mean train loss  mean validation loss (after that many batches)")
    for step, v in zip(steps, val):
        train_loss = loss[min(step, config.n_batches - 1)]
        print(f"{step:5d}  {train_loss:.3e}  {v:.3e}")
    print("per replicate: mean endpoint error, mean final speed (center-out set)")
    for r in range(config.n_replicates):
        print(f"  {r}: {endpoint_error[r].mean():.5f}  {final_speed[r].mean():.5f}")


if __name__ == "__main__":
    main()
