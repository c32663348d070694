"""PCA of hidden trajectories: known components, reconstruction, a fixed sign, NaN replicates."""

import numpy as np
import pytest
import xarray as xr

from motorflow._analysis._pca import hidden_pca

HIDDEN_DIMS = ("replicate", "condition", "trial", "time", "unit")


def as_states(hidden: np.ndarray) -> xr.Dataset:
    """`hidden` `(replicate, condition, trial, time, unit)` labelled like `evaluate`'s."""
    n_rep, n_cond, n_trials, n_steps, n_units = hidden.shape
    return xr.Dataset(
        {"hidden": (HIDDEN_DIMS, hidden.astype(np.float32))},
        coords={
            "replicate": np.arange(n_rep),
            "condition": np.array([f"c{i}" for i in range(n_cond)], dtype=object),
            "trial": np.arange(n_trials),
            "time": ("time", np.arange(n_steps, dtype=np.float32) * 0.01, {"units": "s"}),
            "unit": np.arange(n_units),
            "goal_angle": ("trial", np.linspace(0, 2 * np.pi, n_trials, endpoint=False)),
            "diverged_at": ("replicate", np.full(n_rep, -1)),
        },
        attrs={"conditions": "{}"},
    )


@pytest.fixture
def states() -> xr.Dataset:
    """Each unit an independent Gaussian, unit 2 with the widest spread, unit 0 next."""
    rng = np.random.default_rng(0)
    scale = np.array([2.0, 0.5, 4.0, 1.0])
    hidden = rng.normal(size=(2, 2, 6, 400, 4)) * scale + np.array([1.0, -1.0, 0.0, 3.0])
    return as_states(hidden)


def test_components_are_the_directions_of_most_variance_in_order(states):
    pca = hidden_pca(states, n_components=2)

    assert pca.sizes["pc"] == 2 and list(pca.pc.values) == [1, 2]
    # Unit 2 (std 4), then unit 0 (std 2), with a positive sign.
    np.testing.assert_allclose(np.abs(pca.loading.sel(pc=1, unit=2)), 1, atol=0.02)
    np.testing.assert_allclose(np.abs(pca.loading.sel(pc=2, unit=0)), 1, atol=0.02)
    expected_ratio = np.array([16, 4]) / (16 + 4 + 0.25 + 1)
    np.testing.assert_allclose(
        pca.explained_variance_ratio, np.broadcast_to(expected_ratio, (2, 2)), rtol=0.05
    )
    pooled = ["condition", "trial", "time"]
    sample_mean = states.hidden.mean(pooled)
    np.testing.assert_allclose(pca["mean"], sample_mean, rtol=1e-5, atol=1e-6)
    sample_var = states.hidden.stack(sample=pooled).var("sample", ddof=1).sel(unit=[2, 0])
    np.testing.assert_allclose(pca.explained_variance, sample_var, rtol=0.02)


def test_all_components_reconstruct_the_states_and_too_many_are_clipped(states):
    pca = hidden_pca(states, n_components=100)

    assert pca.sizes["pc"] == states.sizes["unit"]
    np.testing.assert_allclose(pca.explained_variance_ratio.sum("pc"), 1, rtol=1e-5)
    rebuilt = xr.dot(pca.projection, pca.loading, dim="pc") + pca["mean"]
    np.testing.assert_allclose(rebuilt.transpose(*HIDDEN_DIMS), states.hidden, atol=1e-4)


def test_the_conditions_of_a_replicate_share_one_space(states):
    # Condition c1 is c0 moved far along unit 1: one shared space puts that shift on
    # PC1 and the two conditions apart there; a space per condition would centre each.
    hidden = states.hidden.values.copy()
    hidden[:, 1] = hidden[:, 0]
    hidden[:, 1, ..., 1] += 30.0

    pca = hidden_pca(states.copy(data={"hidden": hidden}), n_components=2)

    np.testing.assert_allclose(np.abs(pca.loading.sel(pc=1, unit=1)), 1, atol=0.01)
    centre = pca.projection.sel(pc=1).mean(["trial", "time"])
    np.testing.assert_allclose(
        np.abs(centre.sel(condition="c1") - centre.sel(condition="c0")), 30, rtol=0.01
    )


def test_the_sign_is_fixed_so_reruns_are_identical_and_a_flip_flips_only_projections(states):
    pca = hidden_pca(states, n_components=3)
    xr.testing.assert_identical(pca, hidden_pca(states, n_components=3))
    loading = pca.loading.values
    largest = np.take_along_axis(loading, np.abs(loading).argmax(-1)[..., None], -1)
    assert (largest > 0).all()

    flipped = hidden_pca(states.assign(hidden=-states.hidden), n_components=3)

    np.testing.assert_allclose(flipped.loading, pca.loading, atol=1e-6)
    np.testing.assert_allclose(flipped.projection, -pca.projection, atol=1e-4)


def test_a_nan_replicate_gets_nan_and_the_others_what_they_get_alone(states):
    hidden = states.hidden.values.copy()
    hidden[1, :, 2, 5, 0] = np.nan
    alone = hidden_pca(states.isel(replicate=[0]), n_components=2)

    pca = hidden_pca(states.copy(data={"hidden": hidden}), n_components=2)

    for name in pca.data_vars:
        assert np.isnan(pca[name].sel(replicate=1)).all(), name
        np.testing.assert_array_equal(pca[name].sel(replicate=0), alone[name].sel(replicate=0))


def test_the_states_coords_and_attributes_are_kept(states):
    pca = hidden_pca(states, n_components=2)

    for name in ("goal_angle", "time", "condition", "diverged_at", "unit"):
        xr.testing.assert_identical(pca[name], states[name])
    assert pca.attrs == states.attrs
    assert pca.projection.dims == ("replicate", "condition", "trial", "time", "pc")
    assert pca.projection.dtype == np.float32
