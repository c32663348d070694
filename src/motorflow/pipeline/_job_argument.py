"""A job's description as its command's argument: inline, or in a file when long.

Linux refuses a single argument over 131,072 bytes (``MAX_ARG_STRLEN``; ``E2BIG``,
"Argument list too long"), and Snakemake hands a job's whole command to
``bash -c`` as one argument. A job's description (``_job.describe_job``) lists its
input files, so a figure of every experiment of a sweep grows by about 390 bytes an
experiment and passed that limit at about 330 experiments. A description up to
:data:`INLINE_BYTES` is the argument itself (JSON text, which starts with ``{``); a
longer one is written once to a file named by its digest in :data:`FOLDER` (below the
working folder, which Snakemake requires to be shared with a cluster's nodes) and the
argument is ``@`` and that file's path. Nothing about a job's description then grows
its command with the sweep.

Standard library only, and import-cheap (no ``pathlib``): the job client
(``_job_client``) imports it as a file.
"""

from __future__ import annotations

import os

# Well under MAX_ARG_STRLEN, with room for the rest of the command (the client's and
# the scripts' paths, the log files): 32 KiB is a sweep's figure of about 80
# experiments.
INLINE_BYTES = 32 * 1024
FOLDER = os.path.join(".snakemake", "motorflow-jobs")
FILE_PREFIX = "@"


def job_argument(description: str, folder: str | os.PathLike[str] = FOLDER) -> str:
    """The command-line argument that stands for `description`: itself, or, when
    longer than :data:`INLINE_BYTES`, ``@`` and the path of the file (below `folder`,
    relative where `folder` is) that holds it. The file's name is the text's digest,
    so the same description is one file, written once, whole (a reader never sees
    half of it)."""
    import hashlib  # here: the job client never writes one

    data = description.encode()
    if len(data) <= INLINE_BYTES:
        return description
    path = os.path.join(folder, f"{hashlib.sha256(data).hexdigest()}.json")
    if not os.path.exists(path):
        os.makedirs(folder, exist_ok=True)
        partial = f"{path}.{os.getpid()}.partial"
        with open(partial, "wb") as file:
            file.write(data)
        os.replace(partial, path)
    return FILE_PREFIX + path


def read_job_argument(argument: str) -> str:
    """The description that `argument` (:func:`job_argument`) stands for; a relative
    file is found from the working folder."""
    if not argument.startswith(FILE_PREFIX):
        return argument
    path = argument[len(FILE_PREFIX) :]
    try:
        with open(path, encoding="utf-8") as file:
            return file.read()
    except FileNotFoundError:
        raise FileNotFoundError(
            f"the job's description {path} is missing (it is written when Snakemake "
            f"plans the job, in the folder Snakemake runs in): run snakemake again"
        ) from None
