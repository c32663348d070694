"""Every config edit changes the params of exactly the jobs whose results depend on it.

The rule params are the settings `mfp.job_settings` gives each job (one param per
setting), so Snakemake reruns a job exactly when one of them changes;
`test_edits_workflow.py` checks with the real `snakemake` that it does, and that
the rerun equals a fresh run.
"""

from __future__ import annotations

import copy

import pytest
from workflow_helpers import at, tiny_config

import motorflow.pipeline as mfp

BOTH = ("quiet", "noisy")


def settings_of(config: dict) -> dict:
    settings = mfp.parse_config(copy.deepcopy(config))
    return mfp.job_settings(settings, mfp.resolve_experiments(settings))


def changed_jobs(before: dict, after: dict) -> set[str]:
    """`rule:wildcard` of every job of `after` that is new or whose settings changed."""
    old, new = settings_of(before), settings_of(after)
    return {
        f"{rule}:{'*' if rule == 'trials' else name}"
        for (rule, name), settings in new.items()
        if old.get((rule, name)) != settings
    }


def jobs(*rules, experiments=BOTH) -> set[str]:
    out = set()
    for rule in rules:
        if rule == "trials":
            out.add("trials:*")
        elif rule in ("comparison_figure", "summary"):
            out.add(f"{rule}:")
        else:
            out |= {f"{rule}:{name}" for name in experiments}
    return out


TASK = jobs("trials", "train", "evaluate", "analysis")  # the task: every stage that reads it
DATA = jobs("trials", "train")  # training data; evaluation reruns on the new model (its input)
TRAIN = jobs("train")
NOTHING: set[str] = set()
FIGURES = jobs("experiment_figures", "analysis_figures", "comparison_figure") | {
    "protocol_figure:noise"
}
# the experiments, or what pairs them (seed, replicate count, the experiment started from)
SUMMARY = {"summary:"}
# The jobs of an experiment
EXPERIMENT_JOBS = ("train", "evaluate", "experiment_figures", "analysis", "analysis_figures")
ARM_FIGURES = jobs("arm_figure")  # new jobs: experiments with an arm get its figure
# snapshots add each experiment's learning curve, which the protocol's figure then draws
CURVES = jobs("learning_curve") | {"protocol_figure:noise"}


def constrained_rnn(config):
    """An rnn cell (a recurrent matrix) under every kind of weight constraint."""
    config["models"]["small"]["network"]["cell"] = "rnn"
    config["trainings"]["quick"]["constraints"] = [
        {"kind": "dale", "excitatory_fraction": 0.5, "readout": True},
        {"kind": "connectivity", "density": 0.5, "self_connections": False},
        {"kind": "spectral_radius", "max": 0.9},
        {"kind": "spectral_norm", "max": 2.0},
    ]


def rename_training(config):
    config["trainings"]["fast"] = config["trainings"].pop("quick")
    for experiment in config["experiments"].values():
        experiment["training"] = "fast"


def add_experiment(config):
    config["experiments"]["extra"] = {"task": "reach", "model": "small", "training": "quick"}


def add_sweep(config):
    config["sweeps"] = {"lr": {"experiment": "quiet", "grid": {"seed": [3]}}}


