"""Snakemake adapter: the arm's postures during one experiment's reaches."""

import motorflow.pipeline as mfp

with mfp.stage_logging(snakemake.log[0]):
    mfp.arm_figure(
        states_path=snakemake.input.states,
        figure_path=snakemake.output[0],
        options=mfp.parse_setting_params(snakemake.params)["figures"],
        title=snakemake.wildcards.experiment,
    )
