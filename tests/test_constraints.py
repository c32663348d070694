"""Weight constraints: each projection, and that they hold from initialisation on."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import assert_trees_equal, raises_config_error

import motorflow as mf
import motorflow.pipeline as mfp
from motorflow._training.constraints import (
    Connectivity,
    Constraints,
    Dale,
    SpectralNorm,
    SpectralRadius,
)

CAP = 0.1
CONSTRAINED = [
    {"kind": "spectral_radius", "max": CAP},
    {"kind": "dale", "excitatory_fraction": 0.75, "readout": True},
    {"kind": "connectivity", "density": 0.5, "self_connections": False},
]


def radius(weight):
    return np.max(np.abs(np.linalg.eigvals(np.asarray(weight, np.float64))), axis=-1)


def assert_obeys(recurrent, readout, masks):
    """`recurrent` (replicate, post, pre) and `readout` obey CONSTRAINED (8 hidden units)."""
    recurrent, readout = np.asarray(recurrent), np.asarray(readout)
    assert (recurrent[..., :6] >= 0).all() and (recurrent[..., 6:] <= 0).all()
    assert (readout[..., :6] >= 0).all() and (readout[..., 6:] <= 0).all()
    assert (recurrent[~masks] == 0).all()
    assert (radius(recurrent) <= CAP * (1 + 1e-5)).all()


def test_dale_zeroes_the_weights_of_the_wrong_sign_per_presynaptic_unit():
    weight = jnp.array([[1.0, -2.0, 3.0, -4.0], [-1.0, 2.0, -3.0, 4.0]])
    recurrent, readout = Dale(excitatory_fraction=0.5).apply(weight, weight, None)
    np.testing.assert_array_equal(recurrent, [[1.0, 0.0, 0.0, -4.0], [0.0, 2.0, -3.0, 0.0]])
    np.testing.assert_array_equal(readout, weight)  # the readout only with readout: true
    _, readout = Dale(excitatory_fraction=0.5, readout=True).apply(weight, weight, None)
    np.testing.assert_array_equal(readout, recurrent)


def test_connectivity_draws_a_mask_of_the_density_without_self_connections():
    constraint = Connectivity(density=0.3, self_connections=False)
    mask = np.asarray(constraint.prepare(200, key=jax.random.key(1)))
    assert abs(mask.mean() - 0.3) < 0.01 and not mask.diagonal().any()
    assert not np.array_equal(mask, constraint.prepare(200, key=jax.random.key(2)))
    weight = jnp.ones((200, 200))
    np.testing.assert_array_equal(constraint.apply(weight, weight, mask)[0], mask)


@pytest.mark.parametrize(
    ("constraint", "measure"),
    [
        (SpectralRadius(max=0.5), radius),
        (SpectralNorm(max=0.5), lambda w: np.linalg.norm(np.asarray(w), ord=2)),
    ],
)
def test_a_cap_rescales_only_weights_above_it(constraint, measure):
    weight = jax.random.normal(jax.random.key(0), (20, 20))
    capped, _ = constraint.apply(weight, weight, None)
    np.testing.assert_allclose(measure(capped), 0.5, rtol=1e-4)
    np.testing.assert_allclose(capped / weight, capped[0, 0] / weight[0, 0], rtol=1e-5)
    small = weight * 0.1 / measure(weight)
    np.testing.assert_array_equal(constraint.apply(small, small, None)[0], small)


def test_constraints_hold_from_initialisation_and_after_every_update(tiny):
    setup = tiny(network={"cell": "rnn"}, constraints=CONSTRAINED)
    trainer = mf.Trainer(setup.ensemble, setup.task, setup.config, constraint_key=jax.random.key(3))
    masks = np.asarray(trainer.constraints.prepared[1])  # sorted: projections first
    state = trainer.init(key=setup.train_key)
    batches = jax.tree.map(lambda x: np.swapaxes(np.asarray(x), 0, 1), setup.trials)
    for batch in range(8):
        model = trainer.ensemble(state.params)
        assert_obeys(model.network.cell.weight_rec, model.network.readout.weight, masks)
        one_batch = jax.tree.map(lambda x, b=batch: x[b : b + 1], batches)
        before = state.params
        state, _ = trainer.run_chunk(state, one_batch, jnp.array([batch]))
        assert not np.array_equal(
            state.params.network.cell.weight_rec, before.network.cell.weight_rec
        )
    # The caps were binding: some replicate sits at the cap.
    assert np.isclose(radius(trainer.ensemble(state.params).network.cell.weight_rec), CAP).any()


def test_training_with_every_control_resumes_bitwise_and_stays_constrained(tiny, tmp_path):
    setup = tiny(
        network={"cell": "leaky"},
        constraints=CONSTRAINED,
        on_divergence="isolate",
        trainable=["network.readout"],
        stages=[{"at": 15, "trainable": ["network"]}],
        optimizer={"learning_rates": {"network.cell": 0.003}, "clip_global_norm": 1.0},
        validation={"every": 5},
        checkpoint={"exponential": {"start": 3}},
        snapshots={"batches": {"times": 3}},
        gradient_norms="per_term",
        update_rules=[
            {"kind": "hebbian", "rate": 0.01, "batches": {"every": 2}},
            {"kind": "oja", "rate": 0.05, "target": "readout", "batches": {"at": [7, 21]}},
        ],
    )
    reference = setup.train()
    directory = tmp_path / "checkpoints"
    with pytest.raises(RuntimeError):
        setup.train(checkpoint_dir=directory, on_log=_raise_at(20))
    resumed = setup.train(checkpoint_dir=directory)
    # Exponential checkpoints at 3, 9 and 21: the interruption at 20 loses 10 batches.
    assert resumed.record["resumed_from_batch"] == 9
    assert_trees_equal(resumed.state, reference.state)
    assert_trees_equal(resumed.history, reference.history)
    weight = reference.ensemble.network.cell.rnn.weight_rec
    assert (np.asarray(weight)[..., :6] >= 0).all() and (radius(weight) <= CAP * 1.00001).all()
    best = reference.best_ensemble.network.cell.rnn.weight_rec
    assert (np.asarray(best)[..., 6:] <= 0).all()


def _raise_at(batch):
    def on_log(done, history):
        if done == batch:
            raise RuntimeError("interrupted")

    return on_log


def test_a_cell_without_one_recurrent_matrix_cannot_be_constrained():
    config = {
        "tasks": {"reach": {}},
        "models": {"gru": {}},
        "trainings": {"dale": {"constraints": [{"kind": "dale"}]}},
        "experiments": {"e": {"task": "reach", "model": "gru", "training": "dale"}},
    }
    with raises_config_error("experiments.e.training.constraints", "rnn or leaky"):
        mfp.resolve_experiments(config)
    ensemble = mf.make_ensemble(
        mf.ModelConfig(), n_replicates=1, n_task_inputs=2, key=jax.random.key(0)
    )
    with pytest.raises(mf.ConfigError, match="rnn or leaky"):
        Constraints((Dale(),), ensemble, key=jax.random.key(0))
    assert_trees_equal(
        eqx.filter(
            Constraints((), ensemble, key=jax.random.key(0)).apply_ensemble(ensemble), eqx.is_array
        ),
        eqx.filter(ensemble, eqx.is_array),
    )
