"""Snakemake adapter: the cross-experiment comparison figure."""

import motorflow.pipeline as mfp

with mfp.stage_logging(snakemake.log[0]):
    mfp.comparison_figure(
        mfp.parse_setting_params(snakemake.params)["experiments"],
        history_paths=snakemake.input.histories,
        metrics_paths=snakemake.input.metrics,
        summary_path=snakemake.input.summary,
        output_path=snakemake.output[0],
        options=mfp.parse_setting_params(snakemake.params)["figures"],
    )
