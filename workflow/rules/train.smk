# The train packs (resources.train.pack): runs of experiments one job trains together.
PACKS = mfp.train_packs(EXPERIMENTS, SETTINGS.resources.train.pack, CHECKED.sweeps)
PACKED = {name for pack in PACKS for name in pack}


rule train:
    """Train one experiment's ensemble; resumes from results/<config>/{experiment}/checkpoints/.

    The checkpoints are not an output: Snakemake deletes the outputs of failed jobs,
    and the resume state must survive a killed job.
    """
    input:
        trials=trials_store("train"),
        eval=trials_store("eval"),
        # init_from: the model this experiment starts from (a DAG edge: it reruns with it).
        init=parent_model,
    output:
        model=directory(f"{RESULTS}/{{experiment}}/model"),
        # Each replicate's parameters at its lowest validation loss.
        model_best=directory(f"{RESULTS}/{{experiment}}/model_best"),
        history=directory(f"{RESULTS}/{{experiment}}/history.zarr"),
    log:
        f"{RESULTS}/logs/train/{{experiment}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/train/{{experiment}}.tsv"
    # The experiments of packs train in their pack's job.
    wildcard_constraints:
        experiment=mfp.names_pattern(name for name in EXPERIMENTS if name not in PACKED),
    threads: stage_threads("train")
    resources:
        **job_resources("train"),
    # Exactly the settings the trained result depends on; the checkpoint cadence and
    # the cache directory are its run settings (`job_params`), so editing them reruns
    # nothing.
    params:
        **job_params("train", "experiment"),
    shell:
        job("train")


# One rule per pack, named train_pack_<i>: it makes its experiments' train outputs (as
# the train rule makes one's), from each one's trial specs, in one job and process on
# one device (run setting cpu_devices). Its params are every member's settings, so an
# edit of one reruns the pack (the others resume their finished checkpoints). On a
# cluster each pack is a cluster job of its own (the profile groups rules by name),
# with what the profile sets for the train rule (set-resources).
for index, members in enumerate(PACKS):

    rule:
        name:
            f"train_pack_{index}"
        input:
            trials=[
                f"{RESULTS}/trials/{EXPERIMENTS[m].dataset}/train.zarr"
                for m in members
            ],
            eval=[
                f"{RESULTS}/trials/{EXPERIMENTS[m].dataset}/eval.zarr" for m in members
            ],
        output:
            model=[directory(f"{RESULTS}/{m}/model") for m in members],
            model_best=[directory(f"{RESULTS}/{m}/model_best") for m in members],
            history=[directory(f"{RESULTS}/{m}/history.zarr") for m in members],
        log:
            [f"{RESULTS}/logs/train/{m}.log" for m in members],
        benchmark:
            f"{RESULTS}/benchmarks/train_pack/{index}.tsv"
        threads: stage_threads("train")
        resources:
            **job_resources("train"),
        params:
            **job_params(
                "train_pack",
                run=mfp.pack_run_settings(JOB_RUN_SETTINGS, members),
                **mfp.pack_params(JOB_SETTINGS, members),
            ),
        shell:
            job("train_pack")

    # What the profile (or --set-resources) sets for the train rule, e.g. SLURM's
    # early-warning signal, holds for the rule that stands in for it.
    workflow.get_rule(f"train_pack_{index}").resources.update(
        workflow.resource_settings.overwrite_resources.get("train") or {}
    )
