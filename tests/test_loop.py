import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import tiny_model_config

import motorflow as mf


def rollout(config, n_steps=15, seed=0):
    model = mf.build_model(config, n_task_inputs=2, key=jax.random.key(seed))
    goal = jnp.broadcast_to(jnp.array([0.3, -0.2]), (n_steps, 2))
    return model.rollout(jnp.array([0.1, 0.2]), jnp.array([0.5, -0.5]), goal, key=jax.random.key(1))


@pytest.mark.parametrize("cell", ["gru", "rnn", "leaky"])
def test_rollout_returns_every_state_with_its_shape(cell):
    states = rollout(tiny_model_config(cell=cell), n_steps=15)
    assert states.pos.shape == states.vel.shape == states.control.shape == (15, 2)
    assert states.output.shape == (15, 2) and states.hidden.shape == (15, 8)
    assert states.feedback.shape == (15, 4)
    np.testing.assert_array_equal(states.pos[0], np.float32([0.1, 0.2]))
    np.testing.assert_array_equal(states.vel[0], np.float32([0.5, -0.5]))
    assert np.isfinite(np.asarray(states.hidden)).all()


@pytest.mark.parametrize("delay", [0, 1, 3])
def test_feedback_at_step_t_is_the_state_at_t_minus_delay(delay):
    config = mf.ModelConfig.from_dict({"network": {"hidden_size": 8}, "feedback": {"delay": delay}})
    states = rollout(config)
    observed = np.concatenate([states.pos, states.vel], axis=-1)
    for t in range(15):
        np.testing.assert_array_equal(states.feedback[t], observed[max(t - delay, 0)])


def test_feedback_noise_is_added_to_the_delayed_state():
    config = mf.ModelConfig.from_dict(
        {"network": {"hidden_size": 8}, "feedback": {"delay": 2, "noise_std": 0.1}}
    )
    states = rollout(config, n_steps=400)
    observed = np.concatenate([states.pos, states.vel], axis=-1)
    noise = np.asarray(states.feedback[2:]) - observed[:-2]
    assert abs(noise.std() - 0.1) < 0.01
    assert abs(noise.mean()) < 0.01


def test_hidden_noise_changes_the_trajectory_only_when_set():
    quiet = rollout(tiny_model_config())
    noisy = rollout(tiny_model_config(hidden_noise_std=0.5))
    again = rollout(tiny_model_config(hidden_noise_std=0.5))
    assert not np.allclose(quiet.hidden, noisy.hidden)
    np.testing.assert_array_equal(noisy.hidden, again.hidden)


def test_force_moves_the_body_in_the_rollout():
    states = rollout(tiny_model_config())
    dt = 0.05
    np.testing.assert_allclose(states.vel[1], states.vel[0] + dt * states.control[0], rtol=1e-6)
    np.testing.assert_allclose(states.pos[1], states.pos[0] + dt * states.vel[0], rtol=1e-6)


def test_leaky_cell_with_tau_equal_dt_is_the_vanilla_cell():
    key = jax.random.key(3)
    leaky = mf.LeakyCell(6, 8, dt=0.05, tau=0.05, key=key)
    vanilla = mf.VanillaCell(6, 8, key=key)
    x, h = jnp.ones(6), jnp.linspace(-1, 1, 8)
    np.testing.assert_allclose(leaky(x, h), vanilla(x, h), rtol=1e-6)
    assert eqx.tree_equal(leaky.rnn, vanilla)
