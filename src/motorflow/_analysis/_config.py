"""The settings of the analysis stages: hidden-state analyses and statistics across replicates."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from .._config_base import Block, NonNegativeInt, NonNegativeNumber, PositiveInt, PositiveNumber
from .._metrics import METRIC_UNITS

# What a sweep figure or the summary can show per replicate: the final validation
# loss and every per-trial metric of `reach_metrics`, averaged over trials.
SummaryMetric = Literal[("final_validation_loss", *METRIC_UNITS)]


class PCAConfig(Block):
    """Principal components of the hidden trajectories, per replicate and condition."""

    n_components: Annotated[PositiveInt, Field(le=100)] = Field(
        3, description="components kept (at most the hidden size)"
    )


class FixedPointsConfig(Block):
    """The search for fixed and slow points of the trained network (Sussillo & Barak 2013)."""

    n_starts: Annotated[PositiveInt, Field(le=4096)] = Field(
        16, description="starting states per steady input, sampled on the hidden trajectories"
    )
    start_noise: NonNegativeNumber = Field(
        0.05, description="noise added to each start, as a fraction of the hidden states' std"
    )
    steps: Annotated[PositiveInt, Field(le=1_000_000)] = Field(
        5000, description="Adam steps minimising the hidden state's speed"
    )
    learning_rate: PositiveNumber = 0.02
    tolerance: PositiveNumber = Field(
        1e-8, description="a point whose speed 0.5*|F(h)-h|^2 ends below this is fixed"
    )
    distinct_tolerance: PositiveNumber = Field(
        1e-3, description="fixed points closer than this (Euclidean) count as one"
    )


class TuningConfig(Block):
    """Directional tuning: a cosine fit of each unit's activity during movement."""

    speed_threshold: Annotated[PositiveNumber, Field(lt=1)] = Field(
        0.2, description="movement: the steps at or above this fraction of the peak speed"
    )


class AnalysisConfig(Block):
    """Hidden-state analyses of every experiment (results/<experiment>/analysis.zarr)."""

    pca: PCAConfig = PCAConfig()
    fixed_points: FixedPointsConfig = FixedPointsConfig()
    tuning: TuningConfig = TuningConfig()
    replicate: NonNegativeInt = Field(
        0, description="the replicate drawn in the PCA and fixed-point figures"
    )


class StatisticsConfig(Block):
    """Intervals and contrasts across replicates (results/summary.csv and the figures)."""

    confidence: Annotated[PositiveNumber, Field(lt=1)] = Field(
        0.95, description="coverage of the bootstrap intervals"
    )
    n_resamples: Annotated[PositiveInt, Field(ge=100, le=1_000_000)] = Field(
        10_000, description="bootstrap resamples"
    )
    seed: Annotated[NonNegativeInt, Field(lt=2**31)] = Field(
        0, description="seed of the bootstrap's resampling"
    )
