"""Snakemake adapter: means, intervals and contrasts across experiments (summary.csv)."""

import motorflow as mf
import motorflow.pipeline as mfp

settings = mfp.parse_setting_params(snakemake.params)
# pairing: each experiment's [seed, replicate count, the experiment it starts from].
pairing = settings["pairing"]
with mfp.stage_logging(snakemake.log[0]):
    mfp.summary_stage(
        # In the config's order, each experiment's seed.
        {name: pairing[name][0] for name in settings["experiments"]},
        init_from={name: pairing[name][2] for name in settings["experiments"]},
        history_paths=snakemake.input.histories,
        metrics_paths=snakemake.input.metrics,
        table_path=snakemake.output.table,
        store_path=snakemake.output.store,
        statistics=mf.StatisticsConfig.from_dict(settings["statistics"], "statistics"),
    )
