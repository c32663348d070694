"""Snakemake adapter: the cross-experiment comparison figure."""

import json

import motorflow as mf

with mf.stage_logging(snakemake.log[0]):  # noqa: F821
    mf.comparison_figure(
        snakemake.params.experiments,  # noqa: F821
        history_paths=snakemake.input.histories,  # noqa: F821
        metrics_paths=snakemake.input.metrics,  # noqa: F821
        output_path=snakemake.output[0],  # noqa: F821
        options=json.loads(snakemake.params.figures),  # noqa: F821
    )
