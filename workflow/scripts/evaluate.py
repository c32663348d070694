"""Snakemake adapter: evaluate one experiment's trained ensemble."""

import motorflow.pipeline as mfp

config = snakemake.config
with mfp.stage_logging(snakemake.log[0]):
    mfp.use_devices(cpu_devices=snakemake.threads, gpus=snakemake.resources.gpu)
    mfp.enable_compilation_cache(config["jax_cache_dir"])
    mfp.evaluate_experiment(
        mfp.resolve_experiment(config, snakemake.wildcards.experiment),
        model_path=snakemake.input.model,
        eval_path=snakemake.input.eval,
        states_path=snakemake.output.states,
        metrics_path=snakemake.output.metrics,
        table_path=snakemake.output.table,
        evaluation=mfp.EvaluationConfig.from_dict(config["evaluation"], "evaluation"),
    )
