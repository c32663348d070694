"""Snakemake adapter: one protocol's figure and tables."""

import motorflow.pipeline as mfp

settings = mfp.parse_setting_params(snakemake.params)
protocol = settings["protocol"]
with mfp.stage_logging(snakemake.log[0]):
    mfp.protocol_figure(
        protocol["stages"],
        metrics_paths=snakemake.input.metrics,
        figure_path=snakemake.output.figure,
        table_path=snakemake.output.table,
        curve_table_path=snakemake.output.curve_table,
        metric=protocol["metric"],
        options=settings["figures"],
        # Only a protocol with a learning curve is given (and depends on) the statistics.
        statistics=settings.get("statistics"),
        panels=protocol["panels"],
        conditions=protocol["conditions"],
        states_paths=dict(zip(snakemake.params.panel_stages, snakemake.input.states, strict=True)),
        curve_paths=dict(zip(snakemake.params.curve_stages, snakemake.input.curves, strict=True)),
        stage_batches=settings.get("stage_batches", {}),
        title=snakemake.wildcards.protocol,
    )
