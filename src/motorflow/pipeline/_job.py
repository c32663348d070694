"""A workflow job as its script sees it: Snakemake's job object, rebuilt from the job's
command.

The rules run their scripts through a command (``shell:``), not Snakemake's
``script:`` directive: ``script:`` starts each job with a preamble that imports
Snakemake's package to unpickle the job object (about 0.2 CPU-s a job, most of what a
job handed to a warm worker costs; benchmarks/README.md, "A sweep's fixed cost"). The
command (:func:`job_command`) starts the job client (``_job_client``, standard
library only) with the script, the job's description (its ``job`` param,
:func:`describe_job`) and its log; the client hands the job to a warm worker, or runs
this module in a process of its own. Either way the script gets a :class:`Job` as its ``snakemake``
global, with the attributes the workflow's scripts read: ``rule``, ``input``,
``output``, ``params``, ``wildcards``, ``log``, ``threads`` and ``resources``, the
named ones as Snakemake's named lists (``snakemake.input.model``,
``snakemake.log[0]``, ``snakemake.params.items()``).

A pack's job (``resources.<stage>.pack``, workflow/rules/packs.smk) is several
experiments' jobs of one rule: its description (:func:`describe_pack`) holds each
member's own, and :func:`run_job` runs them one after another, each as its own job.

Run as ``python -m motorflow.pipeline._job SCRIPT DESCRIPTION [LOG...]``: the job in
this process, exiting with its status.
"""

from __future__ import annotations

import hashlib
import json
import runpy
import shlex
import sys
import traceback
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._job_argument import read_job_argument

CLIENT = Path(__file__).with_name("_job_client.py")
# A pack member's files (:class:`PackMember`) are a mapping; a key starting with this
# stands for a file its rule leaves unnamed.
UNNAMED_FILE = "#"


def job_client(scripts: str | Path) -> str:
    """The start of every job's command: this interpreter, without ``site``, running
    the job client with the workflow's scripts folder `scripts`. Each rule passes it as
    its ``job_client`` param, which :func:`job_command`'s text names, so that the
    command's text (Snakemake's code rerun trigger) holds no path of this machine."""
    return shlex.join([sys.executable, "-S", str(CLIENT), str(Path(scripts).resolve())])


def job_command(scripts: str | Path, script: str) -> str:
    """A rule's command (``shell:``) running `script` of the folder `scripts`: the job
    client (the rule's ``job_client`` param, :func:`job_client`) with the script, its
    content digest (an edited script changes the command's text, so Snakemake reruns
    its jobs), the job's ``job`` param (:func:`describe_job`) and its log files, as
    Snakemake fills them in."""
    digest = hashlib.sha256((Path(scripts) / script).read_bytes()).hexdigest()[:16]
    return f"{{params.job_client}} {script} {digest} {{params.job:q}} {{log:q}}"


class Names(list[Any]):
    """Values in order, some named, as Snakemake's ``Namedlist``: a name gives its
    value by attribute or key, or the sub-list of the values it spans."""

    def __init__(self, values: Iterable[Any] = (), names: Mapping[str, Any] | None = None):
        super().__init__(values)
        # name -> [start, end], end None for a single value (Snakemake's own spans)
        self.__dict__["_spans"] = {name: tuple(span) for name, span in (names or {}).items()}

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any]) -> Names:
        return cls(mapping.values(), {name: (i, None) for i, name in enumerate(mapping)})

    @classmethod
    def from_files(cls, files: Mapping[str, Any]) -> Names:
        """Files by name, in order, as Snakemake's named lists hold them: a list value
        spans its files, and a name starting with :data:`UNNAMED_FILE` is no name (the
        file is only at its position)."""
        values: list[Any] = []
        spans: dict[str, tuple[int, int | None]] = {}
        for name, value in files.items():
            listed = isinstance(value, (list, tuple))
            if not name.startswith(UNNAMED_FILE):
                spans[name] = (len(values), len(values) + len(value) if listed else None)
            values += list(value) if listed else [value]
        return cls(values, spans)

    def __getattr__(self, name: str) -> Any:
        try:
            start, end = self.__dict__["_spans"][name]
        except KeyError:
            raise AttributeError(name) from None
        return self[start] if end is None else Names(self[start:end])

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            try:
                return getattr(self, key)
            except AttributeError:
                raise KeyError(key) from None
        return super().__getitem__(key)

    def get(self, name: str, default: Any = None) -> Any:
        return getattr(self, name) if name in self.__dict__["_spans"] else default

    def keys(self) -> Iterable[str]:
        return self.__dict__["_spans"].keys()

    def items(self) -> Iterator[tuple[str, Any]]:
        for name in self.keys():
            yield name, getattr(self, name)

    def spans(self) -> dict[str, tuple[int, int | None]]:
        return dict(self.__dict__["_spans"])


def _named(values: Any) -> dict[str, Any]:
    """A Snakemake named list (or a mapping) as the description holds it."""
    if isinstance(values, Mapping):
        values = Names.from_mapping(values)
    # Snakemake's Namedlist keeps its names' spans as `_get_names()`.
    spans = values.spans() if isinstance(values, Names) else dict(values._get_names())
    return {
        "values": list(values),
        "names": {name: list(span) for name, span in spans.items()},
    }