CORPUS = {
    # task (named block shared by both experiments)
    "task n_steps": (at("tasks.reach.n_steps", 12), TASK),
    "task workspace": (at("tasks.reach.workspace", [[-0.5, -0.5], [0.5, 0.5]]), TASK),
    "task eval directions": (at("tasks.reach.eval.n_directions", 6), TASK),
    "task eval distances": (at("tasks.reach.eval.distances", [0.25, 0.5]), TASK),
    "task eval center": (at("tasks.reach.eval.center", [0.1, 0.0]), TASK),
    "training perturbation": (
        at("tasks.reach.perturbations", [{"kind": "curl", "strength": [0.0, 10.0]}]),
        TASK,
    ),
    # task kinds: the go cue adds a network input, so a delayed reach is a new model
    "task kind center_out": (at("tasks.reach.kind", "center_out"), TASK),
    "task kind posture": (at("tasks.reach.kind", "posture"), TASK),
    "delayed reach task (kind and go steps)": (
        lambda config: config["tasks"]["reach"].update(kind="delayed_reach", go_step=[3, 6]),
        TASK,
    ),
    # model: plant, network, feedback; every setting without weights
    "model dt": (at("models.small.dt", 0.04), TRAIN),
    "model mass": (at("models.small.plant.mass", 2.0), TRAIN),
    "model damping": (at("models.small.plant.damping", 0.5), TRAIN),
    "plant integration": (at("models.small.plant.method", "rk4"), TRAIN),
    "plant sub-steps": (at("models.small.plant.n_substeps", 2), TRAIN),
    # an arm long enough to reach the whole tiny workspace
    "plant kind": (
        at(
            "models.small.plant",
            {
                "kind": "arm",
                "upper_arm_length": 2.0,
                "forearm_length": 2.0,
                "joint_limits_deg": None,
                "shoulder_pos": [0.0, -2.0],
            },
        ),
        TRAIN | ARM_FIGURES,
    ),
    "arm setting": (
        at(
            "models.small.plant",
            {
                "kind": "arm",
                "upper_arm_length": 2.1,
                "forearm_length": 2.0,
                "joint_limits_deg": None,
                "shoulder_pos": [0.0, -2.0],
            },
        ),
        TRAIN | ARM_FIGURES,
    ),
    "model cell": (at("models.small.network.cell", "rnn"), TRAIN),
    "model hidden size": (at("models.small.network.hidden_size", 6), TRAIN),
    # tau is a setting of the leaky and reservoir cells' blocks (with the gru, an error)
    "leaky tau": (at("models.small.network.cell", {"kind": "leaky", "tau": 0.2}), TRAIN),
    "model hidden noise": (at("models.small.network.hidden_noise_std", 0.02), TRAIN),
    # FORCE's reservoir: its gain, sparsity, sub-steps and output fed back.
    "reservoir network": (
        at(
            "models.small.network",
            {
                "cell": {
                    "kind": "reservoir",
                    "tau": 0.1,
                    "gain": 1.2,
                    "connectivity": 0.5,
                    "output_feedback": True,
                },
                "hidden_size": 8,
                "substeps": 2,
            },
        ),
        TRAIN,
    ),
    "model feedback delay": (at("models.small.feedback.delay", 2), TRAIN),
    # noisy overrides the noise, so only quiet sees the block's value
    "model feedback noise": (at("models.small.feedback.noise_std", 0.05), {"train:quiet"}),
    "override of one experiment": (
        at("experiments.noisy.override.model.feedback.noise_std", 0.2),
        {"train:noisy"},
    ),
    # training
    "replicates": (at("trainings.quick.n_replicates", 3), DATA | SUMMARY),
    "batches": (at("trainings.quick.n_batches", 30), DATA),
    "batch size": (at("trainings.quick.batch_size", 4), DATA),
    "shared trials": (at("trainings.quick.shared_trials", True), DATA),
    "trainable": (at("trainings.quick.trainable", ["network.readout"]), TRAIN),
    "optimizer name": (at("trainings.quick.optimizer.name", "sgd"), TRAIN),
    "learning rate": (at("trainings.quick.optimizer.learning_rate", 0.02), TRAIN),
    # each acts only with its optimizer (with another, an error)
    "weight decay": (
        at("trainings.quick.optimizer", {"name": "adamw", "weight_decay": 0.01}),
        TRAIN,
    ),
    "momentum": (at("trainings.quick.optimizer", {"name": "sgd", "momentum": 0.9}), TRAIN),
    "clipping": (at("trainings.quick.optimizer.clip_global_norm", 1.0), TRAIN),
    "schedule": (at("trainings.quick.optimizer.schedule", {"kind": "exponential"}), TRAIN),
    # each acts only in its schedule's kind (in another, an error)
    "warm-up": (
        at("trainings.quick.optimizer.schedule", {"kind": "warmup_cosine", "warmup_steps": 5}),
        TRAIN,
    ),
    "end factor": (
        at("trainings.quick.optimizer.schedule", {"kind": "warmup_cosine", "end_factor": 0.1}),
        TRAIN,
    ),
    "decay rate": (
        at("trainings.quick.optimizer.schedule", {"kind": "exponential", "decay_rate": 0.5}),
        TRAIN,
    ),
    "decay steps": (
        at("trainings.quick.optimizer.schedule", {"kind": "exponential", "decay_steps": 10}),
        TRAIN,
    ),
    "loss weight": (at("trainings.quick.loss.effort.weight", 0.1), TRAIN),
    "loss discount": (at("trainings.quick.loss.position.discount_power", 2), TRAIN),
    "validation cadence": (at("trainings.quick.validation", {"every": 5}), TRAIN),
    "validation at given batches": (at("trainings.quick.validation", {"at": [3, 7]}), TRAIN),
    "validation dense early": (
        at("trainings.quick.validation", {"first": 2, "exponential": {"start": 3}, "times": 2}),
        TRAIN,
    ),
    "log cadence": (at("trainings.quick.log", {"every": 5, "seconds": 2}), NOTHING),
    "TensorBoard on": (at("trainings.quick.tensorboard", True), NOTHING),
    "log at batches": (
        at("trainings.quick.log", {"at": [3], "first": 1, "exponential": {}, "times": 2}),
        NOTHING,
    ),
    "divergence isolated": (at("trainings.quick.on_divergence", "isolate"), TRAIN),
    "weight constraints": (constrained_rnn, TRAIN),
    "a training stage": (
        at("trainings.quick.stages", [{"at": 5, "trainable": ["network.readout"]}]),
        TRAIN,
    ),
    "a part's learning rate": (
        at("trainings.quick.optimizer.learning_rates", {"network.cell": 0.001}),
        TRAIN,
    ),
    "snapshots": (at("trainings.quick.snapshots", {"batches": {"times": 2}}), TRAIN | CURVES),
    "snapshots without trials": (
        at("trainings.quick.snapshots", {"batches": {"every": 4}, "trials": False}),
        TRAIN | CURVES,
    ),
    "gradient norms per term": (at("trainings.quick.gradient_norms", "per_term"), TRAIN),
    "truncated backpropagation": (
        at("trainings.quick.learning", {"kind": "truncated_bptt", "window": 5}),
        TRAIN,
    ),
    "updates within the rollout": (
        at("trainings.quick.learning", {"kind": "truncated_bptt", "window": 3, "update_every": 4}),
        TRAIN,
    ),
    "gradient paths cut": (
        at("trainings.quick.learning", {"through_feedback": False, "recurrence": "leak"}),
        TRAIN,
    ),
    "e-prop with random feedback": (
        lambda config: (
            config["models"]["small"]["network"].update(cell="leaky"),
            config["trainings"]["quick"].update(
                learning={
                    "kind": "eprop",
                    "feedback_scale": 2.0,
                    "trace_clip": 10.0,
                    "replace_non_finite": True,
                }
            ),
        ),
        TRAIN,
    ),
    "e-prop with symmetric feedback": (
        lambda config: (
            config["models"]["small"]["network"].update(cell="rnn"),
            config["trainings"]["quick"].update(
                learning={"kind": "eprop", "feedback": "symmetric"}
            ),
        ),
        TRAIN,
    ),
    "online e-prop taken piece by piece": (
        lambda config: (
            config["models"]["small"]["network"].update(cell="leaky"),
            config["trainings"]["quick"].update(
                learning={"kind": "eprop", "online": True, "segment_steps": 4}
            ),
        ),
        TRAIN,
    ),
    "recursive least squares on the readout": (
        lambda config: (
            config["models"]["small"]["network"].update(cell="leaky"),
            config["trainings"]["quick"].update(
                trainable=["network.readout"],
                learning={
                    "kind": "rls",
                    "regularization": 2.0,
                    "movement_time": 0.3,
                    "update_every": 3,
                    "forgetting": 0.99,
                },
            ),
        ),
        TRAIN,
    ),
    "a Hebbian rule": (
        at("trainings.quick.update_rules", [{"kind": "hebbian", "rate": 1e-3}]),
        TRAIN,
    ),
    "an Oja rule on a schedule": (
        at(
            "trainings.quick.update_rules",
            [{"kind": "oja", "rate": 0.01, "lag": 1, "batches": {"first": 3}}],
        ),
        TRAIN,
    ),
    "seed": (
        at("experiments.quiet.seed", 4),
        {"trials:*", "train:quiet", "evaluate:quiet", "analysis:quiet"} | SUMMARY,
    ),
    # a chain: the child's own settings say where it starts (its input, the parent's
    # model, reruns it whenever the parent reruns); the summary's, that it now descends
    # from its reference (a reason to pair them)
    "an experiment chained": (
        at("experiments.noisy.init_from", "quiet"),
        {"train:noisy"} | SUMMARY,
    ),
    "a chained optimizer continued": (
        lambda config: config["experiments"]["noisy"].update(
            init_from="quiet", reset_optimizer=False
        ),
        {"train:noisy"} | SUMMARY,
    ),
    # evaluation and figures
    "goal radius": (at("evaluation.goal_radius", 0.1), jobs("evaluate")),
    "best model evaluated": (at("evaluation.model", "best"), jobs("evaluate")),
    "a condition added": (
        at("evaluation.conditions.jump", [{"kind": "target_jump", "time": 0.2}]),
        jobs("evaluate"),
    ),
    "a viscous-field condition": (
        at("evaluation.conditions.paper", [{"kind": "viscous_field", "scale": 0.5}]),
        jobs("evaluate"),
    ),
    "a viscous field's matrix": (
        at("tasks.reach.perturbations", [{"kind": "viscous_field", "matrix": [[0, 1], [-1, 0]]}]),
        TASK,
    ),
    "a condition's setting": (
        at("evaluation.conditions.pulse", [{"kind": "force_pulse"}]),
        jobs("evaluate"),
    ),
    "a condition holding the readout's potent space at its start": (
        at(
            "evaluation.conditions.potent",
            [{"kind": "clamp", "space": "output_potent", "at": "start", "start": 0.1}],
        ),
        jobs("evaluate"),
    ),
    "units clamped at their start while training": (
        at("tasks.reach.perturbations", [{"kind": "clamp", "units": [0, 1], "at": "start"}]),
        TASK,
    ),
    "a protocol's metric": (
        at("protocols.noise.metric", "endpoint_error"),
        {"protocol_figure:noise"},
    ),
    "a protocol's panels": (
        at("protocols.noise.panels", [{"stage": "noisy", "condition": "curl_cw"}]),
        {"protocol_figure:noise"},
    ),
    "a protocol's conditions": (
        at("protocols.noise.conditions", ["curl_cw"]),
        {"protocol_figure:noise"},
    ),
    "a protocol added": (
        at("protocols.reverse", {"stages": ["noisy", "quiet"]}),
        {"protocol_figure:reverse"},
    ),
    "a comparison added": (
        at("comparisons.both", {"analysis": "tuning", "experiments": ["quiet", "noisy"]}),
        {"analysis_comparison:both"},
    ),
    "a condition sweep added": (
        at(
            "condition_sweeps.timing",
            {
                "experiments": ["quiet"],
                "conditions": ["unperturbed", "pulse"],
                "setting": "start",
                "unperturbed_at": 0.0,
            },
        ),
        {"condition_sweep_figure:timing"},
    ),
    "conditions reordered": (
        lambda config: config["evaluation"].update(
            conditions=dict(reversed(list(config["evaluation"]["conditions"].items())))
        ),
        jobs("evaluate"),
    ),
    "figure dpi": (at("figures.dpi", 50), FIGURES),
    "figure replicates": (at("figures.max_replicates", 1), FIGURES),
    "figure format": (at("figures.format", "pdf"), FIGURES),
    # which experiments a full run draws: its targets, no figure's content
    "experiments drawn": (at("figures.experiments", ["*"]), NOTHING),
    "library code tracked": (at("track_code", True), jobs("train", "evaluate", "analysis")),
    # analyses and statistics
    "PCA components": (at("analysis.pca.n_components", 2), jobs("analysis")),
    "fixed-point search": (
        at("analysis.fixed_points", {"n_starts": 4, "steps": 50, "learning_rate": 0.1}),
        jobs("analysis"),
    ),
    "fixed-point tolerances": (
        at("analysis.fixed_points", {"tolerance": 1e-6, "distinct_tolerance": 0.01}),
        jobs("analysis"),
    ),
    "fixed-point start noise": (at("analysis.fixed_points.start_noise", 0.0), jobs("analysis")),
    "tuning threshold": (at("analysis.tuning.speed_threshold", 0.3), jobs("analysis")),
    "tuning window": (at("analysis.tuning.window", "acceleration"), jobs("analysis")),
    "jPCA window and shuffles": (
        at("analysis.jpca", {"start": 0.05, "stop": 0.4, "n_shuffles": 5}),
        jobs("analysis"),
    ),
    "jPCA surrogates": (at("analysis.jpca.n_surrogates", 7), jobs("analysis")),
    "replicate drawn": (at("analysis.replicate", 1), jobs("analysis_figures")),
    "bootstrap confidence": (at("statistics.confidence", 0.9), SUMMARY),
    "bootstrap resamples and seed": (at("statistics", {"n_resamples": 500, "seed": 3}), SUMMARY),
    # what cannot change results reruns nothing
    "checkpoint cadence": (at("trainings.quick.checkpoint", {"times": 2}), NOTHING),
    "checkpoints by time": (
        at(
            "trainings.quick.checkpoint",
            {"at": [4], "first": 1, "exponential": {"factor": 3}, "seconds": 5},
        ),
        NOTHING,
    ),
    "checkpoint retention": (at("trainings.quick.keep_checkpoints", 5), NOTHING),
    "cache directory": (at("jax_cache_dir", "elsewhere/cache"), NOTHING),
    "train resources": (at("resources.train", {"threads": 1, "mem_mb": 999}), NOTHING),
    "evaluate resources": (at("resources.evaluate", {"runtime": 5}), NOTHING),
    "analysis resources": (at("resources.analysis", {"threads": 2, "mem_mb": 999}), NOTHING),
    "a block renamed": (rename_training, NOTHING),
    "a default written out": (at("models.small.plant.mass", 1.0), NOTHING),
    "a default loss term written out": (at("trainings.quick.loss", {"effort": {}}), NOTHING),
    "a number written another way": (at("trainings.quick.optimizer.learning_rate", 1e-2), NOTHING),
    # new experiments add their own jobs and redraw the comparison
    # (it shares the trial specs of the experiments with its task, data and seed)
    "an experiment added": (
        add_experiment,
        jobs(*EXPERIMENT_JOBS, experiments=["extra"]) | {"comparison_figure:"} | SUMMARY,
    ),
    "a sweep added": (
        add_sweep,
        jobs(*EXPERIMENT_JOBS, experiments=["lr-seed3"])
        | {"comparison_figure:", "trials:*", "sweep_figure:lr"}
        | SUMMARY,
    ),
}


