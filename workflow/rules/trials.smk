rule trials:
    """Training trial specs (replicate, batch, trial) and center-out evaluation specs."""
    output:
        train=directory(f"{RESULTS}/trials/{{dataset}}/train.zarr"),
        eval=directory(f"{RESULTS}/trials/{{dataset}}/eval.zarr"),
    log:
        f"{RESULTS}/logs/trials/{{dataset}}.log",
    threads: stage_threads("trials")
    resources:
        **job_resources("trials"),
    params:
        **job_params("trials", "dataset"),
    shell:
        job("trials")
