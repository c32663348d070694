"""The config's blocks over several experiments: sweeps (an experiment expanded over a
grid of settings), protocols (experiments as the stages of one story) and comparisons
(one hidden-state analysis of several experiments side by side) and condition sweeps
(metrics against a setting that varies across evaluation conditions)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, WithJsonSchema, model_validator

from .._analysis._config import ANALYSES, SummaryMetric
from .._config_base import Block, Number, Text
from .._config_errors import ConfigError
from .._metrics import METRIC_UNITS, METRICS
from ._config_names import Name

# The schema's pattern (JSON Schema's `$` ends the text); Python checks the whole
# string with `re.fullmatch`, as it does names (`_config_names`).
GRID_SETTING_PATTERN = r"^(seed|(task|model|training)(\.[A-Za-z_][A-Za-z0-9_]*)+)$"


def _grid_setting(setting: str) -> str:
    if not re.fullmatch(GRID_SETTING_PATTERN, setting):
        raise ConfigError(
            "",
            f"{setting!r} is not a sweep setting: use 'seed' or a dotted path starting "
            "with task., model. or training. (e.g. model.feedback.noise_std)",
        )
    return setting


GridSetting = Annotated[
    str,
    AfterValidator(_grid_setting),
    WithJsonSchema({"type": "string", "pattern": GRID_SETTING_PATTERN}),
]

MAX_MARKS = 10
MAX_MARK_LABEL = 60


def _is_grid_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class SweepSpec(Block):
    """A base experiment expanded over every combination of the `grid`'s values."""

    experiment: Name = Field(description="the base experiment")
    grid: dict[GridSetting, Annotated[list[Any], Field(min_length=1)]] = Field(
        min_length=1,
        description="setting paths (`seed`, or `task.…`, `model.…`, `training.…`) mapped to "
        "lists of values",
    )
    metrics: tuple[SummaryMetric, ...] = Field(
        ("endpoint_error", "final_validation_loss"),
        min_length=1,
        max_length=len(SummaryMetric.__args__),
        description="what the sweep's figure draws against the swept values, a panel each: "
        "`final_validation_loss` or a per-trial metric of `metrics.zarr` (averaged over "
        "trials, in the first evaluation condition)",
    )
    marks: dict[Annotated[Text, Field(min_length=1, max_length=MAX_MARK_LABEL)], Number] = Field(
        {},
        max_length=MAX_MARKS,
        description="values of the first grid setting marked on the figure, each by a "
        "dashed vertical line in every panel with its label: label mapped to value (e.g. "
        "`feedback loop: 3` over a window in steps). Needs numeric first-setting values",
    )
    x_scale: Literal["auto", "linear", "log"] = Field(
        "auto",
        description="the figure's x axis: `auto` is logarithmic when the first setting's "
        "values are positive numbers spanning a factor of 100 or more, else linear; `log` "
        "needs positive numbers (values and marks)",
    )

    @model_validator(mode="after")
    def _marks_and_scale_fit_the_axis(self) -> SweepSpec:
        setting, values = next(iter(self.grid.items()))
        numeric = all(_is_grid_number(value) for value in values)
        if (self.marks or self.x_scale == "log") and not numeric:
            key = "marks" if self.marks else "x_scale"
            raise ConfigError(
                key,
                f"the figure's x axis is the first grid setting, {setting}, whose values "
                f"{values} are not all numbers: {key} needs a numeric axis; put a numeric "
                f"setting first in grid, or remove {key}",
            )
        if self.x_scale == "log":
            below = [("grid." + setting, v) for v in values if v <= 0] + [
                (f"marks.{label}", v) for label, v in self.marks.items() if v <= 0
            ]
            if below:
                raise ConfigError(
                    "x_scale",
                    f"a logarithmic axis needs positive values, but {below[0][0]} has "
                    f"{below[0][1]}; use x_scale: linear (or auto)",
                )
        return self


# Per-trial metrics a protocol figure can show: every metric of `reach_metrics` but
# those measured from the go cue, which only delayed reaches have.
ProtocolMetric = Literal[tuple(name for name, m in METRICS.items() if not m.NEEDS_GO_CUE)]


class ProtocolPanel(Block):
    """One panel of a protocol's paths: a stage's reaches in one evaluation condition."""

    stage: Name = Field(description="one of the protocol's `stages`")
    condition: Name = Field(description="an evaluation condition (`evaluation.conditions`)")
    title: Annotated[Text, Field(max_length=60)] = Field(
        "", description="the panel's title (e.g. `early exposure`); by default stage and condition"
    )


