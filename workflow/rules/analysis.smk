rule analysis:
    """Hidden-state analyses of one experiment: PCA, fixed points and directional tuning."""
    input:
        # The model evaluated (the fixed points are the network's), its states, and the
        # evaluation trials (the steady inputs of the fixed points).
        model=evaluated_model,
        eval=trials_store("eval"),
        states=rules.evaluate.output.states,
    output:
        directory(f"{RESULTS}/{{experiment}}/analysis.zarr"),
    log:
        f"{RESULTS}/logs/analysis/{{experiment}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/analysis/{{experiment}}.tsv"
    # The experiments of this rule's packs (resources.<stage>.pack) are packs.smk's.
    wildcard_constraints:
        experiment=unpacked("analysis"),
    threads: stage_threads("analysis")
    resources:
        **job_resources("analysis"),
    params:
        **job_params("analysis", "experiment"),
    shell:
        job("analysis")


rule analysis_figures:
    """The hidden-state analyses' figures of one experiment (by default PCA trajectories,
    fixed points and preferred directions)."""
    input:
        analysis=rules.analysis.output[0],
    # One figure per analysis of the registry (motorflow.ANALYSES), captioned by
    # workflow/report/<name>.rst.
    output:
        **{
            name: experiment_report(
                f"{RESULTS}/figures/{{experiment}}/{name}.{EXT}",
                caption=f"../report/{name}.rst",
                category="Hidden states",
                subcategory="{experiment}",
            )
            for name in ANALYSIS_FIGURES
        },
    log:
        f"{RESULTS}/logs/figures/analysis-{{experiment}}.log",
    # The experiments of this rule's packs (resources.<stage>.pack) are packs.smk's.
    wildcard_constraints:
        experiment=unpacked("analysis_figures"),
    threads: stage_threads("figures")
    resources:
        **job_resources("figures"),
    params:
        **job_params(
            "analysis_figures",
            "experiment",
            description=description,
        ),
    shell:
        job("analysis_figures")


rule analysis_comparison:
    """One hidden-state analysis compared across experiments (a config's `comparisons`
    entry): its figure, and its numbers per replicate with intervals in a CSV beside it.
    """
    input:
        analyses=lambda wildcards: expand(
            rules.analysis.output[0],
            experiment=COMPARISONS[wildcards.comparison].experiments,
        ),
    output:
        figure=report(
            f"{RESULTS}/figures/comparison-{{comparison}}.{EXT}",
            caption="../report/analysis_comparison.rst",
            category="Comparisons",
        ),
        table=f"{RESULTS}/figures/comparison-{{comparison}}.csv",
    log:
        f"{RESULTS}/logs/figures/comparison-{{comparison}}.log",
    threads: stage_threads("figures")
    resources:
        **job_resources("figures"),
    params:
        **job_params(
            "analysis_comparison",
            "comparison",
            description=lambda wildcards: descriptions(
                COMPARISONS[wildcards.comparison].experiments
            ),
        ),
    shell:
        job("analysis_comparison")


rule summary:
    """Means, bootstrap intervals and (paired) contrasts of every experiment's replicates."""
    input:
        histories=expand(rules.train.output.history, experiment=EXPERIMENTS),
        metrics=expand(rules.evaluate.output.metrics, experiment=EXPERIMENTS),
    output:
        table=f"{RESULTS}/summary.csv",
        store=directory(f"{RESULTS}/summary.zarr"),
    log:
        f"{RESULTS}/logs/summary.log",
    threads: stage_threads("figures")
    resources:
        **job_resources("figures"),
    params:
        **job_params("summary"),
    shell:
        job("summary")


rule sweep_figure:
    """A sweep's metrics against its swept values, with replicates and intervals."""
    input:
        histories=lambda wildcards: expand(
            rules.train.output.history, experiment=SWEEPS[wildcards.sweep]
        ),
        metrics=lambda wildcards: expand(
            rules.evaluate.output.metrics, experiment=SWEEPS[wildcards.sweep]
        ),
        summary=rules.summary.output.store,
    output:
        report(
            f"{RESULTS}/figures/sweep-{{sweep}}.{EXT}",
            caption="../report/sweep.rst",
            category="Sweeps",
        ),
    log:
        f"{RESULTS}/logs/figures/sweep-{{sweep}}.log",
    threads: stage_threads("figures")
    resources:
        **job_resources("figures"),
    params:
        **job_params(
            "sweep_figure",
            "sweep",
            description=lambda wildcards: descriptions(SWEEPS[wildcards.sweep]),
        ),
    shell:
        job("sweep_figure")
