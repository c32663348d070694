"""e-prop under interventions on the units: a held unit's state does not depend on the
weights, so its eligibility traces are zero while it is held and a frozen unit keeps
its traces; with those traces e-prop stays exact where it was exact without them."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import replicate_batch, tiny_model_config, tiny_train_config

import motorflow as mf
from motorflow._config import check_training_fits_task
from motorflow._model._attribute_paths import attribute_getter
from motorflow._model._ensemble import take_replicate
from motorflow._training.rules import BPTT, EProp, eligibility_gradient
from motorflow._training.rules._eprop_gru import GRUWeights, gru_eligibility_gradient
from motorflow._training.rules._eprop_leaky import CellWeights, filtered_eligibility_gradient

# Each kind of intervention on chosen units of an 8-unit network (12 steps of 50 ms):
# held at a value over steps 2-5, frozen at its state over steps 3-6, silenced, and
# pushed by a stimulation and by extra noise (which leave the derivatives alone).
INTERVENTIONS = [
    {"kind": "clamp", "units": [0, 2], "value": 0.3, "start": 0.1, "duration": 0.2},
    {"kind": "clamp", "at": "start", "units": [1], "start": 0.15, "duration": 0.2},
    {"kind": "lesion", "units": [3]},
    {"kind": "stimulation", "units": [4], "amplitude": 0.5, "start": 0.1, "duration": 0.1},
    {"kind": "unit_noise", "units": [5], "std": 0.1, "start": 0.2, "duration": 0.1},
]
UNIT_PATHS = {"rnn": "network.cell", "leaky": "network.cell.rnn", "gru": "network.cell.gru"}


def _task(perturbations=INTERVENTIONS) -> mf.Task:
    return mf.Task(
        mf.TaskConfig.from_dict(
            {"n_steps": 12, "eval": {"n_directions": 4}, "perturbations": perturbations}
        )
    )


def _setup(cell: str, *, network_paths: bool = True, perturbations=INTERVENTIONS):
    """A task under `perturbations`, the training config and a one-replicate ensemble
    of `cell`; without `network_paths` its recurrent weights and feedback input
    weights are zero (the output then reaches a weight only through its own unit)."""
    task = _task(perturbations)
    config = tiny_train_config(n_replicates=1, learning={"kind": "eprop"})
    ensemble = mf.make_ensemble(
        tiny_model_config(cell=cell),
        n_replicates=1,
        n_task_inputs=task.n_inputs,
        key=jax.random.key(3),
    )
    if not network_paths:
        get = attribute_getter(UNIT_PATHS[cell])
        rec, inp = ("weight_hh", "weight_ih") if cell == "gru" else ("weight_rec", "weight_in")
        unit = get(ensemble)
        n_task = getattr(unit, inp).shape[-1] - 4  # the feedback is the last 4 inputs
        ensemble = eqx.tree_at(
            lambda m: (getattr(get(m), rec), getattr(get(m), inp)),
            ensemble,
            (jnp.zeros_like(getattr(unit, rec)), getattr(unit, inp).at[..., n_task:].set(0.0)),
        )
    return task, config, ensemble


def _value_and_grad(rule, task, config, ensemble, *, state=None):
    """`rule`'s loss and gradient on replicate 0's batch of 6 trials, noise on."""
    params, batch = replicate_batch(ensemble, task, config)
    return rule.value_and_grad(batch, params, state)


def _held_masks(n_steps: int, n_units: int):
    """Unit 0 held over steps 2-3, unit 1 frozen over steps 2-3, as `held` gives them."""
    reached = np.ones((n_steps, n_units), np.float32)
    kept = np.zeros((n_steps, n_units), np.float32)
    reached[2:4, :2] = 0.0
    kept[2:4, 1] = 1.0
    return jnp.asarray(reached), jnp.asarray(kept)


def _traces_by_step(gradient, n_steps: int, n_units: int, *args, **kwargs):
    """Each step's traces: the update of a learning signal 1 at that step only."""
    signals = jnp.eye(n_steps)[:, :, None] * jnp.ones(n_units)
    return jax.vmap(lambda signal: gradient(*args, signal, **kwargs))(signals)


