"""Snakemake adapter: the hidden-state figures of one experiment (reads only Zarr outputs)."""

import motorflow as mf
import motorflow.pipeline as mfp

settings = mfp.parse_setting_params(snakemake.params)
with mfp.stage_logging(snakemake.log[0]):
    mfp.analysis_figures(
        analysis_path=snakemake.input.analysis,
        figure_paths={name: snakemake.output[name] for name in mf.ANALYSES},
        replicate=settings["analysis"]["replicate"],
        options=settings["figures"],
        title=snakemake.wildcards.experiment,
    )
