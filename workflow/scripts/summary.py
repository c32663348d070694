"""Snakemake adapter: means, intervals and contrasts across experiments (summary.csv)."""

import motorflow as mf

settings = mf.parse_setting_params(snakemake.params)  # noqa: F821
with mf.stage_logging(snakemake.log[0]):  # noqa: F821
    mf.summary_stage(
        # In the config's order, each experiment's seed (pairing: [seed, replicate count]).
        {name: settings["pairing"][name][0] for name in settings["experiments"]},
        history_paths=snakemake.input.histories,  # noqa: F821
        metrics_paths=snakemake.input.metrics,  # noqa: F821
        table_path=snakemake.output.table,  # noqa: F821
        store_path=snakemake.output.store,  # noqa: F821
        statistics=mf.StatisticsConfig.from_dict(settings["statistics"], "statistics"),
    )
