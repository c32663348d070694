"""The learning-rule interface: how a training step turns a batch into a parameter update."""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar

import jax
from jaxtyping import PRNGKeyArray, PyTree

from ..._cells import AbstractCell
from ..._config_base import Block
from ..._model._loop import PLAIN, ClosedLoop, Rollout, RolloutOptions
from ..._tasks import Task, Trials

# The loss of one replicate's batch: ``loss(params, *, options=PLAIN, states=False)
# -> (total, (terms, rollouts or None))``; `states` asks for the rollouts and the
# `options` (:class:`motorflow._model._loop.RolloutOptions`) truncate the gradient
# through them or cut the network out of it.
ReplicateLoss = Callable[..., tuple[Any, tuple[dict[str, Any], Rollout | None]]]


@dataclasses.dataclass(frozen=True)
class Pieces:
    """A batch's trials run in consecutive pieces of steps, for a rule that takes its
    learning signals piece by piece so that its memory does not grow with the trial
    (:mod:`motorflow._training._segments` builds it).

    - `start(params) -> (drives, loop_states)`: what each trial feeds the loop at every
      step, and the loop's state before the first step (leading trial dim).
    - `loss(params, drives, loop_states, first, length, *, options=PLAIN) -> (total,
      (terms, rollouts))`: steps ``first .. first + length - 1`` of every trial from
      `loop_states`; the terms are that piece's part of the trials' (they add up to
      the whole trial's) and ``rollouts.end`` is the loop's state after the piece.
    """

    start: Callable[[PyTree], tuple[PyTree, PyTree]]
    loss: Callable[..., tuple[Any, tuple[dict[str, Any], Rollout]]]


@dataclasses.dataclass(frozen=True)
class Batch:
    """What a rule sees of one replicate's batch.

    - `loss`: the batch's loss as a function of the parameters (:data:`ReplicateLoss`).
    - `model`: the replicate's model before the update.
    - `task`, `trials`: the task and the batch's trial specs (leading trial dim).
    - `first`: the trial step the loss's rollouts begin at: 0, or a segment's first
      step when the parameters update within the rollout (:mod:`motorflow._training._segments`).
    - `pieces`: the same trials run piece by piece (:class:`Pieces`), where the batch
      is whole trials (None for a segment).
    """

    loss: ReplicateLoss
    model: ClosedLoop
    task: Task
    trials: Trials
    first: Any = 0
    pieces: Pieces | None = None


class AbstractLearningRule(Block):
    """How one replicate's batch becomes an update.

    A rule computes the loss and the gradient the optimizer steps with
    (:meth:`value_and_grad`); it may keep state of its own across batches (feedback
    weights, inverse correlation matrices: :meth:`init`), which is checkpointed and
    resumed with the optimizer state, and may set some parameters itself after the
    optimizer's step (:meth:`owned` and :meth:`apply`; the optimizer leaves those alone).
    """

    kind: str
    # Whether the gradient is the loss's (so each term's part of it means something).
    exact_gradient: ClassVar[bool] = True

    def check_model(
        self, cell: type[AbstractCell], plant: Any, trainable: tuple[str, ...]
    ) -> str | None:
        """Why this rule cannot train a network of `cell` (the cell's class) on `plant`
        (a built plant) with `trainable` parts, or None: checked with the config."""
        return None

    def intervention_problem(self, interventions: list[Any]) -> str | None:
        """Why this rule cannot train a network under `interventions` (the task's
        perturbations on the network's units), or None: a rule that follows the loss's
        gradient trains under any, since the gradient passes through them."""
        return None

    def init(self, model: ClosedLoop, *, key: PRNGKeyArray | None) -> PyTree:
        """One replicate's rule state before the first batch (None: none)."""
        return None

    def owned(self, model: ClosedLoop) -> tuple[str, ...]:
        """Paths of the arrays the rule sets itself in :meth:`apply`."""
        return ()

    @abc.abstractmethod
    def value_and_grad(
        self, batch: Batch, params: PyTree, state: PyTree, *, states: bool = False
    ) -> tuple[tuple[Any, tuple[dict[str, Any], Rollout | None]], PyTree, PyTree]:
        """``((total, (terms, rollouts)), gradient, state)`` of the batch; the rollouts
        are there when `states` asks for them (else they may be None)."""

    def apply(
        self, batch: Batch, model: ClosedLoop, state: PyTree, rollouts: Rollout | None
    ) -> tuple[ClosedLoop, PyTree]:
        """The model and state after the rule's own changes (after the optimizer's step)."""
        return model, state

    def gradient_window(self) -> int | None:
        """The steps a gradient flows back through the rollout (None: all of them)."""
        return None

    def backpropagation_options(self) -> RolloutOptions:
        """How the gradient of each loss term flows for the per-term gradient norms: the
        rule's window (and, for backpropagation, the paths it cuts)."""
        return RolloutOptions(gradient_window=self.gradient_window())

    def is_backpropagation(self, n_steps: int) -> bool:
        """Whether the update is exactly BPTT's gradient of an `n_steps` rollout (its
        gradient alignment is then 1 by definition, and no pass measures it)."""
        return False

    def segment_length(self) -> int | None:
        """Update the parameters after every this many steps of a rollout, within it
        (None: once per rollout, after it)."""
        return None


def backpropagated(
    batch: Batch, params: PyTree, *, options: RolloutOptions = PLAIN, states: bool = False
):
    """``((total, (terms, rollouts)), gradient)`` by backpropagation through time."""
    return jax.value_and_grad(batch.loss, has_aux=True)(params, options=options, states=states)
