# Config validation, experiment expansion and the input/params functions of the rules.
import re
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

import motorflow as mf

import motorflow.pipeline as mfp

# Snakemake ignores SLURM's early warning (SIGUSR1) before a time limit, and its jobs
# inherit that; a train job handles it (motorflow.pipeline._workflow_run).
mfp.ignore_cluster_warning()

# The run: its config, checked by mfp.check_config (which `motorflow check FILE` runs
# too) from the run's own config files (--configfile, else the default; Snakemake's
# ConfigSettings) under `--config KEY=VALUE`; its results folder; the preflight
# estimate. A bad config is refused with a line per problem before anything runs.
try:
    RUN = mfp.WorkflowRun.open(
        workflow.config_settings.configfiles, workflow.config_settings.config
    )
except mf.ConfigError as error:
    raise WorkflowError(*mfp.config_problems(error)) from None
CHECKED, RESULTS = RUN.checked, RUN.results
SETTINGS, EXPERIMENTS = CHECKED.settings, CHECKED.experiments
# The experiments whose own figures a full run makes (figures.experiments).
DRAWN = mfp.drawn_experiments(SETTINGS, list(EXPERIMENTS))
config.clear()
config.update(CHECKED.config)
config.update(SETTINGS.filled_sections())
# The schema is generated from the same typed config (python -m motorflow schema).
validate(config, "../schemas/config.schema.yaml", set_default=False)

DATASETS = {exp.dataset: exp.dataset_spec() for exp in EXPERIMENTS.values()}
PROTOCOLS = SETTINGS.protocols
COMPARISONS = SETTINGS.comparisons
CONDITION_SWEEPS = SETTINGS.condition_sweeps


# The folder marked with its config files, the last complete results kept aside while
# jobs run, and a local run's warm workers: its jobs run in Python processes that
# stay up (a cluster's jobs, and every job under MOTORFLOW_WARM_WORKERS=0, run one per
# process).
onstart:
    RUN.started(cores=workflow.cores, local=workflow.local_exec)


onsuccess:
    RUN.succeeded()


onerror:
    if (kept := RUN.failed()) is not None:
        print(kept, file=sys.stderr)


FIGURES = config["figures"]
EXT = FIGURES["format"]


# Each wildcard is one of the config's names, as a pattern that matches in one pass
# whatever their number (an alternation of a sweep's names made planning quadratic).
wildcard_constraints:
    experiment=mfp.names_pattern(EXPERIMENTS),
    dataset=mfp.names_pattern(DATASETS),
    protocol=mfp.names_pattern(PROTOCOLS),
    sweep=mfp.names_pattern(SETTINGS.sweeps),
    comparison=mfp.names_pattern(COMPARISONS),
    condition_sweep=mfp.names_pattern(CONDITION_SWEEPS),


def unknown_target(wildcards):
    """Input of a target no experiment or protocol of the config makes: an error
    naming the ones it defines (Snakemake alone would only say no rule makes it)."""
    if "protocol" in wildcards.keys():
        kind, name, defined = "protocol", wildcards.protocol, PROTOCOLS
    elif "sweep_name" in wildcards.keys():
        kind, name, defined = "sweep", wildcards.sweep_name, SETTINGS.sweeps
    else:
        kind, name, defined = "experiment", wildcards.name, EXPERIMENTS
    raise WorkflowError(
        f"The config defines no {kind} {name!r}; it defines: "
        f"{', '.join(defined) or 'none'}. Nothing was run."
    )


# A target under results/ but outside this config's folder (another config's, or
# the layout before results folders): an error saying where this config writes.
if RESULTS == mfp.RESULTS_ROOT:
    OUTSIDE_RESULTS = "(?!)"
elif RESULTS.startswith(f"{mfp.RESULTS_ROOT}/"):
    OUTSIDE_RESULTS = rf"(?!{re.escape(RESULTS[len(mfp.RESULTS_ROOT) + 1:])}(?:/|$)).+"
else:
    OUTSIDE_RESULTS = ".+"


def elsewhere_target(wildcards):
    raise WorkflowError(
        f"{mfp.RESULTS_ROOT}/{wildcards.elsewhere} is not where this config writes: its "
        f"outputs are under {RESULTS}/ (each config has a results folder of its own; "
        f"see the README's Results folders), e.g. {RESULTS}/{wildcards.elsewhere}. "
        "Nothing was run."
    )


# What may not follow results/ (or results/figures/) in the target of an unknown
# experiment: an experiment's name, or a folder of results/. (A lookahead in a wildcard's
# pattern sees the rest of the path, so the names are matched with the "/" after them.)
NOT_AN_EXPERIMENT = "|".join(map(re.escape, [*EXPERIMENTS, *mfp.RESERVED_NAMES]))


