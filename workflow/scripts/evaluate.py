"""Snakemake adapter: evaluate one experiment's trained ensemble."""

import motorflow as mf

config = snakemake.config  # noqa: F821
with mf.stage_logging(snakemake.log[0]):  # noqa: F821
    mf.use_devices(cpu_devices=snakemake.threads, gpus=snakemake.resources.gpu)  # noqa: F821
    mf.enable_compilation_cache(config["jax_cache_dir"])
    mf.evaluate_experiment(
        mf.resolve_experiment(config, snakemake.wildcards.experiment),  # noqa: F821
        model_path=snakemake.input.model,  # noqa: F821
        eval_path=snakemake.input.eval,  # noqa: F821
        states_path=snakemake.output.states,  # noqa: F821
        metrics_path=snakemake.output.metrics,  # noqa: F821
        table_path=snakemake.output.table,  # noqa: F821
        evaluation=mf.EvaluationConfig.from_dict(config["evaluation"], "evaluation"),
    )
