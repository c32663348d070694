"""Target outputs for rules that regress the readout onto a desired output (RLS).

The effector should follow a minimum-jerk path from its start to the goal (Flash &
Hogan 1985, J Neurosci 5(7):1688), starting at the go cue (the first step on tasks
without one) and lasting `movement_time`, then rest on the goal. The target output at
each step is the control that makes the plant follow that path: its inverse
dynamics, found from the plant's own vector field. For a plant whose state
derivative is affine in the control (a point mass: ``u = m a + b v``; a torque-driven
arm: ``tau = M(q) q'' + C(q, q') q' + B q'``), the least-squares solution of
``f(x(t), u) = x'(t)`` for `u` is exact.

That target is open-loop: it is the same whatever the effector does. The corrective
target (:func:`corrective_outputs`) is the control of computed-torque control
(inverse dynamics plus proportional-derivative feedback on the tracking error; e.g.
Slotine & Li 1991, Applied Nonlinear Control, section 9.1): the inverse dynamics,
at the effector's current state, of the path's acceleration corrected by the
current position and velocity errors, which an effector that strays is pulled back
by and that holds it on the goal after the reach.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree
from jaxtyping import Array, Float, Int

from ..._model._loop import ClosedLoop
from ..._tasks import Trials


def minimum_jerk(
    start: Float[Array, " xy"], goal: Float[Array, " xy"], time: Float[Array, ""], duration: float
) -> Float[Array, " xy"]:
    """The minimum-jerk position at `time` (s) of a move of `duration` from `start` to `goal`."""
    s = jnp.clip(time / duration, 0.0, 1.0)
    return start + (goal - start) * (10 * s**3 - 15 * s**4 + 6 * s**5)


def inverse_dynamics(model: ClosedLoop, path, time: Float[Array, ""]) -> Float[Array, " control"]:
    """The control that makes `model.plant` follow `path` (time -> effector position) at `time`."""
    plant = model.plant

    def velocity(t):
        return jax.jvp(path, (t,), (jnp.ones_like(t),))[1]

    def state_at(t):
        return plant.init(path(t), velocity(t))

    state, rate = jax.jvp(state_at, (time,), (jnp.ones_like(time),))
    no_force = jnp.zeros(2, time.dtype)
    control0 = jnp.zeros(plant.n_controls, time.dtype)

    def derivative(control):
        return ravel_pytree(plant.vector_field(state, control, no_force))[0]

    jacobian = jax.jacfwd(derivative)(control0)
    wanted = ravel_pytree(rate)[0] - derivative(control0)
    return jnp.linalg.lstsq(jacobian, wanted)[0]


def target_outputs(
    model: ClosedLoop, trial: Trials, steps: Int[Array, " time"], movement_time: float
) -> Float[Array, "time control"]:
    """One trial's target network output at each of `steps` (see the module docstring)."""
    go_step = 0 if trial.go_step is None else trial.go_step
    times = (steps - go_step) * model.dt

    def path(t):
        return minimum_jerk(trial.init_pos, trial.goal_pos, t, movement_time)

    return jax.vmap(lambda t: inverse_dynamics(model, path, t))(times.astype(trial.init_pos.dtype))


def _reference(trial: Trials, steps, model: ClosedLoop, movement_time: float):
    go_step = 0 if trial.go_step is None else trial.go_step
    times = ((steps - go_step) * model.dt).astype(trial.init_pos.dtype)

    def path(t):
        return minimum_jerk(trial.init_pos, trial.goal_pos, t, movement_time)

    return path, times


def corrective_outputs(
    model: ClosedLoop,
    trial: Trials,
    steps: Int[Array, " time"],
    movement_time: float,
    pos: Float[Array, "time 2"],
    vel: Float[Array, "time 2"],
    *,
    stiffness: float,
    damping: float,
) -> Float[Array, "time control"]:
    """One trial's corrective target output at each of `steps`, the effector being at
    (`pos`, `vel`) there: the control that gives it the acceleration
    ``a*(t) + stiffness (p*(t) - pos) + damping (v*(t) - vel)`` (``p*``, ``v*``, ``a*``
    the minimum-jerk path's; see the module docstring)."""
    path, times = _reference(trial, steps, model, movement_time)

    def one(time, here, speed):
        (wanted_pos, wanted_vel), (_, wanted_acc) = jax.jvp(
            lambda t: jax.jvp(path, (t,), (jnp.ones_like(t),)), (time,), (jnp.ones_like(time),)
        )
        acceleration = wanted_acc + stiffness * (wanted_pos - here) + damping * (wanted_vel - speed)

        def local(t):
            # The path through the current state with that acceleration.
            return here + speed * t + 0.5 * acceleration * t**2

        return inverse_dynamics(model, local, jnp.zeros_like(time))

    return jax.vmap(one)(times, pos.astype(times.dtype), vel.astype(times.dtype))
