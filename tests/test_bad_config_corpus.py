"""The whole corpus of malformed configs, as users meet it: `motorflow check` refuses each
with one message naming the key (or file:line:column), and a real `snakemake` run on a
finished project refuses it before any job, leaving every output file unchanged.

The corpus is the cases of test_bad_config.py (every key family, cross-field rules,
names), test_config_file.py (YAML itself) and test_estimate.py (sizes no machine holds).
`motorflow check` takes every case; Snakemake, which costs seconds a case, takes the
first case of each family in the test suite and all of them with
``MOTORFLOW_FULL_CORPUS=1``.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
import test_bad_config
import test_config_file
import test_estimate
import yaml
from workflow_helpers import (
    _NoAliasDumper,
    copy_project,
    finished_tiny_pipeline,
    snakemake,
    tiny_config,
    write_config,
)

from motorflow.pipeline._cli import main

# The estimate's cases a machine of any size refuses (the grid's depends on the memory).
SIZES = {name: case for name, case in test_estimate.TOO_LARGE.items() if name != "evaluation grid"}


def _edited(edit) -> str:
    config = tiny_config()
    edit(config)
    return yaml.dump(config, Dumper=_NoAliasDumper, sort_keys=False)


def corpus() -> dict[str, tuple[str, str, str]]:
    """Each case: its family, the config file's text and what the message must name."""
    cases = {}
    for name, (edit, path, _) in test_bad_config.CASES.items():
        cases[name] = ("keys", _edited(edit), path)
    for name, (edit, section) in test_bad_config.TRAILING_NEWLINE_NAMES.items():
        cases[f"name with a newline: {name}"] = ("names", _edited(edit), section)
    for name, (text, where, _) in test_config_file.CASES.items():
        cases[f"yaml: {name}"] = ("yaml", text, where)
    for name, (edit, path) in SIZES.items():
        cases[f"size: {name}"] = ("sizes", _edited(edit), path)
    return cases


CORPUS = corpus()
FULL = os.environ.get("MOTORFLOW_FULL_CORPUS") == "1"

def _first_of_each_family() -> set[str]:
    first: dict[str, str] = {}
    for name, (family, _, _) in CORPUS.items():
        first.setdefault(family, name)
    return set(first.values())


# Snakemake refuses through the same function `motorflow check` runs (mfp.check_config):
# one case of each family shows the refusal reaches Snakemake's user unchanged.
THROUGH_SNAKEMAKE = {
    name: case for name, case in CORPUS.items() if FULL or name in _first_of_each_family()
}


def test_the_corpus_has_150_cases_over_every_family():
    families = [family for family, _, _ in CORPUS.values()]
    assert len(CORPUS) >= 150
    assert {family: families.count(family) for family in set(families)}.keys() == {
        "keys",
        "names",
        "yaml",
        "sizes",
    }


@pytest.mark.parametrize(("family", "text", "named"), CORPUS.values(), ids=CORPUS.keys())
def test_motorflow_check_refuses_each_case_with_one_message(tmp_path, capsys, family, text, named):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    assert main(["check", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    problem, advice = err.strip().splitlines()
    assert named in problem and advice.startswith("The config is refused"), err


def checksums(folder: Path) -> dict[str, str]:
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and "checkpoints" not in path.parts
    }


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A project whose tiny config has run to completion, and its outputs' checksums."""
    workdir = copy_project(finished_tiny_pipeline(), tmp_path_factory.mktemp("finished"))
    return workdir, checksums(workdir / "results")


@pytest.mark.workflow
@pytest.mark.parametrize(
    ("family", "text", "named"), THROUGH_SNAKEMAKE.values(), ids=THROUGH_SNAKEMAKE.keys()
)
def test_snakemake_refuses_each_case_before_any_job_on_a_finished_project(
    finished, family, text, named
):
    workdir, complete = finished
    (workdir / "config" / "config.yaml").write_text(text)
    try:
        refused = snakemake(workdir, check=False)
    finally:
        write_config(workdir, tiny_config())
    assert refused.returncode != 0
    assert refused.stderr.count("Invalid config:") == 1, refused.stderr[-3000:]
    assert named in refused.stderr and "Nothing was run" in refused.stderr
    assert "rule " not in refused.stdout  # no job was even planned
    assert checksums(workdir / "results") == complete
