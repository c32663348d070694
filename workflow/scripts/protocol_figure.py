"""Snakemake adapter: one protocol's figure and table."""

import motorflow as mf

protocol = mf.parse_setting_params(snakemake.params)["protocol"]  # noqa: F821
with mf.stage_logging(snakemake.log[0]):  # noqa: F821
    mf.protocol_figure(
        protocol["stages"],
        metrics_paths=snakemake.input.metrics,  # noqa: F821
        figure_path=snakemake.output.figure,  # noqa: F821
        table_path=snakemake.output.table,  # noqa: F821
        metric=protocol["metric"],
        options=snakemake.config["figures"],  # noqa: F821
        title=snakemake.wildcards.protocol,  # noqa: F821
    )
