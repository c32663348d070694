"""Snakemake adapter: write one dataset's training and evaluation trial specs."""

import motorflow as mf

with mf.stage_logging(snakemake.log[0]):  # noqa: F821
    mf.use_devices(cpu_devices=snakemake.threads, gpus=snakemake.resources.gpu)  # noqa: F821
    mf.enable_compilation_cache(snakemake.config["jax_cache_dir"])  # noqa: F821
    mf.make_trials(
        # The params are the dataset's settings, one "key=value" each.
        mf.parse_setting_params(snakemake.params),  # noqa: F821
        train_path=snakemake.output.train,  # noqa: F821
        eval_path=snakemake.output.eval,  # noqa: F821
    )
