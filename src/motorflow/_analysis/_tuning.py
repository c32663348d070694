"""Directional tuning of the hidden units during movement, fitted with a cosine."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, ClassVar, Literal

import numpy as np
import xarray as xr
from pydantic import Field

from .._config_base import NonNegativeNumber, PositiveInt, PositiveNumber
from ._base import AbstractAnalysis, AnalysisInputs

# The steps whose activity a unit's tuning is fitted to (see `movement_activity`).
TuningWindow = Literal["movement", "acceleration"]
# What a unit's rate is (see `movement_activity`).
Rates = Literal["signed", "rectified"]
# The analysis key's stream for the bimodality test's uniform draws (the fixed-point
# search draws from the key itself).
BIMODALITY_STREAM = 1

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure


def movement_activity(
    states: xr.Dataset,
    *,
    speed_threshold: float,
    window: TuningWindow = "movement",
    rates: Rates = "signed",
) -> xr.DataArray:
    """Each unit's mean hidden activity while the hand moves, `(replicate, condition,
    trial, unit)`.

    The hand moves on the steps where its speed is at least `speed_threshold` times
    the trial's peak speed, so the hold before a delayed reach's go cue and the rest
    on the goal are left out. With `window` ``"acceleration"`` only those steps up to
    the step of peak speed count: the hand speeds up, so the motor command points
    along the reach, whereas over the whole movement the braking that follows
    reverses it.

    With `rates` ``"rectified"`` each step's activity counts as ``max(h, 0)``, a rate
    that cannot be negative, as a neuron's firing rate cannot: a unit of a GRU or tanh
    network swings either side of zero, and one whose activity is most negative in
    direction theta would otherwise have its preferred direction opposite theta,
    which gives two opposite modes of preferred directions for free. (Splitting
    each unit into its positive and negative parts, the other way to non-negative
    rates, would make that artefact certain for every unit that crosses zero: the
    two parts' preferred directions are opposite.)

    **Arguments:**

    - `states`: the Dataset from `evaluate`, with ``hidden`` `(replicate, condition,
      trial, time, unit)` and ``vel`` `(..., time, component)`.
    - `speed_threshold`: the fraction of the peak speed, in [0, 1].
    - `window`: ``"movement"`` or ``"acceleration"``.
    - `rates`: ``"signed"`` (the activity as it is) or ``"rectified"``.
    """
    if not 0 <= speed_threshold <= 1:
        raise ValueError(f"speed_threshold must be in [0, 1], got {speed_threshold}")
    if window not in ("movement", "acceleration"):
        raise ValueError(f"window must be 'movement' or 'acceleration', got {window!r}")
    if rates not in ("signed", "rectified"):
        raise ValueError(f"rates must be 'signed' or 'rectified', got {rates!r}")
    speed = np.sqrt((states.vel**2).sum("component", skipna=False))
    moving = speed >= speed_threshold * speed.max("time", skipna=False)
    if window == "acceleration":
        step = xr.DataArray(np.arange(speed.sizes["time"]), dims="time")
        # A trial with NaN speed gets no steps (argmax would fail on an all-NaN trial).
        peak = speed.fillna(-np.inf).argmax("time")
        moving = moving & (step <= peak)
    hidden = states.hidden.clip(min=0) if rates == "rectified" else states.hidden
    return hidden.where(moving).mean("time")


def directional_tuning(
    states: xr.Dataset,
    *,
    speed_threshold: float,
    window: TuningWindow = "movement",
    rates: Rates = "signed",
) -> xr.Dataset:
    """Each unit's cosine tuning to the reach direction during movement.

    A unit's activity during movement (:func:`movement_activity`) is fitted across
    trials by least squares with the cosine model of Georgopoulos et al. (1982, "On
    the relations between the direction of two-dimensional arm movements and cell
    discharge in primate motor cortex", J. Neurosci. 2(11)):
    ``b0 + b1 cos(theta) + b2 sin(theta) = b0 + d cos(theta - theta_pd)``, `theta`
    the trial's goal angle, separately for each replicate, condition and unit. A
    replicate whose states hold a NaN gets NaN.

    **Arguments:**

    - `states`: the Dataset from `evaluate`, with ``hidden``, ``vel`` and the
      ``goal_angle`` coord (rad) along `trial`, which must hold at least 3 angles.
    - `speed_threshold`: the fraction of each trial's peak speed above which the hand
      moves.
    - `window`: the whole movement or its acceleration (:func:`movement_activity`).
    - `rates`: the activity as it is or rectified (:func:`movement_activity`).

    Returns a Dataset with dims `(replicate, condition, unit)` and variables
    ``preferred_direction`` (``theta_pd = atan2(b2, b1)`` in [0, 2π), rad),
    ``tuning_depth`` (``d = sqrt(b1² + b2²)``), ``baseline`` (``b0``) and
    ``r_squared`` (of the fit across trials; NaN for a unit whose activity does not
    vary); the states' coords on those dims and attributes are kept.
    """
    activity = movement_activity(
        states, speed_threshold=speed_threshold, window=window, rates=rates
    )
    if "condition" not in activity.dims:
        activity = activity.expand_dims(condition=[""])
    activity = activity.transpose("replicate", "condition", "trial", "unit")
    angle = np.asarray(states.goal_angle.values, dtype=np.float64)
    design = np.stack([np.ones_like(angle), np.cos(angle), np.sin(angle)], axis=-1)
    if np.linalg.matrix_rank(design) < 3:
        raise ValueError(
            "a cosine tuning fit needs trials in at least 3 directions, got goal angles "
            f"{np.unique(np.round(angle, 6)).tolist()}"
        )
    values = np.asarray(activity.values, dtype=np.float64)
    # The same design for every fit: one pseudo-inverse, NaN passing through per fit.
    coefficients = np.einsum("kt,rctu->rcku", np.linalg.pinv(design), values)
    fitted = np.einsum("tk,rcku->rctu", design, coefficients)
    residual = ((values - fitted) ** 2).sum(axis=2)
    total = ((values - values.mean(axis=2, keepdims=True)) ** 2).sum(axis=2)
    with np.errstate(divide="ignore", invalid="ignore"):
        r_squared = np.where(total > 0, 1 - residual / total, np.nan)
    baseline, cosine, sine = coefficients[:, :, 0], coefficients[:, :, 1], coefficients[:, :, 2]
    preferred = np.mod(np.arctan2(sine, cosine), 2 * np.pi)
    # mod of a hair below zero rounds up to 2π itself; the range is [0, 2π).
    preferred = np.where(preferred >= 2 * np.pi, 0.0, preferred)
    dims = ("replicate", "condition", "unit")
    coords = {
        name: coord for name, coord in activity.coords.items() if set(coord.dims) <= set(dims)
    }
    return xr.Dataset(
        {
            "preferred_direction": (dims, preferred, {"units": "rad"}),
            # the fit is to hidden activity, in network units (a.u.)
            "tuning_depth": (dims, np.hypot(cosine, sine), {"units": "a.u."}),
            "baseline": (dims, baseline, {"units": "a.u."}),
            "r_squared": (dims, r_squared, {"units": "1"}),
        },
        coords=coords,
        attrs={
            **states.attrs,
            "speed_threshold": speed_threshold,
            "window": window,
            "rates": rates,
        },
    )


def preferred_direction_axis(tuning: xr.Dataset, *, min_r_squared: float) -> xr.Dataset:
    """How bimodal the well-tuned units' preferred directions are, and along which axis
    (Lillicrap & Scott 2013; the statistic as Scott et al. 2001 and Verduzco-Flores &
    De Schutter 2022 use it).

    The preferred directions ``theta_pd`` of the units whose cosine fit has
    ``r_squared`` at least `min_r_squared` are doubled, so that two opposite modes
    add up: ``r = |mean(exp(2i theta_pd))|`` is 0 for a uniform distribution and 1 for
    all units on one axis, and the axis is half the doubled mean's angle. Its
    uniformity test is Rayleigh's on the doubled angles, with Zar's (1999, eq. 27.4)
    approximation of the p-value: ``exp(sqrt(1 + 4n + 4(n² - R²)) - (1 + 2n))``,
    ``R = n r``.

    Returns ``pd_bimodality`` (`r`), ``pd_axis`` (rad, in [0, π)), ``pd_uniformity_p``
    and ``pd_n_tuned`` `(replicate, condition)`; NaN (and 0 tuned) where no unit is
    tuned.
    """
    tuned = tuning.r_squared >= min_r_squared
    doubled = np.exp(2j * tuning.preferred_direction.where(tuned))
    n = tuned.sum("unit")
    resultant = doubled.sum("unit", skipna=True) / n.where(n > 0)
    length = np.abs(resultant)
    axis = np.mod(np.arctan2(resultant.imag, resultant.real) / 2, np.pi)
    big_r = n * length
    with np.errstate(invalid="ignore"):
        p_value = np.exp(np.sqrt(1 + 4 * n + 4 * (n**2 - big_r**2)) - (1 + 2 * n))
    return xr.Dataset(
        {
            "pd_bimodality": length.assign_attrs(units="1"),
            "pd_axis": axis.where(n > 0).assign_attrs(units="rad"),
            "pd_uniformity_p": p_value.clip(max=1).where(n > 0).assign_attrs(units="1"),
            "pd_n_tuned": n.assign_attrs(units="1", min_r_squared=min_r_squared),
        }
    )


class TuningAnalysis(AbstractAnalysis):
    """Directional tuning: a cosine fit of each unit's activity during movement."""

    KIND: ClassVar[str] = "tuning"
    COMPARES: ClassVar[bool] = True

    speed_threshold: Annotated[PositiveNumber, Field(lt=1)] = Field(
        0.2,
        description="the movement, over which each unit's activity is averaged for its "
        "cosine fit: the steps at or above this fraction of the trial's peak hand speed",
    )

    window: TuningWindow = Field(
        "movement",
        description="the steps each unit's activity is averaged over: `movement` (every "
        "step at or above `speed_threshold`) or `acceleration` (those up to the step of "
        "peak speed, where the motor command points along the reach)",
    )

    rates: Rates = Field(
        "signed",
        description="each unit's activity as it is (`signed`) or as a rate that cannot be "
        "negative (`rectified`: max(h, 0) at each step), as a neuron's firing rate "
        "cannot; a signed unit most active negatively in one direction gets the "
        "opposite preferred direction, so two opposite modes come for free",
    )

    min_r_squared: Annotated[NonNegativeNumber, Field(le=1)] = Field(
        0.5,
        description="the units whose cosine fit explains at least this share of their "
        "activity's variance across directions count in the preferred directions' "
        "bimodality and axis",
    )

    bimodality_draws: Annotated[PositiveInt, Field(ge=100, le=1_000_000)] = Field(
        10_000,
        description="sets of uniform directions (as many as the tuned units) the "
        "bimodality `r` is tested against (`pd_bimodality_p`: the share of them whose `r` "
        "is at least as large; Lillicrap & Scott 2013 drew 100,000 and asked for p < 0.001)",
    )

    def run(self, inputs: AnalysisInputs) -> xr.Dataset:
        import jax  # the analysis job's; the figures read the store without it

        from ._bimodality import bimodality_p

        tuning = directional_tuning(
            inputs.states,
            speed_threshold=self.speed_threshold,
            window=self.window,
            rates=self.rates,
        )
        axis = preferred_direction_axis(tuning, min_r_squared=self.min_r_squared)
        axis["pd_bimodality_p"] = bimodality_p(
            axis.pd_bimodality,
            axis.pd_n_tuned,
            key=jax.random.fold_in(inputs.key, BIMODALITY_STREAM),
            n_draws=self.bimodality_draws,
        )
        return xr.merge([tuning, axis], combine_attrs="override")

    @classmethod
    def figure(cls, analysis: xr.Dataset, *, replicate: int, title: str) -> Figure:
        """Every replicate's preferred directions (`replicate` plays no part)."""
        from .._figures import plot_tuning

        return plot_tuning(analysis, title=title)

    @classmethod
    def comparison_figure(
        cls, analyses: Mapping[str, xr.Dataset], *, replicate: int, title: str
    ) -> Figure:
        """Each experiment's preferred directions as rose histograms, pooled over
        replicates and per replicate, with the axis of their two modes (every
        replicate is drawn; `replicate` plays no part)."""
        from .._figures import plot_tuning_comparison

        return plot_tuning_comparison(analyses, title=title)

    @classmethod
    def comparison_table(
        cls, analyses: Mapping[str, xr.Dataset], *, confidence: float, n_resamples: int, seed: int
    ) -> pd.DataFrame:
        """The preferred directions' bimodality, uniformity p, tuned units and axis per
        experiment (`preferred_direction_table`)."""
        from ._tuning_comparison import preferred_direction_table

        return preferred_direction_table(
            analyses, confidence=confidence, n_resamples=n_resamples, seed=seed
        )
