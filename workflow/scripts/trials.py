"""Snakemake adapter: write one dataset's training and evaluation trial specs."""

import json

import motorflow as mf

with mf.stage_logging(snakemake.log[0]):  # noqa: F821
    mf.use_devices(cpu_devices=snakemake.threads, gpus=snakemake.resources.gpu)  # noqa: F821
    mf.enable_compilation_cache(snakemake.params.jax_cache)  # noqa: F821
    mf.make_trials(
        json.loads(snakemake.params.spec),  # noqa: F821
        train_path=snakemake.output.train,  # noqa: F821
        eval_path=snakemake.output.eval,  # noqa: F821
    )
