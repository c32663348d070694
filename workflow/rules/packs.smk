# The packs of the per-experiment rules after training (resources.<stage>.pack, cut by
# common.smk's STAGE_PACKS): one rule per pack, named <name>_pack_<i>, whose job runs
# its experiments' jobs of the rule <name> one after another in one process (with that
# rule's script), each as its own job would: its files, log, params and run settings
# (mfp.describe_pack). Everything is derived from the rule itself, so a pack makes
# exactly the files its experiments' jobs would. Its params are each member's, so an
# edit of one member reruns its pack (the others' results come out the same). A pack
# asks for its stage's threads and memory, and its members' runtimes in sum; the
# profile's settings for the rule (set-resources) hold for its packs.
# (The functions' `stage_rule` is a rule's name: Snakemake reserves the word `rule`.)
from snakemake.io import AnnotatedString, strip_wildcard_constraints

# Params every job has that are not the job's own settings (common.smk's job_params).
JOB_PLUMBING = ("job_client", "job")


class MemberWildcards(dict):
    """The wildcards of one experiment's job, as its rule's functions read them."""

    __getattr__ = dict.__getitem__


def member_wildcards(name):
    return MemberWildcards(experiment=name)


# The key of a rule's unnamed file at index i is UNNAMED + str(i).
UNNAMED = mfp.UNNAMED_FILE


def keyed(files):
    """A rule's files (its input or output), in order, keyed by name (a name that
    spans several files keys their list; an unnamed file's key is UNNAMED and its
    index)."""
    spans = dict(files._get_names())
    covered = {
        index
        for start, end in spans.values()
        for index in range(start, start + 1 if end is None else end)
    }
    starts = [(start, name) for name, (start, _) in spans.items()]
    starts += [(i, f"{UNNAMED}{i}") for i in range(len(files)) if i not in covered]
    result = {}
    for start, key in sorted(starts):
        end = spans[key][1] if key in spans else None
        result[key] = files[start] if end is None else list(files[start:end])
    return result


def member_inputs(stage_rule, name):
    """The input files rule `stage_rule`'s job of experiment `name` reads, keyed."""
    wildcards = member_wildcards(name)

    def member_input(value):
        if isinstance(value, list):
            return [member_input(each) for each in value]
        return value(wildcards) if callable(value) else value.format(experiment=name)

    return {
        key: member_input(value)
        for key, value in keyed(getattr(rules, stage_rule).input).items()
    }


def member_output(pattern, name):
    """The output `pattern` of experiment `name`, with its flags (a directory; a
    report entry, whose subcategory, the experiment, is filled in)."""
    path = AnnotatedString(strip_wildcard_constraints(pattern).format(experiment=name))
    path.flags = dict(pattern.flags)
    entry = path.flags.get("report")
    if entry is not None and entry.subcategory:
        path.flags["report"] = entry._replace(
            subcategory=entry.subcategory.format(experiment=name)
        )
    return path


def member_outputs(stage_rule, name):
    return {
        key: member_output(pattern, name)
        for key, pattern in keyed(workflow.get_rule(stage_rule).output).items()
    }


def member_params(stage_rule, name):
    """The params rule `stage_rule`'s job of experiment `name` has, but its plumbing."""
    wildcards = member_wildcards(name)
    return {
        key: value(wildcards) if callable(value) else value
        for key, value in workflow.get_rule(stage_rule).params.items()
        if key not in JOB_PLUMBING
    }


def by_key(files):
    """Each key's files across the members (a list), from one mapping per member."""
    return {
        key: [path for each in files for path in listed(each[key])] for key in files[0]
    }


def unnamed(files):
    """The files of `by_key(files)` that are unnamed in the rule, in order."""
    return [
        path
        for key, paths in by_key(files).items()
        if key.startswith(UNNAMED)
        for path in paths
    ]


def named(files):
    return {
        key: paths
        for key, paths in by_key(files).items()
        if not key.startswith(UNNAMED)
    }


def listed(value):
    return list(value) if isinstance(value, (list, tuple)) else [value]


def pack_params(stage_rule, members, params):
    """A pack's params: each member's (`params`, by member) as "<member>:<value>",
    so that the recorded set changes with any member's, as train packs' do."""
    texts = [
        f"{member}:{value}" for member in members for value in params[member].values()
    ]
    return {
        f"{mfp.SETTING_PARAM_PREFIX}{index}": text for index, text in enumerate(texts)
    }


def member_logs(stage_rule, name):
    return [
        strip_wildcard_constraints(pattern).format(experiment=name)
        for pattern in workflow.get_rule(stage_rule).log
    ]


def pack_description(stage_rule, members, inputs, outputs, params, logs):
    def describe(wildcards, input, output, threads, resources):
        description = mfp.describe_pack(
            stage_rule,
            [
                mfp.PackMember(
                    member,
                    input=inputs[member],
                    output=outputs[member],
                    params=params[member],
                    log=logs[member],
                    run=JOB_RUN_SETTINGS.get((stage_rule, member)),
                )
                for member in members
            ],
            threads=threads,
            resources=resources,
        )
        return mfp.job_argument(description)

    return describe


def pack_rule(rule_name, index, members):
    """Define the rule of pack `index` of rule `rule_name` (a function, so that its
    command, which Snakemake evaluates as the job runs, sees this pack's names)."""
    stage = PACKED_RULES[rule_name][0]
    inputs = {member: member_inputs(rule_name, member) for member in members}
    outputs = {member: member_outputs(rule_name, member) for member in members}
    params = {member: member_params(rule_name, member) for member in members}
    logs = {member: member_logs(rule_name, member) for member in members}

    rule:
        name:
            f"{rule_name}_pack_{index}"
        input:
            *unnamed([inputs[member] for member in members]),
            **named([inputs[member] for member in members]),
        output:
            *unnamed([outputs[member] for member in members]),
            **named([outputs[member] for member in members]),
        log:
            [path for member in members for path in logs[member]],
        benchmark:
            f"{RESULTS}/benchmarks/{rule_name}_pack/{index}.tsv"
        threads: stage_threads(stage)
        resources:
            **job_resources(stage, jobs=len(members)),
        params:
            **pack_params(rule_name, members, params),
            job_client=lambda wildcards, input: JOB_CLIENT,
            job=pack_description(rule_name, members, inputs, outputs, params, logs),
        shell:
            job(rule_name)

    workflow.get_rule(f"{rule_name}_pack_{index}").resources.update(
        workflow.resource_settings.overwrite_resources.get(rule_name) or {}
    )


for rule_name, packs in STAGE_PACKS.items():
    for index, members in enumerate(packs):
        pack_rule(rule_name, index, members)