@pytest.mark.parametrize("name", list(CORPUS))
def test_an_edit_changes_the_params_of_exactly_the_jobs_it_makes_stale(name):
    edit, expected = CORPUS[name]
    before = tiny_config()
    after = copy.deepcopy(before)
    edit(after)
    assert changed_jobs(before, after) == expected


@pytest.mark.parametrize(
    "edit",
    [at("statistics.confidence", 0.9), at("trainings.quick.n_batches", 30)],
    ids=["bootstrap confidence", "batches"],
)
def test_a_learning_curve_redraws_its_protocol_when_its_interval_or_stages_change(edit):
    # Without snapshots the protocol figure reads neither (the corpus above checks).
    before = tiny_config()
    before["trainings"]["quick"]["snapshots"] = {"batches": {"every": 4}}
    after = copy.deepcopy(before)
    edit(after)
    assert "protocol_figure:noise" in changed_jobs(before, after)


def test_a_sweeps_metrics_and_grid_change_only_what_they_draw():
    before = tiny_config()
    add_sweep(before)
    after = copy.deepcopy(before)
    after["sweeps"]["lr"]["metrics"] = ["max_lateral_deviation"]
    assert changed_jobs(before, after) == {"sweep_figure:lr"}
    # How its axis is drawn: the figure alone.
    for key, value in [("marks", {"delay": 3.5}), ("x_scale", "log")]:
        after = copy.deepcopy(before)
        after["sweeps"]["lr"][key] = value
        assert changed_jobs(before, after) == {"sweep_figure:lr"}, key
    # A grid value added: the new point's jobs, the summary, and the sweep's figure.
    after = copy.deepcopy(before)
    after["sweeps"]["lr"]["grid"]["seed"] = [3, 4]
    assert (
        changed_jobs(before, after)
        == jobs(*EXPERIMENT_JOBS, experiments=["lr-seed4"])
        | {
            "trials:*",
            "comparison_figure:",
            "sweep_figure:lr",
        }
        | SUMMARY
    )


