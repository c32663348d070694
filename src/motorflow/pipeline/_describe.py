"""Experiments described in a sentence or two, for figure captions and the report."""

from __future__ import annotations

from ._experiments import Experiment


def _a(kind: str) -> str:
    words = kind.replace("_", " ")
    return f"{'an' if words[0] in 'aeiou' else 'a'} {words}"


def describe_experiment(experiment: Experiment) -> str:
    """What produced an experiment's results, in plain words: seed, task, model,
    feedback, training (and what it started from).

    e.g. ``Experiment quiet: seed 0; a reach task (60 steps of 0.05 s); gru network with
    32 units controlling a point mass; feedback delayed 2 steps, noise std 0; 5
    replicates trained for 1200 batches of 64 trials with adam (learning rate 0.01).``
    """
    model, train, task = experiment.model, experiment.train, experiment.task
    network, feedback = model.network, model.feedback
    parts = [
        f"seed {experiment.seed}",
        f"{_a(task.kind)} task ({task.n_steps} steps of {model.dt:g} s"
        + (f", {len(task.perturbations)} training perturbation(s)" if task.perturbations else "")
        + ")",
        f"{network.cell.kind} network with {network.hidden_size} units"
        + (f" (hidden noise std {network.hidden_noise_std:g})" if network.hidden_noise_std else "")
        + f" controlling {_a(model.plant.kind)}",
        f"feedback delayed {feedback.delay} steps, noise std {feedback.noise_std:g}",
        f"{train.n_replicates} replicates trained for {train.n_batches} batches of "
        f"{train.batch_size} trials with {train.optimizer.name} "
        f"(learning rate {train.optimizer.learning_rate:g})",
    ]
    if experiment.init_from:
        parts.append(f"starting from the trained model of {experiment.init_from}")
    return f"Experiment {experiment.name}: " + "; ".join(parts) + "."