# The settings each job depends on, one param per setting (see `setting_params`).
JOB_SETTINGS = CHECKED.job_settings
# How each JAX job runs beside what it makes (checkpoint cadence, compilation cache):
# in its description (`job_params`), which decides no rerun, so editing these reruns
# nothing; the job reads everything else from its params.
JOB_RUN_SETTINGS = CHECKED.job_run_settings


def setting_params(rule, wildcard=None):
    """The rule's params: each job's settings, one "key=value" param per setting.

    Snakemake reruns a job when the set of its param values changes, and its
    dry-run reason then lists just the changed settings (see `mfp.rule_params`).
    A setting that all the rule's jobs share is the value itself, not a function
    (Snakemake inspects each params function of each job as it plans, which in a
    sweep of 1,000 experiments was most of the planning).
    """

    def param(values):
        if len(distinct := set(values.values())) == 1:
            return distinct.pop()
        return lambda wildcards: values[wildcards[wildcard] if wildcard else ""]

    params = mfp.rule_params(JOB_SETTINGS, rule)
    return {
        f"{mfp.SETTING_PARAM_PREFIX}{index}": param(values)
        for index, values in enumerate(params)
    }


# Each rule runs its script (workflow/scripts/<rule>.py) through a command rather
# than Snakemake's `script:`, whose preamble imports Snakemake's package in every job
# (0.2 CPU-s, most of what a job handed to a warm worker costs): the job client, a
# Python of the standard library only, hands the job to a warm worker of this run, or
# runs it in a process of its own (a cluster's job, a GPU job). The script gets the job
# as Snakemake's `snakemake` object (motorflow.pipeline._job). The command's text
# holds the script's digest, so an edited script reruns its jobs (Snakemake's code
# trigger), and no path of this machine, so a moved project reruns nothing.
SCRIPTS = Path(workflow.current_basedir).parent / "scripts"
JOB_CLIENT = mfp.job_client(SCRIPTS)


def job(name):
    """The command of rule `name`, which runs workflow/scripts/`name`.py (its params
    are `job_params(name, ...)`)."""
    return mfp.job_command(SCRIPTS, f"{name}.py")


def job_params(name, wildcard=None, run=None, **params):
    """The params of the rule `name`, which are its settings (`setting_params`),
    `params`, and two its command passes on, `job_client`, the start of the command
    (this machine's paths), and `job`, the job as its script reads it
    (`mfp.describe_job`, with its run settings, `run` or else the job's own; in a file
    below .snakemake/ when long, `mfp.job_argument`). Both are functions of the job's
    input, which Snakemake leaves out of its params rerun trigger: only the settings
    and `params` rerun a job."""
    params = {**setting_params(name, wildcard), **params}
    given = run

    def describe(wildcards, input, output, threads, resources):
        values = {
            key: value(wildcards) if callable(value) else value
            for key, value in params.items()
        }
        run = JOB_RUN_SETTINGS.get((name, wildcards[wildcard])) if wildcard else given
        description = mfp.describe_job(
            name,
            input=input,
            output=output,
            params=values,
            wildcards=wildcards,
            threads=threads,
            resources=resources,
            run=run,
        )
        return mfp.job_argument(description)

    return {
        **params,
        "job_client": lambda wildcards, input: JOB_CLIENT,
        "job": describe,
    }


def dataset_of(wildcards):
    return EXPERIMENTS[wildcards.experiment].dataset


def trials_store(kind):
    return lambda wildcards: f"{RESULTS}/trials/{dataset_of(wildcards)}/{kind}.zarr"


def parent_model(wildcards):
    """The trained model an experiment starts from (`init_from`), else nothing."""
    parent = EXPERIMENTS[wildcards.experiment].init_from
    return [f"{RESULTS}/{parent}/model"] if parent else []


def evaluated_model(wildcards):
    """The trained model evaluate runs: final, or best (`evaluation.model`)."""
    name = "model_best" if SETTINGS.evaluation.model == "best" else "model"
    return f"{RESULTS}/{wildcards.experiment}/{name}"


def stage_threads(stage):
    return getattr(SETTINGS.resources, stage).threads


