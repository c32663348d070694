"""Snakemake adapter: hidden-state analyses of one experiment."""

import motorflow as mf
import motorflow.pipeline as mfp

config = snakemake.config
with mfp.stage_logging(snakemake.log[0]):
    mfp.use_devices(cpu_devices=snakemake.threads, gpus=snakemake.resources.gpu)
    mfp.enable_compilation_cache(config["jax_cache_dir"])
    mfp.analyse_experiment(
        mfp.resolve_experiment(config, snakemake.wildcards.experiment),
        model_path=snakemake.input.model,
        eval_path=snakemake.input.eval,
        states_path=snakemake.input.states,
        analysis_path=snakemake.output[0],
        options=mf.AnalysisConfig.from_dict(config["analysis"], "analysis"),
    )
