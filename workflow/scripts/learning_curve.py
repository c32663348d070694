"""Snakemake adapter: evaluate one experiment's training snapshots (its learning curve)."""

import motorflow.pipeline as mfp

task, seed, evaluation = mfp.evaluate_job_settings(snakemake.params)
run = snakemake.run
with mfp.stage_logging(snakemake.log[0]):
    mfp.use_devices(cpu_devices=snakemake.threads, gpus=snakemake.resources.gpu)
    mfp.enable_compilation_cache(run["jax_cache_dir"])
    mfp.evaluate_snapshots(
        snakemake.wildcards.experiment,
        task=task,
        seed=seed,
        model_path=snakemake.input.model,
        history_path=snakemake.input.history,
        eval_path=snakemake.input.eval,
        curve_path=snakemake.output.curve,
        evaluation=evaluation,
    )
