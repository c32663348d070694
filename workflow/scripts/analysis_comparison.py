"""Snakemake adapter: one analysis compared across experiments (figure and CSV)."""

import motorflow as mf
import motorflow.pipeline as mfp

settings = mfp.parse_setting_params(snakemake.params)
comparison = settings["comparison"]
with mfp.stage_logging(snakemake.log[0]):
    mfp.analysis_comparison(
        comparison["analysis"],
        analysis_paths=dict(zip(comparison["experiments"], snakemake.input.analyses, strict=True)),
        figure_path=snakemake.output.figure,
        table_path=snakemake.output.table,
        replicate=settings["analysis"]["replicate"],
        statistics=mf.StatisticsConfig.from_dict(settings["statistics"], "statistics"),
        options=settings["figures"],
        title=comparison["title"],
    )
