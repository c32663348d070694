"""Snakemake adapter: hidden-state analyses of one experiment."""

import motorflow as mf

config = snakemake.config  # noqa: F821
with mf.stage_logging(snakemake.log[0]):  # noqa: F821
    mf.use_devices(cpu_devices=snakemake.threads, gpus=snakemake.resources.gpu)  # noqa: F821
    mf.enable_compilation_cache(config["jax_cache_dir"])
    mf.analyse_experiment(
        mf.resolve_experiment(config, snakemake.wildcards.experiment),  # noqa: F821
        model_path=snakemake.input.model,  # noqa: F821
        eval_path=snakemake.input.eval,  # noqa: F821
        states_path=snakemake.input.states,  # noqa: F821
        analysis_path=snakemake.output[0],  # noqa: F821
        options=mf.AnalysisConfig.from_dict(config["analysis"], "analysis"),
    )