def with_comparison() -> dict:
    config = tiny_config()
    config["comparisons"] = {"both": {"analysis": "tuning", "experiments": ["quiet", "noisy"]}}
    return config


@pytest.mark.parametrize(
    ("edit", "also"),
    [
        (at("comparisons.both.experiments", ["noisy", "quiet"]), set()),
        (at("comparisons.both.title", "Two noise levels"), set()),
        (at("statistics.seed", 4), SUMMARY),
        (at("analysis.replicate", 1), jobs("analysis_figures")),
        (at("figures.dpi", 50), FIGURES),
    ],
    ids=["experiments reordered", "title", "bootstrap seed", "replicate drawn", "dpi"],
)
def test_a_comparisons_settings_redraw_exactly_it(edit, also):
    before = with_comparison()
    after = copy.deepcopy(before)
    edit(after)
    assert changed_jobs(before, after) == {"analysis_comparison:both"} | also


def with_condition_sweep() -> dict:
    config = tiny_config()
    config["condition_sweeps"] = {
        "timing": {
            "experiments": ["quiet", "noisy"],
            "conditions": ["unperturbed", "pulse"],
            "setting": "start",
            "unperturbed_at": 0.0,
        }
    }
    return config


def _later_pulse(config):
    config["evaluation"]["conditions"]["pulse"][0]["start"] = 0.3


