"""The floor: a minimal, plainly written JAX train step of the same math as motorflow.

GRU controller, point mass, feedback delayed by `delay` steps, goal input, the
feedbax simple-reach loss, adam; `lax.scan` over time, `vmap` over trials and
replicates, `value_and_grad`, one jitted call per batch. No noise (the benchmark
setup has none), no checkpointing, no history.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax


def init_params(key, n_replicates: int, hidden: int, n_inputs: int = 6):
    def one(key):
        k = jax.random.split(key, 6)
        bound = 1 / jnp.sqrt(hidden)

        def u(key, shape):
            return jax.random.uniform(key, shape, minval=-bound, maxval=bound)

        return {
            "w_ih": u(k[0], (3 * hidden, n_inputs)),
            "w_hh": u(k[1], (3 * hidden, hidden)),
            "b": u(k[2], (3 * hidden,)),
            "b_n": u(k[3], (hidden,)),
            "w_out": u(k[4], (2, hidden)),
            "b_out": u(k[5], (2,)),
        }

    return jax.vmap(one)(jax.random.split(key, n_replicates))


def rollout(params, init_pos, goal, *, n_steps: int, delay: int, dt: float):
    hidden_size = params["w_hh"].shape[1]

    def step(carry, _):
        pos, vel, queue, h = carry
        line = jnp.concatenate([queue, jnp.concatenate([pos, vel])[None]], axis=0)
        seen, queue = line[0], line[1:]
        x = jnp.concatenate([goal, seen])
        gi = jnp.split(params["w_ih"] @ x + params["b"], 3)
        gh = jnp.split(params["w_hh"] @ h, 3)
        r = jax.nn.sigmoid(gi[0] + gh[0])
        z = jax.nn.sigmoid(gi[1] + gh[1])
        n = jnp.tanh(gi[2] + r * (gh[2] + params["b_n"]))
        h = n + z * (h - n)
        force = params["w_out"] @ h + params["b_out"]
        new = (pos + dt * vel, vel + dt * force, queue, h)
        return new, (pos, vel, force, h)

    vel0 = jnp.zeros(2)
    queue = jnp.broadcast_to(jnp.concatenate([init_pos, vel0]), (delay, 4))
    carry = (init_pos, vel0, queue, jnp.zeros(hidden_size))
    _, (pos, vel, force, h) = jax.lax.scan(step, carry, None, length=n_steps)
    return pos, vel, force, h


def loss(params, init_pos, goal, *, n_steps, delay, dt):
    pos, vel, force, h = jax.vmap(
        lambda p, g: rollout(params, p, g, n_steps=n_steps, delay=delay, dt=dt)
    )(init_pos, goal)
    discount = (jnp.arange(1, n_steps + 1) / n_steps) ** 6
    position = jnp.mean(jnp.sum(jnp.sum((pos - goal[:, None]) ** 2, -1) * discount, -1))
    final_velocity = jnp.mean(jnp.sum(vel[:, -1] ** 2, -1))
    effort = jnp.mean(jnp.sum(force**2, (-2, -1)))
    activity = jnp.mean(jnp.sum(h**2, (-2, -1)))
    return position + final_velocity + 1e-5 * effort + 1e-5 * activity


def make_step(*, n_steps: int, delay: int, dt: float, learning_rate: float = 1e-2):
    """A jitted ``step(params, opt_state, init_pos, goal) -> (params, opt_state, loss)``.

    `init_pos` and `goal` are `(replicate, trial, 2)`.
    """
    optimizer = optax.adam(learning_rate)

    def one(params, opt_state, init_pos, goal):
        value, grads = jax.value_and_grad(loss)(
            params, init_pos, goal, n_steps=n_steps, delay=delay, dt=dt
        )
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, value

    return optimizer, jax.jit(jax.vmap(one))