def test_a_held_units_trace_is_zero_while_held_and_a_frozen_units_is_kept():
    # The traces of both units' input weights step by step: unit 0's vanish while held
    # (its state is the hold's, whatever the weights) and grow again after it; unit
    # 1's stay at their value before the freeze (its state is its state before).
    n_steps, n_units, n_inputs = 6, 2, 3
    keys = jax.random.split(jax.random.key(0), 4)
    x = jax.random.normal(keys[0], (n_steps, n_inputs))
    hidden = 0.5 * jax.random.normal(keys[1], (n_steps, n_units))
    held = _held_masks(n_steps, n_units)
    tanh = CellWeights(
        jax.random.normal(keys[2], (n_units, n_inputs)), 0.3 * jnp.eye(n_units), jnp.zeros(n_units)
    )
    gru = GRUWeights(
        jax.random.normal(keys[3], (3 * n_units, n_inputs)),
        jnp.full((3 * n_units, n_units), 0.3),  # (a reset gate acts on the recurrence)
        jnp.zeros(3 * n_units),
        jnp.full(n_units, 0.2),
    )
    for traces, free in (
        (
            _traces_by_step(
                eligibility_gradient, n_steps, n_units, tanh, 0.4, x, hidden, held=held
            ),
            _traces_by_step(eligibility_gradient, n_steps, n_units, tanh, 0.4, x, hidden),
        ),
        (
            _traces_by_step(gru_eligibility_gradient, n_steps, n_units, gru, x, hidden, held=held),
            _traces_by_step(gru_eligibility_gradient, n_steps, n_units, gru, x, hidden),
        ),
    ):
        rows = traces.weight_in if isinstance(traces, CellWeights) else traces.weight_ih
        rows = rows.reshape(n_steps, -1, n_units, n_inputs)  # the GRU's gates' rows apart
        np.testing.assert_array_equal(rows[2:4, :, 0], 0.0)
        assert np.all(np.abs(rows[4, :, 0]) > 0)
        np.testing.assert_array_equal(rows[2, :, 1], rows[1, :, 1])
        np.testing.assert_array_equal(rows[3, :, 1], rows[1, :, 1])
        # Before the window the traces are the free ones.
        free_rows = free.weight_in if isinstance(free, CellWeights) else free.weight_ih
        free_rows = free_rows.reshape(n_steps, -1, n_units, n_inputs)
        np.testing.assert_allclose(rows[:2], free_rows[:2], rtol=1e-6)
        assert not np.allclose(rows[4:, :, 1], free_rows[4:, :, 1])


def test_the_traceless_sum_equals_the_traces_under_held_units():
    # The filtered form (no traces: the learning signal filtered backward) is the
    # traced form's sum, with the holds' and freezes' decays in its filter.
    n_trials, n_steps, n_units, n_inputs = 3, 7, 2, 3
    keys = jax.random.split(jax.random.key(1), 5)
    weights = CellWeights(
        jax.random.normal(keys[0], (n_units, n_inputs)),
        0.5 * jax.random.normal(keys[1], (n_units, n_units)),
        jnp.full(n_units, 0.1),
    )
    x = jax.random.normal(keys[2], (n_trials, n_steps, n_inputs))
    hidden = 0.5 * jax.random.normal(keys[3], (n_trials, n_steps, n_units))
    signal = jax.random.normal(keys[4], (n_trials, n_steps, n_units))
    held = jax.tree.map(lambda m: jnp.stack([m] * n_trials), _held_masks(n_steps, n_units))
    filtered = filtered_eligibility_gradient(weights, 0.4, x, hidden, signal, held=held)
    traced = jax.vmap(lambda x, h, s, held: eligibility_gradient(weights, 0.4, x, h, s, held=held))(
        x, hidden, signal, held
    )
    for found, want in zip(jax.tree.leaves(filtered), jax.tree.leaves(traced), strict=True):
        np.testing.assert_allclose(found, np.sum(want, axis=0), rtol=1e-5, atol=1e-6)
    free = filtered_eligibility_gradient(weights, 0.4, x, hidden, signal)
    assert not np.allclose(free.weight_in, filtered.weight_in)


