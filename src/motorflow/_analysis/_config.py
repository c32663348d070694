"""The settings of the analysis stages: hidden-state analyses and statistics across replicates."""

from __future__ import annotations

from typing import Annotated, Literal

import pydantic
from pydantic import Field

from .._config_base import Block, NonNegativeInt, PositiveInt, PositiveNumber, registry
from .._metrics import METRIC_UNITS
from ._base import AbstractAnalysis
from ._fixed_points import FixedPointsAnalysis
from ._jpca import JPCAAnalysis
from ._output_spaces import OutputSpacesAnalysis
from ._pca import PCAAnalysis
from ._tuning import TuningAnalysis

# What a sweep figure or the summary can show per replicate: the final validation
# loss and every per-trial metric of `reach_metrics`, averaged over trials.
SummaryMetric = Literal[("final_validation_loss", *METRIC_UNITS)]


# Every hidden-state analysis by name, in the order of the analysis store's variables.
ANALYSES: dict[str, type[AbstractAnalysis]] = registry(
    PCAAnalysis, FixedPointsAnalysis, TuningAnalysis, JPCAAnalysis, OutputSpacesAnalysis
)
"""Every hidden-state analysis's name (a key under `analysis`) to its class."""


class _Analyses(Block):
    @property
    def analyses(self) -> dict[str, AbstractAnalysis]:
        """Every analysis by name, in the order of `ANALYSES`."""
        return {name: getattr(self, name) for name in ANALYSES}


AnalysisConfig = pydantic.create_model(
    "AnalysisConfig",
    __base__=_Analyses,
    __module__=__name__,
    __doc__="Hidden-state analyses of every experiment (results/<config>/<experiment>/analysis.zarr).",
    **{name: (analysis, analysis()) for name, analysis in ANALYSES.items()},
    replicate=(
        NonNegativeInt,
        Field(
            0,
            description="the replicate drawn in the PCA, fixed-point, jPCA and output-space figures",
        ),
    ),
)
"""The config's `analysis` block, a pydantic model with a field per analysis of
`ANALYSES` and the `replicate` its figures draw."""


class StatisticsConfig(Block):
    """Intervals and contrasts across replicates (results/<config>/summary.csv and the figures)."""

    confidence: Annotated[PositiveNumber, Field(lt=1)] = Field(
        0.95,
        description="coverage of the bootstrap intervals (percentile bootstrap of the mean "
        "over replicates)",
    )
    n_resamples: Annotated[PositiveInt, Field(ge=100, le=1_000_000)] = Field(
        10_000, description="bootstrap resamples per interval"
    )
    seed: Annotated[NonNegativeInt, Field(lt=2**31)] = Field(
        0, description="seed of the bootstrap's resampling"
    )
