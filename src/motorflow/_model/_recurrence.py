"""One network step whose gradient follows each unit's own carry, not the recurrence.

e-prop's eligibility traces (Bellec et al. 2020, Nat Commun 11:3625, Eq. 1 and the
LSTM form of its official code) follow each unit's own state from step to step and
treat the other units' earlier states as inputs. A step that cuts the gradient
inside the recurrent matrices but keeps each unit's carry computes exactly the
derivatives those traces carry:

- leaky cell, ``h' = (1 - a) h + a tanh(W_in x + W_rec h + b)``: keep ``(1 - a) h``;
- vanilla rnn (``a = 1``): no carry, so no gradient flows from one hidden state to
  the next (one-step memory);
- GRU, ``h' = z h + (1 - z) n`` (Cho et al. 2014, as :class:`equinox.nn.GRUCell`):
  keep ``z h``, with the update gate ``z``, the reset gate and the candidate ``n``
  taking the previous state without gradient (the analogue of the official e-prop
  code's LSTM, which keeps the cell state's ``f c`` path).
"""

from __future__ import annotations

import jax
from jaxtyping import Array, Float, PRNGKeyArray

from ._network import Network

# The values of `RolloutOptions.recurrence`.
RECURRENCE_PATHS = ("full", "leak")


def network_step(
    network: Network,
    input: Float[Array, " input"],
    hidden: Float[Array, " hidden"],
    *,
    key: PRNGKeyArray,
    recurrence: str = "full",
) -> tuple[Float[Array, " hidden"], Float[Array, " control"]]:
    """The network's step (new hidden state, output); with `recurrence` ``"leak"`` the
    values are the same but the gradient reaches the previous hidden state only
    through each unit's carry (the cell's :meth:`~motorflow._cells.AbstractCell.carry`)."""
    if recurrence == "full":
        return network(input, hidden, key=key)
    held = jax.lax.stop_gradient(hidden)
    new_hidden, _ = network(input, held, key=key)
    # `hidden - held` is zero in value, so the step's values are the plain ones; its
    # gradient is the identity, scaled by the carry computed from the held state.
    new_hidden = new_hidden + network.cell.carry(input, held) * (hidden - held)
    return new_hidden, network.readout(new_hidden)
