# Config validation, experiment expansion and the input/params functions of the rules.
import re
import signal
import sys
import threading
from pathlib import Path

import yaml
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

import motorflow as mf

import motorflow.pipeline as mfp

# SLURM's early warning before a time limit (sbatch --signal=USR1@T, profiles/slurm)
# reaches every process of the job's step: Snakemake there would die of it (the
# default action), ending the step and with it the train job before it checkpoints.
# So Snakemake ignores SIGUSR1, and the jobs it starts inherit that, but a train job
# handles it: it checkpoints at its next chunk boundary and exits, and the retry resumes.
if threading.current_thread() is threading.main_thread():
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)

# The command that started the workflow, for the train jobs' run record (a job's own
# command line is a temporary script's). Passed through the environment, which the
# jobs inherit, never as a param: params decide reruns, and another command line must
# not make any job stale (motorflow.pipeline._invocation).
STARTED_HERE = mfp.note_workflow_command()

# The config files (--configfile, else the default) are read again by motorflow's
# own loader, which refuses duplicate keys, aliases, tags and templating, and
# reads 1e-3 as a number; `--config KEY=VALUE` overrides them as in Snakemake.
# Each shipped config is whole, so a --configfile replaces the default rather than
# extending it, which a `configfile:` directive would do (Snakemake merges the
# directive's file under every --configfile, and --replace-workflow-config would
# also drop it under a lone --config); so the paths come from the run's
# ConfigSettings, the settings object of Snakemake's API.
CONFIG_FILES = workflow.config_settings.configfiles or [Path("config/config.yaml")]
# Every check runs in mfp.check_config, which `motorflow check FILE` runs too: the
# typed config (motorflow.pipeline.WorkflowConfig) checks every key and fills in the
# defaults of the top-level sections; the named blocks stay as written.
try:
    CHECKED = mfp.check_config(
        mfp.read_config(CONFIG_FILES, dict(workflow.config_settings.config))
    )
except mf.ConfigError as error:
    # One line per problem: the typed config reports every bad key at once.
    each = error.errors if isinstance(error, mf.ConfigErrors) else (error,)
    raise WorkflowError(
        *(f"Invalid config: {problem}" for problem in each),
        "Nothing was run; fix the config and run again.",
    ) from None
loaded, SETTINGS, EXPERIMENTS = CHECKED.config, CHECKED.settings, CHECKED.experiments
config.clear()
config.update(loaded)
config.update(SETTINGS.filled_sections())
# The schema is generated from the same typed config (python -m motorflow schema).
validate(config, "../schemas/config.schema.yaml", set_default=False)

DATASETS = {exp.dataset: exp.dataset_spec() for exp in EXPERIMENTS.values()}
PROTOCOLS = SETTINGS.protocols
COMPARISONS = SETTINGS.comparisons
# Each config's outputs go to a folder of their own (the `results` key, else
# results/<config file name>), so configs never replace or make stale each other's
# results. A run (not a dry run) marks its folder with its config files; a folder
# named after the file that another file's run has written (two config.yaml) is
# refused before anything runs. One named by the `results` key is the user's choice.
try:
    RESULTS = mfp.results_folder(SETTINGS.results, CONFIG_FILES)
    if SETTINGS.results is None:  # a folder named on purpose may be shared
        mfp.check_results_owner(RESULTS, CONFIG_FILES)
    # The preflight estimate, once per workflow (the dry run too; not in each job,
    # which parses the workflow again while others write): a line per experiment,
    # and a config that cannot fit this machine refused before any job starts.
    if STARTED_HERE:
        ESTIMATES, WARNINGS = mfp.preflight(SETTINGS, EXPERIMENTS, RESULTS)
        print(
            "motorflow estimate (disk written, peak memory of the train and evaluate jobs):",
            *(f"  {estimate.line()}" for estimate in ESTIMATES),
            *(f"  warning: {line}" for line in WARNINGS),
            sep="\n",
            file=sys.stderr,
        )
