"""Snakemake adapter: hidden-state analyses of one experiment."""

import motorflow as mf
import motorflow.pipeline as mfp

settings = mfp.parse_setting_params(snakemake.params)
run = snakemake.run
with mfp.stage_logging(snakemake.log[0]):
    mfp.use_devices(cpu_devices=snakemake.threads, gpus=snakemake.resources.gpu)
    mfp.enable_compilation_cache(run["jax_cache_dir"])
    mfp.analyse_experiment(
        snakemake.wildcards.experiment,
        task=mf.TaskConfig.from_dict(settings["task"], "task"),
        seed=settings["seed"],
        model_path=snakemake.input.model,
        eval_path=snakemake.input.eval,
        states_path=snakemake.input.states,
        analysis_path=snakemake.output[0],
        # Without `replicate`, which only the figures read.
        options=mf.AnalysisConfig.from_dict(settings["analysis"], "analysis"),
    )
