"""Each learning rule's seconds per batch relative to full BPTT, side by side, and how
well e-prop's update aligns with the BPTT gradient.

Each rule trains the same batches from the same state with the trainer's compiled
chunk (`Trainer.run_chunk`), interleaved repeat by repeat; medians. The size is the
default config's (config/config.yaml: 5 replicates, 64 trials of 60 steps, 32 units)
with a leaky RNN (tau 0.1 s), the cell every rule can train (e-prop needs a tanh
unit); BPTT of the default GRU is shown for reference. The alignment is the
correlation, over all trained arrays of one replicate, of e-prop's update with the
BPTT gradient on one batch, at the initial parameters.

With ``--lengths``, the cost as the trial grows instead: for each rule given by
``--rule`` (``kind[:key=value,...]`` or a JSON learning block; default BPTT and
e-prop with random feedback) and each trial length, the seconds per batch of the
trainer's compiled chunk (leaky RNN 32 units, point mass, 64 trials per batch,
``--replicates`` replicates) and its peak memory: the compiled program's memory
analysis (temporaries, arguments, outputs; deterministic, on any backend), the same
for the rule's gradient of one replicate's batch alone, and on a GPU the device's
peak bytes in use so far. ``--profile`` also times the parts of e-prop's gradient
(the probe's backward pass, the per-trial trace scan) and the trace scan's exact
rewrite as a reverse-time filter of the learning signal; ``--filtered-traces`` also
runs each e-prop rule with that rewrite in place of its trace scan (the rule now uses
the rewrite itself unless traces are clipped, so the two rows agree). Usage:

    python benchmarks/learning_rules.py [--repeats 5] [--windows 5 20]
    python benchmarks/learning_rules.py --lengths 60 240 960 [--rule bptt] \\
        [--rule eprop:feedback=random] [--replicates 1] [--repeats 3] [--profile] \\
        [--filtered-traces]
    python benchmarks/learning_rules.py --train-alignment 1200 --rule eprop:feedback=random

``--train-alignment`` trains each rule as config/learning-rules.yaml's leaky-32
experiments (keys from seed 0 here) and prints the gradient alignment the history
records at each validation.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np
import yaml
from training_controls import setup, timed

from motorflow._model._ensemble import take_replicate
from motorflow._model._loop import Probe, RolloutOptions
from motorflow._training.rules import BPTT, EProp, eligibility_gradient
from motorflow._training.rules._eprop_leaky import filtered_eligibility_gradient

# replicates, trials per batch, steps, hidden units, batches per compiled call
DEFAULT_SIZE = (5, 64, 60, 32, 20)
LEAKY = {"feedback": {"delay": 2}, "network": {"cell": {"kind": "leaky", "tau": 0.1}}}


def trainer_for(learning: dict, model: dict = LEAKY, **train):
    return setup(DEFAULT_SIZE, model=model, learning=learning, **train)


def alignment(trainer, chunk, rule: EProp, learning_state) -> list[float]:
    """Per replicate, the correlation of `rule`'s update with the BPTT gradient."""
    found = []
    for index in range(trainer.n_replicates):
        params = take_replicate(trainer.initial_params, index)
        frozen = take_replicate(trainer.frozen, index)
        trials = jax.tree.map(lambda x, i=index: x[0, i], chunk)
        batch = trainer.replicate_batch(params, frozen, trials, key=jax.random.key(index))
        state = take_replicate(learning_state, index) if learning_state is not None else None
        flat = [
            np.concatenate(
                [np.ravel(g) for g in jax.tree.leaves(r.value_and_grad(batch, params, s)[1])]
            )
            for r, s in ((rule, state), (BPTT(), None))
        ]
        found.append(float(np.corrcoef(*flat)[0, 1]))
    return found


def parse_rule(text: str) -> dict:
    """A learning block from ``kind[:key=value,...]`` (values read as YAML) or JSON."""
    if text.lstrip().startswith("{"):
        return json.loads(text)
    kind, _, rest = text.partition(":")
    block = {"kind": kind.strip()}
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        block[key.strip()] = yaml.safe_load(value)
    return block


def rule_label(block: dict) -> str:
    settings = ", ".join(f"{k}={v}" for k, v in block.items() if k != "kind")
    return f"{block['kind']}({settings})" if settings else block["kind"]


