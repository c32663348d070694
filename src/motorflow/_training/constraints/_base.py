"""The weight-constraint interface: a config block that prepares its fixed data once
and projects a model onto the constraint after every update."""

from __future__ import annotations

import abc
from typing import Any, ClassVar

from jaxtyping import Array, Float, PRNGKeyArray

from ..._config_base import Block

Weight = Float[Array, "post pre"]


class AbstractConstraint(Block):
    """One constraint: `prepare` draws what it needs once per replicate (e.g. a mask);
    `apply` maps the recurrent and readout weights to ones that obey it."""

    kind: str
    # Projections (0) run before rescalings (1).
    ORDER: ClassVar[int] = 0

    def prepare(self, hidden_size: int, *, key: PRNGKeyArray) -> Any:
        """Fixed data of one replicate, drawn from `key` (None: nothing)."""
        return None

    @abc.abstractmethod
    def apply(self, recurrent: Weight, readout: Weight, prepared: Any) -> tuple[Weight, Weight]:
        raise NotImplementedError
