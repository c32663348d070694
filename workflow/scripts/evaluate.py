"""Snakemake adapter: evaluate one experiment's trained ensemble."""

import json

import motorflow as mf

with mf.stage_logging(snakemake.log[0]):  # noqa: F821
    mf.use_devices(cpu_devices=snakemake.threads, gpus=snakemake.resources.gpu)  # noqa: F821
    mf.enable_compilation_cache(snakemake.params.jax_cache)  # noqa: F821
    mf.evaluate_experiment(
        mf.Experiment.from_dict(json.loads(snakemake.params.experiment)),  # noqa: F821
        model_path=snakemake.input.model,  # noqa: F821
        eval_path=snakemake.input.eval,  # noqa: F821
        states_path=snakemake.output.states,  # noqa: F821
        metrics_path=snakemake.output.metrics,  # noqa: F821
        table_path=snakemake.output.table,  # noqa: F821
        goal_radius=snakemake.params.goal_radius,  # noqa: F821
    )
