"""Snakemake adapter: train (or resume) one experiment's ensemble."""

import json
import os

# One XLA CPU device per thread Snakemake gives this job, set before JAX starts:
# the trainer spreads the replicates over them (GPUs, when present, are used as they are).
os.environ["XLA_FLAGS"] = (
    f"{os.environ.get('XLA_FLAGS', '')} "
    f"--xla_force_host_platform_device_count={snakemake.threads}"  # noqa: F821
).strip()

import motorflow as mf

with mf.stage_logging(snakemake.log[0]):  # noqa: F821
    mf.enable_compilation_cache(snakemake.params.jax_cache)  # noqa: F821
    mf.train_experiment(
        mf.Experiment.from_dict(json.loads(snakemake.params.experiment)),  # noqa: F821
        trials_path=snakemake.input.trials,  # noqa: F821
        eval_path=snakemake.input.eval,  # noqa: F821
        model_path=snakemake.output.model,  # noqa: F821
        history_path=snakemake.output.history,  # noqa: F821
        checkpoint_dir=snakemake.params.checkpoints,  # noqa: F821
    )
