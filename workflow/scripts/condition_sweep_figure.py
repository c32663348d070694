"""Snakemake adapter: one condition sweep's figure and CSV."""

import motorflow as mf
import motorflow.pipeline as mfp

settings = mfp.parse_setting_params(snakemake.params)
sweep = settings["condition_sweep"]
with mfp.stage_logging(snakemake.log[0]):
    mfp.condition_sweep_stage(
        sweep["experiments"],
        history_paths=snakemake.input.histories,
        metrics_paths=snakemake.input.metrics,
        x=dict(settings["x"]),
        sweep=sweep,
        x_label=settings["x_label"],
        marks=dict(settings["marks"]),
        statistics=mf.StatisticsConfig.from_dict(settings["statistics"], "statistics"),
        figure_path=snakemake.output.figure,
        table_path=snakemake.output.table,
        options=settings["figures"],
    )
