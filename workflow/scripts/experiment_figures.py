"""Snakemake adapter: figures of one experiment (reads only Zarr outputs)."""

import motorflow as mf

with mf.stage_logging(snakemake.log[0]):  # noqa: F821
    mf.experiment_figures(
        history_path=snakemake.input.history,  # noqa: F821
        states_path=snakemake.input.states,  # noqa: F821
        loss_path=snakemake.output.loss,  # noqa: F821
        trajectories_path=snakemake.output.trajectories,  # noqa: F821
        speed_path=snakemake.output.speed,  # noqa: F821
        options=snakemake.config["figures"],  # noqa: F821
        title=snakemake.wildcards.experiment,  # noqa: F821
    )
