"""Principal components of the hidden-state trajectories, one space per replicate."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, ClassVar

import numpy as np
import xarray as xr
from pydantic import Field

from .._config_base import PositiveInt
from .._config_errors import ConfigError
from ._base import AbstractAnalysis, AnalysisInputs

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .._config import ModelConfig
    from .._tasks import TaskConfig

A_U, A_U2, ONE = {"units": "a.u."}, {"units": "a.u.^2"}, {"units": "1"}


def _principal_components(
    samples: np.ndarray, n_components: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Variance, variance ratio, loadings `(pc, unit)` and mean `(unit,)` of `samples`
    `(sample, unit)`; NaN throughout if any sample is not finite."""
    n_samples, n_units = samples.shape
    if not np.isfinite(samples).all():
        nan = np.full(n_components, np.nan)
        return nan, nan, np.full((n_components, n_units), np.nan), np.full(n_units, np.nan)
    mean = samples.mean(axis=0)
    _, singular, loading = np.linalg.svd(samples - mean, full_matrices=False)
    variance = singular**2 / max(n_samples - 1, 1)
    total = variance.sum()
    ratio = variance / total if total > 0 else np.zeros_like(variance)
    # SVD leaves each component's sign arbitrary (it can flip between LAPACK builds or
    # with the tiniest change of input); pin it so that reruns and replicates compare.
    largest = np.argmax(np.abs(loading), axis=1)
    signs = np.sign(loading[np.arange(len(loading)), largest])
    loading = loading * np.where(signs == 0, 1.0, signs)[:, None]
    padded = n_components - len(variance)
    if padded > 0:  # fewer samples than components: the rest explain nothing
        variance, ratio = np.pad(variance, (0, padded)), np.pad(ratio, (0, padded))
        loading = np.pad(loading, ((0, padded), (0, 0)))
    return variance[:n_components], ratio[:n_components], loading[:n_components], mean


def hidden_pca(states: xr.Dataset, *, n_components: int) -> xr.Dataset:
    """PCA of the hidden states, one space per replicate shared by all its conditions.

    The samples of one replicate are its hidden states at every step of every trial of
    every condition, centred on their mean; each condition's trajectories are projected
    on those same components, so that the conditions compare on the same axes. Each
    loading's largest-magnitude entry is positive, so a rerun is bitwise identical. A
    replicate whose hidden states hold a NaN (a diverged replicate) gets NaN throughout.

    **Arguments:**

    - `states`: the Dataset from `evaluate`, with ``hidden`` `(replicate, condition,
      trial, time, unit)`.
    - `n_components`: how many components to keep (at most the number of units).

    Returns a Dataset with dim `pc` (coord 1..k) and variables ``explained_variance``
    and ``explained_variance_ratio`` (of the total variance of all units) `(replicate,
    pc)`, ``loading`` `(replicate, pc, unit)` (unit-norm rows), ``mean`` `(replicate,
    unit)` and ``projection`` `(replicate, condition, trial, time, pc)` (the centred
    states on each loading); the states' coords on those dims (``goal_angle``,
    ``time``, ``diverged_at``, ...) and attributes are kept.
    """
    if n_components < 1:
        raise ValueError(f"n_components must be at least 1, got {n_components}")
    hidden = states.hidden
    if "condition" not in hidden.dims:
        hidden = hidden.expand_dims(condition=[""])
    hidden = hidden.transpose("replicate", "condition", "trial", "time", "unit")
    values = np.asarray(hidden.values, dtype=np.float64)
    n_rep, n_units = values.shape[0], values.shape[-1]
    n_components = min(n_components, n_units)
    variance = np.empty((n_rep, n_components))
    ratio = np.empty_like(variance)
    loading = np.empty((n_rep, n_components, n_units))
    mean = np.empty((n_rep, n_units))
    for r in range(n_rep):
        samples = values[r].reshape(-1, n_units)
        variance[r], ratio[r], loading[r], mean[r] = _principal_components(samples, n_components)
    projection = np.einsum("rcstu,rpu->rcstp", values - mean[:, None, None, None], loading)
    dtype = hidden.dtype
    return xr.Dataset(
        {
            # hidden activity is in network units (a.u.); its variance in their square
            "explained_variance": (("replicate", "pc"), variance.astype(dtype), A_U2),
            "explained_variance_ratio": (("replicate", "pc"), ratio.astype(dtype), ONE),
            "loading": (("replicate", "pc", "unit"), loading.astype(dtype), ONE),
            "mean": (("replicate", "unit"), mean.astype(dtype), A_U),
            "projection": (
                ("replicate", "condition", "trial", "time", "pc"),
                projection.astype(dtype),
                A_U,
            ),
        },
        coords={**hidden.coords, "pc": np.arange(1, n_components + 1)},
        attrs=dict(states.attrs),
    )


class PCAAnalysis(AbstractAnalysis):
    """Principal components of the hidden trajectories, one space per replicate shared by
    its conditions."""

    KIND: ClassVar[str] = "pca"

    n_components: Annotated[PositiveInt, Field(le=100)] = Field(
        3,
        description="principal components of the hidden trajectories kept (one space per "
        "replicate, shared by its conditions; at most the hidden size)",
    )

    def check(self, experiments: Mapping[str, tuple[ModelConfig, TaskConfig]]) -> None:
        """No more components than every experiment's network has units."""
        for name, (model, _) in experiments.items():
            units = model.network.hidden_size
            if self.n_components > units:
                raise ConfigError(
                    f"analysis.{self.KIND}.n_components",
                    f"is {self.n_components}, but experiment {name!r} has "
                    f"network.hidden_size {units}: a PCA has at most as many components as "
                    f"units; lower n_components to {units} or below, or give the model "
                    "more units",
                )

    def run(self, inputs: AnalysisInputs) -> xr.Dataset:
        return hidden_pca(inputs.states, n_components=self.n_components)

    @classmethod
    def figure(cls, analysis: xr.Dataset, *, replicate: int, title: str) -> Figure:
        from .._figures import plot_pca_trajectories

        return plot_pca_trajectories(analysis, replicate=replicate, title=title)
