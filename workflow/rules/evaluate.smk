rule evaluate:
    """Run the trained ensemble on the center-out set: states and reach metrics."""
    input:
        # evaluation.model: the final model, or each replicate's best.
        model=evaluated_model,
        eval=trials_store("eval"),
    output:
        states=directory(f"{RESULTS}/{{experiment}}/states.zarr"),
        metrics=directory(f"{RESULTS}/{{experiment}}/metrics.zarr"),
        table=f"{RESULTS}/{{experiment}}/metrics.csv",
    log:
        f"{RESULTS}/logs/evaluate/{{experiment}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/evaluate/{{experiment}}.tsv"
    # The experiments of this rule's packs (resources.<stage>.pack) are packs.smk's.
    wildcard_constraints:
        experiment=unpacked("evaluate"),
    threads: stage_threads("evaluate")
    resources:
        **job_resources("evaluate"),
    params:
        **job_params("evaluate", "experiment"),
    shell:
        job("evaluate")


rule learning_curve:
    """Each training snapshot (train.snapshots) evaluated as the final model is: the
    reach metrics along training."""
    input:
        model=rules.train.output.model,
        history=rules.train.output.history,
        eval=trials_store("eval"),
    output:
        curve=directory(f"{RESULTS}/{{experiment}}/learning_curve.zarr"),
    log:
        f"{RESULTS}/logs/learning_curve/{{experiment}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/learning_curve/{{experiment}}.tsv"
    threads: stage_threads("evaluate")
    resources:
        **job_resources("evaluate"),
    params:
        **job_params("learning_curve", "experiment"),
    shell:
        job("learning_curve")