except mf.ConfigError as error:
    raise WorkflowError(
        f"Invalid config: {error}\nNothing was run; fix the config and run again."
    ) from None


# The warm workers of a local run: its jobs run in Python processes that stay up,
# instead of each paying the imports, JAX's start and tracing (a sweep of small
# experiments costs its compute, not its start-ups; motorflow.pipeline._warm_workers).
# A cluster's jobs run one per process, as does every job under MOTORFLOW_WARM_WORKERS=0.
WARM_WORKERS = []


onstart:
    mfp.mark_results_owner(RESULTS, CONFIG_FILES)
    # The files as the last successful run left them, hard-linked aside: a job that
    # fails after Snakemake deleted its old outputs costs nothing of them
    # (motorflow.pipeline._last_complete).
    mfp.keep_last_complete(RESULTS)
    if workflow.local_exec and (warm := mfp.start_warm_workers(workflow.cores)):
        WARM_WORKERS.append(warm)


onsuccess:
    for warm in WARM_WORKERS:
        warm.stop()
    mfp.drop_last_complete(RESULTS)


onerror:
    for warm in WARM_WORKERS:
        warm.stop()
    if (kept := mfp.last_complete_message(RESULTS)) is not None:
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


def job_params(name, wildcard=None, **params):
    """The params of the rule `name`, which are its settings (`setting_params`),
    `params`, and two its command passes on, `job_client`, the start of the command
    (this machine's paths), and `job`, the job as its script reads it
    (`mfp.describe_job`, with its run settings; in a file below .snakemake/ when long,
    `mfp.job_argument`). Both are functions of the job's input, which Snakemake leaves
    out of its params rerun trigger: only the settings and `params` rerun a job."""
    params = {**setting_params(name, wildcard), **params}

    def describe(wildcards, input, output, threads, resources):
        values = {
            key: value(wildcards) if callable(value) else value
            for key, value in params.items()
        }
        run = JOB_RUN_SETTINGS.get((name, wildcards[wildcard])) if wildcard else None
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


def job_resources(stage):
    """A stage's `resources:` as Snakemake and its SLURM executor name them: memory,
    runtime (minutes), `gpu` (what `--resources gpu=N` limits and the job claims),
    and the optional SLURM keys `gpu_model`, `gres` and `slurm_partition`."""
    settings = getattr(SETTINGS.resources, stage)
    resources = {
        "mem_mb": settings.mem_mb,
        "runtime": settings.runtime,
        "gpu": settings.gpus,
    }
    for key in ("gpu_model", "gres", "slurm_partition"):
        if getattr(settings, key):
            resources[key] = getattr(settings, key)
    return resources


# Each experiment's figures are in the report (`snakemake --report`) up to this many
# experiments; past it, the report holds the figures across experiments (comparison,
# sweeps, protocols), and each experiment's stay in results/<config>/figures/ (a
# report of 1,000 experiments' 7,000 figures would be hundreds of megabytes).
REPORTED_EXPERIMENTS_UP_TO = 30


def experiment_report(path, **kwargs):
    """`path`, flagged for the report (`report(path, **kwargs)`) while the config has
    at most `REPORTED_EXPERIMENTS_UP_TO` experiments."""
    if len(EXPERIMENTS) > REPORTED_EXPERIMENTS_UP_TO:
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


def all_figures():
    figures = [f"{RESULTS}/figures/comparison.{EXT}", f"{RESULTS}/summary.csv"]
    for name, experiment in EXPERIMENTS.items():
        figures += experiment_figures(name)
        if mfp.is_arm(experiment.model):
            figures.append(f"{RESULTS}/figures/{name}/arm.{EXT}")
    figures += [f"{RESULTS}/figures/protocol-{name}.{EXT}" for name in PROTOCOLS]
    figures += [f"{RESULTS}/figures/sweep-{name}.{EXT}" for name in SWEEPS]
    figures += [
        f"{RESULTS}/figures/comparison-{name}.{ext}"
        for name in COMPARISONS
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
