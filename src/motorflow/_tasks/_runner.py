"""Any task's trials with their perturbations and replicate and batch dims."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Bool, Float, PRNGKeyArray

from .._perturbations import draw_all
from ._base import TaskConfig
from ._trials import CenterOut, Trials


class Task(eqx.Module):
    """A task of any kind, ready to draw trials and feed a network.

    **Arguments:**

    - `config`: the task's settings, a :class:`TaskConfig` of a registered kind.
    """

    config: TaskConfig

    @property
    def n_steps(self) -> int:
        return self.config.n_steps

    @property
    def n_inputs(self) -> int:
        """Task inputs the network receives each step (the goal, and a go cue if any)."""
        return self.config.n_inputs

    def program_form(self) -> Task:
        """The task as it keys a compiled program (:meth:`TaskConfig.program_form`)."""
        return Task(self.config.program_form())

    def sample(self, n_trials: int, *, key: PRNGKeyArray) -> Trials:
        """`n_trials` training trials of the task's kind, drawn from `key`; the
        perturbations from ``fold_in(key, 1)``."""
        trials = self.config.draw(n_trials, key=key)
        return self._perturbed(trials, (n_trials,), key=jax.random.fold_in(key, 1))

    def _perturbed(self, trials: Trials, shape: tuple[int, ...], *, key: PRNGKeyArray) -> Trials:
        """`trials` carrying the task's perturbations, drawn from `key`."""
        perturbations = self.config.perturbations
        if not perturbations:
            return trials
        return trials.perturbed_by(perturbations, draw_all(perturbations, shape, key=key))

    def training_trials(
        self,
        *,
        key: PRNGKeyArray,
        n_replicates: int,
        n_batches: int,
        batch_size: int,
        shared: bool = False,
    ) -> Trials:
        """Training specs with dims `(replicate, batch, trial)`.

        Batch b of replicate r is drawn from ``fold_in(fold_in(key, r), b)``, so any
        batch can be regenerated alone. With `shared`, the replicate dim has size 1
        and every replicate trains on the same trials.
        """
        n_sets = 1 if shared else n_replicates

        def one(r, b):
            return self.sample(batch_size, key=jax.random.fold_in(jax.random.fold_in(key, r), b))

        grid = jax.vmap(jax.vmap(one, in_axes=(None, 0)), in_axes=(0, None))
        return jax.jit(grid)(jnp.arange(n_sets), jnp.arange(n_batches))

    def eval_trials(self) -> CenterOut:
        """The task's evaluation trials, laid out around its evaluation center (dim `trial`)."""
        return self.config.evaluation()

    def validation_set(self, *, key: PRNGKeyArray) -> CenterOut:
        """The evaluation trials under the task's (training) perturbations, drawn from `key`."""
        center_out = self.eval_trials()
        n_trials = center_out.trials.init_pos.shape[0]
        perturbed = self._perturbed(center_out.trials, (n_trials,), key=key)
        return eqx.tree_at(lambda c: c.trials, center_out, perturbed)

    def inputs(self, trial: Trials, goal: Float[Array, "time 2"]) -> Float[Array, "time input"]:
        """What the network receives at every step of one trial besides its feedback."""
        return self.config.inputs(trial, goal)

    def hold(self, trial: Trials) -> Bool[Array, " time"] | None:
        """The steps of one trial on which the effector should stay at its start."""
        return self.config.hold(trial)
