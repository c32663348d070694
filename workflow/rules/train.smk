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
