"""Snakemake adapter: evaluate one experiment's trained ensemble."""

import motorflow.pipeline as mfp

task, seed, evaluation = mfp.evaluate_job_settings(snakemake.params)
run = snakemake.run
with mfp.stage_logging(snakemake.log[0]):
    mfp.use_devices(cpu_devices=snakemake.threads, gpus=snakemake.resources.gpu)
    mfp.enable_compilation_cache(run["jax_cache_dir"])
    mfp.evaluate_experiment(
        snakemake.wildcards.experiment,
        task=task,
        seed=seed,
        model_path=snakemake.input.model,
        eval_path=snakemake.input.eval,
        states_path=snakemake.output.states,
        metrics_path=snakemake.output.metrics,
        table_path=snakemake.output.table,
        evaluation=evaluation,
    )