def memory(compiled) -> dict[str, int]:
    """The compiled program's buffer sizes in bytes (XLA's memory analysis); `peak`
    is temporaries + arguments + outputs - aliased (donated) buffers."""
    found = compiled.memory_analysis()
    sizes = {
        name: int(getattr(found, f"{name}_size_in_bytes", 0))
        for name in ("temp", "argument", "output", "alias")
    }
    sizes["peak"] = sizes["temp"] + sizes["argument"] + sizes["output"] - sizes["alias"]
    return sizes


def device_peak() -> int | None:
    """The device's peak bytes in use so far (GPU; None where not reported)."""
    stats = jax.devices()[0].memory_stats() or {}
    return stats.get("peak_bytes_in_use")


def first_replicate(trainer, state, chunk):
    """The first replicate's parameters, rule state, first batch's trials and a key."""
    params = take_replicate(state.params, 0)
    rule_state = state.learning_state
    rule_state = take_replicate(rule_state, 0) if rule_state is not None else None
    trials = jax.tree.map(lambda x: x[0, 0], chunk)
    return params, rule_state, trials, jax.random.key(0)


def rule_gradient(trainer):
    """The learning rule's gradient of one replicate's batch, jitted."""
    frozen = take_replicate(trainer.frozen, 0)

    def gradient(params, rule_state, trials, key):
        batch = trainer.replicate_batch(params, frozen, trials, key=key)
        return trainer.learning_rule.value_and_grad(batch, params, rule_state)[1]

    return jax.jit(gradient)


@contextlib.contextmanager
def filtered_traces():
    """Within, `EProp` programs traced run :func:`filtered_gradient` per trial in place of
    the trace scan: the proposed fix, timed here without editing the rule."""
    from motorflow._training.rules import _eprop

    def per_trial(weights, alpha, network_input, hidden, signal, *, trace_clip=None):
        if trace_clip is not None:
            raise ValueError("the filtered rewrite is exact only without trace clipping")
        return filtered_eligibility_gradient(
            weights, alpha, network_input[None], hidden[None], signal[None]
        )

    original = _eprop.eligibility_gradient
    _eprop.eligibility_gradient = per_trial
    try:
        yield
    finally:
        _eprop.eligibility_gradient = original


def eprop_parts(trainer, state, chunk) -> dict:
    """Jitted parts of e-prop's gradient of one replicate's batch and their inputs:
    the forward rollout alone, the probe's backward pass (the learning signal), the
    per-trial trace scan as `EProp` runs it, and its filtered rewrite."""
    from motorflow._training.rules._eprop_leaky import CellWeights

    params, rule_state, trials, key = first_replicate(trainer, state, chunk)
    frozen = take_replicate(trainer.frozen, 0)
    batch = trainer.replicate_batch(params, frozen, trials, key=key)
    network = batch.model.network
    unit = network.cell.rnn
    alpha = float(network.cell.alpha)
    weights = CellWeights(unit.weight_in, unit.weight_rec, unit.bias)
    leading = (trials.init_pos.shape[0], trainer.task.n_steps)
    probe = Probe(
        output=jnp.zeros((*leading, network.readout.out_features)),
        hidden=jnp.zeros((*leading, network.cell.hidden_size)),
    )

    @jax.jit
    def forward(params):
        return batch.loss(params, states=True)

    @jax.jit
    def signal(probe):
        def probed(probe):
            return batch.loss(params, options=RolloutOptions(probe=probe), states=True)

        return jax.value_and_grad(probed, has_aux=True)(probe)

    (_, (_, rollouts)), signals = signal(probe)
    feedback = rule_state["feedback"] if rule_state is not None else network.readout.weight.T
    learning = signals.output @ feedback.T + signals.hidden

    @jax.jit
    def traces(x, h, learning):
        per_trial = jax.vmap(lambda x, h, s: eligibility_gradient(weights, alpha, x, h, s))(
            x, h, learning
        )
        return jax.tree.map(lambda g: jnp.sum(g, axis=0), per_trial)

    filtered = jax.jit(lambda x, h, s: filtered_eligibility_gradient(weights, alpha, x, h, s))
    trace_args = (rollouts.network_input, rollouts.hidden, learning)
    return {
        "forward rollout (no gradient)": (forward, (params,)),
        "probe's backward pass (learning signal)": (signal, (probe,)),
        "trace scan (vmap over trials)": (traces, trace_args),
        "filtered rewrite of the trace scan": (filtered, trace_args),
    }


