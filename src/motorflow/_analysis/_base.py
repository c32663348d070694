"""The hidden-state analysis interface: a config block (its settings) that computes one
part of an experiment's analysis store from what :class:`AnalysisInputs` holds, and
draws its figure from that store."""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import xarray as xr
from jaxtyping import PRNGKeyArray

from .._config_base import Block

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from .._config import ModelConfig
    from .._tasks import CenterOut, Task, TaskConfig


@dataclasses.dataclass(frozen=True)
class AnalysisInputs:
    """What the analyses of one experiment read: its evaluated `states`, the `ensemble`
    that was evaluated, its `task` with the `center_out` reaches evaluated, and the
    experiment's ``analysis`` random `key`."""

    states: xr.Dataset
    ensemble: Any
    task: Task
    center_out: CenterOut
    key: PRNGKeyArray = dataclasses.field(kw_only=True)


class AbstractAnalysis(Block):
    """One named analysis: its settings under the config's `analysis`, the variables it
    adds to ``analysis.zarr`` and the figure it draws from them
    (``figures/<experiment>/<KIND>.<format>``)."""

    # The analysis's name: its key under `analysis` and its figure's file name.
    KIND: ClassVar[str]

    # Whether the analysis can draw a comparison across experiments (a config's
    # `comparisons`): then it implements `comparison_figure` and `comparison_table`.
    COMPARES: ClassVar[bool] = False

    def check(self, experiments: Mapping[str, tuple[ModelConfig, TaskConfig]]) -> None:
        """Raise a :class:`~motorflow._config_errors.ConfigError` (at its key under
        ``analysis.<KIND>``) where these settings cannot analyse one of the resolved
        `experiments` (each one's name -> its model and task): checked with the config,
        before any job runs. By default, nothing to check."""

    @abc.abstractmethod
    def run(self, inputs: AnalysisInputs) -> xr.Dataset:
        """The analysis's variables (dims led by `replicate`)."""
        raise NotImplementedError

    @classmethod
    @abc.abstractmethod
    def figure(cls, analysis: xr.Dataset, *, replicate: int, title: str) -> Figure:
        """The figure of one replicate (or of all) drawn from the whole analysis store."""
        raise NotImplementedError

    @classmethod
    def comparison_figure(
        cls, analyses: Mapping[str, xr.Dataset], *, replicate: int, title: str
    ) -> Figure:
        """One figure comparing experiments: `analyses` maps each experiment's name (in
        the order the comparison lists them) to its whole analysis store; `replicate` is
        the one drawn where the figure draws a single replicate."""
        raise NotImplementedError(f"the {cls.KIND} analysis draws no comparison")

    @classmethod
    def comparison_table(
        cls, analyses: Mapping[str, xr.Dataset], *, confidence: float, n_resamples: int, seed: int
    ) -> pd.DataFrame:
        """The comparison figure's numbers, one row per experiment and statistic: the
        per-replicate values and their mean with its percentile-bootstrap interval
        across replicates, with a units column."""
        raise NotImplementedError(f"the {cls.KIND} analysis draws no comparison")
