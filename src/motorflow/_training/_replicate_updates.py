"""One batch's update of every replicate of a :class:`Trainer`: each replicate's learning
rule, optimizer step and health check, the replicates of a device one after another on
the CPU (batched elsewhere), spread over the devices.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp

from .._tasks import Trials
from ._divergence import all_finite, keep_where
from ._segments import learn_in_segments

if TYPE_CHECKING:
    from ._trainer import Trainer


def update_replicates(
    trainer: Trainer,
    params,
    opt_state,
    learning_state,
    fixed,
    trials: Trials,
    key,
    healthy,
    batch,
    rule_flags,
):
    """One batch's update of every replicate by `trainer`; a replicate not `healthy`, or
    whose loss or new parameters are not finite, keeps its parameters, optimizer and
    learning-rule state. Returns those, the losses and gradient norms (NaN where not
    healthy) and whether each replicate's update was kept."""

    def one(params, opt_state, learning_state, fixed, trials, key, healthy, batch, rule_flags):
        frozen, _ = fixed
        trained_in = trainer._trained_in(batch)
        state = (params, opt_state, learning_state)
        segment_length = trainer.learning_rule.segment_length()
        if segment_length is None:
            problem = trainer.replicate_batch(params, frozen, trials, key=key)
            new_state, total, terms, grads, _ = trainer._learn(
                problem,
                state,
                fixed,
                batch,
                trained_in,
                rule_flags,
                states=bool(trainer.update_rules),
            )
        else:
            new_state, total, terms, grads = learn_in_segments(
                trainer, state, fixed, trials, key, batch, trained_in, segment_length
            )
        new_params = new_state[0]
        norms = {"total": trainer.optimizer.gradient_norm(grads, trained_in)}
        if trainer.config.gradient_norms == "per_term":
            norms |= term_gradient_norms(trainer, params, frozen, trials, key, trained_in)
        losses = {**terms, "total": total}
        # Watching the losses in the update costs XLA's CPU backend ~15% per batch
        # at the tutorial size (the parameters cost nothing), so only isolation,
        # which must not take a step from a non-finite loss, watches them here; a
        # stopping run finds a non-finite loss among the recorded ones.
        watched = (losses, new_params) if trainer.isolate else new_params
        ok = healthy & all_finite(watched)
        params, opt_state, learning_state = keep_where(ok, new_state, state)
        records = jax.tree.map(lambda x: jnp.where(healthy, x, jnp.nan), (losses, norms))
        return params, opt_state, learning_state, records, ok

    keys = trainer.layout.spread(jax.random.split(key, trainer.n_replicates))
    shared = trainer.config.shared_trials
    if shared:
        trials = jax.tree.map(lambda x: x[0], trials)

    # On CPU, one replicate after another (lax.map, not vmap): a replicate's trials
    # then form plain 2-D matmuls, which XLA runs faster on CPU than batched ones
    # (2.4x at the tutorial size), and its arithmetic does not depend on how many
    # replicates share a device, so a sharded run is bitwise-identical to one device.
    def local(params, opt_state, learning_state, fixed, trials, keys, healthy, batch, rule_flags):
        def replicate(xs):
            params, opt_state, learning_state, fixed, key, healthy, *own = xs
            trials_here = own[0] if own else trials
            return one(
                params,
                opt_state,
                learning_state,
                fixed,
                trials_here,
                key,
                healthy,
                batch,
                rule_flags,
            )

        xs = (
            params,
            opt_state,
            learning_state,
            fixed,
            keys,
            healthy,
            *(() if shared else (trials,)),
        )
        return jax.lax.map(replicate, xs, batch_size=trainer._replicates_per_step)

    replicated = (4, 7, 8) if shared else (7, 8)
    return trainer.layout.per_device(local, replicated_args=replicated)(
        params, opt_state, learning_state, fixed, trials, keys, healthy, batch, rule_flags
    )


def term_gradient_norms(trainer: Trainer, params, frozen, trials: Trials, key, trained_in):
    """Per loss term, the gradient norm of its weighted part (one backward pass each)."""
    names = list(trainer.config.loss.terms)
    weights = jnp.stack([trainer.loss_weights[name] for name in names])

    options = trainer.config.learning.backpropagation_options()

    def weighted(params):
        _, (terms, _) = trainer._replicate_loss(params, frozen, trials, key, options=options)
        return weights * jnp.stack([terms[name] for name in names])

    values, pullback = jax.vjp(weighted, params)
    (grads,) = jax.vmap(pullback)(jnp.eye(len(names), dtype=values.dtype))
    norms = jax.vmap(lambda g: trainer.optimizer.gradient_norm(g, trained_in))(grads)
    return dict(zip(names, norms, strict=True))
