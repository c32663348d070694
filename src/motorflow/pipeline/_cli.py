"""The ``motorflow`` command: check a config, inspect and export trained experiments,
print the schema.

``motorflow check CONFIG`` reads a config with motorflow's own safe loader (never
evaluating anything) and runs every check the workflow runs before any job;
``motorflow info results/<config>/<experiment>`` describes an experiment's settings, run and
per-replicate results; ``motorflow export results/<config>/<experiment> --replicate i DIR``
writes one replicate as a model of its own; ``motorflow schema`` prints the
workflow config's JSON Schema; ``motorflow docs`` regenerates config/README.md's key
tables (``--check``: only say whether they are current). ``python -m motorflow`` is
the same command.

Only the standard library is imported before the arguments are parsed: ``--help`` and
a mistyped command answer at once, and each command imports what it needs (JAX,
xarray, zarr) when it runs.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

SCHEMA_HEADER = (
    "# Generated from motorflow's typed config (motorflow.pipeline.WorkflowConfig); do not edit.\n"
    "# Regenerate: python -m motorflow schema > workflow/schemas/config.schema.yaml\n"
)


README = "config/README.md"


def schema_text() -> str:
    """The schema file's text: a header, then the schema as block-style YAML."""
    import yaml

    from ._config_schema import config_json_schema

    return SCHEMA_HEADER + yaml.safe_dump(config_json_schema(), sort_keys=False, width=88)


def _parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The command's parser, and each subcommand's by name."""
    parser = argparse.ArgumentParser(
        prog="motorflow",
        description="Check configs; inspect and export motorflow's trained experiments.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="command")
    check = commands.add_parser(
        "check",
        help="check a config as the workflow does, without running or evaluating anything "
        "(exit 0: valid; 1: refused; 2: the check itself failed)",
    )
    check.add_argument(
        "config", nargs="+", help="the config file (several: merged in order, as --configfile)"
    )
    info = commands.add_parser(
        "info", help="describe a trained experiment: settings, run, each replicate's results"
    )
    info.add_argument("experiment", help="the experiment's folder, results/<config>/<experiment>")
    export = commands.add_parser(
        "export", help="write one replicate as a model of its own (motorflow or plain equinox)"
    )
    export.add_argument("experiment", help="the experiment's folder, results/<config>/<experiment>")
    export.add_argument(
        "folder",
        nargs="?",
        default=None,
        help="where to write the model, a new folder (default: exports/<experiment>-"
        "replicate<I> in the experiment's results folder)",
    )
    export.add_argument(
        "--replicate", type=int, required=True, metavar="I", help="which replicate, from 0"
    )
    export.add_argument(
        "--best",
        action="store_true",
        help="export the replicate at its lowest validation loss (model_best)",
    )
    commands.add_parser(
        "schema",
        help="print the workflow config's JSON Schema "
        "(python -m motorflow schema > workflow/schemas/config.schema.yaml)",
    )
    docs_command = commands.add_parser(
        "docs", help="regenerate config/README.md's key tables from the typed config"
    )
    docs_command.add_argument(
        "--check",
        action="store_true",
        help="change nothing; exit 1 if the tables are not current",
    )
    docs_command.add_argument(
        "--readme",
        default=README,
        metavar="PATH",
        help=f"the file whose generated sections are written (default {README})",
    )
    return parser, commands.choices


def docs(readme: str, check: bool) -> int:
    """Rewrite `readme`'s generated sections (with `check`, only compare): 0 when the
    file is current (or was written), 1 when `check` finds it stale."""
    from ._config_docs import DocsError, render_readme

    path = Path(readme)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise DocsError(f"cannot read {readme}: {error.strerror or error}") from None
    current = render_readme(text)
    if current == text:
        return 0
    if check:
        print(
            f"motorflow docs: {readme} is not current; regenerate it with python -m motorflow docs",
            file=sys.stderr,
        )
        return 1
    path.write_text(current, encoding="utf-8")
    print(f"Wrote {readme}")
    return 0


def check(paths: Sequence[str]) -> int:
    """Check the config in `paths` (merged in order): 0 and a line per experiment when
    it is valid; 1 and a line per problem (``file:line:column`` or key path, value,
    what is allowed) when it is not; 2 when the check itself fails (a bug, never a traceback)."""
    from .._config_errors import ConfigError, problems
    from ._check import check_config, read_config
    from ._preflight import preflight
    from ._results_folder import check_results_owner, results_folder

    files = ", ".join(paths)
    try:
        checked = check_config(read_config(paths))
        # Where a run from this directory would write, and that no other config has.
        folder = results_folder(checked.settings.results, paths)
        if checked.settings.results is None:  # a folder named on purpose may be shared
            check_results_owner(folder, paths)
        estimates, warnings = preflight(checked.settings, checked.experiments, folder)
    except ConfigError as error:
        # One line per problem. A YAML problem names its file:line:column already; a
        # key path gets the files.
        for problem in problems(error):
            named = any(str(problem).startswith(str(Path(path))) for path in paths)
            print(f"motorflow check: {'' if named else files + ': '}{problem}", file=sys.stderr)
        print("The config is refused; fix it and check again.", file=sys.stderr)
        return 1
    except Exception as error:  # every input gets a message, never a traceback
        print(
            f"motorflow check: {files}: the check failed unexpectedly "
            f"({type(error).__name__}: {error}); this is a bug in motorflow, please report "
            "it with the config",
            file=sys.stderr,
        )
        return 2
    print(f"{files}: OK; results go to {folder}/")
    # A line per experiment: its blocks, what it writes, its jobs' peak memory.
    for line, estimate in zip(checked.summary(), estimates, strict=True):
        print(f"  {line}; {estimate.sizes()}")
    for line in warnings:
        print(f"  warning: {line}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command `argv` (default: the process's arguments); returns the exit code:
    0, or 2 for a folder that is no trained experiment or a replicate out of range
    (with one message on stderr); ``check`` returns 1 for a refused config."""
    try:
        return _run(argv)
    except BrokenPipeError:
        # The reader closed the pipe (`motorflow check c.yaml | head -1`): stop quietly,
        # as Unix tools do, with stdout pointed where the interpreter's final flush
        # cannot fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """`argv`'s command and its arguments, options and positionals in any order.

    argparse fills a command's positionals run by run between its options, so ``export
    DIR --replicate 0 OUT`` would leave OUT over: a command with words left is parsed
    again on its own, intermixed (its positionals wherever they stand).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    parser, commands = _parser()
    args, rest = parser.parse_known_args(argv)
    if not rest:
        return args
    words = argv[argv.index(args.command) + 1 :]
    return commands[args.command].parse_intermixed_args(
        words, namespace=argparse.Namespace(command=args.command)
    )


def _run(argv: Sequence[str] | None) -> int:
    args = _parse(argv)
    if args.command == "check":
        return check(args.config)
    # Known now to be a command to run: only now the heavy imports.
    from ._config_docs import DocsError
    from ._datasets import StoreError
    from ._results import ResultsError

    try:
        if args.command == "schema":
            sys.stdout.write(schema_text())
        elif args.command == "docs":
            return docs(args.readme, args.check)
        elif args.command == "info":
            from ._results import experiment_report

            sys.stdout.write(experiment_report(args.experiment))
        else:
            from ._export import export_replicate

            folder = export_replicate(args.experiment, args.replicate, args.folder, best=args.best)
            print(f"Wrote replicate {args.replicate} of {args.experiment} to {folder}")
    except (ResultsError, StoreError, DocsError) as error:
        print(f"motorflow {args.command}: {error}", file=sys.stderr)
        return 2
    return 0
