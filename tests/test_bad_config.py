"""Every malformed config gets one message naming the key path, the bad value and what is
allowed."""

import copy

import pytest
from conftest import raises_config_error
from workflow_helpers import at, tiny_config

import motorflow as mf
import motorflow.pipeline as mfp


def drop(path):
    def edit(config):
        *parents, last = path.split(".")
        node = config
        for key in parents:
            node = node[key]
        del node[last]

    return edit


def rename_experiment(new_name):
    """Rename the experiment 'quiet', and drop it from the protocol's stages, its only
    mention (the new name is the config's one problem)."""

    def edit(config):
        config["experiments"][new_name] = config["experiments"].pop("quiet")
        for protocol in config.get("protocols", {}).values():
            protocol["stages"] = [stage for stage in protocol["stages"] if stage != "quiet"]

    return edit


def sweep(grid, experiment="quiet", name="s"):
    return at("sweeps", {name: {"experiment": experiment, "grid": grid}})


def reach_task(**settings):
    """An edit of the tiny config's task block: `settings` merged in (e.g. a kind)."""
    return lambda config: config["tasks"]["reach"].update(settings)


def condition_sweep(conditions, extra=None, **settings):
    """An edit adding the condition sweep `s` over `conditions` of quiet (`settings`
    merged in; by default over the force pulse's `start`), with `extra` conditions."""

    def edit(config):
        config["evaluation"]["conditions"].update(copy.deepcopy(extra or {}))
        sweep = {"experiments": ["quiet"], "conditions": conditions, "setting": "start"}
        config["condition_sweeps"] = {"s": {**sweep, **settings}}

    return edit


PULSE_LATER = {"later": [{"kind": "force_pulse", "amplitude": 2.0, "start": 0.3, "duration": 0.1}]}


