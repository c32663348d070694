"""Snakemake adapter: one sweep's metrics against its swept values."""

import motorflow.pipeline as mfp

sweep = mfp.parse_setting_params(snakemake.params)["sweep"]
name = snakemake.wildcards.sweep
with mfp.stage_logging(snakemake.log[0]):
    mfp.sweep_figure(
        mfp.grid_point_names(name, dict(sweep["grid"])),
        history_paths=snakemake.input.histories,
        metrics_paths=snakemake.input.metrics,
        summary_path=snakemake.input.summary,
        figure_path=snakemake.output[0],
        metrics=sweep["metrics"],
        marks=dict(sweep["marks"]),
        x_scale=sweep["x_scale"],
        options=mfp.parse_setting_params(snakemake.params)["figures"],
        title=f"sweep {name}",
    )
