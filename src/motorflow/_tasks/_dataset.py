"""Trial specs as labelled variables: the layout the trial stores and the training
history's snapshots share."""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from ._trials import Trials

TRIAL_FIELDS = ("init_pos", "init_vel", "goal_pos")
# The unit of each stored trial array (CF ``units`` attribute).
TRIAL_UNITS = {"init_pos": "m", "init_vel": "m/s", "goal_pos": "m", "go_step": "1"}
# The go cue's step per trial, stored only for tasks that give one.
GO_STEP = "go_step"


def perturbation_variable_name(index: int, setting: str) -> str:
    """The variable holding the `index`-th perturbation's per-trial `setting`."""
    return f"perturbation{index}_{setting}"


def trial_variables(trials: Trials, dims: tuple[str, ...]) -> dict[str, Any]:
    """The trials' arrays as variables over `dims` (then `component` for vectors), the
    go steps if any, and each perturbation's per-trial values as
    ``perturbation<i>_<setting>``."""
    variables: dict[str, Any] = {
        name: (
            (*dims, "component"),
            np.asarray(getattr(trials, name)),
            {"units": TRIAL_UNITS[name]},
        )
        for name in TRIAL_FIELDS
    }
    if trials.go_step is not None:
        variables[GO_STEP] = (
            dims,
            np.asarray(trials.go_step, np.int32),
            {"units": TRIAL_UNITS[GO_STEP]},
        )
    for index, (perturbation, params) in enumerate(zip(trials.perturbations, trials.params)):
        for setting, values in params.items():
            variables[perturbation_variable_name(index, setting)] = xr.Variable(
                dims,
                np.asarray(values),
                {
                    "kind": perturbation.kind,
                    "units": {"active": "1", **perturbation.UNITS}[setting],
                },
            )
    return variables
