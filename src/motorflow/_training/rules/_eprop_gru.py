"""e-prop's eligibility traces for the gated recurrent unit.

Equinox's GRU (:class:`equinox.nn.GRUCell`, Cho et al. 2014), with ``x`` the input
and ``h`` the state before the step, per unit j:

    r = sigmoid(W_ir x + W_hr h + b_r)              (reset gate)
    u = sigmoid(W_iu x + W_hu h + b_u)              (update gate: keeps the old state)
    c = W_hn h + b_hn
    n = tanh(W_in x + b_n + r * c)                  (candidate)
    h' = n + u * (h - n) = (1 - u) n + u h

e-prop (Bellec et al. 2020, Nature Communications 11:3625) follows each unit's own
state only: as the authors' LSTM code does, the state ``h`` inside the recurrent
matrices counts as an input (no gradient), and the gated self path ``u * h`` keeps
its gradient. So ``dh'_j/dh_j = u_j`` and the eligibility vector of a weight of unit
j obeys ``e(t) = u_j(t) e(t - 1) + dh'_j(t)/dW`` with the immediate derivatives

    reset   rows (W_ir, W_hr, b_r):  (1 - u)(1 - n^2) c r(1 - r) * z
    update  rows (W_iu, W_hu, b_u):  (h - n) u(1 - u) * z
    candidate input rows (W_in, b_n): (1 - u)(1 - n^2) * z
    candidate recurrent (W_hn, b_hn): (1 - u)(1 - n^2) r * z

where ``z`` is the presynaptic value (``x``, ``h`` or 1). The gradient estimate is
``sum_t L_j(t) e(t)`` as for the tanh units (:mod:`._eprop_leaky`; the rule: :mod:`._eprop`).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from ._eprop_leaky import held_traces


class GRUWeights(eqx.Module):
    """A GRU's weights as :class:`equinox.nn.GRUCell` keeps them: `weight_ih`
    `(3 hidden, input)`, `weight_hh` `(3 hidden, hidden)`, `bias` `(3 hidden,)` and
    `bias_n` `(hidden,)`; the blocks of 3 are (reset, update, candidate)."""

    weight_ih: Float[Array, "gates input"]
    weight_hh: Float[Array, "gates hidden"]
    bias: Float[Array, " gates"]
    bias_n: Float[Array, " hidden"]


def gru_step_traces(weights: GRUWeights, x: Array, h: Array):
    """The state after one step, the traces' decay ``u`` and the immediate
    derivatives ``dh'_j/dW`` of every weight (its unit's), for input `x` and state `h`."""
    gx = jnp.split(weights.weight_ih @ x + weights.bias, 3)
    gh = jnp.split(weights.weight_hh @ h, 3)
    reset = jax.nn.sigmoid(gx[0] + gh[0])
    keep = jax.nn.sigmoid(gx[1] + gh[1])
    recurrent = gh[2] + weights.bias_n
    new = jnp.tanh(gx[2] + reset * recurrent)
    candidate = (1.0 - keep) * (1.0 - new**2)
    slopes = jnp.concatenate(
        [
            candidate * recurrent * reset * (1.0 - reset),
            (h - new) * keep * (1.0 - keep),
            candidate,
        ]
    )
    # W_hn and b_hn sit behind the reset gate.
    recurrent_slopes = slopes.at[2 * h.shape[0] :].multiply(reset)
    immediate = GRUWeights(
        weight_ih=slopes[:, None] * x[None, :],
        weight_hh=recurrent_slopes[:, None] * h[None, :],
        bias=slopes,
        bias_n=candidate * reset,
    )
    return new + keep * (h - new), keep, immediate


def gru_eligibility_gradient(
    weights: GRUWeights,
    network_input: Float[Array, "time input"],
    hidden: Float[Array, "time hidden"],
    signal: Float[Array, "time hidden"],
    *,
    held: tuple[Array, Array] | None = None,
) -> GRUWeights:
    """``sum_t L(t) e(t)`` for one GRU trial, the traces `e` run forward in time.

    `network_input` and `hidden` are the trial's input at each step and state after
    it (zero before the first step); `signal` the learning signal ``L(t)`` per unit;
    `held` which units the interventions hold or freeze (as for the tanh units:
    :func:`._eprop_leaky.eligibility_gradient`), or None.
    """

    def step(carry, xs):
        h_before, traces, total = carry
        x, h, learning, *mask = xs
        _, keep, immediate = gru_step_traces(weights, x, h_before)
        decay, signal_of = gru_per_unit(keep), gru_per_unit(learning)
        updated = jax.tree.map(lambda e, d, new: d * e + new, traces, decay, immediate)
        if mask:
            updated = held_traces(traces, updated, *map(gru_per_unit, mask))
        total = jax.tree.map(lambda g, s, e: g + s * e, total, signal_of, updated)
        return (h, updated, total), None

    zeros = jax.tree.map(jnp.zeros_like, weights)
    start = (jnp.zeros_like(hidden[0]), zeros, zeros)
    xs = (network_input, hidden, signal, *(() if held is None else held))
    (*_, total), _ = jax.lax.scan(step, start, xs)
    return total


def gru_per_unit(v: Array) -> GRUWeights:
    """A per-unit vector spread over a GRU's weights (its three gates' rows each)."""
    v3 = jnp.tile(v, 3)
    return GRUWeights(v3[:, None], v3[:, None], v3, v)
