from snakemake.utils import min_version

min_version("9.0")


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/trials.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/analysis.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/packs.smk"


rule all:
    default_target: True
    input:
        all_targets(),


# Targets of experiments or protocols the config does not define: a clear error.
rule unknown_experiment:
    input:
        unknown_target,
    output:
        f"{RESULTS}/{{name}}/{{path}}",
        f"{RESULTS}/figures/{{name}}/{{path}}",
    wildcard_constraints:
        name=rf"(?!(?:{NOT_AN_EXPERIMENT})/)[^/]+",


rule unknown_sweep:
    input:
        unknown_target,
    output:
        f"{RESULTS}/figures/sweep-{{sweep_name}}.{{ext}}",
    wildcard_constraints:
        sweep_name=rf"(?!(?:{'|'.join(map(re.escape, SETTINGS.sweeps))})[.])[^/]+",


rule unknown_protocol:
    input:
        unknown_target,
    output:
        f"{RESULTS}/figures/protocol-{{protocol}}.{{ext}}",
    wildcard_constraints:
        protocol=rf"(?!(?:{'|'.join(map(re.escape, PROTOCOLS))})[.])[^/]+",


rule elsewhere:
    input:
        elsewhere_target,
    output:
        f"{mfp.RESULTS_ROOT}/{{elsewhere}}",
    wildcard_constraints:
        elsewhere=OUTSIDE_RESULTS,
