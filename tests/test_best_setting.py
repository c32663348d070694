"""The sweep's best value is the one with the lowest validation loss, never the
lowest training loss, and a value whose training diverged is not chosen."""

import numpy as np
import pytest
import xarray as xr

from motorflow._analysis._best_setting import (
    best_setting,
    final_validation_losses,
    validation_loss_at_budget,
)


def history(train: float, validation: list[float], diverged_at=(-1, -1, -1)) -> xr.Dataset:
    """A synthetic history.zarr: 3 replicates, the validation loss falling to `validation`."""
    n_rep = len(validation)
    steps = [0, 50, 100]
    final = np.asarray(validation, dtype=np.float32)
    curve = np.stack([final * 10, final * 3, final])  # (validation_step, replicate)
    terms = ["position", "total"]
    return xr.Dataset(
        {
            "loss": (("term", "batch", "replicate"), np.full((2, 100, n_rep), train, np.float32)),
            "validation_loss": (
                ("term", "validation_step", "replicate"),
                np.stack([curve * 0.5, curve]),
            ),
            "diverged_at": (("replicate",), np.asarray(diverged_at)),
        },
        coords={"term": terms, "validation_step": steps, "replicate": np.arange(n_rep)},
    )


def test_picks_the_lowest_validation_loss_not_the_lowest_training_loss():
    # 0.1 overfits: the lowest training loss, the highest validation loss.
    histories = {
        0.001: history(train=0.5, validation=[0.30, 0.32, 0.31]),
        0.01: history(train=0.2, validation=[0.10, 0.12, 0.11]),
        0.1: history(train=0.01, validation=[0.40, 0.42, 0.41]),
    }
    losses = {value: final_validation_losses(h) for value, h in histories.items()}
    np.testing.assert_allclose(losses[0.01], [0.10, 0.12, 0.11], rtol=1e-6)
    assert best_setting(losses) == 0.01


def test_the_last_validation_step_counts_not_an_earlier_one():
    h = history(train=0.1, validation=[0.2, 0.2, 0.2])
    np.testing.assert_allclose(final_validation_losses(h), [0.2, 0.2, 0.2], rtol=1e-6)


def test_a_value_with_a_diverged_replicate_is_not_chosen():
    histories = {
        0.01: history(train=0.2, validation=[0.10, 0.12, 0.11]),
        # survivors lower, but one replicate diverged (its frozen loss is low too)
        0.1: history(train=0.1, validation=[0.05, 0.05, 0.01], diverged_at=(-1, -1, 40)),
    }
    losses = {value: final_validation_losses(h) for value, h in histories.items()}
    assert np.isnan(losses[0.1][2])
    assert best_setting(losses) == 0.01


def test_nothing_to_choose_from_is_an_error():
    with pytest.raises(ValueError, match="no swept values"):
        best_setting({})


def test_the_loss_at_a_wall_clock_budget_is_the_last_validation_within_it():
    h = history(train=0.1, validation=[0.2, 0.2, 0.2])  # steps 0, 50, 100: 2, 0.6, 0.2
    # 10 ms per batch: 0.5 s reaches step 50 (0.5 s) but not step 100 (1 s)
    np.testing.assert_allclose(validation_loss_at_budget(h, 0.01, 0.5), [0.6] * 3, rtol=1e-6)
    np.testing.assert_allclose(validation_loss_at_budget(h, 0.01, 10.0), [0.2] * 3, rtol=1e-6)
    # a rule 10 times slower has only reached step 0 within 0.49 s
    np.testing.assert_allclose(validation_loss_at_budget(h, 0.1, 0.49), [2.0] * 3, rtol=1e-6)
    with pytest.raises(ValueError, match="seconds_per_batch"):
        validation_loss_at_budget(h, 0.0, 1.0)
