"""What each gradient path of the closed loop is worth: the cosine of cut gradients
with the full BPTT gradient, per parameter group and replicate.

On the learning-rules config's model (config/learning-rules.yaml, experiment `bptt`:
leaky RNN of 32 units, tau 0.1 s, point mass, dt 0.05 s, feedback delay 2 steps,
60-step reaches, its loss), at the initial parameters and, when it has been trained
(`results/bptt/model`), at the trained BPTT parameters, on one batch of 64 trials per
replicate drawn from the experiment's seed, each of

- BPTT with the path through the sensory feedback cut (`through_feedback: false`),
- BPTT with the recurrence cut beyond each unit's own leak (`recurrence: leak`),
- both (exactly symmetric e-prop's gradient, Bellec et al. 2020, Nat Commun 11:3625),
- e-prop with symmetric and with random feedback,

is compared with the full BPTT gradient by its cosine, per parameter group (input
weights, recurrent weights, bias, readout) and over all of them, with the norm ratio
over all. Usage (repository root, after training `bptt` for the trained rows):

    python benchmarks/gradient_paths.py [--config config/learning-rules.yaml]
        [--experiment bptt] [--results results] [--batch-size 64]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import equinox as eqx
import jax
import numpy as np

import motorflow as mf
import motorflow.pipeline as mfp
from motorflow._model._attribute_paths import attribute_getter
from motorflow._model._ensemble import take_replicate
from motorflow._training.rules import BPTT, EProp

RULES = {
    "no feedback path": BPTT(through_feedback=False),
    "leak only": BPTT(recurrence="leak"),
    "leak only, no feedback": BPTT(through_feedback=False, recurrence="leak"),
    "eprop symmetric": EProp(feedback="symmetric"),
    "eprop random": EProp(feedback="random"),
}
GROUPS = {
    "input": ("network.cell.rnn.weight_in",),
    "recurrent": ("network.cell.rnn.weight_rec",),
    "bias": ("network.cell.rnn.bias",),
    "readout": ("network.readout.weight", "network.readout.bias"),
}


def _flat(gradient, paths) -> np.ndarray:
    return np.concatenate([np.ravel(attribute_getter(path)(gradient)) for path in paths])


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def compare(trainer: mf.Trainer, trials, keys, learning_state) -> dict[str, list[dict]]:
    """Per rule, per replicate: the cosine with BPTT's gradient per group and overall,
    and the norm ratio overall."""
    every = tuple(path for paths in GROUPS.values() for path in paths)
    found: dict[str, list[dict]] = {name: [] for name in RULES}
    for index in range(trainer.n_replicates):
        params = take_replicate(trainer.initial_params, index)
        frozen = take_replicate(trainer.frozen, index)
        batch_trials = jax.tree.map(lambda x, i=index: x[0, i], trials)
        batch = trainer.replicate_batch(params, frozen, batch_trials, key=keys[index])
        state = take_replicate(learning_state, index)

        def gradient(rule, rule_state, batch=batch, params=params):
            return eqx.filter_jit(lambda at, s: rule.value_and_grad(batch, at, s)[1])(
                params, rule_state
            )

        exact = gradient(BPTT(), None)
        for name, rule in RULES.items():
            rule_state = state if (isinstance(rule, EProp) and rule.feedback == "random") else None
            cut = gradient(rule, rule_state)
            row = {
                g: _cosine(_flat(cut, paths), _flat(exact, paths)) for g, paths in GROUPS.items()
            }
            row["all"] = _cosine(_flat(cut, every), _flat(exact, every))
            row["norm ratio"] = float(
                np.linalg.norm(_flat(cut, every)) / np.linalg.norm(_flat(exact, every))
            )
            found[name].append(row)
    return found


def print_table(title: str, found: dict[str, list[dict]]) -> None:
    columns = [*GROUPS, "all", "norm ratio"]
    print(f"\n{title}: mean [min, max] over replicates")
    print(f"{'gradient':24}" + "".join(f" {c:>23}" for c in columns))
    for name, rows in found.items():
        cells = []
        for column in columns:
            values = np.array([row[column] for row in rows])
            cells.append(f"{values.mean():.3f} [{values.min():.3f}, {values.max():.3f}]")
        print(f"{name:24}" + "".join(f" {c:>23}" for c in cells))
    print("per replicate, overall cosine:")
    for name, rows in found.items():
        print(f"  {name:24}" + " ".join(f"{row['all']:.3f}" for row in rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="config/learning-rules.yaml")
    parser.add_argument("--experiment", default="bptt")
    parser.add_argument("--results", default="results")
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    print(f"jax {jax.__version__}, backend {jax.default_backend()}")
    experiment = mfp.resolve_experiment(mfp.load_config_file(args.config), args.experiment)
    task = mf.Task(experiment.task)
    seeds = mfp.experiment_keys(experiment.seed)
    n_replicates = experiment.train.n_replicates
    # One batch per replicate, its trials and noise from streams of the experiment's
    # seed that training never draws (index 1000 of the trial and training streams).
    trials = task.training_trials(
        key=jax.random.fold_in(seeds["trials"], 1000),
        n_replicates=n_replicates,
        n_batches=1,
        batch_size=args.batch_size,
    )
    keys = jax.random.split(jax.random.fold_in(seeds["train"], 1000), n_replicates)
    initial = mf.make_ensemble(
        experiment.model,
        n_replicates=n_replicates,
        n_task_inputs=task.n_inputs,
        key=seeds["init"],
    )
    states = {"initial parameters": initial}
    trained_path = Path(args.results) / args.experiment / "model"
    if trained_path.exists():
        states["trained (BPTT) parameters"] = mf.load_ensemble(trained_path)[0]
    else:
        print(f"(no {trained_path}: train {args.experiment!r} for the trained rows)")
    for title, ensemble in states.items():
        trainer = mf.Trainer(ensemble, task, experiment.train)
        # Random feedback weights as the e-prop experiment draws them.
        eprop = mf.Trainer(
            ensemble,
            task,
            experiment.train.model_copy(update={"learning": RULES["eprop random"]}),
        )
        learning_state = eprop.init(
            seeds["train"], learning_key=jax.random.fold_in(seeds["train"], 3)
        ).learning_state
        print_table(title, compare(trainer, trials, keys, learning_state))


if __name__ == "__main__":
    main()
