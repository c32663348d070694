"""Output-potent and output-null activity (Kaufman et al. 2014): the hidden activity the
readout sees and the activity it cannot, per epoch, checked on readouts whose null
space is known by construction and on a trained network's own readout."""

from __future__ import annotations

import warnings

import jax
import numpy as np
import pytest
import xarray as xr
from scipy.stats import special_ortho_group

import motorflow as mf
import motorflow.pipeline as mfp
from motorflow._analysis._output_spaces import readout_spaces

N_UNITS, N_TRIALS, N_STEPS, DT, GO_STEP = 6, 8, 20, 0.05, 8


def states(hidden: np.ndarray, go_step: int | None = GO_STEP) -> xr.Dataset:
    """A store of `hidden` (replicate, trial, time, unit) in one condition, its reaches'
    go cue at `go_step` (None: no go cue)."""
    coords = {
        "time": np.arange(hidden.shape[2]) * DT,
        "goal_angle": ("trial", np.linspace(0, 2 * np.pi, hidden.shape[1], endpoint=False)),
    }
    if go_step is not None:
        coords["go_time"] = ("trial", np.full(hidden.shape[1], go_step * DT))
    dataset = xr.Dataset({"hidden": (("replicate", "trial", "time", "unit"), hidden)}, coords)
    return dataset.expand_dims(condition=["unperturbed"], axis=1)


