"""Snakemake adapter: the arm's postures during one experiment's reaches."""

import motorflow as mf

with mf.stage_logging(snakemake.log[0]):  # noqa: F821
    mf.arm_figure(
        states_path=snakemake.input.states,  # noqa: F821
        figure_path=snakemake.output[0],  # noqa: F821
        options=snakemake.config["figures"],  # noqa: F821
        title=snakemake.wildcards.experiment,  # noqa: F821
    )
