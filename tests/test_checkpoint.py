"""Damaged resume state: fall back to the newest usable checkpoint, or start afresh."""

import gc
import logging
import shutil

import pytest
from conftest import assert_trees_equal

# orbax leaves an unawaited read behind when a damaged checkpoint fails to restore;
# Python reports it when the garbage collector frees it.
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


@pytest.fixture(autouse=True)
def collect_abandoned_reads():
    """Free those reads within the test that made them (whose filter above applies), not
    in whichever later test the collector happens to run (1,600 lines of warning there)."""
    yield
    gc.collect()


@pytest.fixture
def trained(tiny, tmp_path):
    setup = tiny()
    reference = setup.train(checkpoint_dir=tmp_path / "ckpt")
    return setup, reference, run_dir(tmp_path / "ckpt")


def run_dir(store):
    (run,) = [p for p in store.iterdir() if p.is_dir()]
    return run


def largest_file(directory):
    return max((p for p in directory.rglob("*") if p.is_file()), key=lambda p: p.stat().st_size)


def test_a_truncated_newest_checkpoint_falls_back_to_the_previous_one(trained, caplog):
    setup, reference, directory = trained
    damaged = largest_file(directory / "40" / "state")
    damaged.write_bytes(damaged.read_bytes()[:10])
    with caplog.at_level(logging.WARNING, logger="motorflow"):
        resumed = setup.train(checkpoint_dir=directory.parent)
    assert "checkpoint at batch 40" in caplog.text and "damaged" in caplog.text
    assert "older checkpoint at batch 30" in caplog.text
    assert resumed.record["resumed_from_batch"] == 30
    assert_trees_equal(resumed.state, reference.state)
    assert_trees_equal(resumed.history, reference.history)


def test_a_newest_checkpoint_missing_a_file_falls_back(trained, caplog):
    setup, reference, directory = trained
    (directory / "40" / "history" / "manifest.ocdbt").unlink()
    with caplog.at_level(logging.WARNING, logger="motorflow"):
        resumed = setup.train(checkpoint_dir=directory.parent)
    assert "checkpoint at batch 40" in caplog.text
    assert resumed.record["resumed_from_batch"] == 30
    assert_trees_equal(resumed.state, reference.state)


def test_unreadable_metrics_do_not_stop_the_resume(trained, caplog):
    setup, reference, directory = trained
    (directory / "40" / "metrics" / "metrics").write_text('{"loss": 0.')
    with caplog.at_level(logging.WARNING, logger="motorflow"):
        resumed = setup.train(checkpoint_dir=directory.parent)
    assert "checkpoint at batch 40" in caplog.text and "metrics" in caplog.text
    # That checkpoint is dropped; the run resumes from the one before it.
    assert resumed.record["resumed_from_batch"] == 30
    assert_trees_equal(resumed.state, reference.state)


def test_no_usable_checkpoint_starts_afresh_with_a_warning(trained, caplog):
    setup, reference, directory = trained
    for step in ("30", "40"):
        shutil.rmtree(directory / step / "state" / "ocdbt.process_0")
    with caplog.at_level(logging.WARNING, logger="motorflow"):
        resumed = setup.train(checkpoint_dir=directory.parent)
    assert "training starts afresh" in caplog.text
    assert resumed.record["resumed_from_batch"] == 0
    assert_trees_equal(resumed.state, reference.state)
    assert_trees_equal(resumed.history, reference.history)


def test_an_interrupted_checkpoint_write_is_ignored_and_cleaned_up(trained):
    setup, reference, directory = trained
    leftover = directory / "50.orbax-checkpoint-tmp-123"
    shutil.copytree(directory / "40", leftover)
    resumed = setup.train(checkpoint_dir=directory.parent)
    assert resumed.record["resumed_from_batch"] == 40
    assert_trees_equal(resumed.state, reference.state)
    assert not leftover.exists()
