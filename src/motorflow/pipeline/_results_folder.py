"""Where a config's outputs go: a results folder per config, and the mark that keeps
two configs out of one folder.

A project holds several configs, one per question, each run with ``--configfile``.
Each writes under its own folder, ``results/<file name without extension>/`` unless
its top-level ``results`` key names another, so running one never replaces, nor makes
stale, what another made, and two configs may reuse experiment names. The folder
keeps a mark naming the config file(s) that write it (written when a run starts, not
by a dry run); a run of other files into a marked folder named after them (two
``config.yaml`` in different folders, say) is refused before anything runs. A folder
the ``results`` key names is the user's choice, shared on purpose if two name it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path

from .._config_errors import ConfigError

RESULTS_ROOT = "results"
# The file in a results folder that names the config files writing it.
OWNER_MARK = ".motorflow-config.json"
_PART = r"[A-Za-z0-9_+-][A-Za-z0-9_.+-]*"
FOLDER_PATTERN = rf"{_PART}(/{_PART})*"


def check_results_folder(folder: str, path: str = "") -> str:
    """A results folder as a config may name it: a relative path of plain names."""
    if not isinstance(folder, str) or not re.fullmatch(FOLDER_PATTERN, folder.rstrip("/")):
        raise ConfigError(
            path,
            f"{folder!r} is not a results folder: give a relative path of names made of "
            "letters, digits, '_', '-', '+' and '.' (not starting with '.'), such as "
            "results/reaching",
        )
    return folder.rstrip("/")


def config_names(config_files: Sequence[str | Path]) -> list[str]:
    """The config files as the mark records them: relative to the working directory
    where they lie inside it (Snakemake passes them absolute), '/'-separated."""
    here = Path.cwd()
    names = []
    for file in config_files:
        path = Path(os.path.normpath(Path(file).absolute()))
        names.append((path.relative_to(here) if path.is_relative_to(here) else path).as_posix())
    return names


def results_folder(configured: str | None, config_files: Sequence[str | Path]) -> str:
    """The folder a run's outputs go to: `configured` (the config's ``results`` key),
    else ``results/<stem>`` of the config file (stems joined by ``+`` for several)."""
    if configured is not None:
        return check_results_folder(configured, "results")
    stem = "+".join(Path(file).stem for file in config_files)
    if not re.fullmatch(_PART, stem):
        raise ConfigError(
            "results",
            f"the config file name(s) {', '.join(map(str, config_files))} do not make a "
            f"folder name ({stem!r}); set a top-level `results:` folder in the config, "
            "e.g. results: results/my-config",
        )
    return f"{RESULTS_ROOT}/{stem}"


def results_owner(folder: str | Path) -> list[str] | None:
    """The config files named by `folder`'s mark, or None where it has none."""
    mark = Path(folder) / OWNER_MARK
    if not mark.exists():
        return None
    try:
        return list(json.loads(mark.read_text())["config_files"])
    except (ValueError, KeyError, TypeError):
        return None


def check_results_owner(folder: str | Path, config_files: Sequence[str | Path]) -> None:
    """Refuse to run `config_files` into a folder another config's run has written."""
    owner = results_owner(folder)
    names = config_names(config_files)
    if owner is not None and owner != names:
        raise ConfigError(
            "results",
            f"{folder}/ holds the results of {' + '.join(owner)}, not of "
            f"{' + '.join(names)}: running would replace them. Give this config a folder "
            f"of its own with a top-level `results:` key (e.g. results: {folder}-2), or "
            f"remove {folder}/ if its results are no longer needed",
        )


def mark_results_owner(folder: str | Path, config_files: Sequence[str | Path]) -> None:
    """Record in `folder` which config files write it (when a run starts)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"config_files": config_names(config_files)}, indent=1) + "\n"
    mark = folder / OWNER_MARK
    if not mark.exists() or mark.read_text() != text:
        tmp = mark.with_name(f"{mark.name}.tmp")
        tmp.write_text(text)
        tmp.replace(mark)
