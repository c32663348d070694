# Config validation, experiment expansion and the input/params functions of the rules.
import re
from pathlib import Path

import yaml
from snakemake.exceptions import WorkflowError
from snakemake.utils import update_config, validate

import motorflow as mf

SCHEMA = Path(workflow.basedir) / "workflow" / "schemas" / "config.schema.yaml"

# The config files (--configfile, else the default) are read again by motorflow's
# own loader, which refuses duplicate keys, aliases, tags and templating, and
# reads 1e-3 as a number; `--config KEY=VALUE` overrides them as in Snakemake.
CONFIG_FILES = workflow.config_settings.configfiles or [Path("config/config.yaml")]
try:
    loaded = {}
    for path in CONFIG_FILES:
        update_config(loaded, mf.load_config_file(path))
    update_config(loaded, dict(workflow.config_settings.config))
    config.clear()
    config.update(loaded)
    # Our own check first, for one message naming the key path; then Snakemake's
    # validate, which fills in the defaults of the top-level sections.
    EXPERIMENTS = mf.check_config(config, yaml.safe_load(SCHEMA.read_text()))
except mf.ConfigError as error:
    raise WorkflowError(
        f"Invalid config: {error}\nNothing was run; fix the config and run again."
    ) from None
validate(config, "../schemas/config.schema.yaml")

DATASETS = {exp.dataset: exp.dataset_spec() for exp in EXPERIMENTS.values()}
RESULTS = "results"
FIGURES = config["figures"]
EXT = FIGURES["format"]


wildcard_constraints:
    experiment="|".join(map(re.escape, EXPERIMENTS)),
    dataset="|".join(map(re.escape, DATASETS)),


# The settings each job depends on, one param per setting (see `setting_params`).
JOB_SETTINGS = mf.job_settings(config, EXPERIMENTS)


def setting_params(rule, wildcard=None):
    """One param per setting the rule's job depends on, valued "key=value".

    Snakemake reruns a job when the set of its params changes, and its dry-run
    reason then lists just the changed settings with their old and new values.
    """
    jobs = {key: flat for (name, key), flat in JOB_SETTINGS.items() if name == rule}
    names = sorted(set().union(*(flat.keys() for flat in jobs.values())))

    def param(name):
        def value(wildcards):
            flat = jobs[wildcards[wildcard] if wildcard else ""]
            return mf.setting_param(name, flat.get(name))

        return value

    return {name.replace(".", "__"): param(name) for name in names}


def dataset_of(wildcards):
    return EXPERIMENTS[wildcards.experiment].dataset


def trials_store(kind):
    return lambda wildcards: f"{RESULTS}/trials/{dataset_of(wildcards)}/{kind}.zarr"


# Job sizes per stage; `resources.<stage>` in the config overrides any of them.
DEFAULT_RESOURCES = {
    "trials": {"threads": 1, "mem_mb": 2000, "runtime": 10, "gpus": 0},
    "train": {"threads": 2, "mem_mb": 4000, "runtime": 120, "gpus": 0},
    "evaluate": {"threads": 1, "mem_mb": 2000, "runtime": 30, "gpus": 0},
    "figures": {"threads": 1, "mem_mb": 1000, "runtime": 10, "gpus": 0},
}


def stage_resources(stage):
    return {**DEFAULT_RESOURCES[stage], **config["resources"].get(stage, {})}


def stage_threads(stage):
    return stage_resources(stage)["threads"]


def job_resources(stage):
    """A stage's `resources:` as Snakemake and its SLURM executor name them: memory,
    runtime (minutes), `gpu` (what `--resources gpu=N` limits and the job claims),
    and the optional SLURM keys `gpu_model`, `gres` and `slurm_partition`."""
    settings = stage_resources(stage)
    resources = {
        "mem_mb": settings["mem_mb"],
        "runtime": settings["runtime"],
        "gpu": settings["gpus"],
    }
    for key in ("gpu_model", "gres", "slurm_partition"):
        if settings.get(key):
            resources[key] = settings[key]
    return resources


def experiment_figures(experiment):
    return [
        f"{RESULTS}/figures/{experiment}/{name}.{EXT}"
        for name in ("loss", "trajectories", "speed")
    ]


def all_figures():
    figures = [f"{RESULTS}/figures/comparison.{EXT}"]
    for experiment in EXPERIMENTS:
        figures += experiment_figures(experiment)
    return figures
