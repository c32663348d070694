"""Snakemake adapter: write one dataset's training and evaluation trial specs."""

import motorflow.pipeline as mfp

run = snakemake.run
with mfp.stage_logging(snakemake.log[0]):
    mfp.use_devices(cpu_devices=snakemake.threads, gpus=snakemake.resources.gpu)
    mfp.enable_compilation_cache(run["jax_cache_dir"])
    mfp.make_trials(
        # The params are the dataset's settings, one "key=value" each.
        mfp.parse_setting_params(snakemake.params),
        train_path=snakemake.output.train,
        eval_path=snakemake.output.eval,
    )
