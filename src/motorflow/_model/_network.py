"""The controller: a recurrent cell, optional hidden noise, a linear readout of controls."""

from __future__ import annotations

import equinox as eqx
import jax
from jaxtyping import Array, Float, PRNGKeyArray

from .._cells import AbstractCell


class Network(eqx.Module):
    """Recurrent network whose readout is the plant's control (a force, torques, excitations).

    **Arguments:**

    - `cell`: the recurrent cell.
    - `readout`: linear map from the hidden state to the plant's controls.
    - `hidden_noise_std`: std of Gaussian noise added to the hidden state each step.
    """

    cell: AbstractCell
    readout: eqx.nn.Linear
    hidden_noise_std: float = eqx.field(static=True)

    def __call__(
        self,
        input: Float[Array, " input"],
        hidden: Float[Array, " hidden"],
        *,
        key: PRNGKeyArray,
    ) -> tuple[Float[Array, " hidden"], Float[Array, " control"]]:
        """One step: returns the new hidden state and the output."""
        hidden = self.cell(input, hidden)
        if self.hidden_noise_std > 0:
            hidden = hidden + self.hidden_noise_std * jax.random.normal(key, hidden.shape)
        return hidden, self.readout(hidden)