CASES = {
    # wrong types
    "n_steps as text": (
        at("tasks.reach.n_steps", "100"),
        "tasks.reach.n_steps",
        ["'100'", "integer"],
    ),
    "fractional replicates": (
        at("trainings.quick.n_replicates", 2.5),
        "trainings.quick.n_replicates",
        ["2.5", "integer"],
    ),
    "seed as text": (
        at("experiments.quiet.seed", "zero"),
        "experiments.quiet.seed",
        ["'zero'", "integer"],
    ),
    "boolean as text": (
        at("trainings.quick.shared_trials", "yes"),
        "trainings.quick.shared_trials",
        ["'yes'", "true or false"],
    ),
    "track_code as text": (at("track_code", "true"), "track_code", ["'true'", "true or false"]),
    "workspace corner": (
        at("tasks.reach.workspace", [[0, 0]]),
        "tasks.reach.workspace",
        ["[[0, 0]]", "too short"],
    ),
    "block as list": (at("models.small", [1, 2]), "models.small", ["[1, 2]", "mapping"]),
    # unknown keys
    "unknown top-level key": (
        at("experiment", {}),
        "experiment",
        ["unknown key 'experiment'", "experiments"],
    ),
    "misspelt network key": (
        at("models.small.network.hiden_size", 4),
        "models.small.network.hiden_size",
        ["'hiden_size'", "hidden_size"],
    ),
    "unknown experiment key": (
        at("experiments.quiet.modle", "small"),
        "experiments.quiet.modle",
        ["'modle'", "model"],
    ),
    "unknown override block": (
        at("experiments.noisy.override.body", {}),
        "experiments.noisy.override.body",
        ["'body'", "training"],
    ),
    # zero / negative sizes
    "zero steps": (at("tasks.reach.n_steps", 0), "tasks.reach.n_steps", ["0", ">= 1"]),
    "negative hidden size": (
        at("models.small.network.hidden_size", -4),
        "models.small.network.hidden_size",
        ["-4", ">= 1"],
    ),
    "zero batch size": (
        at("trainings.quick.batch_size", 0),
        "trainings.quick.batch_size",
        ["0", ">= 1"],
    ),
    "zero dt": (at("models.small.dt", 0), "models.small.dt", ["0", "> 0"]),
    "negative delay": (
        at("models.small.feedback.delay", -1),
        "models.small.feedback.delay",
        ["-1", ">= 0"],
    ),
    "negative noise": (
        at("models.small.feedback.noise_std", -0.1),
        "models.small.feedback.noise_std",
        ["-0.1", ">= 0"],
    ),
    "negative learning rate": (
        at("trainings.quick.optimizer", {"learning_rate": -0.1}),
        "trainings.quick.optimizer.learning_rate",
        ["-0.1", "> 0"],
    ),
    "zero clipping": (
        at("trainings.quick.optimizer", {"clip_global_norm": 0}),
        "trainings.quick.optimizer.clip_global_norm",
        ["0", "> 0"],
    ),
    "no eval distances": (
        at("tasks.reach.eval.distances", []),
        "tasks.reach.eval.distances",
        ["[]", "non-empty"],
    ),
    # unknown choices
    "unknown optimizer": (
        at("trainings.quick.optimizer", {"name": "rmsprop"}),
        "trainings.quick.optimizer.name",
        ["'rmsprop'", "'adam'"],
    ),
    "unknown cell": (
        at("models.small.network.cell", "lstm"),
        "models.small.network.cell",
        ["'lstm'", "unknown kind", "'gru', 'rnn', 'leaky', 'reservoir'"],
    ),
    "unknown cell kind in a block": (
        at("models.small.network.cell", {"kind": "lstm", "tau": 0.1}),
        "models.small.network.cell.kind",
        ["'lstm'", "'gru', 'rnn', 'leaky', 'reservoir'"],
    ),
    "unknown loss term": (
        at("trainings.quick.loss", {"jerk": {}}),
        "trainings.quick.loss.jerk",
        ["'jerk'", "final_velocity"],
    ),
    "unknown schedule": (
        at("trainings.quick.optimizer", {"schedule": {"kind": "step"}}),
        "trainings.quick.optimizer.schedule.kind",
        ["'step'", "'warmup_cosine'"],
    ),
    "unknown figure format": (at("figures.format", "jpg"), "figures.format", ["'jpg'", "'png'"]),
    "a dpi no figure can be drawn at": (
        at("figures.dpi", 20000),
        "figures.dpi",
        ["20000", "<= 1200"],
    ),
    "unknown task kind": (
        at("tasks.reach.kind", "track"),
        "tasks.reach.kind",
        ["'track'", "'reach'"],
    ),
    # references
    "undefined model": (
        at("experiments.quiet.model", "large"),
        "experiments.quiet.model",
        ["'large'", "small"],
    ),
    "undefined task": (
        at("experiments.quiet.task", "grasp"),
        "experiments.quiet.task",
        ["'grasp'", "reach"],
    ),
    "missing training": (
        drop("experiments.quiet.training"),
        "experiments.quiet.training",
        ["'training'", "required"],
    ),
    "sweep of an undefined experiment": (
        sweep({"seed": [1]}, experiment="ghost"),
        "sweeps.s.experiment",
        ["'ghost'", "quiet"],
    ),
    "unknown trainable part": (
        at("trainings.quick.trainable", ["network.readuot"]),
        "experiments.quiet.training.trainable",
        ["'network.readuot'", "readout"],
    ),
    # cross-block sizes
    "delay as long as the trial": (
        at("models.small.feedback.delay", 15),
        "experiments.quiet.model.feedback.delay",
        ["15", "n_steps (15)"],
    ),
    "leak faster than a step": (
        at("models.small.network", {"cell": {"kind": "leaky", "tau": 0.01}}),
        "models.small.network.cell.tau",
        ["0.01", "tau >= dt"],
    ),
    "validation beyond the run": (
        at("trainings.quick.validation", {"at": [5, 5000]}),
        "trainings.quick.validation.at",
        ["5000", "beyond the last batch"],
    ),
    "cadence key of before schedules": (
        at("trainings.quick.checkpoint_every", 10),
        "trainings.quick.checkpoint_every",
        ["checkpoint: {every: N}"],
    ),
    "wall-time validation": (
        at("trainings.quick.validation", {"seconds": 60}),
        "trainings.quick.validation.seconds",
        ["never an action whose results"],
    ),
    "inverted workspace": (
        at("tasks.reach.workspace", [[1, 1], [-1, -1]]),
        "tasks.reach.workspace",
        ["[[1.0, 1.0], [-1.0, -1.0]]", "x_min < x_max"],
    ),
    # names
    "name with a space": (
        rename_experiment("my exp"),
        "experiments.'my exp'",
        ["'my exp'", "letters, digits"],
    ),
    "path traversal": (
        rename_experiment("../../etc"),
        "experiments.'../../etc'",
        ["'../../etc'", "letters, digits"],
    ),
    "sweep setting not a path": (
        sweep({"model/feedback": [1]}),
        "sweeps.s.grid.'model/feedback'",
        ["'model/feedback'", "task., model. or training."],
    ),
    # sweeps
    "colliding sweep points": (
        sweep({"model.network.hidden_size": [8, 8]}),
        "sweeps.s.grid",
        ["'s-hidden_size8'", "distinct"],
    ),
    "sweep onto an existing name": (
        lambda c: (
            sweep({"seed": [1]}, name="quiet")(c),
            at("experiments.quiet-seed1", c["experiments"]["quiet"])(c),
        ),
        "sweeps.quiet",
        ["'quiet-seed1'", "rename"],
    ),
    "empty sweep values": (sweep({"seed": []}), "sweeps.s.grid.seed", ["[]", "non-empty"]),
    "sweep of an unknown setting": (
        sweep({"model.network.size": [4]}),
        "sweeps.s (as s-size4).override.model.network.size",
        ["'size'", "hidden_size"],
    ),
    # job resources
    "unknown stage": (
        at("resources.training", {"threads": 2}),
        "resources.training",
        ["unknown key 'training'", "train"],
    ),
    "zero threads": (at("resources.train.threads", 0), "resources.train.threads", ["0"]),
    "negative gpus": (at("resources.train.gpus", -1), "resources.train.gpus", ["-1"]),
    "zero experiments per pack": (at("resources.train.pack", 0), "resources.train.pack", ["0"]),
    "zero figures per pack": (at("resources.figures.pack", 0), "resources.figures.pack", ["0"]),
    "a pack too large": (
        at("resources.figures.pack", 1001),
        "resources.figures.pack",
        ["1001"],
    ),
    "figures of no experiment": (
        at("figures.experiments", ["quiet", "quite*"]),
        "figures.experiments[1]",
        ["'quite*' matches no experiment", "quiet"],
    ),
    "a pack of the trial specs": (
        at("resources.trials", {"pack": 2}),
        "resources.trials.pack",
        ["unknown key 'pack'"],
    ),
    "gpu model with no gpus": (
        at("resources.train.gpu_model", "a100"),
        "resources.train.gpu_model",
        ["'a100'", "gpus to 1 or more"],
    ),
    "gpu model with quotes": (
        at("resources.train", {"gpus": 1, "gpu_model": "'a100'"}),
        "resources.train.gpu_model",
        ["\"'a100'\"", "does not match"],
    ),
    "gres and gpus together": (
        at("resources.train", {"gpus": 1, "gres": "gpu:1"}),
        "resources.train.gres",
        ["'gpu:1'", "gres alone"],
    ),
    "partition with shell characters": (
        at("resources.train.slurm_partition", "gpu; rm -rf ~"),
        "resources.train.slurm_partition",
        ["'gpu; rm -rf ~'", "does not match"],
    ),
    # numbers that are no settings
    "NaN learning rate": (
        at("trainings.quick.optimizer", {"learning_rate": float("nan")}),
        "trainings.quick.optimizer.learning_rate",
        ["nan", "finite"],
    ),
    "infinite workspace": (
        at("tasks.reach.workspace", [[-1, -1], [float("inf"), 1]]),
        "tasks.reach.workspace[1][0]",
        ["inf", "finite"],
    ),
    "unknown divergence policy": (
        at("trainings.quick.on_divergence", "rollback"),
        "trainings.quick.on_divergence",
        ["'rollback'", "'stop'", "'isolate'"],
    ),
    "constraints on a gru": (
        at("trainings.quick.constraints", [{"kind": "dale"}]),
        "experiments.quiet.training.constraints",
        ["gru", "rnn or leaky"],
    ),
    "unknown constraint": (
        at("trainings.quick.constraints", [{"kind": "sparse"}]),
        "trainings.quick.constraints[0].kind",
        ["'sparse'", "dale", "connectivity", "spectral_radius"],
    ),
    "all-excitatory network": (
        at("trainings.quick.constraints", [{"kind": "dale", "excitatory_fraction": 1}]),
        "trainings.quick.constraints[0].excitatory_fraction",
        ["a number < 1", "got 1"],
    ),
    "no connections": (
        at("trainings.quick.constraints", [{"kind": "connectivity", "density": 0}]),
        "trainings.quick.constraints[0].density",
        ["a number > 0", "got 0"],
    ),
    "snapshots without a schedule": (
        at("trainings.quick.snapshots", {"trials": True}),
        "trainings.quick.snapshots.batches",
        ["required"],
    ),
    "a snapshot after the last batch": (
        at("trainings.quick.snapshots", {"batches": {"at": [1000]}}),
        "trainings.quick.snapshots.batches.at",
        ["batch 1000 is beyond the last batch"],
    ),
    "gradient norms of what": (
        at("trainings.quick.gradient_norms", "per_layer"),
        "trainings.quick.gradient_norms",
        ["'per_layer'", "'total'", "'per_term'"],
    ),
    "TensorBoard maybe": (
        at("trainings.quick.tensorboard", "yes"),
        "trainings.quick.tensorboard",
        ["'yes'", "true or false"],
    ),
    "unknown update rule": (
        at("trainings.quick.update_rules", [{"kind": "bcm", "rate": 1}]),
        "trainings.quick.update_rules[0].kind",
        ["'bcm'", "hebbian", "oja"],
    ),
    "an update rule without a rate": (
        at("trainings.quick.update_rules", [{"kind": "oja"}]),
        "trainings.quick.update_rules[0].rate",
        ["required"],
    ),
    "a lagged readout rule": (
        at(
            "trainings.quick.update_rules",
            [{"kind": "oja", "rate": 1, "target": "readout", "lag": 1}],
        ),
        "trainings.quick.update_rules[0].lag",
        ["lag 0"],
    ),
    "a stage at the first batch": (
        at("trainings.quick.stages", [{"at": 0, "trainable": ["network"]}]),
        "trainings.quick.stages[0].at",
        ["an integer >= 1", "got 0"],
    ),
    "stages out of order": (
        at(
            "trainings.quick.stages",
            [{"at": 8, "trainable": ["network"]}, {"at": 4, "trainable": ["network.readout"]}],
        ),
        "trainings.quick.stages[1].at",
        ["after the previous one (batch 8)", "got 4"],
    ),
    "a stage after the last batch": (
        at("trainings.quick.stages", [{"at": 20, "trainable": ["network"]}]),
        "trainings.quick.stages[0].at",
        ["before the last batch (20)"],
    ),
    "a stage training no part of the model": (
        at("trainings.quick.stages", [{"at": 5, "trainable": ["network.decoder"]}]),
        "experiments.quiet.training.stages[0].trainable",
        ["'network.decoder'", "cell, readout"],
    ),
    "a learning rate of a part that never trains": (
        lambda config: config["trainings"]["quick"].update(
            trainable=["network.readout"], optimizer={"learning_rates": {"network.cell": 0.1}}
        ),
        "experiments.quiet.training.optimizer.learning_rates.network.cell",
        ["selects no parameter that trains"],
    ),
    "unknown evaluated model": (
        at("evaluation.model", "last"),
        "evaluation.model",
        ["'last'", "'final'", "'best'"],
    ),
    "infinite goal radius": (
        at("evaluation.goal_radius", float("inf")),
        "evaluation.goal_radius",
        ["inf", "finite"],
    ),
    # cross-field: what is evaluated must have been trained
    "evaluation goals outside the workspace": (
        at("tasks.reach.eval.distances", [1.5]),
        "tasks.reach.eval",
        ["leave the workspace", "[1.5, 0]", "never trained"],
    ),
    "evaluation center outside the workspace": (
        at("tasks.reach.eval.center", [3.0, 0.0]),
        "tasks.reach.eval",
        ["leave the workspace"],
    ),
    # names that would become bad paths
    "overlong experiment name": (
        rename_experiment("x" * 65),
        f"experiments.'{'x' * 65}'",
        ["at most 64 characters"],
    ),
    "experiment named like a results folder": (
        rename_experiment("figures"),
        "experiments.figures",
        ["'figures'", "folder of the results folder"],
    ),
    "oversized sweep": (
        sweep({"seed": list(range(120)), "model.network.hidden_size": list(range(1, 101))}),
        "sweeps.s.grid",
        ["12,000 experiments", "at most 10,000"],
    ),
    "partial loss term with a bad value": (
        at("trainings.quick.loss", {"position": {"discount_power": -1}}),
        "trainings.quick.loss.position.discount_power",
        ["-1", ">= 0"],
    ),
    "loss term not a mapping": (
        at("trainings.quick.loss", {"effort": 0.1}),
        "trainings.quick.loss.effort",
        ["0.1", "mapping"],
    ),
    # plants
    "unknown plant kind": (
        at("models.small.plant", {"kind": "robot"}),
        "models.small.plant.kind",
        ["'robot'", "'arm'", "'muscle_arm'"],
    ),
    "unknown integration method": (
        at("models.small.plant.method", "midpoint"),
        "models.small.plant.method",
        ["'midpoint'", "'rk4'"],
    ),
    "zero sub-steps": (
        at("models.small.plant.n_substeps", 0),
        "models.small.plant.n_substeps",
        ["0", "an integer >= 1"],
    ),
    "a point-mass key on an arm": (
        at("models.small.plant", {"kind": "arm", "mass": 2.0}),
        "models.small.plant.mass",
        ["unknown key 'mass'", "forearm_mass"],
    ),
    "a workspace beyond the arm's reach": (
        at("models.small.plant", {"kind": "arm"}),
        "experiments.quiet.task.workspace",
        ["cannot reach", "[-1, -1]"],
    ),
    "center-out circles beyond the arm's reach": (
        lambda config: (
            config["models"]["small"].update(plant={"kind": "arm"}),
            config["tasks"]["reach"].update(kind="center_out"),
        ),
        "experiments.quiet.task.eval",
        ["cannot reach", "center_out", "[0.5]"],
    ),
    # task kinds
    "a go cue after the trial": (
        reach_task(kind="delayed_reach", go_step=[5, 15]),
        "tasks.reach.go_step",
        ["step 15", "n_steps 15"],
    ),
    "a go step range backwards": (
        reach_task(kind="delayed_reach", go_step=[8, 3]),
        "tasks.reach.go_step",
        ["low <= high", "[8, 3]"],
    ),
    "an evaluation go step after the trial": (
        reach_task(kind="delayed_reach", go_step=[2, 4], eval_go_step=20),
        "tasks.reach.eval_go_step",
        ["step 20", "n_steps 15"],
    ),
    "a go step for a posture task": (
        reach_task(kind="posture", go_step=[2, 4]),
        "tasks.reach.go_step",
        ["unknown key 'go_step'", "workspace"],
    ),
    "a workspace for a center-out task": (
        reach_task(kind="center_out", workspace=[[0, 0], [1, 1]]),
        "tasks.reach.workspace",
        ["unknown key 'workspace'", "eval"],
    ),
    "a muscle force per muscle": (
        at("models.small.plant", {"kind": "muscle_arm", "max_isometric_force": [800.0]}),
        "models.small.plant.max_isometric_force",
        ["at least 6"],
    ),
    # perturbations and evaluation conditions
    "unknown perturbation kind": (
        at("tasks.reach.perturbations", [{"kind": "wind"}]),
        "tasks.reach.perturbations[0].kind",
        ["'wind'", "'curl'", "'target_jump'"],
    ),
    "a perturbation beginning after the trial": (
        at("tasks.reach.perturbations", [{"kind": "force_pulse", "start": [0.2, 0.9]}]),
        "tasks.reach.perturbations[0]",
        ["0.9 s", "0.75 s", "n_steps 15"],
    ),
    "an intervention on a unit the network lacks": (
        at("evaluation.conditions.lesioned", [{"kind": "lesion", "units": [2, 8]}]),
        "evaluation.conditions.lesioned[0]",
        ["unit 8", "8 hidden units", "'quiet'", "'small'"],
    ),
    "an intervention on units by index and by fraction": (
        at("tasks.reach.perturbations", [{"kind": "clamp", "units": [0], "fraction": 0.5}]),
        "tasks.reach.perturbations[0].units",
        ["`units`", "`fraction`", "one of the two"],
    ),
    "a clamp at its start given a value": (
        at("evaluation.conditions.frozen", [{"kind": "clamp", "at": "start", "value": 0.5}]),
        "evaluation.conditions.frozen[0].value",
        ["`at: start`", "no `value`", "`at: value`"],
    ),
    "a clamp of the readout's space given units": (
        at("evaluation.conditions.held", [{"kind": "clamp", "space": "output_null", "units": [0]}]),
        "evaluation.conditions.held[0].space",
        ["`units`", "`space: units`"],
    ),
    "e-prop under a clamp of the readout's null space": (
        lambda config: (
            at("trainings.quick.learning", {"kind": "eprop"})(config),
            at("tasks.reach.perturbations", [{"kind": "clamp", "space": "output_null"}])(config),
        ),
        "experiments.quiet.training.learning",
        ["e-prop", "output_null", "space: units", "bptt"],
    ),
    "rls under an intervention on the units": (
        lambda config: (
            config["trainings"]["quick"].update(
                trainable=["network.readout"], learning={"kind": "rls"}
            ),
            at("tasks.reach.perturbations", [{"kind": "stimulation", "fraction": 0.5}])(config),
        ),
        "experiments.quiet.training.learning",
        ["rls", "stimulation", "eprop"],
    ),
    "a condition beginning after the trial": (
        at("evaluation.conditions.late", [{"kind": "target_jump", "time": 2.0}]),
        "evaluation.conditions.late[0]",
        ["2 s", "'quiet'"],
    ),
    "a range turned around": (
        at("evaluation.conditions.curl_cw", [{"kind": "curl", "strength": [10.0, 5.0]}]),
        "evaluation.conditions.curl_cw[0].strength",
        ["[10.0, 5.0]", "low <= high"],
    ),
    "a range of three": (
        at("tasks.reach.perturbations", [{"kind": "curl", "strength": [1, 2, 3]}]),
        "tasks.reach.perturbations[0].strength",
        ["[1, 2, 3]", "[low, high]"],
    ),
    "a condition named by a bare YAML null": (
        at("evaluation.conditions", {None: []}),
        "evaluation.conditions.'None'",
        ["None", "quote it"],
    ),
    "no conditions": (
        at("evaluation.conditions", {}),
        "evaluation.conditions",
        ["{}", "non-empty"],
    ),
    "a condition that is not a list": (
        at("evaluation.conditions.curl_cw", {"kind": "curl"}),
        "evaluation.conditions.curl_cw",
        ["must be a list"],
    ),
    # protocols
    "a protocol stage that is no experiment": (
        at("protocols.noise.stages", ["quiet", "loud"]),
        "protocols.noise.stages[1]",
        ["'loud'", "quiet, noisy"],
    ),
    "an unknown protocol metric": (
        at("protocols.noise.metric", "smoothness"),
        "protocols.noise.metric",
        ["'smoothness'", "'max_lateral_deviation'"],
    ),
    "a protocol without stages": (
        at("protocols.noise.stages", []),
        "protocols.noise.stages",
        ["[]", "non-empty"],
    ),
    "a protocol condition that is not evaluated": (
        at("protocols.noise.conditions", ["unperturbed", "curl"]),
        "protocols.noise.conditions[1]",
        ["'curl'", "evaluation.conditions"],
    ),
    "a protocol panel of a stage outside the protocol": (
        at("protocols.noise.panels", [{"stage": "loud", "condition": "unperturbed"}]),
        "protocols.noise.panels[0].stage",
        ["'loud'", "not a stage of the protocol"],
    ),
    "a protocol panel in a condition that is not evaluated": (
        at("protocols.noise.panels", [{"stage": "noisy", "condition": "windy"}]),
        "protocols.noise.panels[0].condition",
        ["'windy'", "evaluation.conditions"],
    ),
    "a protocol panel without a condition": (
        at("protocols.noise.panels", [{"stage": "noisy"}]),
        "protocols.noise.panels[0].condition",
        ["required"],
    ),
    "an unknown tuning window": (
        at("analysis.tuning.window", "deceleration"),
        "analysis.tuning.window",
        ["'deceleration'", "'acceleration'"],
    ),
    # comparisons
    "a comparison of an experiment the config does not define": (
        at("comparisons.both", {"analysis": "tuning", "experiments": ["quiet", "loud"]}),
        "comparisons.both.experiments[1]",
        ["'loud'", "quiet, noisy"],
    ),
    "a comparison listing an experiment twice": (
        at("comparisons.both", {"analysis": "tuning", "experiments": ["quiet", "quiet"]}),
        "comparisons.both.experiments[1]",
        ["'quiet'", "twice"],
    ),
    "a comparison of an analysis that draws none": (
        at("comparisons.both", {"analysis": "pca", "experiments": ["quiet", "noisy"]}),
        "comparisons.both.analysis",
        ["'pca'", "tuning"],
    ),
    "a comparison of an unknown analysis": (
        at("comparisons.both", {"analysis": "ica", "experiments": ["quiet"]}),
        "comparisons.both.analysis",
        ["'ica'", "'tuning'"],
    ),
    "a comparison without experiments": (
        at("comparisons.both", {"analysis": "tuning", "experiments": []}),
        "comparisons.both.experiments",
        ["[]"],
    ),
    # condition sweeps
    "a condition sweep over a condition the config does not define": (
        condition_sweep(["pulse", "push"]),
        "condition_sweeps.s.conditions[1]",
        ["'push'", "unperturbed, curl_cw, pulse"],
    ),
    "a condition sweep over a condition without the swept setting": (
        condition_sweep(["pulse", "curl_cw"]),
        "condition_sweeps.s.conditions[1]",
        ["'curl_cw'", "0 perturbations", "'start'", "curl"],
    ),
    "a condition sweep over an unperturbed condition without unperturbed_at": (
        condition_sweep(["unperturbed", "pulse"]),
        "condition_sweeps.s.conditions[0]",
        ["'unperturbed'", "unperturbed_at"],
    ),
    "a condition sweep whose x value is a drawn range": (
        condition_sweep(
            ["curl_cw", "strong"],
            {"strong": [{"kind": "curl", "strength": 12.0, "direction": "cw"}]},
            setting="strength",
        ),
        "condition_sweeps.s.conditions[0]",
        ["[5.0, 10.0]", "not a number"],
    ),
    "a condition sweep from the go cue of reaches without one": (
        condition_sweep(["pulse", "later"], PULSE_LATER, relative_to="go_cue"),
        "condition_sweeps.s.experiments[0]",
        ["'quiet'", "go cue", "relative_to"],
    ),
    "a condition sweep of reaction times of reaches without a go cue": (
        condition_sweep(["pulse", "later"], PULSE_LATER, metrics=["reaction_time"]),
        "condition_sweeps.s.experiments[0]",
        ["'quiet'", "go cue", "metrics"],
    ),
    "a condition sweep against an undefined baseline": (
        condition_sweep(["pulse", "later"], PULSE_LATER, baseline="none"),
        "condition_sweeps.s.baseline",
        ["'none'", "unperturbed, curl_cw, pulse"],
    ),
    # learning rules
    "an unknown learning rule": (
        at("trainings.quick.learning", {"kind": "forward_mode"}),
        "trainings.quick.learning.kind",
        ["'forward_mode'", "'bptt'", "'truncated_bptt'"],
    ),
    "a window of no steps": (
        at("trainings.quick.learning", {"kind": "truncated_bptt", "window": 0}),
        "trainings.quick.learning.window",
        ["0", ">= 1"],
    ),
    "a window for full backpropagation": (
        at("trainings.quick.learning", {"window": 5}),
        "trainings.quick.learning.window",
        ["unknown key 'window'"],
    ),
    "updates every 0 steps": (
        at("trainings.quick.learning", {"kind": "truncated_bptt", "update_every": 0}),
        "trainings.quick.learning.update_every",
        ["0", ">= 1"],
    ),
    "updates within the rollout with an update rule": (
        lambda config: config["trainings"]["quick"].update(
            learning={"kind": "truncated_bptt", "update_every": 4},
            update_rules=[{"kind": "hebbian", "rate": 1e-3}],
        ),
        "trainings.quick.update_rules",
        ["update rules read a whole rollout", "learning.update_every"],
    ),
    "updates within the rollout with per-term norms": (
        lambda config: config["trainings"]["quick"].update(
            learning={"kind": "truncated_bptt", "update_every": 4}, gradient_norms="per_term"
        ),
        "trainings.quick.gradient_norms",
        ["per-term norms", "learning.update_every"],
    ),
    "e-prop for a reservoir": (
        lambda c: (
            at("models.small.network", {"cell": "reservoir", "hidden_size": 8})(c),
            at("trainings.quick.learning", {"kind": "eprop"})(c),
        ),
        "experiments.quiet.training.learning",
        ["e-prop", "not a reservoir cell", "rnn, leaky or gru"],
    ),
    "results folder outside the project": (
        at("results", "/tmp/elsewhere"),
        "results",
        ["is not a results folder", "relative path"],
    ),
    "results folder climbing out": (
        at("results", "results/../../up"),
        "results",
        ["is not a results folder"],
    ),
    "an unknown e-prop feedback": (
        at("trainings.quick.learning", {"kind": "eprop", "feedback": "transposed"}),
        "trainings.quick.learning.feedback",
        ["'transposed'", "'random'", "'symmetric'"],
    ),
    "a negative trace clip": (
        at("trainings.quick.learning", {"kind": "eprop", "trace_clip": -1.0}),
        "trainings.quick.learning.trace_clip",
        ["-1", "> 0"],
    ),
    "e-prop pieces of no steps": (
        at("trainings.quick.learning", {"kind": "eprop", "online": True, "segment_steps": 0}),
        "trainings.quick.learning.segment_steps",
        ["0", ">= 1"],
    ),
    "e-prop in pieces offline": (
        lambda config: (
            config["models"]["small"]["network"].update(cell="leaky"),
            config["trainings"]["quick"].update(learning={"kind": "eprop", "segment_steps": 5}),
        ),
        "experiments.quiet.training.learning",
        ["segment_steps needs online: true"],
    ),
    "per-term norms of e-prop": (
        lambda config: (
            config["models"]["small"]["network"].update(cell="leaky"),
            config["trainings"]["quick"].update(
                learning={"kind": "eprop"}, gradient_norms="per_term"
            ),
        ),
        "experiments.quiet.training.gradient_norms",
        ["eprop", "gradient_norms: total"],
    ),
    "rls training the whole network": (
        at("trainings.quick.learning", {"kind": "rls"}),
        "experiments.quiet.training.learning",
        ["trains the readout only", "trainable: [network.readout]"],
    ),
    "rls on muscles": (
        lambda config: (
            # A muscle arm long enough to reach the whole tiny workspace.
            config["models"]["small"].update(
                plant={
                    "kind": "muscle_arm",
                    "upper_arm_length": 2.0,
                    "forearm_length": 2.0,
                    "joint_limits_deg": None,
                    "shoulder_pos": [0.0, -2.0],
                }
            ),
            config["trainings"]["quick"].update(
                trainable=["network.readout"], learning={"kind": "rls"}
            ),
        ),
        "experiments.quiet.training.learning",
        ["forces or torques", "point_mass, arm"],
    ),
    "rls without regularization": (
        at("trainings.quick.learning", {"kind": "rls", "regularization": 0}),
        "trainings.quick.learning.regularization",
        ["0", "> 0"],
    ),
    "rls forgetting more than nothing": (
        at("trainings.quick.learning", {"kind": "rls", "forgetting": 1.5}),
        "trainings.quick.learning.forgetting",
        ["1.5", "<= 1"],
    ),
    "rls updating every 0 steps": (
        at("trainings.quick.learning", {"kind": "rls", "update_every": 0}),
        "trainings.quick.learning.update_every",
        ["0", ">= 1"],
    ),
    "a reach of no time": (
        at("trainings.quick.learning", {"kind": "rls", "movement_time": 0}),
        "trainings.quick.learning.movement_time",
        ["0", "> 0"],
    ),
    # analyses, statistics and sweep figures
    "a drawn replicate no experiment has": (
        at("analysis.replicate", 2),
        "analysis.replicate",
        ["is 2", "'quiet' has 2 replicates (0 to 1)"],
    ),
    "no principal components": (
        at("analysis.pca.n_components", 0),
        "analysis.pca.n_components",
        ["0", ">= 1"],
    ),
    "a negative number of jPCA shuffles": (
        at("analysis.jpca.n_shuffles", -1),
        "analysis.jpca.n_shuffles",
        ["-1", ">= 0"],
    ),
    "too many jPCA surrogates": (
        at("analysis.jpca.n_surrogates", 10001),
        "analysis.jpca.n_surrogates",
        ["10001", "<= 10000"],
    ),
    "a fixed-point search without starts": (
        at("analysis.fixed_points.n_starts", 0),
        "analysis.fixed_points.n_starts",
        ["0", ">= 1"],
    ),
    "a negative fixed-point tolerance": (
        at("analysis.fixed_points.tolerance", -1e-6),
        "analysis.fixed_points.tolerance",
        ["-1e-06", "> 0"],
    ),
    "a movement threshold of the whole peak": (
        at("analysis.tuning.speed_threshold", 1.0),
        "analysis.tuning.speed_threshold",
        ["1.0", "< 1"],
    ),
    "a confidence of 100%": (
        at("statistics.confidence", 1.0),
        "statistics.confidence",
        ["1.0", "< 1"],
    ),
    "too few resamples": (
        at("statistics.n_resamples", 10),
        "statistics.n_resamples",
        ["10", ">= 100"],
    ),
    "an unknown key of the analyses": (
        at("analysis.pca.whiten", True),
        "analysis.pca.whiten",
        ["whiten"],
    ),
    "an unknown sweep metric": (
        at("sweeps", {"s": {"experiment": "quiet", "grid": {"seed": [1]}, "metrics": ["grace"]}}),
        "sweeps.s.metrics[0]",
        ["'grace'", "'endpoint_error'"],
    ),
    "sweep marks on an axis of words": (
        at(
            "sweeps",
            {"s": {"experiment": "quiet", "grid": {"task.kind": ["reach"]}, "marks": {"x": 1}}},
        ),
        "sweeps.s.marks",
        ["task.kind", "numeric"],
    ),
    "a sweep mark that is no number": (
        at("sweeps", {"s": {"experiment": "quiet", "grid": {"seed": [1]}, "marks": {"x": "3"}}}),
        "sweeps.s.marks.x",
        ["'3'"],
    ),
    "a logarithmic sweep axis through zero": (
        at("sweeps", {"s": {"experiment": "quiet", "grid": {"seed": [0, 1]}, "x_scale": "log"}}),
        "sweeps.s.x_scale",
        ["grid.seed has 0", "linear"],
    ),
    # sizes whose work or storage would not fit
    "trial specs beyond any disk": (
        at("trainings.quick", {"n_batches": 10**6, "batch_size": 10**5, "n_replicates": 2}),
        "experiments.quiet.training",
        ["GiB", "n_batches 1000000", "shared_trials"],
    ),
    "a billion directions": (
        at("tasks.reach.eval.n_directions", 10**9),
        "tasks.reach.eval.n_directions",
        ["1000000000", "<= 3600"],
    ),
    # settings that only make sense with another, or within another's bound
    "reset_optimizer without init_from": (
        at("experiments.quiet.reset_optimizer", False),
        "experiments.quiet.reset_optimizer",
        ["(false) but init_from is not", "set init_from", "remove reset_optimizer"],
    ),
    "warm-up longer than the training": (
        at(
            "trainings.quick.optimizer", {"schedule": {"kind": "warmup_cosine", "warmup_steps": 21}}
        ),
        "trainings.quick.optimizer.schedule.warmup_steps",
        ["warm-up (21 batches)", "(n_batches 20)", "at most n_batches"],
    ),
    "updates within a rollout longer than the trial": (
        at("trainings.quick.learning", {"kind": "truncated_bptt", "update_every": 16}),
        "experiments.quiet.training.learning.update_every",
        ["update_every (16 steps)", "n_steps (15)", "at most n_steps, or null"],
    ),
    "a truncation window longer than the trial": (
        at("trainings.quick.learning", {"kind": "truncated_bptt", "window": 16}),
        "experiments.quiet.training.learning.window",
        ["window (16 steps)", "n_steps (15)", "truncates nothing"],
    ),
    "a jPCA window that ends before it starts": (
        at("analysis.jpca", {"start": 0.5, "stop": 0.1}),
        "analysis.jpca.stop",
        ["is 0.1 s", "not after start (0.5 s)"],
    ),
    "a jPCA window beyond the trial": (
        at("analysis.jpca", {"start": 0.7}),
        "analysis.jpca.start",
        ["fewer than 3 steps", "'quiet'", "0.75 s long"],
    ),
    "more principal components than units": (
        at("analysis.pca", {"n_components": 9}),
        "analysis.pca.n_components",
        ["is 9", "'quiet' has network.hidden_size 8", "8 or below"],
    ),
    # a cell's settings where the network's were (before cells had blocks): each
    # named, with where it moved
    "the network's old tau": (
        at("models.small.network", {"cell": "leaky", "tau": 0.2}),
        "models.small.network.tau",
        ["unknown key 'tau'", "in its block now", "{cell: {kind: leaky, tau: 0.1}}"],
    ),
    "the network's old gain": (
        at("models.small.network.gain", 2.0),
        "models.small.network.gain",
        ["unknown key 'gain'", "in its block now", "{cell: {kind: reservoir, gain: 1.5}}"],
    ),
    "the network's old connectivity": (
        at("models.small.network", {"cell": "reservoir", "connectivity": 0.5}),
        "models.small.network.connectivity",
        ["unknown key 'connectivity'", "{cell: {kind: reservoir, connectivity: 0.1}}"],
    ),
    "the network's old output feedback": (
        at("models.small.network.output_feedback", True),
        "models.small.network.output_feedback",
        ["unknown key 'output_feedback'", "{cell: {kind: reservoir, output_feedback: true}}"],
    ),
    "a sweep over the network's old tau": (
        sweep({"model.network.tau": [0.1, 0.2]}),
        "sweeps.s (as s-tau0p1).override.model.network.tau",
        ["unknown key 'tau'", "in its block now"],
    ),
    # a setting of another cell than the block's
    "a time constant of a gru cell": (
        at("models.small.network.cell", {"kind": "gru", "tau": 0.2}),
        "models.small.network.cell.tau",
        ["unknown key 'tau'", "a setting of the leaky", "reservoir", "not of the gru cell"],
    ),
    "a reservoir's gain in a leaky cell": (
        at("models.small.network.cell", {"kind": "leaky", "gain": 2.0}),
        "models.small.network.cell.gain",
        ["unknown key 'gain'", "the reservoir cell, not of the leaky cell"],
    ),
    # a setting that acts only with a partner's value, set without it
    "weight decay of adam": (
        at("trainings.quick.optimizer.weight_decay", 0.01),
        "experiments.quiet.training.optimizer.weight_decay",
        ["weight_decay is 0.01", "training.optimizer.name 'adamw'", "name is 'adam'"],
    ),
    "momentum of adamw": (
        at("trainings.quick.optimizer", {"name": "adamw", "momentum": 0.9}),
        "experiments.quiet.training.optimizer.momentum",
        ["momentum is 0.9", "training.optimizer.name 'sgd'", "name is 'adamw'"],
    ),
    "a warm-up of a constant rate": (
        at("trainings.quick.optimizer.schedule", {"warmup_steps": 5}),
        "experiments.quiet.training.optimizer.schedule.warmup_steps",
        ["warmup_steps is 5", "schedule.kind 'warmup_cosine'", "kind is 'constant'"],
    ),
    "an end factor of an exponential decay": (
        at("trainings.quick.optimizer.schedule", {"kind": "exponential", "end_factor": 0.1}),
        "experiments.quiet.training.optimizer.schedule.end_factor",
        ["end_factor is 0.1", "'warmup_cosine'", "kind is 'exponential'"],
    ),
    "decay steps of a warm-up": (
        at("trainings.quick.optimizer.schedule", {"kind": "warmup_cosine", "decay_steps": 10}),
        "experiments.quiet.training.optimizer.schedule.decay_steps",
        ["decay_steps is 10", "schedule.kind 'exponential'", "kind is 'warmup_cosine'"],
    ),
    "a decay rate of a constant rate": (
        at("trainings.quick.optimizer.schedule", {"decay_rate": 0.5}),
        "experiments.quiet.training.optimizer.schedule.decay_rate",
        ["decay_rate is 0.5", "'exponential'"],
    ),
    "a random feedback's scale with symmetric feedback": (
        lambda config: (
            config["models"]["small"]["network"].update(cell="leaky"),
            config["trainings"]["quick"].update(
                learning={"kind": "eprop", "feedback": "symmetric", "feedback_scale": 2.0}
            ),
        ),
        "experiments.quiet.training.learning.feedback_scale",
        ["feedback_scale is 2.0", "learning.feedback 'random'", "feedback is 'symmetric'"],
    ),
    "a corrective stiffness of an open-loop target": (
        lambda config: (
            config["models"]["small"]["network"].update(cell="leaky"),
            config["trainings"]["quick"].update(
                trainable=["network.readout"], learning={"kind": "rls", "stiffness": 4.0}
            ),
        ),
        "experiments.quiet.training.learning.stiffness",
        ["stiffness is 4.0", "learning.target 'corrective'", "target is 'open_loop'"],
    ),
    "a reach of the targets longer than the trial": (
        lambda config: (
            config["models"]["small"]["network"].update(cell="leaky"),
            config["trainings"]["quick"].update(
                trainable=["network.readout"], learning={"kind": "rls", "movement_time": 0.8}
            ),
        ),
        "experiments.quiet.training.learning.movement_time",
        ["lasts 0.8 s", "trials' 0.75 s (task n_steps 15 x model dt 0.05)", "at most 0.75 s"],
    ),
    "a sweep over a setting the base experiment's cell lacks": (
        sweep({"model.network.cell.gain": [1.5, 2.0]}),
        "sweeps.s (as s-gain1p5).override.model.network.cell.gain",
        ["unknown key 'gain'", "the reservoir cell, not of the gru cell"],
    ),
    # nothing to do
    "no experiments": (at("experiments", {}), "experiments", ["{}", "non-empty"]),
    "no tasks at all": (drop("tasks"), "tasks", ["'tasks'", "required"]),
}