@pytest.mark.parametrize(
    ("edit", "of_the_sweep"),
    [
        (at("condition_sweeps.timing.experiments", ["noisy", "quiet"]), True),
        (at("condition_sweeps.timing.metrics", ["peak_speed"]), True),
        (at("condition_sweeps.timing.baseline", "curl_cw"), True),
        (at("condition_sweeps.timing.unperturbed_at", 0.1), True),
        (at("condition_sweeps.timing.title", "Pulse timing"), True),
        (at("statistics.seed", 4), False),
        (_later_pulse, False),
    ],
    ids=["experiments", "metrics", "baseline", "unperturbed_at", "title", "seed", "its condition"],
)
def test_a_condition_sweeps_settings_redraw_it_and_only_what_else_they_touch(edit, of_the_sweep):
    # Besides the sweep's figure, what the same edit makes stale without the sweep.
    alone = set()
    if not of_the_sweep:
        without = tiny_config()
        edit(without)
        alone = changed_jobs(tiny_config(), without)
        assert alone
    before = with_condition_sweep()
    after = copy.deepcopy(before)
    edit(after)
    assert changed_jobs(before, after) == alone | {"condition_sweep_figure:timing"}


def delayed_reaches() -> dict:
    config = tiny_config()
    config["tasks"]["reach"].update(kind="delayed_reach", go_step=[3, 6])
    return config


