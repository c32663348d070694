"""The preflight estimate: a config too large for the machine or the disk is refused,
with the key that drives it, before any job runs; a run prints a line per experiment."""

import pytest
import yaml
from conftest import raises_config_error
from workflow_helpers import at, make_workdir, snakemake, tiny_config

import motorflow.pipeline as mfp
from motorflow.pipeline._preflight import check_fits
from motorflow.pipeline._preflight import warnings as memory_warnings

GiB = 2**30
ROOMY = {"memory": 2 * GiB, "disk_free": 2**40}


def estimates(config):
    checked = mfp.check_config(config)
    return checked.settings, mfp.estimate(checked.settings, checked.experiments)


def refuse(config, **limits):
    settings, items = estimates(config)
    check_fits(items, settings, **{**ROOMY, **limits})


# Each size a careless edit makes absurd: the edit and the key the refusal names.
TOO_LARGE = {
    "units": (
        at("models.small.network.hidden_size", 1_000_000),
        "models.small.network.hidden_size",
    ),
    "steps": (at("tasks.reach.n_steps", 100_000_000), "tasks.reach.n_steps"),
    "trials per batch": (
        at("trainings.quick.batch_size", 5_000_000),
        "trainings.quick.batch_size",
    ),
    "replicates": (
        lambda c: c["trainings"]["quick"].update(n_replicates=1_000_000, shared_trials=True),
        "trainings.quick.n_replicates",
    ),
    "evaluation grid": (
        at(
            "tasks.reach.eval",
            {"n_directions": 3600, "distances": [0.01 * i for i in range(1, 101)]},
        ),
        "tasks.reach.eval.n_directions",
    ),
    "an override's units": (
        at("experiments.quiet.override", {"model": {"network": {"hidden_size": 1_000_000}}}),
        "experiments.quiet.override.model.network.hidden_size",
    ),
}


@pytest.mark.parametrize(("edit", "path"), TOO_LARGE.values(), ids=TOO_LARGE.keys())
def test_a_config_too_large_for_the_memory_is_refused_naming_its_key(edit, path):
    config = tiny_config()
    edit(config)
    with raises_config_error(path, "would need about", "of memory", "make it smaller"):
        refuse(config)
    # The same config at its original size fits.
    refuse(tiny_config())


def test_a_job_that_asks_for_the_memory_it_needs_is_not_refused():
    # On a cluster a job gets the memory it asks for, whatever the submitting machine has.
    config = tiny_config()
    at("models.small.network.hidden_size", 4096)(config)
    with raises_config_error("models.small.network.hidden_size", "train job", "mem_mb"):
        refuse(config)
    config["resources"] = {"train": {"mem_mb": 100_000}, "evaluate": {"mem_mb": 100_000}}
    refuse(config)


def test_snapshots_that_would_fill_the_disk_are_refused_naming_them():
    config = tiny_config()
    at("trainings.quick.n_batches", 200_000)(config)
    at("trainings.quick.snapshots", {"batches": {"every": 1}})(config)
    settings, items = estimates(config)
    written = sum(item.total_disk for item in items)
    with raises_config_error("trainings.quick.snapshots", "would write about", "free"):
        check_fits(items, settings, memory=16 * GiB, disk_free=written // 2)
    # A previous run's files in the folder are replaced, so they count as free.
    check_fits(items, settings, memory=16 * GiB, disk_free=written // 2, rewritten=written)
    check_fits(items, settings, memory=16 * GiB, disk_free=written // 2, rewritten=lambda: written)


def test_the_results_folder_is_measured_only_where_the_free_disk_alone_is_too_small():
    # Every Snakemake run checks; walking a large results folder takes seconds.
    settings, items = estimates(tiny_config())
    written = sum(item.total_disk for item in items)
    measured = []

    def rewritten() -> int:
        measured.append(True)
        return written

    check_fits(items, settings, memory=16 * GiB, disk_free=written, rewritten=rewritten)
    assert not measured
    check_fits(items, settings, memory=16 * GiB, disk_free=written // 2, rewritten=rewritten)
    assert measured


def test_the_estimate_grows_with_each_size():
    _, (base, *_) = estimates(tiny_config())
    for path, value in [
        ("models.small.network.hidden_size", 64),
        ("tasks.reach.n_steps", 60),
        ("trainings.quick.batch_size", 64),
        ("trainings.quick.n_replicates", 8),
    ]:
        config = tiny_config()
        at(path, value)(config)
        _, (bigger, *_) = estimates(config)
        assert bigger.train_memory > base.train_memory, path
        assert bigger.total_disk > base.total_disk, path


def test_a_dry_run_prints_the_estimate_and_a_refused_one_runs_nothing(tmp_path):
    workdir = make_workdir(tmp_path, tiny_config())
    dry = snakemake(workdir, "--dry-run")
    lines = [line for line in dry.stderr.splitlines() if "train peak" in line]
    assert [line.split(":")[0].strip() for line in lines] == ["quiet", "noisy"], dry.stderr
    config = tiny_config()
    config["tasks"]["reach"]["n_steps"] = 100_000_000
    (workdir / "config" / "config.yaml").write_text(yaml.safe_dump(config))
    refused = snakemake(workdir, check=False)
    assert refused.returncode != 0
    assert "tasks.reach.n_steps" in refused.stderr and "Nothing was run" in refused.stderr
    assert not (workdir / "results").exists()


def train_packs(checked, size):
    return mfp.train_packs(checked.experiments, size, checked.sweeps)


def test_a_pack_too_large_for_the_memory_is_refused_naming_the_pack_size():
    """Each experiment fits alone; a pack of all of them, in one process, does not."""
    config = tiny_config()
    config["sweeps"] = {"seeds": {"experiment": "quiet", "grid": {"seed": list(range(40))}}}
    config["trainings"]["quick"]["batch_size"] = 4000
    settings, items = estimates(config)
    alone = max(item.train_memory for item in items)
    limits = {"memory": 4 * alone, "disk_free": 2**40}
    check_fits(items, settings, **limits)  # one experiment per job: fits
    config["resources"] = {"train": {"pack": 40}}
    checked = mfp.check_config(config)
    packs = mfp.pack_memory(items, checked.experiments, train_packs(checked, 40))
    assert [len(pack) for pack, _ in packs] == [40, 2]
    with raises_config_error("resources.train.pack", "the pack seeds-seed0 .. seeds-seed39"):
        check_fits(items, checked.settings, **limits, packs=packs)
    pairs = mfp.pack_memory(items, checked.experiments, train_packs(checked, 2))
    check_fits(items, checked.settings, **limits, packs=pairs)
    # Above what the job asks for (SLURM would kill it): a line naming the pack.
    lines = memory_warnings(items, checked.settings, packs)
    assert any(line.startswith("the pack seeds-seed0 .. seeds-seed39 (40 ") for line in lines)
