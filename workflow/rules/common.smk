# Config validation, experiment expansion and the input/params functions of the rules.
import hashlib
import re
from pathlib import Path

import yaml
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

import motorflow as mf
from motorflow import canonical_json

SCHEMA = Path(workflow.basedir) / "workflow" / "schemas" / "config.schema.yaml"

# Our own check first, for one message naming the key path; then Snakemake's
# validate, which fills in the defaults of the top-level sections.
try:
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


def _code_fingerprint():
    """Digest of the library's source, so library edits can rerun training (opt-in)."""
    digest = hashlib.sha256()
    package = Path(mf.__file__).parent
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


CODE = _code_fingerprint() if config["track_code"] else None


def dataset_of(wildcards):
    return EXPERIMENTS[wildcards.experiment].dataset


def trials_store(kind):
    return lambda wildcards: f"{RESULTS}/trials/{dataset_of(wildcards)}/{kind}.zarr"


def dataset_params(wildcards):
    return canonical_json(DATASETS[wildcards.dataset])


def train_params(wildcards):
    # checkpoint_every and keep_checkpoints shape the resume state, not the results.
    experiment = EXPERIMENTS[wildcards.experiment].to_dict()
    for key in ("checkpoint_every", "keep_checkpoints"):
        experiment["train"].pop(key)
    return canonical_json({"experiment": experiment, "code": CODE})


def experiment_json(wildcards):
    return canonical_json(EXPERIMENTS[wildcards.experiment].to_dict())


def evaluate_params(wildcards):
    experiment = EXPERIMENTS[wildcards.experiment]
    return canonical_json(
        {
            "task": experiment.task.to_dict(),
            "seed": experiment.seed,
            "goal_radius": config["evaluation"]["goal_radius"],
            "code": CODE,
        }
    )


def figure_params(wildcards):
    return canonical_json(FIGURES)


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
