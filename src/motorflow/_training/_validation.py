"""Validating a run between its compiled calls: losses and gradient alignment into the
history, a replicate whose loss became non-finite frozen, the best parameters kept."""

from __future__ import annotations

from typing import TYPE_CHECKING

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import PRNGKeyArray

from .._tasks import Trials
from ._divergence import HEALTHY, DivergencePolicy
from ._history import History, record_alignment, record_validation
from ._state import TrainState, keep_best

if TYPE_CHECKING:
    from ._trainer import Trainer


class Validation:
    """Validates a run's state on `trials` with `key`, its divergence judged by `policy`.

    **Arguments:**

    - `trainer`: the run's :class:`Trainer`.
    - `trials`: the validation trials.
    - `key`: the validation noise's key (the same at every validation).
    - `policy`: what a non-finite validation loss does (:class:`DivergencePolicy`).
    """

    def __init__(
        self, trainer: Trainer, trials: Trials, key: PRNGKeyArray, policy: DivergencePolicy
    ):
        self.trainer, self.key, self.policy = trainer, key, policy
        # As the compiled programs take them (:meth:`Trials.program_form`).
        self.trials = trials.program_form()

    def __call__(
        self, state: TrainState, batch: int, history: History
    ) -> tuple[TrainState, dict[str, np.ndarray]]:
        """`state` after its validation at `batch` (a replicate with a non-finite loss
        frozen there, the best parameters kept), recorded into `history`, and the losses
        (NaN once diverged)."""
        trainer = self.trainer
        losses = trainer.layout.unpad(trainer.validate(state.params, self.trials, self.key))
        losses = jax.tree.map(np.asarray, losses)
        diverged_at = np.asarray(state.diverged_at)
        frozen_here = self.policy.after_validation(diverged_at, losses["total"], batch)
        if frozen_here.any():
            diverged_at = np.where(frozen_here, batch, diverged_at).astype(np.int32)
            state = eqx.tree_at(lambda s: s.diverged_at, state, jnp.asarray(diverged_at))
        losses = {k: np.where(diverged_at == HEALTHY, v, np.nan) for k, v in losses.items()}
        alignment = trainer.alignment(state.params, state.learning_state, self.trials, key=self.key)
        record_alignment(
            history,
            batch,
            {k: np.where(diverged_at == HEALTHY, v, np.nan) for k, v in alignment.items()},
        )
        state = keep_best(state, jnp.asarray(losses["total"]), batch)
        record_validation(history, batch, losses)
        return state, losses
