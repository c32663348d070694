"""e-prop's eligibility traces for the tanh units: the vanilla RNN and the leaky cell.

For ``h_j' = (1 - a) h_j + a tanh(v_j)``, ``v_j = sum_i W_ji z_i + b_j`` (``a = 1``:
the vanilla RNN), the trace of a weight follows the unit's own leak,
``e_ji(t) = (1 - a) e_ji(t - 1) + a tanh'(v_j(t)) z_i(t)`` (Bellec et al. 2020,
Nature Communications 11:3625; the rule itself is :mod:`._eprop`).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float


class CellWeights(eqx.Module):
    """The weights e-prop trains in a tanh unit: `weight_in` `(hidden, input)`,
    `weight_rec` `(hidden, hidden)`, `bias` `(hidden,)`."""

    weight_in: Float[Array, "hidden input"]
    weight_rec: Float[Array, "hidden hidden"]
    bias: Float[Array, " hidden"]


def _clip_norm(trace: Array, max_norm: float | None) -> Array:
    if max_norm is None:
        return trace
    norm = jnp.sqrt(jnp.sum(trace**2))
    return trace * jnp.minimum(1.0, max_norm / jnp.maximum(norm, 1e-30))


def eligibility_gradient(
    weights: CellWeights,
    alpha: float,
    network_input: Float[Array, "time input"],
    hidden: Float[Array, "time hidden"],
    signal: Float[Array, "time hidden"],
    *,
    trace_clip: float | None = None,
) -> CellWeights:
    """``sum_t L(t) e(t)`` for one trial, the traces `e` run forward in time.

    **Arguments:**

    - `weights`: the unit's weights (their values give the pre-activations).
    - `alpha`: the leak ``a = dt / tau`` (1 for the vanilla RNN).
    - `network_input`, `hidden`: the trial's input at each step and hidden state
      after it; the state before the first step is zero.
    - `signal`: the learning signal ``L(t)`` per unit.
    - `trace_clip`: clip each trace's norm (per weight array) to this, if given.
    """

    def step(carry, xs):
        h_before, traces, total = carry
        x, h, learning = xs
        pre = weights.weight_in @ x + weights.weight_rec @ h_before + weights.bias
        drive = alpha * (1.0 - jnp.tanh(pre) ** 2)
        immediate = CellWeights(
            weight_in=drive[:, None] * x[None, :],
            weight_rec=drive[:, None] * h_before[None, :],
            bias=drive,
        )
        traces = jax.tree.map(
            lambda e, new: _clip_norm((1.0 - alpha) * e + new, trace_clip), traces, immediate
        )
        total = CellWeights(
            weight_in=total.weight_in + learning[:, None] * traces.weight_in,
            weight_rec=total.weight_rec + learning[:, None] * traces.weight_rec,
            bias=total.bias + learning * traces.bias,
        )
        return (h, traces, total), None

    # The state before each step is carried (no shifted copy of the trial's states).
    zeros = jax.tree.map(jnp.zeros_like, weights)
    start = (jnp.zeros_like(hidden[0]), zeros, zeros)
    (*_, total), _ = jax.lax.scan(step, start, (network_input, hidden, signal))
    return total


def filtered_eligibility_gradient(
    weights: CellWeights,
    alpha: float,
    network_input: Float[Array, "trial time input"],
    hidden: Float[Array, "trial time hidden"],
    signal: Float[Array, "trial time hidden"],
) -> CellWeights:
    """:func:`eligibility_gradient` summed over a batch's trials, without traces.

    A trace ``e_ji(t) = sum_{s<=t} (1 - a)^(t - s) d_j(s) z_i(s)`` (``d``: the unit's
    drive ``a tanh'(v)``; ``z``: the presynaptic value) is linear in its history, so
    ``sum_t L_j(t) e_ji(t) = sum_s d_j(s) Lbar_j(s) z_i(s)`` with the learning signal
    filtered backward in time, ``Lbar(s) = L(s) + (1 - a) Lbar(s + 1)``: a scan over
    (trial, hidden) vectors and three matrix products, where the traces' scan carries
    a (hidden x (input + hidden + 1)) trace per trial (2-6 times BPTT's time on the
    CPU; benchmarks/README.md). The same sum, rounded differently (about 1e-7
    relative); exact only without trace clipping, which is not linear.
    """
    previous = jnp.concatenate([jnp.zeros_like(hidden[:, :1]), hidden[:, :-1]], axis=1)
    pre = network_input @ weights.weight_in.T + previous @ weights.weight_rec.T + weights.bias
    drive = alpha * (1.0 - jnp.tanh(pre) ** 2)

    def back(later, learning):
        now = learning + (1.0 - alpha) * later
        return now, now

    _, filtered = jax.lax.scan(
        back, jnp.zeros_like(signal[:, 0]), jnp.swapaxes(signal, 0, 1), reverse=True
    )
    credit = drive * jnp.swapaxes(filtered, 0, 1)  # (trial, time, hidden)
    return CellWeights(
        weight_in=jnp.einsum("nth,nti->hi", credit, network_input),
        weight_rec=jnp.einsum("nth,nti->hi", credit, previous),
        bias=jnp.sum(credit, axis=(0, 1)),
    )
