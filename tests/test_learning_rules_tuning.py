"""The shipped learning-rate sweep (issue 30, point 5): every learning rule of the
comparison gets the same log-spaced grid, at least 3 replicates and the same trials."""

import itertools
import math

import pytest
from workflow_helpers import REPO

import motorflow.pipeline as mfp

CONFIG = REPO / "config" / "learning-rules-tuning.yaml"
#: the setting each family of rules is tuned by: Adam's learning rate, or RLS's alpha
#: (the regularization that starts the inverse correlation at I / alpha).
TUNED = {"adam": "training.optimizer.learning_rate", "rls": "training.learning.regularization"}


@pytest.fixture(scope="module")
def tuning():
    config = mfp.load_config_file(CONFIG)
    return config, mfp.resolve_experiments(config)


def tuned_setting(grid: dict) -> str:
    (setting,) = [s for s in grid if s in TUNED.values()]
    return setting


def test_every_rule_is_swept_over_a_log_spaced_grid(tuning):
    config, _ = tuning
    swept = {sweep["experiment"]: sweep["grid"] for sweep in config["sweeps"].values()}
    assert set(swept) == set(config["experiments"]), "a rule of the config is not tuned"
    adam_grids = []
    for name, grid in swept.items():
        values = grid[tuned_setting(grid)]
        assert len(values) >= 4, name
        ratios = [b / a for a, b in itertools.pairwise(values)]
        assert all(r > 1 for r in ratios), f"{name}: not increasing"
        # log-spaced: one constant ratio (to the 3 digits the values are written with)
        assert max(ratios) / min(ratios) < 1.02, f"{name}: not log-spaced: {values}"
        assert values[-1] / values[0] >= 100 - 1e-9, f"{name}: spans under 2 decades"
        if tuned_setting(grid) == TUNED["adam"]:
            adam_grids.append(values)
    assert len(adam_grids) >= 2 and all(g == adam_grids[0] for g in adam_grids)


def test_the_sweep_expands_to_every_value_with_the_same_trials(tuning):
    config, experiments = tuning
    for sweep_name, sweep in config["sweeps"].items():
        setting = tuned_setting(sweep["grid"])
        points = [e for name, e in experiments.items() if name.startswith(f"{sweep_name}-")]
        assert len(points) == math.prod(len(v) for v in sweep["grid"].values())
        if setting == TUNED["adam"]:
            got = sorted(e.train.optimizer.learning_rate for e in points)
        else:
            got = sorted({e.train.learning.regularization for e in points})
        assert got == sorted(sweep["grid"][setting]), sweep_name
        for e in points:
            assert e.train.n_replicates >= 3, e.name
        sizes = {(e.train.n_batches, e.train.batch_size, e.seed) for e in points}
        assert len(sizes) == 1, f"{sweep_name}'s values see different trials: {sizes}"


def trials_seen(experiment) -> tuple:
    return (
        experiment.train.n_batches,
        experiment.train.batch_size,
        experiment.seed,
        experiment.task.n_steps,
    )


def test_the_sweep_trains_each_rule_on_the_comparisons_trials(tuning):
    # The learning rates it picks are used at the comparison's size: tuned at another
    # size, e-prop's ranking changes (its higher rates turn unstable only later). The
    # Adam rules and RLS see BPTT's trials; FORCE in the reservoir its own 20 batches.
    config, experiments = tuning
    comparison = mfp.resolve_experiments(
        mfp.load_config_file(REPO / "config" / "learning-rules.yaml")
    )
    for sweep_name, sweep in config["sweeps"].items():
        base = comparison[sweep["experiment"]]
        for name, e in experiments.items():
            if name.startswith(f"{sweep_name}-"):
                assert trials_seen(e) == trials_seen(base), name
    bptt = comparison["bptt"]
    assert {trials_seen(comparison[name]) for name in ("eprop", "rls", "force")} == {
        trials_seen(bptt)
    }
