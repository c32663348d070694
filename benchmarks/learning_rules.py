"""Each learning rule's seconds per batch relative to full BPTT, side by side, and how
well e-prop's update aligns with the BPTT gradient.

Each rule trains the same batches from the same state with the trainer's compiled
chunk (`Trainer.run_chunk`), interleaved repeat by repeat; medians. The size is the
default config's (config/config.yaml: 5 replicates, 64 trials of 60 steps, 32 units)
with a leaky RNN (tau 0.1 s), the cell every rule can train (e-prop needs a tanh
unit); BPTT of the default GRU is shown for reference. The alignment is the
correlation, over all trained arrays of one replicate, of e-prop's update with the
BPTT gradient on one batch, at the initial parameters. Usage:

    python benchmarks/learning_rules.py [--repeats 5] [--windows 5 20]
"""

from __future__ import annotations

import argparse
import statistics

import jax
import numpy as np
from training_controls import setup, timed

from motorflow._model._ensemble import take_replicate
from motorflow._training.rules import BPTT, EProp

# replicates, trials per batch, steps, hidden units, batches per compiled call
DEFAULT_SIZE = (5, 64, 60, 32, 20)
LEAKY = {"feedback": {"delay": 2}, "network": {"cell": "leaky", "tau": 0.1}}


def trainer_for(learning: dict, model: dict = LEAKY, **train):
    return setup(DEFAULT_SIZE, model=model, learning=learning, **train)


def alignment(trainer, chunk, rule: EProp, learning_state) -> list[float]:
    """Per replicate, the correlation of `rule`'s update with the BPTT gradient."""
    found = []
    for index in range(trainer.n_replicates):
        params = take_replicate(trainer.initial_params, index)
        frozen = take_replicate(trainer.frozen, index)
        trials = jax.tree.map(lambda x, i=index: x[0, i], chunk)
        batch = trainer.replicate_batch(params, frozen, trials, jax.random.key(index))
        state = take_replicate(learning_state, index) if learning_state is not None else None
        flat = [
            np.concatenate(
                [np.ravel(g) for g in jax.tree.leaves(r.value_and_grad(batch, params, s)[1])]
            )
            for r, s in ((rule, state), (BPTT(), None))
        ]
        found.append(float(np.corrcoef(*flat)[0, 1]))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--windows", type=int, nargs="+", default=[5, 20])
    args = parser.parse_args()
    print(f"jax {jax.__version__}, backend {jax.default_backend()}, devices: {jax.devices()}")
    runs = {
        "bptt": trainer_for({"kind": "bptt"}),
        "bptt (gru, the default cell)": trainer_for(
            {"kind": "bptt"}, model={"feedback": {"delay": 2}}
        ),
    }
    for w in args.windows:
        runs[f"truncated_bptt (window {w})"] = trainer_for({"kind": "truncated_bptt", "window": w})
    runs["truncated_bptt (20, update_every 20)"] = trainer_for(
        {"kind": "truncated_bptt", "window": 20, "update_every": 20}
    )
    for feedback in ("random", "symmetric"):
        runs[f"eprop ({feedback})"] = trainer_for({"kind": "eprop", "feedback": feedback})
    runs["rls"] = trainer_for({"kind": "rls"}, trainable=["network.readout"])
    runs["rls (update_every 1: FORCE, online)"] = trainer_for(
        {"kind": "rls", "update_every": 1}, trainable=["network.readout"]
    )
    states = {name: run[1] for name, run in runs.items()}
    times: dict[str, list[float]] = {name: [] for name in runs}
    for repeat in range(args.repeats + 1):  # the first round compiles
        for name, (trainer, _, chunk, index) in runs.items():
            seconds, states[name] = timed(trainer.run_chunk, states[name], chunk, index)
            if repeat:
                times[name].append(seconds)
    bptt = statistics.median(times["bptt"])
    print(f"{'rule (leaky 32 unless named)':38} {'s/batch':>9} {'ratio to bptt':>14}")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:38} {median:9.5f} {median / bptt:14.2f}")
    print("\ncorrelation of e-prop's update with the BPTT gradient, per replicate:")
    for feedback in ("random", "symmetric"):
        trainer, state, chunk, _ = runs[f"eprop ({feedback})"]
        values = alignment(trainer, chunk, EProp(feedback=feedback), state.learning_state)
        print(f"  {feedback:9} " + "  ".join(f"{v:.3f}" for v in values))


if __name__ == "__main__":
    main()
