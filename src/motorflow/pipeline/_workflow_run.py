"""One Snakemake run of the workflow, as the Snakefile opens, starts and ends it.

What the workflow does once per run beside its rules: it ignores SLURM's early
warning, checks the config, picks and guards its results folder, prints the preflight
estimate, and, from Snakemake's ``onstart``, ``onsuccess`` and ``onerror`` hooks,
marks the folder's owner, keeps the last complete results aside and runs the warm
workers. ``workflow/rules/common.smk`` makes a :class:`WorkflowRun` and calls its
hooks; errors reach it as :class:`motorflow.ConfigError` (the library never imports
Snakemake, whose ``WorkflowError`` the Snakefile raises).

The Snakefile imports it: it stays import-cheap (no JAX).
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from .._config_errors import ConfigError, problems
from ._check import CheckedConfig, check_config, read_config
from ._preflight import preflight
from ._invocation import note_workflow_command
from ._last_complete import drop_last_complete, keep_last_complete, last_complete_message
from ._results_folder import check_results_owner, mark_results_owner, results_folder
from ._warm_workers import WarmWorkers, start_warm_workers

# The config the workflow runs when no --configfile names one.
DEFAULT_CONFIG = Path("config/config.yaml")


def ignore_cluster_warning() -> None:
    """Ignore SIGUSR1 in this process (Snakemake's, as it parses the workflow).

    SLURM's early warning before a time limit (``sbatch --signal=USR1@T``,
    profiles/slurm) reaches every process of the job's step: Snakemake there would die
    of it (the default action), ending the step and with it the train job before it
    checkpoints. So Snakemake ignores it, and the jobs it starts inherit that, but a
    train job handles it: it checkpoints at its next chunk boundary and exits, and the
    retry resumes. (Only the main thread may set a handler.)
    """
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)


def config_problems(error: ConfigError) -> list[str]:
    """The lines of the error the Snakefile raises for a bad config: one per problem
    (the typed config reports every bad key at once), then what to do."""
    return [
        *(f"Invalid config: {problem}" for problem in problems(error)),
        "Nothing was run; fix the config and run again.",
    ]


@dataclass
class WorkflowRun:
    """The checked config of one run, its results folder and its warm-worker server."""

    config_files: list[Path]
    checked: CheckedConfig
    results: str
    # Whether this process started the workflow (not a job's snakemake that parses it
    # again on a cluster node): what runs once per workflow runs where this is true.
    started_here: bool
    warm_workers: WarmWorkers | None = None  # a local run's, while it runs

    @classmethod
    def open(
        cls,
        config_files: Sequence[str | Path],
        overrides: Mapping[str, Any],
        *,
        log: TextIO | None = None,
    ) -> WorkflowRun:
        """Check the config (the files, else the default, under Snakemake's
        ``--config`` overrides), pick its results folder and, in the process that
        started the workflow, print the preflight estimate to `log` (stderr).

        Raises :class:`ConfigError` before anything is written: a bad key, a folder
        named after a config file that another config file's run wrote, or a config
        that cannot fit this machine.

        The config files are read by motorflow's own loader (it refuses duplicate keys,
        aliases, tags and templating, and reads 1e-3 as a number). Each shipped config
        is whole, so a --configfile replaces the default rather than extending it, as a
        ``configfile:`` directive would (Snakemake merges the directive's file under
        every --configfile): the Snakefile passes the run's own config files.
        """
        # The command that started the workflow, for the train jobs' run record (a
        # job's own command line is a temporary script's), noted in the environment
        # the jobs inherit (motorflow.pipeline._invocation).
        started_here = note_workflow_command()
        files = [Path(path) for path in config_files] or [DEFAULT_CONFIG]
        checked = check_config(read_config(files, dict(overrides)))
        # Each config's outputs go to a folder of their own (the `results` key, else
        # results/<config file name>), so configs never replace or make stale each
        # other's results. A folder named after a file that another file's run has
        # written (two config.yaml) is refused; one named by the `results` key is the
        # user's choice, and may be shared.
        results = results_folder(checked.settings.results, files)
        if checked.settings.results is None:
            check_results_owner(results, files)
        run = cls(files, checked, results, started_here)
        if started_here:
            # Once per workflow (the dry run too; not in each job, which parses the
            # workflow again while others write).
            run.print_estimate(log if log is not None else sys.stderr)
        return run

    def print_estimate(self, log: TextIO) -> None:
        """The preflight estimate, a line per experiment; raises :class:`ConfigError`
        for a config that cannot fit this machine."""
        estimates, warnings = preflight(
            self.checked.settings, self.checked.experiments, self.results
        )
        print(
            "motorflow estimate (disk written, peak memory of the train and evaluate jobs):",
            *(f"  {estimate.line()}" for estimate in estimates),
            *(f"  warning: {line}" for line in warnings),
            sep="\n",
            file=log,
        )

    def started(self, *, cores: int, local: bool) -> None:
        """Snakemake's ``onstart``: the folder marked with its config files, the files
        of the last successful run hard-linked aside (a job that fails after Snakemake
        deleted its old outputs costs nothing of them, motorflow.pipeline._last_complete),
        and, for a local run, the warm workers (motorflow.pipeline._warm_workers)."""
        mark_results_owner(self.results, self.config_files)
        keep_last_complete(self.results)
        if local:
            self.warm_workers = start_warm_workers(cores)

    def succeeded(self) -> None:
        """Snakemake's ``onsuccess``: the warm workers stopped, the kept files dropped."""
        self._stop_warm_workers()
        drop_last_complete(self.results)

    def failed(self) -> str | None:
        """Snakemake's ``onerror``: the warm workers stopped; where the last complete
        results were kept, the message that says so."""
        self._stop_warm_workers()
        return last_complete_message(self.results)

    def _stop_warm_workers(self) -> None:
        if self.warm_workers is not None:
            self.warm_workers.stop()
            self.warm_workers = None
