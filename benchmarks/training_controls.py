"""The cost of the training controls: a compiled chunk as the trainer runs it against
the plain chunk it grew from, side by side.

"plain" is a `lax.scan` of the trainer's own update over the chunk's batches (the
chunk before schedules); "scheduled" is `Trainer.run_chunk`, whose steps may be
skipped (`lax.cond` on a per-batch flag) so that one compiled program serves every
chunk whatever the schedules; "isolating" is the same with ``on_divergence:
isolate`` (the update also watches the losses); "per_term" the scheduled chunk with
``gradient_norms: per_term`` (a backward pass per loss term); "hebbian" with a Hebbian
update rule of the recurrent weights after every batch. All run the same
batches on the same state, interleaved repeat by repeat; medians of seconds per
batch. Usage:

    python benchmarks/training_controls.py [--sizes small tutorial] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

import motorflow as mf
from motorflow._training._replicate_updates import update_replicates

SIZES = {
    # (replicates, trials, steps, hidden units, batches per call)
    "small": (5, 32, 50, 16, 100),
    "tutorial": (5, 250, 100, 50, 20),
}


def setup(size: str | tuple[int, ...], *, model: dict | None = None, **train):
    """A trainer of `size` (a name of `SIZES`, or such a tuple), its initial state, a
    chunk of trials `(batch, replicate, trial, ...)` and the chunk's batch indices.
    `model` replaces the model's settings (default: hidden noise 0.01)."""
    n_replicates, batch_size, n_steps, hidden, per_call = SIZES.get(size, size)
    model_settings = model or {"network": {"hidden_noise_std": 0.01}}
    model_settings = {**model_settings, "network": {**model_settings.get("network", {})}}
    model_settings["network"]["hidden_size"] = hidden
    model = mf.ModelConfig.from_dict(model_settings)
    task = mf.Task(mf.TaskConfig.from_dict({"n_steps": n_steps}))
    config = mf.TrainConfig.from_dict(
        {"n_replicates": n_replicates, "batch_size": batch_size, "n_batches": per_call, **train}
    )
    keys = jax.random.split(jax.random.key(0), 3)
    ensemble = mf.make_ensemble(model, n_replicates=n_replicates, n_task_inputs=2, key=keys[0])
    trials = task.training_trials(
        key=keys[1], n_replicates=n_replicates, n_batches=per_call, batch_size=batch_size
    )
    chunk = jax.tree.map(lambda x: jnp.asarray(np.swapaxes(np.asarray(x), 0, 1)), trials)
    trainer = mf.Trainer(ensemble, task, config)
    state = trainer.init(key=keys[2], learning_key=jax.random.fold_in(keys[2], 3))
    return trainer, state, chunk, jnp.arange(per_call)


def plain_chunk(trainer: mf.Trainer):
    """The chunk without skippable steps: a scan of the trainer's update."""

    @jax.jit
    def run(state, trials, batch_index):
        fixed = (trainer.frozen, trainer.constraints.prepared)
        healthy = jnp.ones(trainer.n_replicates, bool)

        def body(carry, xs):
            batch_trials, batch = xs
            params, opt_state, learning_state, losses, _ = update_replicates(
                trainer,
                *carry,
                fixed,
                batch_trials,
                jax.random.fold_in(state.key, batch),
                healthy,
                batch,
                jnp.zeros(0, bool),
            )
            return (params, opt_state, learning_state), losses

        carry = (state.params, state.opt_state, state.learning_state)
        carry, losses = jax.lax.scan(body, carry, (trials, batch_index))
        replaced = eqx.tree_at(
            lambda s: (s.params, s.opt_state, s.learning_state),
            state,
            carry,
            is_leaf=lambda x: x is None,
        )
        return replaced, losses

    return run


def timed(run, state, chunk, index) -> tuple[float, object]:
    start = time.perf_counter()
    out = run(state, chunk, index)
    jax.block_until_ready(out)
    return (time.perf_counter() - start) / len(index), out[0]


def measure(size: str, repeats: int) -> dict:
    trainer, state, chunk, index = setup(size)
    isolating, *_ = setup(size, on_divergence="isolate")
    per_term, *_ = setup(size, gradient_norms="per_term")
    hebbian, *_ = setup(size, update_rules=[{"kind": "hebbian", "rate": 1e-4}])
    variants = {
        "plain": plain_chunk(trainer),
        "scheduled": trainer.run_chunk,
        "isolating": isolating.run_chunk,
        "per_term": per_term.run_chunk,
        "hebbian": hebbian.run_chunk,
    }
    states = {name: state for name in variants}
    for name, run in variants.items():  # compile
        _, states[name] = timed(run, states[name], chunk, index)
    times = {name: [] for name in variants}
    for _ in range(repeats):
        for name, run in variants.items():
            seconds, states[name] = timed(run, states[name], chunk, index)
            times[name].append(seconds)
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=list(SIZES), choices=list(SIZES))
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"jax {jax.__version__}, backend {jax.default_backend()}, devices: {jax.devices()}")
    variants = ("scheduled", "isolating", "per_term", "hebbian")
    print(
        f"{'size':9} {'plain s/batch':>13}"
        + "".join(f" {v + ' s/batch':>18} ratio" for v in variants)
    )
    for size in args.sizes:
        medians = measure(size, args.repeats)
        plain = medians["plain"]
        print(
            f"{size:9} {plain:13.5f}"
            + "".join(f" {medians[v]:18.5f} {medians[v] / plain:5.2f}" for v in variants),
            flush=True,
        )


if __name__ == "__main__":
    main()
