"""Snakemake adapter: means, intervals and contrasts across experiments (summary.csv)."""

import motorflow as mf
import motorflow.pipeline as mfp

settings = mfp.parse_setting_params(snakemake.params)
with mfp.stage_logging(snakemake.log[0]):
    mfp.summary_stage(
        # In the config's order, each experiment's seed (pairing: [seed, replicate count]).
        {name: settings["pairing"][name][0] for name in settings["experiments"]},
        history_paths=snakemake.input.histories,
        metrics_paths=snakemake.input.metrics,
        table_path=snakemake.output.table,
        store_path=snakemake.output.store,
        statistics=mf.StatisticsConfig.from_dict(settings["statistics"], "statistics"),
    )
