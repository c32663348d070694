"""The Hill-type muscle with a rigid tendon: fibre force from activation, fibre length and
velocity (Kistemaker, Wong & Gribble 2010), and first-order activation dynamics (Thelen
2003), as MotorNet implements them."""

from __future__ import annotations

import jax.numpy as jnp
from jaxtyping import Array, Float

# The muscle model is MotorNet's `RigidTendonHillMuscle` (motornet/muscle.py), the
# rigid-tendon version of the Hill model of Kistemaker, Wong & Gribble (2010), "The central
# nervous system does not minimize energy cost in arm movements", J Neurophysiol
# 104(6):2985-2994, doi:10.1152/jn.00483.2010; its activation dynamics are MotorNet's
# `Muscle.activation_ode`, after Thelen (2003), J Biomech Eng 125(1):70-77,
# doi:10.1115/1.1531112.

# Constants of Kistemaker et al.'s contractile and passive elements, fixed in MotorNet's class.
_FORCE_LENGTH_WIDTH = 0.66  # force-length parabola: 1 - ((l - 1) / width)^2, in optimal lengths
_MIN_FORCE_LENGTH = 0.01  # floor of the force-length factor
PASSIVE_REACH = 1.66  # optimal lengths at which the passive force reaches 1 max force (slack 1.4)
_HILL_A = 0.41  # a_rel of the concentric Hill hyperbola
_HILL_B = 5.2  # b_rel of the concentric Hill hyperbola, at activation >= _HILL_B_KNEE
_HILL_B_KNEE = 0.3  # below this activation b_rel shrinks (slower muscle)
_HILL_B_FLOOR = 5e-3  # activation where the b_rel scaling reaches its minimum
_ECCENTRIC_ASYMPTOTE = 1.5  # lengthening force tends to 1.5 x isometric force...
_ECCENTRIC_SLOPE = 0.001  # ...plus this slope per unit normalised velocity


def activation_rate(excitation, activation, tau_activation, tau_deactivation):
    """Thelen's first-order activation dynamics; faster at high activation when rising."""
    scale = 0.5 + 1.5 * activation
    tau = jnp.where(excitation > activation, tau_activation * scale, tau_deactivation / scale)
    return (excitation - activation) / tau


def hill_force(
    activation: Float[Array, "*muscle"],
    fibre_length: Float[Array, "*muscle"],
    fibre_velocity: Float[Array, "*muscle"],
    slack_length: Float[Array, "*muscle"] | float = 1.4,
) -> tuple[Float[Array, "*muscle"], Float[Array, "*muscle"]]:
    """Active and passive fibre force, in units of the maximum isometric force.

    Kistemaker et al. (2010)'s contractile element with a rigid tendon, as in MotorNet's
    `RigidTendonHillMuscle`: force-length parabola, a Hill hyperbola while shortening,
    a hyperbola tending to 1.5 x the isometric force while lengthening (slope at zero
    velocity twice the shortening side's), and a quadratic passive element beyond
    the slack length.

    **Arguments:**

    - `activation`: in (0, 1], any shape.
    - `fibre_length`: fibre length in optimal lengths, same shape.
    - `fibre_velocity`: fibre velocity in units of the maximum shortening velocity
      (positive = lengthening), same shape.
    - `slack_length`: fibre length (optimal lengths) where passive force starts.

    **Returns:** `(active, passive)`, each the shape of `activation`.
    """
    stretch = jnp.maximum(fibre_length - slack_length, 0.0)
    passive = stretch**2 / (PASSIVE_REACH - slack_length) ** 2
    force_length = jnp.maximum(
        1.0 - ((fibre_length - 1.0) / _FORCE_LENGTH_WIDTH) ** 2, _MIN_FORCE_LENGTH
    )
    isometric = activation * force_length

    hill_a = jnp.where(fibre_length > 1.0, _HILL_A * force_length, _HILL_A)
    low_activation = (activation - _HILL_B_KNEE) / (_HILL_B_FLOOR - _HILL_B_KNEE)
    hill_b = jnp.where(
        activation < _HILL_B_KNEE, _HILL_B * (1.0 - 0.9 * low_activation) ** 2, _HILL_B
    )
    # Each branch sees only velocities of its own sign, so neither divides by zero and
    # the unused branch cannot poison gradients.
    shortening = jnp.minimum(fibre_velocity, 0.0)
    lengthening = jnp.maximum(fibre_velocity, 0.0)
    concentric = (activation * hill_a * shortening + isometric * hill_b) / (hill_b - shortening)
    concentric_slope = activation * (force_length + hill_a) / hill_b
    # Hyperbola through the isometric force with slope 2 * concentric_slope at zero velocity.
    knee = 0.5 * isometric / (2.0 * concentric_slope - _ECCENTRIC_SLOPE)
    eccentric = (
        _ECCENTRIC_ASYMPTOTE * isometric
        + _ECCENTRIC_SLOPE * lengthening
        - 0.5 * isometric * knee / (knee + lengthening)
    )
    active = jnp.maximum(jnp.where(fibre_velocity < 0, concentric, eccentric), 0.0)
    return active, passive