def known_readout(n_replicates: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Readouts (replicate, 2, unit) onto the first two rows of a random rotation, and
    that rotation (replicate, unit, unit): its first two rows span the potent space."""
    rotations = np.stack(
        [special_ortho_group.rvs(N_UNITS, random_state=r) for r in range(n_replicates)]
    )
    gains = np.array([[2.0, 0.0], [0.5, 1.0]])  # any invertible mix of the two rows
    return gains @ rotations[:, :2], rotations


def test_the_spaces_are_the_readouts_row_space_and_its_complement():
    weight = np.random.default_rng(0).normal(size=(3, N_UNITS))
    weight[2] = weight[0] - 2 * weight[1]  # rank 2
    potent, null = readout_spaces(weight)
    assert potent.shape == (N_UNITS, 2) and null.shape == (N_UNITS, N_UNITS - 2)
    basis = np.concatenate([potent, null], axis=1)
    np.testing.assert_allclose(basis.T @ basis, np.eye(N_UNITS), atol=1e-12)
    np.testing.assert_allclose(weight @ null, 0, atol=1e-12)  # null activity moves nothing
    # Every readout row lies in the potent space.
    np.testing.assert_allclose(potent @ (potent.T @ weight.T), weight.T, atol=1e-12)


def test_preparation_in_the_null_space_and_movement_in_the_potent_space_are_told_apart():
    """Before the go cue the reaches differ only along null directions, after it only
    along potent ones: the preparatory epoch's potent share is 0, the movement's 1; a
    component every reach shares (here along a potent direction) adds nothing."""
    weight, rotations = known_readout()
    rng = np.random.default_rng(1)
    hidden = np.zeros((2, N_TRIALS, N_STEPS, N_UNITS))
    for r in range(2):
        null_rows, potent_rows = rotations[r, 2:], rotations[r, :2]
        hidden[r, :, :GO_STEP] = rng.normal(size=(N_TRIALS, GO_STEP, 4)) @ null_rows
        moving = rng.normal(size=(N_TRIALS, N_STEPS - GO_STEP, 2)) @ potent_rows
        hidden[r, :, GO_STEP:] = moving
        hidden[r] += 3.0 * np.sin(np.arange(N_STEPS))[None, :, None] * potent_rows[0]
    result = mf.output_spaces(states(hidden), weight)
    share = result.output_potent_share.isel(condition=0)
    np.testing.assert_allclose(share.sel(epoch="preparatory"), 0, atol=1e-12)
    np.testing.assert_allclose(share.sel(epoch="movement"), 1, atol=1e-12)
    assert (result.output_potent_dims == 2).all()
    np.testing.assert_allclose(result.output_isotropic_share, 2 / N_UNITS)
    # The variance at a step is the reaches' squared distance from their mean, averaged.
    centred = hidden - hidden.mean(axis=1, keepdims=True)
    total = (centred**2).sum(-1).mean(axis=1)
    per_step = result.output_space_variance.isel(condition=0).sum("space")
    np.testing.assert_allclose(per_step, total, rtol=1e-10)
    epoch = result.output_epoch_variance.isel(condition=0)
    np.testing.assert_allclose(
        epoch.sel(epoch="preparatory", space="null"), total[:, :GO_STEP].mean(1), rtol=1e-10
    )


def test_a_replicate_whose_readout_diverged_gets_nan_and_the_others_their_spaces():
    weight, _ = known_readout()
    weight[1, 0, 0] = np.nan
    hidden = np.random.default_rng(6).normal(size=(2, N_TRIALS, N_STEPS, N_UNITS))
    result = mf.output_spaces(states(hidden), weight)
    assert np.isnan(result.output_potent_share.isel(replicate=1)).all()
    assert np.isfinite(result.output_potent_share.isel(replicate=0)).all()
    assert float(result.output_potent_dims[0]) == 2 and np.isnan(result.output_potent_dims[1])


def test_the_variables_store_as_zarr_without_a_warning_and_read_back_equal(tmp_path):
    weight, _ = known_readout()
    hidden = np.random.default_rng(7).normal(size=(2, N_TRIALS, N_STEPS, N_UNITS))
    result = mf.output_spaces(states(hidden), weight)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mfp.write_dataset(result, tmp_path / "analysis.zarr")  # as the analysis stage does
        again = mfp.open_dataset(tmp_path / "analysis.zarr").load()
    xr.testing.assert_equal(again, result)


def test_activity_spread_evenly_gives_the_isotropic_share():
    weight, _ = known_readout()
    hidden = np.random.default_rng(2).normal(size=(2, 400, N_STEPS, N_UNITS))
    share = mf.output_spaces(states(hidden), weight).output_potent_share
    np.testing.assert_allclose(share, 2 / N_UNITS, atol=0.02)  # sampling error of 400 reaches


def test_without_a_go_cue_there_is_no_preparatory_epoch_and_differing_cues_are_refused():
    weight, _ = known_readout()
    hidden = np.random.default_rng(3).normal(size=(2, N_TRIALS, N_STEPS, N_UNITS))
    result = mf.output_spaces(states(hidden, go_step=None), weight)
    assert np.isnan(result.output_potent_share.sel(epoch="preparatory")).all()
    assert np.isfinite(result.output_potent_share.sel(epoch="movement")).all()
    uneven = states(hidden)
    uneven = uneven.assign_coords(go_time=("trial", np.arange(N_TRIALS) * DT))
    with pytest.raises(ValueError, match="go cues differ"):
        mf.output_spaces(uneven, weight)


def test_the_analysis_reads_each_replicates_own_readout():
    """Through the analysis family, on an ensemble: the variables come from each
    replicate's readout weights, and the null part of the states moves no control."""
    model = mf.ModelConfig.from_dict({"network": {"hidden_size": 8}})
    task = mf.Task(
        mf.TaskConfig.from_dict(
            {"kind": "delayed_reach", "n_steps": 12, "go_step": [4, 4], "eval": {"n_directions": 4}}
        )
    )
    ensemble = mf.make_ensemble(model, n_replicates=2, n_task_inputs=3, key=jax.random.key(0))
    evaluated = mf.evaluate(ensemble, task, model, key=jax.random.key(1))
    inputs = mf.AnalysisInputs(
        evaluated, ensemble=ensemble, task=task, center_out=None, key=jax.random.key(2)
    )
    result = mf.OutputSpacesAnalysis().run(inputs)
    weight = np.asarray(ensemble.network.readout.weight)
    xr.testing.assert_identical(result, mf.output_spaces(evaluated, weight))
    assert not np.allclose(weight[0], weight[1])
    hidden = evaluated.hidden.isel(condition=0).values  # (replicate, trial, time, unit)
    for r in range(2):
        _, null = readout_spaces(weight[r])
        null_part = hidden[r] @ null @ null.T
        np.testing.assert_allclose(null_part @ weight[r].T, 0, atol=1e-5)
    preparatory = result.output_potent_share.sel(epoch="preparatory")
    assert np.isfinite(preparatory).all() and ((preparatory >= 0) & (preparatory <= 1)).all()


def test_the_figure_draws_each_space_over_time_and_every_replicates_shares():
    weight, _ = known_readout()
    hidden = np.random.default_rng(4).normal(size=(2, N_TRIALS, N_STEPS, N_UNITS))
    result = mf.output_spaces(states(hidden), weight)
    figure = mf.OutputSpacesAnalysis.figure(result, replicate=1, title="t")
    curves, shares = figure.axes[:2]
    potent, null = curves.lines[:2]
    variance = result.output_space_variance.isel(condition=0, replicate=1)
    np.testing.assert_allclose(
        potent.get_ydata(), variance.sel(space="potent") / variance.sel(space="potent").max()
    )
    assert null.get_color() != potent.get_color()
    assert curves.lines[2].get_xdata()[0] == pytest.approx(GO_STEP * DT)  # the go cue
    dots = np.concatenate([c.get_offsets()[:, 1] for c in shares.collections])
    np.testing.assert_allclose(
        np.sort(dots), np.sort(result.output_potent_share.values.ravel()), rtol=1e-6
    )


def test_the_comparison_tables_each_epochs_share_and_each_spaces_growth():
    weight, rotations = known_readout()
    rng = np.random.default_rng(5)
    prepared = rng.normal(size=(2, N_TRIALS, N_STEPS, N_UNITS))
    null_parts = rng.normal(size=(2, N_TRIALS, GO_STEP, 4))
    prepared[:, :, :GO_STEP] = np.einsum("rtsk,rku->rtsu", null_parts, rotations[:, 2:])
    analyses = {
        "prepared in the null space": mf.output_spaces(states(prepared), weight),
        "spread evenly": mf.output_spaces(
            states(rng.normal(size=(2, N_TRIALS, N_STEPS, N_UNITS))), weight
        ),
    }
    table = mf.OutputSpacesAnalysis.comparison_table(
        analyses, confidence=0.9, n_resamples=200, seed=0
    )
    rows = table.set_index(["experiment", "statistic"])
    prepared_rows = rows.loc["prepared in the null space"]
    np.testing.assert_allclose(prepared_rows.loc["potent_share_preparatory", "mean"], 0, atol=1e-12)
    assert prepared_rows.loc["potent_preparatory_over_movement", "replicate_0"] < 1e-12
    assert prepared_rows.loc["null_preparatory_over_movement", "replicate_0"] > 0.5
    np.testing.assert_allclose(prepared_rows.loc["isotropic_share", "mean"], 2 / N_UNITS)
    movement = analyses["spread evenly"].output_potent_share.sel(epoch="movement")
    np.testing.assert_allclose(
        rows.loc[("spread evenly", "potent_share_movement"), "replicate_1"],
        float(movement.isel(replicate=1, condition=0)),
    )
    figure = mf.OutputSpacesAnalysis.comparison_figure(analyses, replicate=0, title="t")
    assert [ax.get_title() for ax in figure.axes] == list(analyses)
