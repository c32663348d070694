"""Snakemake adapter: train (or resume) one experiment's ensemble."""

from pathlib import Path

import motorflow.pipeline as mfp

# What the result depends on comes from the params; how the job runs (checkpoint
# cadence, compilation cache) from its run settings, which decide no rerun.
run = snakemake.run
experiment = mfp.train_job_experiment(snakemake.wildcards.experiment, snakemake.params, run)
with mfp.stage_logging(snakemake.log[0]):
    # One XLA CPU device per thread (the trainer spreads the replicates over them);
    # the GPUs the job asked for, claimed so that concurrent jobs never share one.
    mfp.use_devices(cpu_devices=snakemake.threads, gpus=snakemake.resources.gpu)
    mfp.enable_compilation_cache(run["jax_cache_dir"])
    model_path = Path(snakemake.output.model)
    mfp.train_experiment(
        experiment,
        trials_path=snakemake.input.trials,
        eval_path=snakemake.input.eval,
        model_path=model_path,
        history_path=snakemake.output.history,
        best_model_path=snakemake.output.model_best,
        checkpoint_dir=model_path.parent / "checkpoints",
        # The trained model of the experiment it starts from (init_from), if any.
        init_path=snakemake.input.init[0] if snakemake.input.init else None,
        # For the run record: the command that started the workflow (noted as the
        # Snakefile was parsed), this job's rule and wildcards.
        invocation=mfp.job_invocation(snakemake.rule, dict(snakemake.wildcards.items())),
    )
