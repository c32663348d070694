"""FORCE's reservoir (Sussillo & Abbott 2009): sparse chaotic recurrence, sub-steps and
the output fed back."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import motorflow as mf


def _reservoir_model(substeps: int = 1, **cell) -> mf.ClosedLoop:
    config = mf.ModelConfig.from_dict(
        {
            "dt": 0.05,
            "plant": {"kind": "point_mass"},
            "network": {
                "cell": {"kind": "reservoir", "tau": 0.05, **cell},
                "hidden_size": 400,
                "substeps": substeps,
            },
        }
    )
    return mf.build_model(config, n_task_inputs=2, key=jax.random.key(3))


def test_recurrent_weights_are_sparse_with_the_papers_variance():
    cell = _reservoir_model(connectivity=0.1).network.cell
    weights = np.asarray(cell.weight_rec)
    nonzero = weights[weights != 0]
    # Each entry nonzero with probability p = 0.1, nonzero ones N(0, 1/(p N)).
    assert nonzero.size / weights.size == pytest.approx(0.1, abs=0.01)
    assert nonzero.std() == pytest.approx(1 / np.sqrt(0.1 * 400), rel=0.05)


def _spontaneous_activity(gain: float) -> float:
    """RMS rate of the reservoir, no input, after 20 s from a random state."""
    cell = _reservoir_model(gain=gain, substeps=10).network.cell
    hidden = 0.5 * jax.random.normal(jax.random.key(0), (cell.hidden_size,))

    def one(hidden, _):
        return cell(jnp.zeros(6), hidden), None

    hidden, _ = jax.lax.scan(one, hidden, None, length=4000)
    return float(jnp.sqrt(jnp.mean(hidden**2)))


def test_the_reservoir_is_chaotic_above_gain_one_and_quiet_below():
    # Sussillo & Abbott's premise: with g > 1 the network generates its own activity
    # (here an RMS rate of about 0.4 at g = 1.5); with g < 1 it decays to rest.
    # Broken on purpose (the gain not applied to the recurrent drive: g = 1, the edge
    # of chaos), the activity has fallen to an RMS of 0.11 after 20 s and the first
    # assertion fails.
    assert _spontaneous_activity(1.5) > 0.2
    assert _spontaneous_activity(0.8) < 1e-3


def test_sub_steps_integrate_the_cell_with_a_finer_step():
    coarse = _reservoir_model(tau=0.5).network
    fine = _reservoir_model(tau=0.5, substeps=10).network
    # Same weights, the fine cell's step a tenth of the coarse one's.
    np.testing.assert_array_equal(coarse.cell.weight_rec, fine.cell.weight_rec)
    assert fine.cell.alpha == pytest.approx(coarse.cell.alpha / 10)
    inputs = jax.random.normal(jax.random.key(1), (6,))
    hidden = 0.3 * jax.random.normal(jax.random.key(2), (400,))
    expected = hidden
    for _ in range(10):
        expected = fine.cell(inputs, expected)
    got, output = fine(inputs, hidden, key=jax.random.key(0))
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    np.testing.assert_allclose(output, fine.readout(got), rtol=1e-6)


def test_the_output_is_fed_back_into_the_reservoir():
    """With output feedback the hidden state depends on the readout (FORCE's loop);
    without it, not. Broken on purpose (the drive not passed to the cell), the
    first assertion fails."""
    model = _reservoir_model(output_feedback=True, substeps=5)
    network = model.network
    feedback = np.asarray(network.output_feedback)
    assert feedback.shape == (400, 2)
    assert feedback.min() >= -1 and feedback.max() <= 1 and feedback.std() > 0.5
    inputs = jnp.ones(6)
    hidden = 0.3 * jax.random.normal(jax.random.key(2), (400,))
    scaled = jax.tree.map(lambda x: 3 * x, network.readout)
    changed = eqx.tree_at(lambda n: n.readout, network, scaled)
    key = jax.random.key(0)
    assert not np.allclose(network(inputs, hidden, key=key)[0], changed(inputs, hidden, key=key)[0])
    plain = _reservoir_model(substeps=5).network
    plain_changed = eqx.tree_at(lambda n: n.readout, plain, scaled)
    np.testing.assert_array_equal(
        plain(inputs, hidden, key=key)[0], plain_changed(inputs, hidden, key=key)[0]
    )


def test_output_feedback_needs_the_reservoir_cell():
    with pytest.raises(mf.ConfigError, match="network.cell.output_feedback") as error:
        mf.ModelConfig.from_dict(
            {"network": {"cell": {"kind": "leaky", "output_feedback": True}}}
        )
    assert "a setting of the reservoir cell, not of the leaky cell" in str(error.value)


def test_defaults_build_todays_network():
    # The new keys default to one step per step and no feedback: the leaky network
    # steps as before.
    config = mf.ModelConfig.from_dict({"network": {"cell": "leaky", "hidden_size": 8}})
    network = mf.build_model(config, n_task_inputs=2, key=jax.random.key(0)).network
    assert network.n_substeps == 1 and network.output_feedback is None
    assert network.cell.alpha == pytest.approx(config.dt / config.network.cell.tau)
    inputs, hidden = jnp.ones(6), jnp.zeros(8)
    got, _ = network(inputs, hidden, key=jax.random.key(0))
    np.testing.assert_array_equal(got, network.cell(inputs, hidden))
