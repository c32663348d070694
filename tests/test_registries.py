"""Metrics and hidden-state analyses are families: an interface and a registry that the
computation, the config and the workflow read."""

from __future__ import annotations

import typing

import numpy as np
import pytest
import xarray as xr
from workflow_helpers import REPO

import motorflow as mf
from motorflow._analysis._config import SummaryMetric
from motorflow._config_base import registry
from motorflow._metrics import Reach, compute_metrics
from motorflow.pipeline._cross_experiment_specs import ProtocolMetric


def states(go_cue: bool = True) -> xr.Dataset:
    rng = np.random.default_rng(0)
    shape = (2, 2, 3, 12, 2)  # replicate, condition, trial, time, component
    dims = ("replicate", "condition", "trial", "time", "component")
    dataset = xr.Dataset(
        {
            "pos": (dims, np.cumsum(rng.normal(scale=0.01, size=shape), axis=3)),
            "vel": (dims, rng.normal(size=shape)),
            "goal": (("trial", "component"), rng.normal(scale=0.1, size=(3, 2))),
        },
        coords={"time": np.arange(12) * 0.02, "condition": ["a", "b"]},
    )
    if go_cue:
        dataset = dataset.assign_coords(go_time=("trial", [0.02, 0.04, 0.06]))
    return dataset


def test_every_registered_metric_is_computed_in_its_order_with_its_unit():
    metrics = mf.reach_metrics(states())
    assert list(metrics.data_vars) == list(mf.METRICS)
    for name, metric in mf.METRICS.items():
        assert metrics[name].attrs["units"] == metric.UNITS
        assert metrics[name].dims == ("replicate", "condition", "trial")


def test_a_metric_that_needs_what_the_states_lack_is_left_out():
    assert "reaction_time" not in mf.reach_metrics(states(go_cue=False))


def test_a_new_metric_is_its_class():
    class Straightness(mf.AbstractMetric):
        """Straight-line distance over path length (1: straight)."""

        KIND = "straightness"
        UNITS = "1"

        def compute(self, reach: Reach) -> xr.DataArray:
            return 1 / mf.METRICS["path_length_ratio"]().compute(reach)

    metrics = compute_metrics(states(), [*(m() for m in mf.METRICS.values()), Straightness()])
    assert metrics.straightness.attrs["units"] == "1"
    np.testing.assert_allclose(metrics.straightness * metrics.path_length_ratio, 1)


def test_the_config_offers_the_registered_metrics():
    assert typing.get_args(SummaryMetric) == ("final_validation_loss", *mf.METRICS)
    # A protocol compares one value per trial; a reaction time needs a go cue.
    from_the_cue = {"reaction_time", "displacement_before_go"}
    assert {n for n, m in mf.METRICS.items() if m.NEEDS_GO_CUE} == from_the_cue
    assert set(typing.get_args(ProtocolMetric)) == set(mf.METRICS) - from_the_cue


def test_the_analysis_config_holds_each_registered_analysis_with_its_defaults():
    config = mf.AnalysisConfig()
    assert list(type(config).model_fields) == [*mf.ANALYSES, "replicate"]
    for name, analysis in mf.ANALYSES.items():
        assert config.analyses[name] == analysis()
        assert analysis.KIND == name
    edited = mf.AnalysisConfig.from_dict({"pca": {"n_components": 2}}, "analysis")
    assert edited.analyses["pca"].n_components == 2


def test_the_workflow_draws_and_captions_a_figure_per_registered_analysis():
    for name in mf.ANALYSES:
        assert (REPO / "workflow" / "report" / f"{name}.rst").is_file(), name
    rules = (REPO / "workflow" / "rules" / "common.smk").read_text()
    assert "ANALYSIS_FIGURES = tuple(mf.ANALYSES)" in rules


def test_an_analysis_reads_its_settings_from_its_block(tmp_path):
    """Each analysis's `run` takes its settings from its config block: the store's PCA
    keeps the components its block asks for."""
    dataset = states()
    hidden = np.random.default_rng(1).normal(size=(2, 2, 3, 12, 5))
    dataset["hidden"] = (("replicate", "condition", "trial", "time", "unit"), hidden)
    inputs = mf.AnalysisInputs(dataset, ensemble=None, task=None, center_out=None, key=None)
    for n in (2, 4):
        pca = mf.AnalysisConfig.from_dict({"pca": {"n_components": n}}, "analysis").pca
        assert pca.run(inputs).sizes["pc"] == n


# Every family: its registry and the base class of its members.
FAMILIES = {
    "cells": (mf.CELLS, mf.CellConfig),
    "plants": (mf.PLANTS, mf.PlantConfig),
    "perturbations": (mf.PERTURBATIONS, mf.AbstractPerturbation),
    "tasks": (mf.TASKS, mf.TaskConfig),
    "loss terms": (mf.LOSS_TERMS, mf.AbstractLossTerm),
    "learning rules": (mf.LEARNING_RULES, mf.AbstractLearningRule),
    "constraints": (mf.CONSTRAINTS, mf.AbstractConstraint),
    "update rules": (mf.UPDATE_RULES, mf.AbstractUpdateRule),
    "metrics": (mf.METRICS, mf.AbstractMetric),
    "analyses": (mf.ANALYSES, mf.AbstractAnalysis),
}


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_registers_its_member_classes_by_kind(family):
    members, base = FAMILIES[family]
    assert members
    for kind, member in members.items():
        assert isinstance(member, type) and issubclass(member, base), (family, kind)
        assert member.KIND == kind, (family, kind)


def test_a_registry_refuses_a_kind_registered_twice():
    class Twin(mf.AbstractMetric):
        KIND = "endpoint_error"
        UNITS = "m"

        def compute(self, reach):
            return None

    with pytest.raises(ValueError, match="registered twice"):
        registry(*mf.METRICS.values(), Twin)
