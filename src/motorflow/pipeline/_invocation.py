"""What started a workflow job, for its run record: the command the user typed to
start the workflow (``snakemake ...``), and the job's rule and wildcards.

A job runs in a warm worker or a process of its own (the job client's, ``_job``),
whose command line names neither. So the workflow notes its own command line
in the environment as it is parsed, and the jobs, which inherit the environment, read
it back. It is never a rule's param: params decide what reruns, and another command
line (another ``--cores``, another target) must never make a job stale.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from .._training._run_record import command_line

WORKFLOW_COMMAND = "MOTORFLOW_WORKFLOW_COMMAND"


def note_workflow_command() -> bool:
    """Note this process's command line (Snakemake's, when the workflow is parsed) as
    the command that started the workflow, for the jobs it starts; whether this process
    is the one that started it (what runs once per workflow, such as the preflight
    estimate, runs where this is true).

    A command noted already is kept: a job that Snakemake runs in a snakemake process
    of its own (on a cluster node) parses the workflow again under an internal command
    line, and inherits the user's from the process that submitted it.
    """
    if WORKFLOW_COMMAND in os.environ:
        return False
    os.environ[WORKFLOW_COMMAND] = json.dumps(command_line())
    return True


def job_invocation(rule: str, wildcards: Mapping[str, str]) -> dict[str, Any]:
    """The run record's ``command`` (the noted workflow command; this process's own
    command line when none was noted), ``rule`` and ``wildcards`` of a workflow job."""
    noted = os.environ.get(WORKFLOW_COMMAND)
    return {
        "command": json.loads(noted) if noted else command_line(),
        "rule": rule,
        "wildcards": {name: str(value) for name, value in wildcards.items()},
    }