@pytest.mark.parametrize(
    "edit",
    [at("tasks.reach.go_step", [2, 8]), at("tasks.reach.eval_go_step", 5)],
    ids=["go_step", "eval_go_step"],
)
def test_a_delayed_reach_setting_makes_every_stage_of_the_task_stale(edit):
    # The go steps are in the training trials and in the validation set (the eval specs).
    after = delayed_reaches()
    edit(after)
    assert changed_jobs(delayed_reaches(), after) == TASK


def _resolved_settings(config: dict) -> dict[str, dict]:
    return {
        name: mfp.flatten_settings(
            {"task": exp.task.to_dict(), "model": exp.model.to_dict(), "train": exp.train.to_dict()}
        )
        for name, exp in mfp.resolve_experiments(config).items()
    }


def test_the_corpus_edits_every_setting_of_every_block():
    """A new config key must join the corpus: some entry edits each setting of a block."""
    base = _resolved_settings(tiny_config())
    edited = set()
    for edit, _ in CORPUS.values():
        config = tiny_config()
        edit(config)
        for name, flat in _resolved_settings(config).items():
            edited |= {
                key
                for key, value in flat.items()
                if name in base and base[name].get(key, KeyError) != value
            }
    every = set(base["quiet"])
    # One weight and one discount stand for every loss term.
    every = {key for key in every if not key.startswith("train.loss.") or key in edited}
    # An unset block (null) is edited by setting any key inside it.
    untouched = {key for key in every - edited if not any(e.startswith(f"{key}.") for e in edited)}
    assert not untouched, f"settings no corpus edit touches: {sorted(untouched)}"


