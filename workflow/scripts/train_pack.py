"""Snakemake adapter: train (or resume) a pack of experiments in one process."""

from pathlib import Path

import motorflow.pipeline as mfp

# Each member's settings come from the params; how each runs (checkpoint cadence,
# compilation cache) from the run settings, which decide no rerun.
run = snakemake.run
experiments = mfp.pack_job_experiments(snakemake.params, run)
with mfp.stage_logging(*snakemake.log):
    # One device (a pack's call is mapped over its experiments, not spread over
    # devices); the GPUs the job asked for, claimed so that concurrent jobs never share one.
    mfp.use_devices(cpu_devices=run["cpu_devices"], gpus=snakemake.resources.gpu)
    mfp.enable_compilation_cache(run["jax_cache_dir"])
    mfp.train_experiments(
        [
            mfp.TrainJob(
                experiment,
                trials_path=Path(trials),
                eval_path=Path(eval_path),
                model_path=Path(model),
                history_path=Path(history),
                best_model_path=Path(best),
                checkpoint_dir=Path(model).parent / "checkpoints",
                invocation=mfp.job_invocation(snakemake.rule, {"experiment": experiment.name}),
            )
            for experiment, trials, eval_path, model, best, history in zip(
                experiments,
                snakemake.input.trials,
                snakemake.input.eval,
                snakemake.output.model,
                snakemake.output.model_best,
                snakemake.output.history,
            )
        ]
    )
