"""Snakemake adapter: one protocol's figure and table."""

import motorflow.pipeline as mfp

protocol = mfp.parse_setting_params(snakemake.params)["protocol"]
with mfp.stage_logging(snakemake.log[0]):
    mfp.protocol_figure(
        protocol["stages"],
        metrics_paths=snakemake.input.metrics,
        figure_path=snakemake.output.figure,
        table_path=snakemake.output.table,
        metric=protocol["metric"],
        options=mfp.parse_setting_params(snakemake.params)["figures"],
        title=snakemake.wildcards.protocol,
    )