def test_the_dry_run_reason_names_only_the_changed_setting():
    config = tiny_config()
    edited = copy.deepcopy(config)
    edited["models"]["small"]["feedback"]["delay"] = 3
    old = settings_of(config)[("train", "quiet")]
    new = settings_of(edited)[("train", "quiet")]
    old_params = {mfp.setting_param(k, v) for k, v in old.items()}
    new_params = {mfp.setting_param(k, v) for k, v in new.items()}
    assert old_params - new_params == {"model.feedback.delay=1"}
    assert new_params - old_params == {"model.feedback.delay=3"}


def _recorded(settings: dict, rule: str, key: str) -> set[str]:
    """What Snakemake records for a job: the set of its param values."""
    return {values[key] for values in mfp.rule_params(settings, rule)}


def test_each_job_records_exactly_its_own_settings():
    settings = settings_of(tiny_config())
    for rule, key in settings:
        expected = {mfp.setting_param(k, v) for k, v in settings[(rule, key)].items()}
        assert _recorded(settings, rule, key) == expected, (rule, key)


def test_a_job_with_settings_of_its_own_changes_nothing_recorded_for_the_others():
    # As an experiment of another plant kind would: it has settings the others lack.
    settings = settings_of(tiny_config())
    before = _recorded(settings, "train", "quiet")
    extended = dict(settings)
    extended[("train", "arm")] = {
        **settings[("train", "noisy")],
        "model.plant.upper_arm_length": 0.3,
        "model.plant.forearm_length": 0.33,
    }
    assert _recorded(extended, "train", "quiet") == before
    assert "model.plant.forearm_length=0.33" in _recorded(extended, "train", "arm")


def test_setting_params_read_back_as_the_settings():
    settings = settings_of(tiny_config())
    for (rule, _), flat in settings.items():
        params = [mfp.setting_param(k, v) for k, v in flat.items()]
        assert mfp.flatten_settings(mfp.parse_setting_params(params)) == flat, rule


