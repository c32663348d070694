"""Oja's rule: Hebbian growth with a decay that bounds the weights."""

from __future__ import annotations

from typing import Literal

import jax.numpy as jnp

from ._base import AbstractUpdateRule, mean_outer


class Oja(AbstractUpdateRule):
    """Oja's rule, batch-averaged: ``dW_ij = rate <post_i pre_j - post_i^2 W_ij>``
    (Oja 1982, J Math Biol 15:267): Hebbian growth with a decay by the postsynaptic
    activity that keeps each row's norm bounded (near 1 for a linear unit)."""

    kind: Literal["oja"] = "oja"

    def delta(self, post, pre, weight):
        decay = jnp.mean(post**2, axis=0)[:, None] * weight
        return self.rate * (mean_outer(post, pre) - decay)