class ProtocolSpec(Block):
    """A protocol: experiments as the stages of one story (e.g. baseline, adaptation,
    washout), drawn side by side in each evaluation condition.

    The protocol's figure shows the metric per stage in each condition; with
    `panels`, a row of hand paths above it (as force-field papers lay out null-field,
    early-exposure, late-exposure and after-effect reaches); and, when stages keep
    snapshots (``train.snapshots``), the learning curve: the metric along the
    batches of those stages, each snapshot evaluated as the final model is.
    """

    stages: tuple[Name, ...] = Field(
        min_length=1,
        max_length=100,
        description="experiment names, in order (e.g. `[baseline, adapt, washout]`, chained "
        "with `init_from`)",
    )
    metric: ProtocolMetric = Field(
        "max_lateral_deviation", description="the per-trial metric drawn, averaged over trials"
    )
    conditions: tuple[Name, ...] = Field(
        (),
        max_length=100,
        description="the evaluation conditions its summary and learning curve draw, in "
        "order (e.g. `[null_field, curl_cw]`); empty: all",
    )
    panels: tuple[ProtocolPanel, ...] = Field(
        (),
        max_length=12,
        description="hand-path panels, in order: each a `stage` in an evaluation `condition` "
        "with an optional `title`",
    )


class ComparisonSpec(Block):
    """A comparison: one hidden-state analysis drawn for several experiments side by
    side (``figures/comparison-<name>.<format>``), with its numbers in a CSV beside
    the figure (``figures/comparison-<name>.csv``: per experiment each replicate's
    value and the mean with its bootstrap interval, as `statistics` sets)."""

    analysis: Literal[tuple(ANALYSES)] = Field(
        description="the analysis compared; one that draws comparisons (`tuning`: the "
        "preferred directions' rose histograms and bimodality; `jpca`: the jPC planes and "
        "the rotational and linear fits; `output_spaces`: the readout's potent share of "
        "each epoch's activity)"
    )
    experiments: tuple[Name, ...] = Field(
        min_length=1,
        max_length=12,
        description="experiment names, in the figure's order (e.g. `[point_mass, arm, "
        "muscle_arm]`)",
    )
    title: Annotated[Text, Field(max_length=120)] = Field(
        "", description="the figure's title (by default none)"
    )


# Per-trial metrics a condition sweep can draw (every metric of `reach_metrics`).
ConditionMetric = Literal[tuple(METRIC_UNITS)]
SettingName = Annotated[
    str,
    Field(pattern=r"^[a-z_][a-z0-9_]*$", max_length=64),
]


class ConditionSweepSpec(Block):
    """A condition sweep: experiments' metrics against a setting that varies across
    evaluation conditions (``figures/condition-sweep-<name>.<format>``), e.g. a
    stimulation's start in each condition, with the numbers in a CSV beside it
    (``figures/condition-sweep-<name>.csv``: per experiment, condition and metric the x
    value, the replicates' mean and its bootstrap interval, as `statistics` sets)."""

    experiments: tuple[Name, ...] = Field(
        min_length=1, max_length=12, description="experiment names, a line each"
    )
    conditions: tuple[Name, ...] = Field(
        min_length=2,
        max_length=100,
        description="evaluation conditions (`evaluation.conditions`), the points along the x "
        "axis; each has one perturbation with `setting`, a number (not a range)",
    )
    setting: SettingName = Field(
        description="the perturbation setting on the x axis (e.g. `start` of a stimulation, "
        "`fraction` of a lesion)"
    )
    relative_to: Literal["trial_start", "go_cue"] = Field(
        "trial_start",
        description="`go_cue`: a time setting (e.g. `start`) measured from the evaluation "
        "reaches' go cue, which the figure marks at 0; needs delayed reaches",
    )
    unperturbed_at: Number | None = Field(
        None,
        description="the x value of a listed condition without perturbations (e.g. 0 for "
        "the intact network of a lesion sweep); `null`: every listed condition needs one",
    )
    baseline: Name | None = Field(
        None,
        description="a condition subtracted from each replicate's value (its own reaches "
        "and noise: a paired difference, the intervention's effect); `null`: the values",
    )
    metrics: tuple[ConditionMetric, ...] = Field(
        ("endpoint_error", "peak_speed"),
        min_length=1,
        max_length=len(METRIC_UNITS),
        description="per-trial metrics of `metrics.zarr`, averaged over trials, a panel each",
    )
    title: Annotated[Text, Field(max_length=120)] = Field(
        "", description="the figure's title (by default none)"
    )
