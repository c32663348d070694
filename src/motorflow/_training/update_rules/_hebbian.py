"""The plain Hebbian rule."""

from __future__ import annotations

from typing import Literal

from ._base import AbstractUpdateRule, mean_outer


class Hebbian(AbstractUpdateRule):
    """Hebb's rule, batch-averaged: ``dW_ij = rate <post_i pre_j>`` (Hebb 1949; the
    form of feedbax's ``hebb_rule`` with ``agg_func=mean``). Unbounded: correlated
    units strengthen their connections without limit, so keep `rate` small or pair it
    with a norm cap (``train.constraints``)."""

    kind: Literal["hebbian"] = "hebbian"

    def delta(self, post, pre, weight):
        return self.rate * mean_outer(post, pre)
