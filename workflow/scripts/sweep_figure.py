"""Snakemake adapter: one sweep's metrics against its swept values."""

import motorflow as mf

sweep = mf.parse_setting_params(snakemake.params)["sweep"]  # noqa: F821
name = snakemake.wildcards.sweep  # noqa: F821
with mf.stage_logging(snakemake.log[0]):  # noqa: F821
    mf.sweep_figure(
        mf.grid_points(name, mf.SweepSpec.from_dict({**sweep, "grid": dict(sweep["grid"])})),
        history_paths=snakemake.input.histories,  # noqa: F821
        metrics_paths=snakemake.input.metrics,  # noqa: F821
        summary_path=snakemake.input.summary,  # noqa: F821
        figure_path=snakemake.output[0],  # noqa: F821
        metrics=sweep["metrics"],
        options=snakemake.config["figures"],  # noqa: F821
        title=f"sweep {name}",
    )
