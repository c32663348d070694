"""Snakemake adapter: figures of one experiment (reads only Zarr outputs)."""

import motorflow.pipeline as mfp

with mfp.stage_logging(snakemake.log[0]):
    mfp.experiment_figures(
        history_path=snakemake.input.history,
        states_path=snakemake.input.states,
        loss_path=snakemake.output.loss,
        trajectories_path=snakemake.output.trajectories,
        speed_path=snakemake.output.speed,
        options=mfp.parse_setting_params(snakemake.params)["figures"],
        title=snakemake.wildcards.experiment,
    )
