"""Delayed, noisy sensory feedback of the effector's position and velocity."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PRNGKeyArray

from ._setting import Setting

N_FEEDBACK = 4  # position (x, y), velocity (x, y)


class FeedbackChannel(eqx.Module):
    """A delay line of `delay` steps with additive Gaussian noise.

    The queue holds the last `delay` observations, oldest first, and starts filled
    with the initial one, so at step t the channel returns the observation of step
    ``max(t - delay, 0)`` plus noise.

    **Arguments:**

    - `delay`: delay in steps (>= 0; 0 passes the current state through).
    - `noise_std`: std of the additive Gaussian noise on every channel (an array
      :class:`Setting`, so that noise levels share compiled programs).
    """

    delay: int = eqx.field(static=True)
    noise_std: Setting

    def init(self, observation: Float[Array, " feedback"]) -> Float[Array, "delay feedback"]:
        """A queue filled with `observation`."""
        return jnp.broadcast_to(observation, (self.delay, observation.shape[-1]))

    def __call__(
        self,
        queue: Float[Array, "delay feedback"],
        observation: Float[Array, " feedback"],
        *,
        key: PRNGKeyArray,
    ) -> tuple[Float[Array, "delay feedback"], Float[Array, " feedback"]]:
        """Push `observation`; return the new queue and the delayed, noisy feedback."""
        line = jnp.concatenate([queue, observation[None]], axis=0)
        delayed = line[0]
        if self.noise_std.nonzero:
            delayed = delayed + self.noise_std.value * jax.random.normal(key, delayed.shape)
        return line[1:], delayed