@pytest.mark.parametrize(("edit", "path", "fragments"), CASES.values(), ids=CASES.keys())
def test_a_malformed_config_names_key_value_and_what_is_allowed(edit, path, fragments):
    config = tiny_config()
    edit(config)
    with raises_config_error(path, *fragments):
        mfp.resolve_experiments(config)


def test_there_are_at_least_thirty_distinct_cases():
    assert len(CASES) >= 30


def test_a_valid_config_passes_and_resolves():
    assert set(mfp.resolve_experiments(tiny_config())) == {"quiet", "noisy"}


def test_settings_at_their_cross_field_bounds_resolve():
    # Each bound above is the edge of what is allowed, not beyond it.
    config = tiny_config()
    quick = config["trainings"]["quick"]  # n_batches 20; the task's n_steps 15
    quick["optimizer"] = {"schedule": {"kind": "warmup_cosine", "warmup_steps": 20}}
    quick["learning"] = {"kind": "truncated_bptt", "update_every": 15, "window": 15}
    config["analysis"] = {"jpca": {"start": 0.6}}  # 3 steps of a 0.75-s trial
    config["analysis"]["pca"] = {"n_components": 8}  # hidden_size 8
    config["experiments"]["noisy"].update(init_from="quiet", reset_optimizer=False)
    experiments = mfp.resolve_experiments(config)
    assert experiments["quiet"].train.learning.segment_length() == 15
    assert experiments["noisy"].reset_optimizer is False


