rule train:
    """Train one experiment's ensemble; resumes from results/{experiment}/checkpoints/."""
    input:
        trials=trials_store("train"),
        eval=trials_store("eval"),
    output:
        model=directory(f"{RESULTS}/{{experiment}}/model"),
        history=directory(f"{RESULTS}/{{experiment}}/history.zarr"),
    log:
        f"{RESULTS}/logs/train/{{experiment}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/train/{{experiment}}.tsv"
    threads: stage_threads("train")
    resources:
        **job_resources("train"),
    params:
        spec=train_params,
        experiment=experiment_json,
        # Not an output: Snakemake deletes the outputs of failed jobs, and this
        # directory must survive a killed job so that the rerun can resume.
        checkpoints=lambda wildcards: f"{RESULTS}/{wildcards.experiment}/checkpoints",
        jax_cache=config["jax_cache_dir"],
    script:
        "../scripts/train.py"
