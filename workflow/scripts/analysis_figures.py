"""Snakemake adapter: the hidden-state figures of one experiment (reads only Zarr outputs)."""

import motorflow as mf

with mf.stage_logging(snakemake.log[0]):  # noqa: F821
    mf.analysis_figures(
        analysis_path=snakemake.input.analysis,  # noqa: F821
        pca_path=snakemake.output.pca,  # noqa: F821
        fixed_points_path=snakemake.output.fixed_points,  # noqa: F821
        tuning_path=snakemake.output.tuning,  # noqa: F821
        replicate=mf.parse_setting_params(snakemake.params)["analysis"]["replicate"],  # noqa: F821
        options=snakemake.config["figures"],  # noqa: F821
        title=snakemake.wildcards.experiment,  # noqa: F821
    )
