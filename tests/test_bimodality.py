"""The preferred directions' bimodality tested as Lillicrap & Scott (2013) test it, against
uniform draws of as many directions, and tuning on rates that cannot be negative."""

import jax
import numpy as np
import pytest
import xarray as xr
from test_tuning import N_COND, N_REP, N_UNITS, synthetic_states

from motorflow._analysis._base import AnalysisInputs
from motorflow._analysis._bimodality import bimodality_p, uniform_bimodality
from motorflow._analysis._tuning import BIMODALITY_STREAM, TuningAnalysis, directional_tuning

KEY = jax.random.key(3)


def p_of(r, n, *, key=KEY, n_draws=10_000) -> np.ndarray:
    return bimodality_p(xr.DataArray(r), xr.DataArray(n), key=key, n_draws=n_draws).values


def resultant(angles: np.ndarray) -> np.ndarray:
    """The doubled-angle resultant length of each row of `angles`."""
    return np.abs(np.exp(2j * angles).mean(axis=-1))


def test_the_p_value_of_uniform_directions_is_uniform():
    """Calibration: for sets of directions that are uniform, p falls below alpha in a
    share alpha of them (sets drawn by numpy, apart from the test's draws)."""
    rng = np.random.default_rng(0)
    n = 40
    r = resultant(rng.uniform(0, 2 * np.pi, (2000, n)))
    p = p_of(r, np.full(r.shape, n))
    for alpha in (0.05, 0.2, 0.5):
        # 2000 sets: the share's standard error is at most 0.011
        assert np.mean(p < alpha) == pytest.approx(alpha, abs=0.035)
    assert p.min() >= 1 / 10_001 and p.max() <= 1


def test_bimodal_directions_pass_where_rayleighs_approximation_says_they_do():
    """Against as many uniform units, two opposite modes of 64 units reach p < 0.001,
    and the p of an intermediate r is near the Rayleigh test's (Zar 1999, eq. 27.4),
    which the published draws refine."""
    rng = np.random.default_rng(1)
    n = 64
    modes = 1.0 + np.pi * rng.integers(0, 2, n) + rng.vonmises(0, 4, n)
    assert p_of(resultant(modes), n) == pytest.approx(1 / 10_001)
    r = np.array([0.224, 0.265])  # the torque and muscle arms, 64 units
    rayleigh = np.exp(np.sqrt(1 + 4 * n + 4 * (n**2 - (n * r) ** 2)) - (1 + 2 * n))
    np.testing.assert_allclose(p_of(r, np.full(2, n), n_draws=100_000), rayleigh, rtol=0.25)


def test_each_unit_count_draws_its_own_sets_from_the_key():
    """A replicate's p depends on its r, its unit count and the key alone: never on which
    other replicates are tested beside it; another key gives other draws."""
    alone = p_of(np.array([0.3]), np.array([30]))
    beside = p_of(np.array([0.3, 0.2, 0.5]), np.array([30, 31, 12]))
    assert beside[0] == alone[0]
    assert np.isfinite(beside).all()
    assert np.isnan(p_of(np.array([np.nan]), np.array([0])))[0]
    other = uniform_bimodality(30, key=jax.random.key(4), n_draws=100)
    assert not np.array_equal(other, uniform_bimodality(30, key=KEY, n_draws=100))
    np.testing.assert_array_equal(
        uniform_bimodality(30, key=KEY, n_draws=100), uniform_bimodality(30, key=KEY, n_draws=100)
    )


def opposite_pairs() -> dict[str, np.ndarray]:
    """Units that peak in one direction and units that dip in the opposite one."""
    preferred = np.linspace(0, 2 * np.pi, N_UNITS, endpoint=False)
    shape = (N_REP, N_COND, N_UNITS)
    negative = np.arange(N_UNITS) % 2 == 1
    # A positive unit is a cosine above zero; a negative one lies below zero and is
    # least negative opposite its dip.
    baseline = np.where(negative, -1.5, 1.5)
    return {
        "preferred_direction": np.broadcast_to(preferred, shape).copy(),
        "tuning_depth": np.ones(shape),
        "baseline": np.broadcast_to(baseline, shape).copy(),
        "negative": negative,
    }


def test_rectified_rates_drop_the_opposite_mode_of_units_driven_negatively():
    """A unit whose activity stays below zero peaks (least negative) opposite where a
    neuron's rate would: as signed activity it counts as tuned there; as a rate it is
    silent and counts as untuned. Units above zero keep their tuning either way."""
    units = opposite_pairs()
    negative = units.pop("negative")
    states = synthetic_states(units, 0.0)
    signed = directional_tuning(states, speed_threshold=0.2)
    rectified = directional_tuning(states, speed_threshold=0.2, rates="rectified")
    assert (signed.r_squared > 0.99).all()
    assert np.isnan(rectified.r_squared.isel(unit=np.flatnonzero(negative))).all()
    positive = np.flatnonzero(~negative)
    for tuning in (signed, rectified):
        np.testing.assert_allclose(
            tuning.preferred_direction.isel(unit=positive),
            units["preferred_direction"][:, :, positive],
            atol=1e-9,
        )
    assert rectified.attrs["rates"] == "rectified" and signed.attrs["rates"] == "signed"


def test_the_tuning_analysis_stores_the_bimodality_p_of_each_replicate_and_condition():
    """The analysis's ``pd_bimodality_p`` is `bimodality_p` of its own r and unit count,
    from the experiment's analysis key, with the configured number of draws."""
    rng = np.random.default_rng(2)
    shape = (N_REP, N_COND, N_UNITS)
    units = {
        "preferred_direction": rng.uniform(0, 2 * np.pi, shape),
        "tuning_depth": rng.uniform(0.5, 1.0, shape),
        "baseline": rng.normal(0, 0.1, shape),
    }
    inputs = AnalysisInputs(
        states=synthetic_states(units, 0.0), ensemble=None, task=None, center_out=None, key=KEY
    )
    analysis = TuningAnalysis(bimodality_draws=500, rates="rectified").run(inputs)
    p = analysis.pd_bimodality_p
    assert p.dims == ("replicate", "condition") and p.attrs["n_draws"] == 500
    assert ((p > 0) & (p <= 1)).all()
    expected = bimodality_p(
        analysis.pd_bimodality,
        analysis.pd_n_tuned,
        key=jax.random.fold_in(KEY, BIMODALITY_STREAM),
        n_draws=500,
    )
    xr.testing.assert_identical(p, expected.rename(p.name))
    assert analysis.attrs["rates"] == "rectified"


def test_draws_beyond_one_block_extend_the_first_blocks_draws():
    """More draws than a block holds: the first block's sets are the same ones, the
    next block's are new, and p is bounded by the total count."""
    few = uniform_bimodality(7, key=KEY, n_draws=10_000)
    many = uniform_bimodality(7, key=KEY, n_draws=25_000)
    assert many.size == 25_000 and len(np.unique(many)) == 25_000
    assert np.isin(few, many).all()
    assert p_of(np.array([1.0]), np.array([7]), n_draws=25_000)[0] == pytest.approx(1 / 25_001)