# The setting each partial block of the corpus names, as the resolved settings spell it.
NAMED_SETTING = {
    "task n_steps": "task.n_steps",
    "task workspace": "task.workspace",
    "task eval directions": "task.eval.n_directions",
    "task eval distances": "task.eval.distances",
    "task eval center": "task.eval.center",
    "task kind center_out": "task.kind",
    "task kind posture": "task.kind",
    "model dt": "model.dt",
    "model mass": "model.plant.mass",
    "model damping": "model.plant.damping",
    "model cell": "model.network.cell.kind",
    "model hidden size": "model.network.hidden_size",
    "model hidden noise": "model.network.hidden_noise_std",
    "model feedback delay": "model.feedback.delay",
    "model feedback noise": "model.feedback.noise_std",
    "override of one experiment": "model.feedback.noise_std",
}


@pytest.mark.parametrize(
    "name", [n for n in CORPUS if n.startswith(("task ", "model ", "override"))]
)
def test_a_partial_block_changes_only_the_setting_it_names(name):
    edit, jobs = CORPUS[name]
    config = tiny_config()
    edit(config)
    base, edited = _resolved_settings(tiny_config()), _resolved_settings(config)
    for experiment in base:
        changed = {k for k, v in edited[experiment].items() if base[experiment][k] != v}
        # The named setting changes in every experiment the edit retrains (not in one
        # that overrides it), and nothing else does: a dropped edit fails too.
        expected = {NAMED_SETTING[name]} if f"train:{experiment}" in jobs else set()
        assert changed == expected, (experiment, changed)


@pytest.mark.parametrize(
    ("block", "partial", "kept"),
    [
        (
            "trainings.quick.loss",
            {"position": {"weight": 2.0}},
            {
                "train.loss.position.discount_power": 6.0,
                "train.loss.effort.weight": 1e-5,
                "train.loss.hidden.weight": 1e-5,
                "train.loss.final_velocity.weight": 1.0,
            },
        ),
        (
            "trainings.quick.optimizer",
            {"schedule": {"kind": "exponential"}},
            {
                "train.optimizer.learning_rate": 0.01,
                "train.optimizer.schedule.decay_steps": 1000,
            },
        ),
        ("models.small.network", {"cell": "rnn"}, {"model.network.hidden_size": 8}),
        ("tasks.reach.eval", {"n_directions": 2}, {"task.eval.distances": [0.5]}),
    ],
)
def test_defaults_hold_at_every_key_a_partial_block_leaves_out(block, partial, kept):
    config = tiny_config()
    at(block, {**_get(config, block), **partial} if _get(config, block) else partial)(config)
    settings = _resolved_settings(config)["quiet"]
    for key, value in kept.items():
        assert settings[key] == value, key


def _get(config, path):
    node = config
    for key in path.split("."):
        if not isinstance(node, dict) or key not in node:
            return {}
        node = node[key]
    return node


def test_partial_top_level_sections_keep_their_other_defaults():
    config = tiny_config()
    config["figures"] = {"dpi": 40}
    config["evaluation"] = {}
    config["resources"] = {"train": {"threads": 4}}
    filled = mfp.parse_config(config).filled_sections()
    assert filled["figures"] == {
        "dpi": 40,
        "format": "png",
        "max_replicates": 5,
        "experiments": None,
    }
    assert filled["evaluation"] == {
        "model": "final",
        "goal_radius": 0.05,
        "conditions": {"unperturbed": []},
    }
    # A stage's partial resources keep that stage's own defaults.
    assert filled["resources"]["train"]["threads"] == 4
    assert (
        filled["resources"]["train"]["mem_mb"]
        == mfp.WorkflowConfig.model_fields["resources"].default.train.mem_mb
    )


def test_a_partial_loss_override_keeps_the_other_terms_and_the_discount():
    config = tiny_config()
    config["trainings"]["quick"]["loss"] = {"effort": {"weight": 0.001}}
    config["experiments"]["noisy"]["override"]["training"] = {"loss": {"position": {"weight": 2}}}
    loss = mfp.resolve_experiments(config)["noisy"].train.loss.to_dict()
    assert loss == {
        "position": {"weight": 2, "discount_power": 6.0},
        "final_velocity": {"weight": 1.0},
        "effort": {"weight": 0.001},
        "hidden": {"weight": 1e-5},
        "hold": {"weight": 100.0},
    }
