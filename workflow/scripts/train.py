"""Snakemake adapter: train (or resume) one experiment's ensemble."""

import json

import motorflow as mf

with mf.stage_logging(snakemake.log[0]):  # noqa: F821
    # One XLA CPU device per thread (the trainer spreads the replicates over them);
    # the GPUs the job asked for, claimed so that concurrent jobs never share one.
    mf.use_devices(cpu_devices=snakemake.threads, gpus=snakemake.resources.gpu)  # noqa: F821
    mf.enable_compilation_cache(snakemake.params.jax_cache)  # noqa: F821
    mf.train_experiment(
        mf.Experiment.from_dict(json.loads(snakemake.params.experiment)),  # noqa: F821
        trials_path=snakemake.input.trials,  # noqa: F821
        eval_path=snakemake.input.eval,  # noqa: F821
        model_path=snakemake.output.model,  # noqa: F821
        history_path=snakemake.output.history,  # noqa: F821
        checkpoint_dir=snakemake.params.checkpoints,  # noqa: F821
    )
