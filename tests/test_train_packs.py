"""The workflow's train packs (``resources.train.pack``) without Snakemake: which
experiments a pack holds, the params that rerun it, how its job reads them back, the
config it refuses, and its job's log and worker. End to end: test_pack_workflow.py."""

import logging

import pytest
from workflow_helpers import tiny_config

import motorflow as mf
import motorflow.pipeline as mfp
from motorflow.pipeline._job_client import worker_key


def checked(pack: int, seeds=(1, 2, 3, 4), **edits):
    """The tiny config with a sweep over `seeds` and `pack` experiments per train job."""
    config = tiny_config()
    config["sweeps"] = {"seeds": {"experiment": "quiet", "grid": {"seed": list(seeds)}}}
    config["resources"] = {"train": {"pack": pack}}
    for key, value in edits.items():
        config[key] = value
    return mfp.check_config(config)


def packs(config: mfp.CheckedConfig, size: int):
    return mfp.train_packs(config.experiments, size, config.sweeps)


def test_packs_are_runs_of_each_sweeps_grid_then_of_the_other_experiments():
    config = checked(2)
    assert list(config.experiments)[:2] == ["quiet", "noisy"]
    seeds = [f"seeds-seed{seed}" for seed in (1, 2, 3, 4)]
    assert packs(config, 2) == [tuple(seeds[:2]), tuple(seeds[2:]), ("quiet", "noisy")]
    assert packs(config, 3) == [tuple(seeds[:3]), ("quiet", "noisy")]
    assert packs(config, 4) == [tuple(seeds), ("quiet", "noisy")]
    assert packs(config, 1) == []
    # Without the sweeps, one run in config order.
    assert mfp.train_packs(config.experiments, 6) == [tuple(config.experiments)]


def test_a_sweep_with_the_seed_last_packs_each_settings_seeds_together():
    config = tiny_config()
    grid = {"model.feedback.noise_std": [0.0, 0.1], "seed": [1, 2, 3]}
    config["sweeps"] = {"grid": {"experiment": "quiet", "grid": grid}}
    checked_config = mfp.check_config(config)
    for pack in packs(checked_config, 3)[:2]:
        noise = {checked_config.experiments[name].model.feedback.noise_std for name in pack}
        assert len(noise) == 1


def test_an_experiment_that_starts_from_another_is_in_no_pack():
    config = tiny_config()
    config["experiments"]["noisy"]["init_from"] = "quiet"
    config["experiments"]["late"] = {"task": "reach", "model": "small", "training": "quick"}
    assert packs(mfp.check_config(config), 2) == [("quiet", "late")]


def test_a_later_stages_packs_take_what_its_rule_makes_and_chained_experiments_too():
    """The packs of evaluate, analysis and figures (packs.smk) are cut as the train
    packs, among the experiments their rule makes files for (the arm figure's: those
    with an arm), and an experiment that starts from another is packed: it waits for
    nothing at those stages but its own training."""
    config = tiny_config()
    config["experiments"]["noisy"]["init_from"] = "quiet"
    config["sweeps"] = {"seeds": {"experiment": "quiet", "grid": {"seed": [1, 2, 3]}}}
    checked_config = mfp.check_config(config)
    names = list(checked_config.experiments)
    seeds = [f"seeds-seed{seed}" for seed in (1, 2, 3)]
    assert mfp.stage_packs(names, 2, checked_config.sweeps) == [
        tuple(seeds[:2]),
        ("quiet", "noisy"),
    ]  # the sweep's last seed alone
    assert mfp.stage_packs(["quiet", *seeds[1:]], 2, checked_config.sweeps) == [tuple(seeds[1:])]
    assert mfp.stage_packs(names, 1, checked_config.sweeps) == []


def test_an_edit_of_one_experiment_changes_no_pack():
    before = checked(2)
    config = tiny_config()
    config["sweeps"] = {"seeds": {"experiment": "quiet", "grid": {"seed": [1, 2, 3, 4]}}}
    config["experiments"]["noisy"]["override"]["model"]["feedback"]["noise_std"] = 0.3
    after = mfp.check_config(config)
    assert packs(before, 2) == packs(after, 2)


def pack_texts(config: mfp.CheckedConfig, members) -> set[str]:
    """What Snakemake records of a pack job's settings: the set of its params' values."""
    return set(mfp.pack_params(config.job_settings, members).values())


def test_a_packs_params_change_with_any_members_settings_even_two_swapped():
    members = ("quiet", "noisy")
    base = checked(2)
    # quiet and noisy trade their feedback noise: the same settings, in other members.
    config = tiny_config()
    config["experiments"]["quiet"]["override"] = config["experiments"]["noisy"].pop("override")
    swapped = mfp.check_config(config)
    bare = [
        {text.partition(":")[2] for text in pack_texts(c, members)} for c in (base, swapped)
    ]
    assert bare[0] == bare[1]
    assert pack_texts(swapped, members) != pack_texts(base, members)
    # An edit of the members' training changes the pack's params.
    config = tiny_config()
    config["trainings"]["quick"]["n_batches"] = 30
    assert pack_texts(mfp.check_config(config), members) != pack_texts(base, members)


def test_a_pack_job_reads_back_each_members_experiment():
    config = checked(2)
    members = ("seeds-seed1", "seeds-seed2")
    run = mfp.pack_run_settings(config.job_run_settings, members)
    assert run["cpu_devices"] == 1
    read = mfp.pack_job_experiments(mfp.pack_params(config.job_settings, members), run)
    assert [experiment.name for experiment in read] == list(members)
    for experiment in read:
        key = ("train", experiment.name)
        texts = [mfp.setting_param(k, v) for k, v in config.job_settings[key].items()]
        alone = mfp.train_job_experiment(experiment.name, texts, config.job_run_settings[key])
        assert experiment == alone
    assert [experiment.seed for experiment in read] == [1, 2]


def test_a_pack_on_several_gpus_is_refused_naming_the_key():
    config = tiny_config()
    config["resources"] = {"train": {"pack": 4, "gpus": 2}}
    with pytest.raises(mf.ConfigError, match=r"resources\.train\.pack.*one device"):
        mfp.check_config(config)
    config["resources"] = {"trials": {"pack": 4}}
    with pytest.raises(mf.ConfigError, match=r"resources\.trials\.pack"):
        mfp.check_config(config)


def test_a_pack_jobs_lines_reach_every_members_log(tmp_path):
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    motorflow = logging.getLogger("motorflow")
    before = motorflow.level, motorflow.propagate, list(motorflow.handlers)
    with mfp.stage_logging(*logs) as logger:
        logger.info("a line of the pack")
    for log in logs:
        assert "a line of the pack" in log.read_text()
    # The process's logging as it was (a test session's, or a warm worker's next job's).
    assert (motorflow.level, motorflow.propagate, motorflow.handlers) == before


def test_a_pack_job_goes_to_a_worker_of_one_device_whatever_its_threads():
    assert worker_key({"threads": 2, "run": {}}) == (2,)
    assert worker_key({"threads": 2, "run": {"cpu_devices": 1}}) == (1,)