def _renamed(section, old, new):
    def edit(config):
        config[section][new] = config[section].pop(old)

    return edit


# A name with a final newline ("quiet\n" in YAML) would become a path with a newline:
# each kind of name is refused whole, not only up to a trailing line break.
TRAILING_NEWLINE_NAMES = {
    "experiment": (_renamed("experiments", "quiet", "quiet\n"), "experiments"),
    "task": (_renamed("tasks", "reach", "reach\n"), "tasks"),
    "model": (_renamed("models", "small", "small\n"), "models"),
    "training": (_renamed("trainings", "quick", "quick\n"), "trainings"),
    "protocol": (_renamed("protocols", "noise", "noise\n"), "protocols"),
    "comparison": (
        at("comparisons", {"both\n": {"analysis": "tuning", "experiments": ["quiet"]}}),
        "comparisons",
    ),
    "condition": (
        lambda c: c["evaluation"]["conditions"].update({"pulse\n": []}),
        "evaluation.conditions",
    ),
    "experiment's task": (at("experiments.quiet.task", "reach\n"), "experiments.quiet.task"),
    "init_from": (at("experiments.noisy.init_from", "quiet\n"), "experiments.noisy.init_from"),
    "protocol stage": (at("protocols.noise.stages", ["quiet\n"]), "protocols.noise.stages"),
    "sweep": (sweep({"seed": [1]}, name="s\n"), "sweeps"),
    "sweep setting": (sweep({"seed\n": [1]}), "sweeps.s.grid"),
}


