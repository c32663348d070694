"""Snakemake adapter: the hidden-state figures of one experiment (reads only Zarr outputs)."""

import motorflow.pipeline as mfp

with mfp.stage_logging(snakemake.log[0]):
    mfp.analysis_figures(
        analysis_path=snakemake.input.analysis,
        pca_path=snakemake.output.pca,
        fixed_points_path=snakemake.output.fixed_points,
        tuning_path=snakemake.output.tuning,
        replicate=mfp.parse_setting_params(snakemake.params)["analysis"]["replicate"],
        options=snakemake.config["figures"],
        title=snakemake.wildcards.experiment,
    )
