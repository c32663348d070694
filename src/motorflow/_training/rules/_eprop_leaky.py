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
    held: tuple[Array, Array] | None = None,
) -> CellWeights:
    """``sum_t L(t) e(t)`` for one trial, the traces `e` run forward in time.

    **Arguments:**

    - `weights`: the unit's weights (their values give the pre-activations).
    - `alpha`: the leak ``a = dt / tau`` (1 for the vanilla RNN).
    - `network_input`, `hidden`: the trial's input at each step and hidden state
      after it; the state before the first step is zero.
    - `signal`: the learning signal ``L(t)`` per unit.
    - `trace_clip`: clip each trace's norm (per weight array) to this, if given.
    - `held`: ``(reached, kept)`` per step and unit under interventions on the units
      (:meth:`motorflow._perturbations.UnitEffects.held`), or None: a held unit's
      state does not depend on the weights, so its traces are zero while held
      (``reached`` 0), and a frozen one keeps its state and its traces (``kept`` 1).
    """

    def step(carry, xs):
        h_before, traces, total = carry
        x, h, learning, *mask = xs
        pre = weights.weight_in @ x + weights.weight_rec @ h_before + weights.bias
        drive = alpha * (1.0 - jnp.tanh(pre) ** 2)
        immediate = CellWeights(
            weight_in=drive[:, None] * x[None, :],
            weight_rec=drive[:, None] * h_before[None, :],
            bias=drive,
        )
        updated = jax.tree.map(lambda e, new: (1.0 - alpha) * e + new, traces, immediate)
        if mask:
            updated = held_traces(traces, updated, *map(tanh_per_unit, mask))
        traces = jax.tree.map(lambda e: _clip_norm(e, trace_clip), updated)
        total = CellWeights(
            weight_in=total.weight_in + learning[:, None] * traces.weight_in,
            weight_rec=total.weight_rec + learning[:, None] * traces.weight_rec,
            bias=total.bias + learning * traces.bias,
        )
        return (h, traces, total), None

    # The state before each step is carried (no shifted copy of the trial's states).
    zeros = jax.tree.map(jnp.zeros_like, weights)
    start = (jnp.zeros_like(hidden[0]), zeros, zeros)
    xs = (network_input, hidden, signal, *(() if held is None else held))
    (*_, total), _ = jax.lax.scan(step, start, xs)
    return total


def tanh_per_unit(v: Array) -> CellWeights:
    """A per-unit vector spread over a tanh unit's weights (a row each)."""
    return CellWeights(v[:, None], v[:, None], v)


def held_traces(before, updated, reached, kept):
    """The traces after a step under interventions on the units: the cell's `updated`
    traces where its update `reached` the unit's state, the traces `before` the step
    where a freeze `kept` it, and zero where a hold set it (per-unit factors spread
    over each weight array like the traces)."""
    return jax.tree.map(lambda b, u, r, k: r * u + k * b, before, updated, reached, kept)


def filtered_eligibility_gradient(
    weights: CellWeights,
    alpha: float,
    network_input: Float[Array, "trial time input"],
    hidden: Float[Array, "trial time hidden"],
    signal: Float[Array, "trial time hidden"],
    *,
    held: tuple[Array, Array] | None = None,
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

    Under interventions on the units (`held`: ``(reached, kept)``, leading trial dim)
    the traces stay linear, ``e(t) = f(t) e(t - 1) + r(t) d(t) z(t)`` with the decay
    ``f = r (1 - a) + k``, so ``Lbar(s) = L(s) + f(s + 1) Lbar(s + 1)`` and the credit
    ``r d Lbar``.
    """
    previous = jnp.concatenate([jnp.zeros_like(hidden[:, :1]), hidden[:, :-1]], axis=1)
    pre = network_input @ weights.weight_in.T + previous @ weights.weight_rec.T + weights.bias
    drive = alpha * (1.0 - jnp.tanh(pre) ** 2)

    def by_time(x):
        return jnp.swapaxes(x, 0, 1)

    if held is None:

        def back(later, learning):
            now = learning + (1.0 - alpha) * later
            return now, now

        xs = by_time(signal)
    else:
        reached, kept = held
        drive = drive * reached

        def back(later, xs):  # `later`: f(s + 1) Lbar(s + 1)
            learning, decay = xs
            now = learning + later
            return decay * now, now

        xs = (by_time(signal), by_time(reached * (1.0 - alpha) + kept))
    _, filtered = jax.lax.scan(back, jnp.zeros_like(signal[:, 0]), xs, reverse=True)
    credit = drive * by_time(filtered)  # (trial, time, hidden)
    return CellWeights(
        weight_in=jnp.einsum("nth,nti->hi", credit, network_input),
        weight_rec=jnp.einsum("nth,nti->hi", credit, previous),
        bias=jnp.sum(credit, axis=(0, 1)),
    )