@pytest.mark.parametrize(
    ("edit", "section"), TRAILING_NEWLINE_NAMES.values(), ids=TRAILING_NEWLINE_NAMES.keys()
)
def test_a_name_with_a_trailing_newline_is_refused(edit, section):
    config = tiny_config()
    edit(config)
    with pytest.raises(mf.ConfigError) as error:
        mfp.resolve_experiments(config)
    assert error.value.path.startswith(section), str(error.value)
    assert "\\n'" in error.value.message, str(error.value)
    assert "not a valid name" in error.value.message or "not a sweep setting" in (
        error.value.message
    )


def test_every_independent_problem_of_an_experiment_is_reported_once():
    # Two problems in blocks both experiments share: each said once, under the first.
    config = tiny_config()
    at("models.small.feedback.delay", 15)(config)
    at("trainings.quick.optimizer.weight_decay", 0.01)(config)
    with pytest.raises(mf.ConfigErrors) as error:
        mfp.resolve_experiments(config)
    assert [problem.path for problem in error.value.errors] == [
        "experiments.quiet.model.feedback.delay",
        "experiments.quiet.training.optimizer.weight_decay",
    ], str(error.value)


def test_every_non_finite_number_is_named_at_once():
    config = tiny_config()
    at("trainings.quick.optimizer", {"learning_rate": float("nan")})(config)
    at("tasks.reach.workspace", [[-1, -1], [float("inf"), 1]])(config)
    with pytest.raises(mf.ConfigErrors) as error:
        mfp.parse_config(config)
    paths = {problem.path for problem in error.value.errors}
    assert paths == {"trainings.quick.optimizer.learning_rate", "tasks.reach.workspace[1][0]"}
    assert all("finite" in problem.message for problem in error.value.errors)


def test_a_sweep_that_cannot_expand_is_not_named_again_by_what_lists_its_points():
    # A protocol and a comparison name points of a sweep whose grid is wrong: the
    # grid's problem is the one reported, not "'s-seed1' is not an experiment" after
    # it; a name no sweep could make is still refused. (Without the skip: 4 problems.)
    config = tiny_config()
    sweep({"model.network.hidden_size": [8, 8]})(config)  # two points of one name
    sizes = {"analysis": "tuning", "experiments": ["quiet", "s-hidden_size8", "nope"]}
    at("comparisons", {"sizes": sizes})(config)
    config["protocols"]["noise"]["stages"].append("s-hidden_size8")
    with pytest.raises(mf.ConfigError) as error:
        mfp.resolve_experiments(config)
    problems = getattr(error.value, "errors", [error.value])
    assert [problem.path for problem in problems] == [
        "sweeps.s.grid",
        "comparisons.sizes.experiments[2]",
    ], str(error.value)
