"""A failing run never leaves less than the last complete run: the files a successful run
left are kept, unchanged, until the next run succeeds."""

import hashlib
import os
from pathlib import Path

import pytest
from workflow_helpers import (
    copy_project,
    finished_tiny_pipeline,
    snakemake,
    tiny_config,
    write_config,
)

from motorflow.pipeline._last_complete import (
    LAST_COMPLETE,
    drop_last_complete,
    keep_last_complete,
)
from motorflow.pipeline._results_folder import OWNER_MARK


def checksums(folder: Path, *, skip=("checkpoints",)) -> dict[str, str]:
    """Each file's digest by its path in `folder` (not the resume state, not dot files)."""
    found = {}
    for path in sorted(folder.rglob("*")):
        parts = path.relative_to(folder).parts
        if path.is_file() and not any(p.startswith(".") or p in skip for p in parts):
            found["/".join(parts)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def test_kept_files_keep_their_contents_when_the_run_replaces_them(tmp_path):
    results = tmp_path / "results"
    (results / "exp" / "model").mkdir(parents=True)
    (results / "exp" / "model" / "arrays").write_text("old weights")
    (results / "summary.csv").write_text("old summary")
    (results / "exp" / "checkpoints").mkdir()
    (results / "exp" / "checkpoints" / "state").write_text("resume state")
    (results / "other").mkdir()
    (results / "other" / OWNER_MARK).write_text("{}")  # another config's folder
    (results / "other" / "summary.csv").write_text("theirs")
    kept = keep_last_complete(results)
    assert checksums(kept) == checksums(results, skip=("checkpoints", "other"))
    assert not (kept / "exp" / "checkpoints").exists() and not (kept / "other").exists()
    # A run replaces outputs as jobs do: deleted, then written anew and renamed in.
    (results / "summary.csv").unlink()
    new = results / "summary.csv.tmp"
    new.write_text("new summary")
    os.replace(new, results / "summary.csv")
    (results / "exp" / "model" / "arrays").unlink()
    assert (kept / "summary.csv").read_text() == "old summary"
    assert (kept / "exp" / "model" / "arrays").read_text() == "old weights"
    # A second run after a failure keeps the older, complete files.
    assert keep_last_complete(results) == kept
    assert (kept / "summary.csv").read_text() == "old summary"
    drop_last_complete(results)
    assert not kept.exists()


def test_nothing_is_kept_of_a_folder_without_outputs(tmp_path):
    assert keep_last_complete(tmp_path / "absent") is None
    (tmp_path / "empty").mkdir()
    assert keep_last_complete(tmp_path / "empty") is None
    assert not (tmp_path / "empty" / LAST_COMPLETE).exists()


@pytest.mark.workflow
def test_a_failed_run_keeps_every_output_of_the_last_complete_run(tmp_path):
    workdir = copy_project(finished_tiny_pipeline(), tmp_path)
    results = workdir / "results"
    complete = checksums(results)
    # An edit that retrains one experiment, whose train job is then killed (as for
    # memory): Snakemake has deleted its old model by then.
    edited = tiny_config()
    edited["experiments"]["quiet"]["seed"] = 1
    write_config(workdir, edited)
    killed = {"MOTORFLOW_KILL_AT": "chunk"}
    failed = snakemake(workdir, check=False, env=killed)
    assert failed.returncode != 0
    assert LAST_COMPLETE in failed.stderr, failed.stderr[-3000:]
    assert not (results / "quiet" / "model").exists()  # what Snakemake deleted
    assert checksums(results / LAST_COMPLETE) == complete
    # Another failing run keeps the complete files, not the failed run's.
    assert snakemake(workdir, check=False, env=killed).returncode != 0
    assert checksums(results / LAST_COMPLETE) == complete
    # A run that succeeds is the last complete one: nothing is kept beside it.
    write_config(workdir, tiny_config())
    snakemake(workdir)
    assert not (results / LAST_COMPLETE).exists()
