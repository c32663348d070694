"""Snakemake adapter: train (or resume) one experiment's ensemble."""

from pathlib import Path

import motorflow as mf

config = snakemake.config  # noqa: F821
with mf.stage_logging(snakemake.log[0]):  # noqa: F821
    # One XLA CPU device per thread (the trainer spreads the replicates over them);
    # the GPUs the job asked for, claimed so that concurrent jobs never share one.
    mf.use_devices(cpu_devices=snakemake.threads, gpus=snakemake.resources.gpu)  # noqa: F821
    mf.enable_compilation_cache(config["jax_cache_dir"])
    model_path = Path(snakemake.output.model)  # noqa: F821
    mf.train_experiment(
        mf.resolve_experiment(config, snakemake.wildcards.experiment),  # noqa: F821
        trials_path=snakemake.input.trials,  # noqa: F821
        eval_path=snakemake.input.eval,  # noqa: F821
        model_path=model_path,
        history_path=snakemake.output.history,  # noqa: F821
        best_model_path=snakemake.output.model_best,  # noqa: F821
        checkpoint_dir=model_path.parent / "checkpoints",
        # The trained model of the experiment it starts from (init_from), if any.
        init_path=snakemake.input.init[0] if snakemake.input.init else None,  # noqa: F821
    )
