rule experiment_figures:
    """Loss history, center-out trajectories and speed profiles of one experiment."""
    input:
        history=rules.train.output.history,
        states=rules.evaluate.output.states,
    output:
        loss=experiment_report(
            f"{RESULTS}/figures/{{experiment}}/loss.{EXT}",
            caption="../report/loss.rst",
            category="Training",
            subcategory="{experiment}",
        ),
        trajectories=experiment_report(
            f"{RESULTS}/figures/{{experiment}}/trajectories.{EXT}",
            caption="../report/trajectories.rst",
            category="Reaches",
            subcategory="{experiment}",
        ),
        speed=experiment_report(
            f"{RESULTS}/figures/{{experiment}}/speed.{EXT}",
            caption="../report/speed.rst",
            category="Reaches",
            subcategory="{experiment}",
        ),
    log:
        f"{RESULTS}/logs/figures/{{experiment}}.log",
    # The experiments of this rule's packs (resources.<stage>.pack) are packs.smk's.
    wildcard_constraints:
        experiment=unpacked("experiment_figures"),
    threads: stage_threads("figures")
    resources:
        **job_resources("figures"),
    params:
        **job_params(
            "experiment_figures",
            "experiment",
            description=description,
        ),
    shell:
        job("experiment_figures")


rule arm_figure:
    """The arm's postures during one experiment's reaches (experiments with an arm)."""
    input:
        states=rules.evaluate.output.states,
    output:
        experiment_report(
            f"{RESULTS}/figures/{{experiment}}/arm.{EXT}",
            caption="../report/arm.rst",
            category="Reaches",
            subcategory="{experiment}",
        ),
    log:
        f"{RESULTS}/logs/figures/arm-{{experiment}}.log",
    # The experiments of this rule's packs (resources.<stage>.pack) are packs.smk's.
    wildcard_constraints:
        experiment=unpacked("arm_figure"),
    threads: stage_threads("figures")
    resources:
        **job_resources("figures"),
    params:
        **job_params(
            "arm_figure",
            "experiment",
            description=description,
        ),
    shell:
        job("arm_figure")


rule comparison_figure:
    """Final validation loss, endpoint error and lateral deviation of every experiment,
    per replicate, with means, intervals and paired differences, and the training
    curves."""
    input:
        histories=expand(rules.train.output.history, experiment=EXPERIMENTS),
        metrics=expand(rules.evaluate.output.metrics, experiment=EXPERIMENTS),
        # The means and intervals drawn are summary.csv's.
        summary=rules.summary.output.store,
    output:
        report(
            f"{RESULTS}/figures/comparison.{EXT}",
            caption="../report/comparison.rst",
            category="Comparison",
        ),
    log:
        f"{RESULTS}/logs/figures/comparison.log",
    threads: stage_threads("figures")
    resources:
        **job_resources("figures"),
    params:
        **job_params(
            "comparison_figure",
            description=descriptions(EXPERIMENTS),
        ),
    shell:
        job("comparison_figure")


rule protocol_figure:
    """A protocol's figure: hand paths in its panels, the learning curve of the stages
    that keep snapshots, and its metric (lateral deviation by default) per stage and
    condition; the numbers in CSVs beside it."""
    input:
        metrics=lambda wildcards: expand(
            rules.evaluate.output.metrics,
            experiment=PROTOCOLS[wildcards.protocol].stages,
        ),
        states=lambda wildcards: expand(
            rules.evaluate.output.states,
            experiment=protocol_panel_stages(wildcards.protocol),
        ),
        curves=lambda wildcards: expand(
            rules.learning_curve.output.curve,
            experiment=protocol_curve_stages(wildcards.protocol),
        ),
    output:
        figure=report(
            f"{RESULTS}/figures/protocol-{{protocol}}.{EXT}",
            caption="../report/protocol.rst",
            category="Protocols",
        ),
        table=f"{RESULTS}/figures/protocol-{{protocol}}.csv",
        curve_table=f"{RESULTS}/figures/protocol-{{protocol}}-learning-curve.csv",
    log:
        f"{RESULTS}/logs/figures/protocol-{{protocol}}.log",
    threads: stage_threads("figures")
    resources:
        **job_resources("figures"),
    params:
        **job_params(
            "protocol_figure",
            "protocol",
            description=lambda wildcards: descriptions(
                PROTOCOLS[wildcards.protocol].stages
            ),
            panel_stages=lambda wildcards: protocol_panel_stages(wildcards.protocol),
            curve_stages=lambda wildcards: protocol_curve_stages(wildcards.protocol),
        ),
    shell:
        job("protocol_figure")


rule condition_sweep_figure:
    """A condition sweep's figure: experiments' metrics against a setting that varies
    across evaluation conditions, with their numbers in a CSV beside it."""
    input:
        histories=lambda wildcards: expand(
            rules.train.output.history,
            experiment=CONDITION_SWEEPS[wildcards.condition_sweep].experiments,
        ),
        metrics=lambda wildcards: expand(
            rules.evaluate.output.metrics,
            experiment=CONDITION_SWEEPS[wildcards.condition_sweep].experiments,
        ),
    output:
        figure=report(
            f"{RESULTS}/figures/condition-sweep-{{condition_sweep}}.{EXT}",
            caption="../report/condition_sweep.rst",
            category="Condition sweeps",
        ),
        table=f"{RESULTS}/figures/condition-sweep-{{condition_sweep}}.csv",
    log:
        f"{RESULTS}/logs/figures/condition-sweep-{{condition_sweep}}.log",
    threads: stage_threads("figures")
    resources:
        **job_resources("figures"),
    params:
        **job_params(
            "condition_sweep_figure",
            "condition_sweep",
            description=lambda wildcards: descriptions(
                CONDITION_SWEEPS[wildcards.condition_sweep].experiments
            ),
        ),
    shell:
        job("condition_sweep_figure")