def describe_job(rule: str, **parts: Any) -> str:
    """JSON text of what a job's script reads, but its log (which its command passes
    apart): each rule's ``job`` param, from the keywords of :func:`_description` (the
    job's input, output, params, wildcards, threads, resources and `run`). A params function of the job's input, output,
    threads or resources, Snakemake leaves it out of its params rerun trigger, so it
    never reruns a job (its other params, the settings, do). `run` is how the job runs
    beside what it makes (``_job_settings.job_run_settings``: the compilation cache, a
    training's checkpoint cadence), so editing it reruns nothing either. (A resource
    would do the same but for grouped jobs: Snakemake refuses a group whose members' text
    resources differ.) The command gets it as ``_job_argument.job_argument`` of it: a
    long one travels in a file."""
    return json.dumps(_description(rule, **parts), separators=(",", ":"))


def _description(
    rule: str,
    *,
    input: Any,
    output: Any,
    params: Mapping[str, Any],
    wildcards: Any,
    threads: int,
    resources: Any,
    run: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "rule": rule,
        "input": _named(input),
        "output": _named(output),
        "params": _named(params),
        "wildcards": _named(wildcards),
        "threads": int(threads),
        "resources": _named(resources),
        "run": dict(run or {}),
    }


@dataclass(frozen=True)
class PackMember:
    """One job of a pack (:func:`describe_pack`) as its own job would see it: its
    experiment, its files in order by name (:meth:`Names.from_files`: a list value
    spans several files; a key starting with :data:`UNNAMED_FILE` names none), params,
    log files and run settings."""

    experiment: str
    input: Mapping[str, Any]
    output: Mapping[str, Any]
    params: Mapping[str, Any]
    log: Sequence[str]
    run: Mapping[str, Any] | None = None


def describe_pack(
    rule: str,
    members: Sequence[PackMember],
    *,
    threads: int,
    resources: Any,
    run: Mapping[str, Any] | None = None,
) -> str:
    """JSON text of a pack's job (``resources.<stage>.pack``): the jobs of rule `rule`
    of several experiments, run one after another in one process by
    :func:`run_job`, each as its own job (its script sees exactly what it would see
    alone, but the pack's `threads` and `resources`). The client and the worker read
    the pack's own `threads`, `resources` and `run` (its worker key and GPUs)."""
    own = _description(
        f"{rule} (pack)",
        input={},
        output={},
        params={},
        wildcards={},
        threads=threads,
        resources=resources,
        run=run,
    )
    own["members"] = [
        {
            **_description(
                rule,
                input=Names.from_files(member.input),
                output=Names.from_files(member.output),
                params=member.params,
                wildcards={"experiment": member.experiment},
                threads=threads,
                resources=resources,
                run=member.run,
            ),
            "log": list(member.log),
        }
        for member in members
    ]
    return json.dumps(own, separators=(",", ":"))


@dataclass(frozen=True)
class Job:
    """What a job's script reads as its ``snakemake`` global (see the module)."""

    rule: str
    input: Names
    output: Names
    params: Names
    wildcards: Names
    log: Names
    threads: int
    resources: Names
    # How the job runs (:func:`describe_job`'s `run`).
    run: Mapping[str, Any]

    @classmethod
    def from_command(cls, description: str, log: Iterable[str]) -> Job:
        """The job of a rule's command: its description's argument (:func:`describe_job`,
        inline or in a file: ``_job_argument``) and log files."""
        return cls.from_parts(json.loads(read_job_argument(description)), log)

    @classmethod
    def from_parts(cls, parts: Mapping[str, Any], log: Iterable[str]) -> Job:
        """The job of a description's parsed JSON (:func:`describe_job`) and log files."""
        named = {
            key: Names(parts[key]["values"], parts[key]["names"])
            for key in ("input", "output", "params", "wildcards", "resources")
        }
        return cls(
            rule=parts["rule"],
            log=Names(log),
            threads=int(parts["threads"]),
            run=parts["run"],
            **named,
        )


def run_script(script: str, job: Job) -> int:
    """Run `script` as its own process would (``__name__ == "__main__"``, `job` as its
    ``snakemake`` global) and return that process's exit status."""
    try:
        runpy.run_path(script, init_globals={"snakemake": job}, run_name="__main__")
    except SystemExit as exit:
        if exit.code is None or isinstance(exit.code, int):
            return exit.code or 0
        print(exit.code, file=sys.stderr)
        return 1
    except BaseException:  # noqa: BLE001 - any failure is the job's, as in a process of its own
        traceback.print_exc()
        return 1
    return 0


def run_job(script: str, description: str, log: Iterable[str]) -> int:
    """Run the job of a rule's command (`description`, its ``job`` argument, and its
    `log` files) with `script`, and return its exit status. A pack's job
    (:func:`describe_pack`) runs each member as its own job, in order, and stops at the
    first that fails (Snakemake then removes the whole pack's outputs)."""
    parts = json.loads(read_job_argument(description))
    if "members" not in parts:
        return run_script(script, Job.from_parts(parts, log))
    for member in parts["members"]:
        status = run_script(script, Job.from_parts(member, member["log"]))
        if status:
            experiment = member["wildcards"]["values"][0]
            print(
                f"motorflow: {member['rule']} of {experiment} failed in its pack "
                f"(exit status {status}); its log: {member['log'][0]}",
                file=sys.stderr,
                flush=True,
            )
            return status
    return 0


def main(argv: list[str]) -> int:
    script, description, *log = argv
    return run_job(script, description, log)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
