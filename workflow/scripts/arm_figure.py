"""Snakemake adapter: the arm's postures during one experiment's reaches."""

import motorflow.pipeline as mfp

# In a warm worker of this run when there is one (motorflow.pipeline._warm_client).
mfp.hand_over(snakemake, __file__)

with mfp.stage_logging(snakemake.log[0]):
    mfp.arm_figure(
        states_path=snakemake.input.states,
        figure_path=snakemake.output[0],
        options=mfp.parse_setting_params(snakemake.params)["figures"],
        title=snakemake.wildcards.experiment,
    )