def best_seconds(function, args, repeats: int) -> float:
    jax.block_until_ready(function(*args))  # compile
    found = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(function(*args))
        found.append(time.perf_counter() - start)
    return statistics.median(found)


def compiled_entry(block: dict, size: tuple[int, ...]) -> dict:
    """A rule's trainer at `size`, its compiled chunk, state, trials and memory."""
    trainer, state, chunk, index = setup(size, model=LEAKY, learning=block)
    compiled = trainer.run_chunk.lower(state, chunk, index).compile()
    gradient = rule_gradient(trainer)
    one = first_replicate(trainer, state, chunk)
    return {
        "trainer": trainer,
        # The compiled chunk takes the trainer's arrays first (`shared_program`).
        "run": functools.partial(compiled, trainer.run_chunk.leaves),
        "state": state,
        "chunk": chunk,
        "index": index,
        "gradient": (gradient, one),
        "chunk memory": memory(compiled),
        "gradient memory": memory(gradient.lower(*one).compile()),
    }


def cost(args) -> None:
    """Seconds per batch and memory of each rule as the trial grows; the rules run
    interleaved, repeat by repeat, and each row is the median."""
    blocks = [parse_rule(r) for r in args.rule or ["bptt", "eprop:feedback=random"]]
    print(
        f"leaky RNN {args.hidden} units, point mass, delay 2, {args.batch} trials per batch, "
        f"{args.replicates} replicate(s), {args.batches} batches per compiled chunk; "
        f"medians of {args.repeats} interleaved repeats"
    )
    print(
        f"{'rule':44} {'steps':>5} {'s/batch':>9} {'chunk temp MiB':>14} {'chunk peak MiB':>14} "
        f"{'grad temp MiB':>13} {'device peak MiB':>15}"
    )
    mib = 2.0**20
    for n_steps in args.lengths:
        size = (args.replicates, args.batch, n_steps, args.hidden, args.batches)
        entries = {}
        for block in blocks:
            entries[rule_label(block)] = compiled_entry(block, size) | {"block": block}
            if args.filtered_traces and block["kind"] == "eprop":
                with filtered_traces():
                    entry = compiled_entry(block, size) | {"block": block}
                entries[f"{rule_label(block)} + filtered traces"] = entry
        times = {name: [] for name in entries}
        for repeat in range(args.repeats + 1):  # the first round warms up
            for name, entry in entries.items():
                seconds, entry["state"] = timed(
                    entry["run"], entry["state"], entry["chunk"], entry["index"]
                )
                if repeat:
                    times[name].append(seconds)
        peak = device_peak()
        for name, entry in entries.items():
            chunk_memory, gradient_memory = entry["chunk memory"], entry["gradient memory"]
            print(
                f"{name:44} {n_steps:5d} {statistics.median(times[name]):9.5f} "
                f"{chunk_memory['temp'] / mib:14.2f} {chunk_memory['peak'] / mib:14.2f} "
                f"{gradient_memory['temp'] / mib:13.2f} "
                f"{'n/a' if peak is None else f'{peak / mib:.1f}':>15}",
                flush=True,
            )
        if args.profile:
            for name, entry in entries.items():
                if "filtered" in name:
                    continue
                if entry["block"]["kind"] == "bptt":
                    seconds = best_seconds(*entry["gradient"], args.repeats)
                    print(f"    {'BPTT gradient (one replicate)':44} {seconds:9.5f} s")
                if entry["block"]["kind"] == "eprop":
                    parts = eprop_parts(entry["trainer"], entry["state"], entry["chunk"])
                    for part, (function, part_args) in parts.items():
                        seconds = best_seconds(function, part_args, args.repeats)
                        part_memory = memory(function.lower(*part_args).compile())
                        print(
                            f"    {part:44} {seconds:9.5f} s (one replicate), "
                            f"temp {part_memory['temp'] / mib:.2f} MiB",
                            flush=True,
                        )
        print(flush=True)


