"""Snakemake adapter: the cross-experiment comparison figure."""

import motorflow as mf

with mf.stage_logging(snakemake.log[0]):  # noqa: F821
    mf.comparison_figure(
        mf.parse_setting_params(snakemake.params)["experiments"],  # noqa: F821
        history_paths=snakemake.input.histories,  # noqa: F821
        metrics_paths=snakemake.input.metrics,  # noqa: F821
        summary_path=snakemake.input.summary,  # noqa: F821
        output_path=snakemake.output[0],  # noqa: F821
        options=snakemake.config["figures"],  # noqa: F821
    )
