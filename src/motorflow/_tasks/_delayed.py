"""Delayed reaches: the goal shows from the start, the reach may begin at a go cue.

The instructed-delay paradigm of monkey reaching studies (e.g. Churchland et al.
2012), as networks are trained on it (Sussillo et al. 2015: the target as input with
a hold signal that ends at go; feedbax's ``DelayedReaches``): the network sees the
goal throughout and one more input, 0 before the go step and 1 from it on; until the
go step the loss's ``hold`` term keeps the effector at its start.
"""

from __future__ import annotations

from typing import Literal

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, PRNGKeyArray
from pydantic import Field, model_validator

from .._config_base import NonNegativeInt
from .._config_errors import ConfigError
from ._reach import ReachConfig
from ._trials import CenterOut, Trials


class DelayedReachConfig(ReachConfig):
    """A reach whose go cue comes at a step drawn uniformly from `go_step`
    ``[low, high]`` (inclusive) per training trial; the evaluation reaches all get
    the go cue at `eval_go_step` (by default the middle of the range)."""

    kind: Literal["delayed_reach"] = "delayed_reach"
    go_step: tuple[NonNegativeInt, NonNegativeInt] = Field(
        (20, 40),
        description="`[low, high]`: the go cue's step, uniform per training trial "
        "(inclusive; `high` < `n_steps`)",
    )
    eval_go_step: NonNegativeInt | None = Field(
        None,
        description="the go cue's step in every evaluation trial; `null`: the middle of `go_step`",
    )

    n_inputs = 3
    has_go_cue = True

    @model_validator(mode="after")
    def _go_within_the_trial(self) -> DelayedReachConfig:
        low, high = self.go_step
        if low > high:
            raise ConfigError(
                "go_step", f"a range [low, high] needs low <= high, got {[low, high]}"
            )
        for key, step in (("go_step", high), ("eval_go_step", self.eval_go_step)):
            if step is not None and step >= self.n_steps:
                raise ConfigError(
                    key,
                    f"the go cue at step {step} leaves no step to move in a trial of "
                    f"n_steps {self.n_steps}; make it earlier or the trials longer",
                )
        return self

    @property
    def evaluation_go_step(self) -> int:
        """The go step of every evaluation reach."""
        low, high = self.go_step
        return (low + high) // 2 if self.eval_go_step is None else self.eval_go_step

    def draw(self, n_trials: int, *, key: PRNGKeyArray) -> Trials:
        """The reach task's trials from `key`, go steps from ``fold_in(key, 2)``."""
        low, high = self.go_step
        go_step = jax.random.randint(jax.random.fold_in(key, 2), (n_trials,), low, high + 1)
        return super().draw(n_trials, key=key).with_go_step(go_step)

    def evaluation(self) -> CenterOut:
        center_out = super().evaluation()
        n_trials = center_out.goal_angle.shape[0]
        go_step = jnp.full((n_trials,), self.evaluation_go_step, jnp.int32)
        trials = center_out.trials.with_go_step(go_step)
        return eqx.tree_at(lambda c: c.trials, center_out, trials)

    def inputs(self, trial: Trials, goal: Float[Array, "time 2"]) -> Float[Array, "time 3"]:
        """The goal and the go cue (0 before the go step, 1 from it on)."""
        cue = (jnp.arange(goal.shape[0]) >= trial.go_step).astype(goal.dtype)
        return jnp.concatenate([goal, cue[:, None]], axis=-1)

    def hold(self, trial: Trials) -> Bool[Array, " time"]:
        """The steps before the go cue."""
        return jnp.arange(self.n_steps) < trial.go_step