def job_resources(stage, jobs=1):
    """A stage's `resources:` as Snakemake and its SLURM executor name them: memory,
    runtime (minutes; a pack of `jobs` jobs run one after another asks for their sum),
    `gpu` (what `--resources gpu=N` limits and the job claims), and the optional SLURM
    keys `gpu_model`, `gres` and `slurm_partition`."""
    settings = getattr(SETTINGS.resources, stage)
    resources = {
        "mem_mb": settings.mem_mb,
        "runtime": settings.runtime * jobs,
        "gpu": settings.gpus,
    }
    for key in ("gpu_model", "gres", "slurm_partition"):
        if getattr(settings, key):
            resources[key] = getattr(settings, key)
    return resources


# The packs of the per-experiment rules after training (resources.<stage>.pack; the
# train rule's are train.smk's PACKS): per rule, its stage and the experiments it makes
# files for, cut into packs as mfp.stage_packs cuts them. A packed experiment's job of
# the rule is its pack's (workflow/rules/packs.smk); the rule itself takes the others.
# The figure rules' packs take only the experiments a full run draws (DRAWN).
PACKED_RULES = {
    "evaluate": ("evaluate", list(EXPERIMENTS)),
    "analysis": ("analysis", list(EXPERIMENTS)),
    "experiment_figures": ("figures", DRAWN),
    "analysis_figures": ("figures", DRAWN),
    "arm_figure": (
        "figures",
        [n for n in DRAWN if mfp.is_arm(EXPERIMENTS[n].model)],
    ),
}
STAGE_PACKS = {
    name: mfp.stage_packs(
        names, getattr(SETTINGS.resources, stage).pack, CHECKED.sweeps
    )
    for name, (stage, names) in PACKED_RULES.items()
}


def unpacked(rule):
    """Rule `rule`'s experiment wildcard: the experiments no pack of it takes."""
    packed = {name for pack in STAGE_PACKS[rule] for name in pack}
    return mfp.names_pattern(name for name in EXPERIMENTS if name not in packed)


def experiment_report(path, **kwargs):
    """`path`, flagged for the report (`report(path, **kwargs)`) while the config's
    sweep-wide outputs show each experiment (`mfp.shows_each_experiment`): past that,
    the report holds the figures across experiments (comparison, sweeps, protocols), and
    each experiment's stay in results/<config>/figures/."""
    if not mfp.shows_each_experiment(len(EXPERIMENTS)):
        return path
    return report(path, **kwargs)


def protocol_panel_stages(protocol):
    """The stages a protocol's path panels draw, each once, in order."""
    return list(dict.fromkeys(panel.stage for panel in PROTOCOLS[protocol].panels))


def protocol_curve_stages(protocol):
    """The stages of a protocol that keep snapshots: its learning curve's."""
    return mfp.protocol_curve_stages(PROTOCOLS[protocol].stages, EXPERIMENTS)


def experiment_figures(experiment):
    return [
        f"{RESULTS}/figures/{experiment}/{name}.{EXT}"
        for name in ("loss", "trajectories", "speed", *ANALYSIS_FIGURES)
    ]


# The hidden-state analyses' figures of every experiment: one per registered analysis.
ANALYSIS_FIGURES = tuple(mf.ANALYSES)


def all_targets():
    """What a full run makes: every experiment's analyses, the drawn experiments' own
    figures (figures.experiments) and the figures and tables across experiments."""
    figures = [f"{RESULTS}/figures/comparison.{EXT}", f"{RESULTS}/summary.csv"]
    figures += [f"{RESULTS}/{name}/analysis.zarr" for name in EXPERIMENTS]
    for name in DRAWN:
        figures += experiment_figures(name)
        if mfp.is_arm(EXPERIMENTS[name].model):
            figures.append(f"{RESULTS}/figures/{name}/arm.{EXT}")
    figures += [f"{RESULTS}/figures/protocol-{name}.{EXT}" for name in PROTOCOLS]
    figures += [f"{RESULTS}/figures/sweep-{name}.{EXT}" for name in SWEEPS]
    figures += [
        f"{RESULTS}/figures/comparison-{name}.{ext}"
        for name in COMPARISONS
        for ext in (EXT, "csv")
    ]
    figures += [
        f"{RESULTS}/figures/condition-sweep-{name}.{ext}"
        for name in CONDITION_SWEEPS
        for ext in (EXT, "csv")
    ]
    return figures


# Each sweep's experiments, with their grid values.
SWEEPS = CHECKED.sweeps


# A sentence per experiment saying what produced its results: every figure's caption
# shows it. It derives from the settings of jobs upstream of the figure, so it
# changes only when the figure reruns anyway.
DESCRIPTIONS = {name: mfp.describe_experiment(e) for name, e in EXPERIMENTS.items()}


def description(wildcards):
    return DESCRIPTIONS[wildcards.experiment]


def descriptions(names):
    return " ".join(DESCRIPTIONS[name] for name in names)