@pytest.mark.parametrize("cell", ["leaky", "gru"])  # (rnn: the leaky form with a = 1)
def test_symmetric_eprop_under_interventions_is_bptt_when_no_network_path_is_cut(cell):
    # With no recurrent weights and no weight on the feedback e-prop cuts no path, so
    # its gradient is BPTT's, which differentiates through the holds, the freeze,
    # the lesion, the stimulation and the noise. Broken on purpose (the traces run
    # as if no unit were held) the held units' weights get a gradient BPTT's lacks.
    task, config, ensemble = _setup(cell, network_paths=False)
    _, eprop, _ = _value_and_grad(EProp(feedback="symmetric"), task, config, ensemble)
    _, exact, _ = _value_and_grad(BPTT(), task, config, ensemble)
    for found, want in zip(jax.tree.leaves(eprop), jax.tree.leaves(exact), strict=True):
        np.testing.assert_allclose(found, want, rtol=2e-4, atol=1e-7)
    # The lesioned unit's input weights get no gradient; the others do.
    unit = attribute_getter(UNIT_PATHS[cell])(eprop)
    rows = getattr(unit, "weight_ih" if cell == "gru" else "weight_in")
    rows = np.asarray(rows).reshape(-1, 8, rows.shape[-1])
    np.testing.assert_array_equal(rows[:, 3], 0.0)
    assert np.all(np.any(rows[:, [0, 1, 4, 5, 6]] != 0, axis=-1))


@pytest.mark.parametrize("cell", ["leaky", "gru"])
def test_the_online_form_and_its_pieces_give_the_offline_update_under_interventions(cell):
    # On the point mass the online form credits each output as the offline one does,
    # whole or piece by piece (pieces of 5 steps cut through the holds' windows), with
    # every network path on and random feedback.
    task, config, ensemble = _setup(cell)
    state = EProp().init(take_replicate(ensemble, 0), key=jax.random.key(8))
    offline = _value_and_grad(EProp(), task, config, ensemble, state=state)[1]
    for rule in (EProp(online=True), EProp(online=True, segment_steps=5)):
        online = _value_and_grad(rule, task, config, ensemble, state=state)[1]
        for found, want in zip(jax.tree.leaves(online), jax.tree.leaves(offline), strict=True):
            np.testing.assert_allclose(found, want, rtol=1e-4, atol=1e-6)
    unit = attribute_getter(UNIT_PATHS[cell])(offline)
    rows = getattr(unit, "weight_ih" if cell == "gru" else "weight_in")
    np.testing.assert_array_equal(np.asarray(rows).reshape(-1, 8, rows.shape[-1])[:, 3], 0.0)


def test_eprop_trains_under_interventions_and_never_moves_a_lesioned_units_weights():
    task, _, ensemble = _setup("leaky")
    config = tiny_train_config(
        n_replicates=1,
        n_batches=6,
        batch_size=4,
        learning={"kind": "eprop"},
        validation={"every": 3},
        log={"every": 3},
        checkpoint={"every": 3},
    )
    trials = task.training_trials(key=jax.random.key(0), n_replicates=1, n_batches=6, batch_size=4)
    result = mf.train(ensemble, trials, task, config, key=jax.random.key(2), progress=False)
    assert np.isfinite(result.history["loss"]["total"]).all()
    get = attribute_getter("network.cell.rnn.weight_in")
    before, after = np.asarray(get(ensemble)), np.asarray(get(result.ensemble))
    np.testing.assert_array_equal(after[:, 3], before[:, 3])
    assert np.all(np.any(after[:, [0, 4, 6]] != before[:, [0, 4, 6]], axis=-1))


def test_eprop_takes_interventions_on_units_and_refuses_a_readout_spaces_clamp():
    train = mf.TrainConfig.from_dict({"learning": {"kind": "eprop"}})
    check_training_fits_task(train, _task().config)  # raises if refused
    space = [{"kind": "clamp", "space": "output_potent", "start": 0.1, "duration": 0.2}]
    with pytest.raises(mf.ConfigError, match="output_potent"):
        check_training_fits_task(train, _task(space).config)