def check_filtered(args) -> float:
    """The largest relative difference of the filtered rewrite from the trace scan."""
    size = (1, 8, 60, args.hidden, 1)
    trainer, state, chunk, _ = setup(size, model=LEAKY, learning={"kind": "eprop"})
    parts = eprop_parts(trainer, state, chunk)
    scan, scan_args = parts["trace scan (vmap over trials)"]
    rewrite, _ = parts["filtered rewrite of the trace scan"]
    worst = 0.0
    for a, b in zip(jax.tree.leaves(scan(*scan_args)), jax.tree.leaves(rewrite(*scan_args))):
        worst = max(worst, float(jnp.max(jnp.abs(a - b)) / jnp.max(jnp.abs(a))))
    return worst


def alignment_over_training(args) -> None:
    """Train with each rule as `config/learning-rules.yaml`'s leaky-32 experiments do
    (its task, model and training; keys from seed 0 here, not the pipeline's) and
    print the recorded gradient alignment per trained array, validation step and
    replicate."""
    from pathlib import Path

    import motorflow as mf

    settings = yaml.safe_load(
        (Path(__file__).parents[1] / "config/learning-rules.yaml").read_text()
    )
    task = mf.Task(mf.TaskConfig.from_dict(settings["tasks"]["reach"]))
    model = mf.ModelConfig.from_dict(settings["models"]["leaky32"])
    blocks = [parse_rule(r) for r in args.rule or ["eprop:feedback=random"]]
    for block in blocks:
        training = {k: v for k, v in settings["trainings"]["bptt"].items() if k != "checkpoint"}
        every = max(1, args.train_alignment // 6)
        training |= {"learning": block, "n_batches": args.train_alignment}
        training |= {"validation": {"every": every}}
        config = mf.TrainConfig.from_dict(training)
        keys = jax.random.split(jax.random.key(0), 3)
        n = config.n_replicates
        ensemble = mf.make_ensemble(model, n_replicates=n, n_task_inputs=task.n_inputs, key=keys[0])
        trials = task.training_trials(
            key=keys[1], n_replicates=n, n_batches=config.n_batches, batch_size=config.batch_size
        )
        start = time.perf_counter()
        result = mf.train(ensemble, trials, task, config, key=keys[2], progress=False)
        history = result.history
        print(
            f"{rule_label(block)}: {time.perf_counter() - start:.0f} s; cosine with the BPTT "
            f"gradient per replicate, at validation steps {history['validation_step'].tolist()}"
        )
        for name, values in history["gradient_alignment"].items():
            rows = " | ".join(" ".join(f"{x:5.2f}" for x in row) for row in values)
            print(f"  {name:28} {rows}")
        final = history["validation"]["total"][-1]
        print("  final validation loss " + " ".join(f"{x:.4f}" for x in final), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--windows", type=int, nargs="+", default=[5, 20])
    parser.add_argument(
        "--lengths", type=int, nargs="*", default=[], help="trial lengths: the cost table"
    )
    parser.add_argument(
        "--rule",
        action="append",
        help="a learning block, kind[:key=value,...] or JSON (repeatable)",
    )
    parser.add_argument("--replicates", type=int, default=1)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--batches", type=int, default=2, help="batches per compiled chunk")
    parser.add_argument("--profile", action="store_true", help="time e-prop's parts")
    parser.add_argument(
        "--filtered-traces",
        action="store_true",
        help="also run each e-prop rule with its trace scan replaced by the exact filtered "
        "rewrite (the proposed fix; traces must not be clipped)",
    )
    parser.add_argument(
        "--train-alignment",
        type=int,
        default=0,
        metavar="BATCHES",
        help="train each --rule this many batches as config/learning-rules.yaml's "
        "leaky-32 experiments and print the gradient alignment over training",
    )
    args = parser.parse_args()
    print(f"jax {jax.__version__}, backend {jax.default_backend()}, devices: {jax.devices()}")
    if args.train_alignment:
        alignment_over_training(args)
        return
    if args.lengths:
        if args.profile:
            print(
                f"filtered rewrite vs trace scan, max relative difference {check_filtered(args):.2e}"
            )
        cost(args)
        return
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
