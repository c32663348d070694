from snakemake.utils import min_version

min_version("9.0")


# The default config, unless another is given with --configfile (Snakemake would
# otherwise merge the two, mixing the default experiments into the user's).
if not workflow.config_settings.configfiles:

    configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/trials.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/figures.smk"


rule all:
    default_target: True
    input:
        all_figures(),
