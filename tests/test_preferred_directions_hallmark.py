"""Preferred directions shaped by the limb (Lillicrap & Scott 2013; Ueyama 2012), from the
shipped config at reduced size: the hidden units of a network driving the six-muscle arm
have preferred directions gathered on one axis (two opposite modes), those of a network
driving the point mass do not.

The config is `config/preferred-directions.yaml` itself, shrunk (the point mass and the
muscle arm only, REPLICATES replicates, BATCHES batches), run through the stage
functions the workflow's scripts call, and the numbers are the comparison table the
shipped config's `comparisons` entry writes. The thresholds follow
../shared/notes/classic-results.md (section 3): a Rayleigh p < 0.001 on the doubled
angles needs r > sqrt(6.9 / N) with N tuned units.

Measured at this size (2026-11, signed rates): muscle arm pooled r 0.238 over 192
units (threshold 0.19, axis 101°), point mass 0.013 (replicates' mean 0.075); with
the config's rectified rates (2026-12-06): muscle arm 0.239 over 172 tuned units
(threshold 0.20, axis 101°, Monte Carlo p 0.0002 against 10,000 draws; per replicate
0.004-0.11), point mass 0.011 (p 0.98). What the test depends on
(checked by removing it): with the muscle arm replaced by the point mass
(`models.muscle_arm.plant: {kind: point_mass, mass: 1.0, damping: 0.0}`) its r is the
point mass's, 0.013, and the first threshold fails. It took 5 min 52 s on 2 CPU cores
under heavy load (load average about 10; not timed on idle cores): the bimodality needs
the training (300 batches gave r 0.15, below the threshold).
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from conftest import compiled_as_users_jobs_compile
from workflow_helpers import REPO, evaluate_through_stage, train_through_stages

import motorflow.pipeline as mfp
from motorflow import ANALYSES
from motorflow._analysis._base import AnalysisInputs

REPLICATES = 3
BATCHES = 700
PLANTS = ("point_mass", "muscle_arm")


def shrunk_config() -> dict:
    config = yaml.safe_load((REPO / "config" / "preferred-directions.yaml").read_text())
    config["experiments"] = {name: config["experiments"][name] for name in PLANTS}
    config["models"] = {name: config["models"][name] for name in PLANTS}
    config["comparisons"]["preferred_directions"]["experiments"] = list(PLANTS)
    config["trainings"]["reach"].update(n_replicates=REPLICATES, n_batches=BATCHES)
    config["statistics"] = {"n_resamples": 1000}
    return config


def comparison_table(config: dict, results) -> dict:
    settings = mfp.parse_config(config)
    comparison = settings.comparisons["preferred_directions"]
    tuning = settings.analysis.tuning  # the shipped config's tuning settings
    for experiment in mfp.resolve_experiments(config).values():
        with compiled_as_users_jobs_compile():
            train_through_stages(experiment, results)
            evaluate_through_stage(experiment, results, settings.evaluation)
        # The tuning analysis alone (the store's other analyses play no part here);
        # it reads nothing but the evaluated states.
        inputs = AnalysisInputs(
            states=mfp.read_states(results / experiment.name / "states.zarr"),
            ensemble=None,
            task=None,
            center_out=None,
            key=mfp.experiment_keys(experiment.seed)["analysis"],
        )
        mfp.write_dataset(tuning.run(inputs), results / experiment.name / "analysis.zarr")
    analyses = {
        name: mfp.open_dataset(results / name / "analysis.zarr") for name in comparison.experiments
    }
    table = ANALYSES[comparison.analysis].comparison_table(
        analyses, confidence=0.95, n_resamples=1000, seed=0
    )
    return table.set_index(["experiment", "statistic"])


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    return comparison_table(shrunk_config(), tmp_path_factory.mktemp("pd") / "results")


def test_the_muscle_arms_preferred_directions_are_bimodal_and_the_point_masss_are_not(table):
    # Every replicate's tuned units pooled: N about 190 of 3 x 64.
    muscle = table.loc[("muscle_arm", "bimodality_r"), "pooled"]
    point = table.loc[("point_mass", "bimodality_r"), "pooled"]
    for plant in PLANTS:
        assert table.loc[(plant, "n_tuned"), "pooled"] >= 100, "too few tuned units"
    # Rayleigh's p < 0.001 on the doubled angles: r > sqrt(6.9 / N).
    n = table.loc[("muscle_arm", "n_tuned"), "pooled"]
    assert muscle > np.sqrt(6.9 / n)
    assert table.loc[("muscle_arm", "rayleigh_p"), "pooled"] < 1e-3
    # The test as Lillicrap & Scott (2013) make it: r above 99.9% of as many uniform units.
    assert table.loc[("muscle_arm", "bimodality_p"), "pooled"] < 1e-3
    assert table.loc[("point_mass", "bimodality_p"), "pooled"] > 0.01
    n = table.loc[("point_mass", "n_tuned"), "pooled"]
    assert point < np.sqrt(6.9 / n)
    assert muscle - point >= 0.1
    # Each replicate on its own: every muscle arm above every point mass.
    replicates = [f"replicate_{k}" for k in range(REPLICATES)]
    muscle_each = table.loc[("muscle_arm", "bimodality_r"), replicates].to_numpy(float)
    point_each = table.loc[("point_mass", "bimodality_r"), replicates].to_numpy(float)
    assert muscle_each.min() > point_each.max()
