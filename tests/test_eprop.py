"""e-prop: forward eligibility traces against hand-derived values and against BPTT."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import assert_trees_equal, tiny_model_config, tiny_task, tiny_train_config

import motorflow as mf
from motorflow._model._attribute_paths import attribute_getter
from motorflow._model._ensemble import take_replicate
from motorflow._model._loop import Probe
from motorflow._training.rules import BPTT, EProp, eligibility_gradient
from motorflow._training.rules._eprop_gru import GRUWeights, gru_eligibility_gradient
from motorflow._training.rules._eprop_leaky import CellWeights, filtered_eligibility_gradient


def test_the_traces_give_the_hand_derived_update_of_a_one_unit_leaky_network():
    # h(t) = (1 - a) h(t-1) + a tanh(w x(t) + u h(t-1) + b), h(-1) = 0. By hand, the
    # trace of a weight with presynaptic value z is
    # e(t) = sum_{s <= t} (1 - a)^(t - s) a tanh'(v(s)) z(s), the update sum_t L(t) e(t).
    a, w, u, b = 0.3, 0.8, -0.5, 0.1
    x = np.array([0.4, -1.0, 0.7])
    signal = np.array([0.2, -0.6, 1.5])
    h, v = [], []
    previous = 0.0
    for x_t in x:
        v.append(w * x_t + u * previous + b)
        previous = (1 - a) * previous + a * np.tanh(v[-1])
        h.append(previous)
    h_before = np.array([0.0, *h[:-1]])
    slope = a * (1 - np.tanh(np.array(v)) ** 2)

    def by_hand(z):
        return sum(
            signal[t] * sum((1 - a) ** (t - s) * slope[s] * z[s] for s in range(t + 1))
            for t in range(3)
        )

    found = eligibility_gradient(
        CellWeights(jnp.array([[w]]), jnp.array([[u]]), jnp.array([b])),
        a,
        jnp.asarray(x)[:, None],
        jnp.asarray(h)[:, None],
        jnp.asarray(signal)[:, None],
    )
    np.testing.assert_allclose(found.weight_in[0, 0], by_hand(x), rtol=1e-5)
    np.testing.assert_allclose(found.weight_rec[0, 0], by_hand(h_before), rtol=1e-5)
    np.testing.assert_allclose(found.bias[0], by_hand(np.ones(3)), rtol=1e-5)


def test_a_clipped_trace_never_exceeds_its_bound():
    weights = CellWeights(jnp.ones((2, 3)), jnp.zeros((2, 2)), jnp.zeros(2))
    x = jnp.full((5, 3), 0.1)
    hidden = jnp.zeros((5, 2))
    # A unit signal at the last step only: the update is the last trace itself.
    signal = jnp.zeros((5, 2)).at[-1].set(1.0)
    free = eligibility_gradient(weights, 0.1, x, hidden, signal)
    clipped = eligibility_gradient(weights, 0.1, x, hidden, signal, trace_clip=0.01)
    assert np.linalg.norm(free.weight_in) > 0.01
    np.testing.assert_allclose(np.linalg.norm(clipped.weight_in), 0.01, rtol=1e-5)


def _trainer(cell: str, learning: dict, **network):
    task = tiny_task()
    model_config = tiny_model_config(cell=cell, **network)
    config = tiny_train_config(n_replicates=1, learning=learning)
    ensemble = mf.make_ensemble(
        model_config, n_replicates=1, n_task_inputs=task.n_inputs, key=jax.random.key(3)
    )
    return task, config, ensemble


def _batch(ensemble, task, config):
    """Replicate 0's parameters and its batch of 6 trials, noise on."""
    trainer = mf.Trainer(ensemble, task, config)
    params = take_replicate(trainer.initial_params, 0)
    frozen = take_replicate(trainer.frozen, 0)
    trials = task.training_trials(key=jax.random.key(4), n_replicates=1, n_batches=1, batch_size=6)
    trials = jax.tree.map(lambda x: x[0, 0], trials)
    return params, trainer.replicate_batch(params, frozen, trials, key=jax.random.key(5))


def _gradients(ensemble, task, config, rule, *, state=None):
    params, batch = _batch(ensemble, task, config)
    return rule.value_and_grad(batch, params, state)[1]


def _without_network_paths(ensemble, cell: str):
    """No recurrence and no feedback input: the output depends on the task input alone."""
    get = attribute_getter({"rnn": "network.cell", "leaky": "network.cell.rnn"}[cell])
    unit = get(ensemble)
    n_task = unit.weight_in.shape[-1] - 4  # the feedback is the last 4 inputs
    return eqx.tree_at(
        lambda m: (get(m).weight_rec, get(m).weight_in),
        ensemble,
        (jnp.zeros_like(unit.weight_rec), unit.weight_in.at[..., n_task:].set(0.0)),
    )


@pytest.mark.parametrize("cell", ["rnn", "leaky"])
def test_symmetric_eprop_is_bptt_when_the_output_depends_on_no_network_path(cell):
    # With no recurrent weights and no weight on the feedback, the loss reaches a
    # weight only through its unit's own state, the readout and the plant: the paths
    # e-prop keeps. Its gradient must then be the exact one.
    task, config, ensemble = _trainer(cell, {"kind": "eprop", "feedback": "symmetric"})
    ensemble = _without_network_paths(ensemble, cell)
    eprop = _gradients(ensemble, task, config, EProp(feedback="symmetric"))
    exact = _gradients(ensemble, task, config, BPTT())
    for found, want in zip(jax.tree.leaves(eprop), jax.tree.leaves(exact), strict=True):
        np.testing.assert_allclose(found, want, rtol=2e-4, atol=1e-7)
    assert any(np.any(np.asarray(g) != 0) for g in jax.tree.leaves(eprop))


def test_with_recurrence_eprop_approximates_bptt():
    task, config, ensemble = _trainer("leaky", {"kind": "eprop", "feedback": "symmetric"})
    eprop = _gradients(ensemble, task, config, EProp(feedback="symmetric"))
    exact = _gradients(ensemble, task, config, BPTT())
    flat = [np.concatenate([np.ravel(g) for g in jax.tree.leaves(t)]) for t in (eprop, exact)]
    # An approximation: not the gradient, but not another quantity either. Measured
    # here, the correlation with the gradient: 0.990 over all arrays (the readout's
    # part, exact, weighs in). The unit's input weights, recurrent weights and bias,
    # which e-prop approximates: correlations 0.956, 0.971 and 0.970, norms 0.97,
    # 1.02 and 1.05 times the gradient's (traces without their memory: 0.59 to 0.64).
    assert not np.allclose(*flat)
    assert np.corrcoef(*flat)[0, 1] > 0.98
    for name in ("weight_in", "weight_rec", "bias"):
        get = attribute_getter(f"network.cell.rnn.{name}")
        found, want = (np.ravel(get(gradient)) for gradient in (eprop, exact))
        assert not np.allclose(found, want), name
        assert np.corrcoef(found, want)[0, 1] > 0.94, name
        assert 0.9 < np.linalg.norm(found) / np.linalg.norm(want) < 1.1, name


def test_random_feedback_is_drawn_from_the_learning_key_and_kept(tiny):
    setup = tiny(network={"cell": "leaky"}, n_batches=4, learning={"kind": "eprop"})
    result = setup.train()
    first = result.state.learning_state["feedback"]
    again = setup.train().state.learning_state["feedback"]
    np.testing.assert_array_equal(first, again)
    # One matrix (hidden, control) per replicate, each its own draw.
    assert first.shape == (3, 8, 2)
    assert not np.array_equal(first[0], first[1])
    # Training keeps the draw `train` makes before the first batch from its learning key.
    trainer = mf.Trainer(setup.ensemble, setup.task, setup.config)
    noise_key = jax.random.split(setup.train_key)[0]
    learning_key = jax.random.fold_in(setup.train_key, 3)
    drawn = trainer.init(key=noise_key, learning_key=learning_key).learning_state["feedback"]
    np.testing.assert_array_equal(first, drawn)
    # Random, not the readout's transpose (symmetric feedback), before training or after.
    for ensemble in (setup.ensemble, result.ensemble):
        symmetric = np.swapaxes(np.asarray(ensemble.network.readout.weight), 1, 2)
        assert symmetric.shape == first.shape
        assert not np.isclose(first, symmetric).any()


def test_a_probed_rollout_has_the_plain_rollouts_values():
    model = mf.build_model(tiny_model_config(cell="leaky"), n_task_inputs=2, key=jax.random.key(1))
    task_input = jnp.tile(jnp.asarray([0.3, -0.2]), (10, 1))
    probe = Probe(output=jnp.zeros((10, 2)), hidden=jnp.zeros((10, 8)))
    runs = [
        model.rollout(
            jnp.zeros(2),
            jnp.zeros(2),
            task_input,
            key=jax.random.key(2),
            options=mf.RolloutOptions(probe=p),
        )
        for p in (None, probe)
    ]
    assert_trees_equal(runs[0], runs[1])


def _gru_trial(key, n_in=3, n_hidden=4, n_steps=6):
    keys = jax.random.split(key, 3)
    cell = eqx.nn.GRUCell(n_in, n_hidden, key=keys[0])
    x = jax.random.normal(keys[1], (n_steps, n_in))
    signal = jax.random.normal(keys[2], (n_steps, n_hidden))
    return cell, x, signal


def test_the_gru_traces_are_autodiff_with_the_state_in_the_matrices_stopped():
    # The reference, independent of the hand-derived traces: equinox's own GRU step
    # with the state inside its matrices stopped (``cell(x, sg(h))``) plus the gated
    # self path ``u * (h - sg(h))`` (zero in value); autodiff of sum_t L(t) h(t)
    # through it is e-prop's sum_t L(t) e(t) (the LSTM recipe of Bellec et al. 2020's
    # code). Broken on purpose (decay 1 instead of u; the reset gate's c dropped; the
    # update gate's sign flipped) the comparison fails.
    cell, x, signal = _gru_trial(jax.random.key(0))
    hidden_size = cell.hidden_size

    def objective(cell):
        def step(h, xs):
            x_t, l_t = xs
            stopped = jax.lax.stop_gradient(h)
            gates = cell.weight_ih @ x_t + cell.bias + cell.weight_hh @ stopped
            keep = jax.nn.sigmoid(gates[hidden_size : 2 * hidden_size])
            h = cell(x_t, stopped) + keep * (h - stopped)
            return h, jnp.dot(l_t, h)

        _, terms = jax.lax.scan(step, jnp.zeros(hidden_size), (x, signal))
        return jnp.sum(terms)

    want = jax.grad(objective)(cell)
    hidden = jax.lax.scan(lambda h, x_t: (cell(x_t, h),) * 2, jnp.zeros(hidden_size), x)[1]
    weights = GRUWeights(cell.weight_ih, cell.weight_hh, cell.bias, cell.bias_n)
    found = gru_eligibility_gradient(weights, x, hidden, signal)
    for name in ("weight_ih", "weight_hh", "bias", "bias_n"):
        np.testing.assert_allclose(getattr(found, name), getattr(want, name), rtol=1e-5, atol=1e-7)
        assert np.any(np.asarray(getattr(found, name)) != 0), name


def test_symmetric_gru_eprop_is_bptt_when_the_output_depends_on_no_network_path():
    # No recurrent matrices and no weight on the feedback: a GRU unit's state reaches
    # the loss only through its own gated path, the readout and the plant, all of
    # which e-prop keeps, so its gradient is the exact one.
    task, config, ensemble = _trainer("gru", {"kind": "eprop", "feedback": "symmetric"})
    unit = ensemble.network.cell.gru
    n_task = unit.weight_ih.shape[-1] - 4
    ensemble = eqx.tree_at(
        lambda m: (m.network.cell.gru.weight_hh, m.network.cell.gru.weight_ih),
        ensemble,
        (jnp.zeros_like(unit.weight_hh), unit.weight_ih.at[..., n_task:].set(0.0)),
    )
    eprop = _gradients(ensemble, task, config, EProp(feedback="symmetric"))
    exact = _gradients(ensemble, task, config, BPTT())
    names = ("weight_ih", "bias", "bias_n")
    for name in names:
        get = attribute_getter(f"network.cell.gru.{name}")
        np.testing.assert_allclose(get(eprop), get(exact), rtol=2e-4, atol=1e-7)
        assert np.any(np.asarray(get(eprop)) != 0), name
    for found, want in zip(jax.tree.leaves(eprop), jax.tree.leaves(exact), strict=True):
        np.testing.assert_allclose(found, want, rtol=2e-4, atol=1e-7)


@pytest.mark.parametrize(
    ("cell", "feedback"), [("leaky", "symmetric"), ("leaky", "random"), ("gru", "random")]
)
def test_the_online_form_gives_the_offline_update_on_the_point_mass(cell, feedback):
    # The point mass is linear: filtering the traces forward through its impulse
    # response credits each output exactly as differentiating the plant after the
    # rollout does. Broken on purpose (the sensitivities not carried through the
    # plant's transition, or the traces injected one step late) it differs.
    task, config, ensemble = _trainer(cell, {"kind": "eprop", "feedback": feedback})
    state = None
    if feedback == "random":
        model = take_replicate(ensemble, 0)
        state = EProp().init(model, key=jax.random.key(8))
    offline = _gradients(ensemble, task, config, EProp(feedback=feedback), state=state)
    online = _gradients(ensemble, task, config, EProp(feedback=feedback, online=True), state=state)
    for found, want in zip(jax.tree.leaves(online), jax.tree.leaves(offline), strict=True):
        np.testing.assert_allclose(found, want, rtol=1e-4, atol=1e-6)
    assert all(np.any(np.asarray(g) != 0) for g in jax.tree.leaves(online))


@pytest.mark.parametrize(("cell", "feedback_path"), [("leaky", True), ("gru", False)])
def test_the_online_form_taken_piece_by_piece_gives_the_whole_trials_update(cell, feedback_path):
    # ``segment_steps`` runs the trial in pieces (5 steps of 12: the last piece is
    # shorter), carrying the traces, the plant's sensitivities, the feedback path's
    # queue and the loop's state from piece to piece: the loss and the update are
    # those of the whole trial at once, noise included. Broken on purpose (the carry
    # restarted in each piece, the hidden state before a piece taken as zero, or a
    # piece's signals taken from the wrong steps) they differ.
    task, config, ensemble = _trainer(cell, {"kind": "eprop"})
    model = take_replicate(ensemble, 0)
    state = EProp().init(model, key=jax.random.key(8))
    params, batch = _batch(ensemble, task, config)
    settings = {"online": True, "feedback_path": feedback_path}
    (whole_total, (whole_terms, _)), whole, _ = EProp(**settings).value_and_grad(
        batch, params, state
    )
    rule = EProp(**settings, segment_steps=5)
    (total, (terms, rollouts)), pieces, _ = rule.value_and_grad(batch, params, state)
    assert rollouts is None
    np.testing.assert_allclose(total, whole_total, rtol=1e-5)
    for name, value in whole_terms.items():
        np.testing.assert_allclose(terms[name], value, rtol=1e-5, atol=1e-9)
    for found, want in zip(jax.tree.leaves(pieces), jax.tree.leaves(whole), strict=True):
        np.testing.assert_allclose(found, want, rtol=1e-4, atol=1e-6)
    assert all(np.any(np.asarray(g) != 0) for g in jax.tree.leaves(pieces))


def test_online_eprop_in_pieces_needs_memory_flat_in_the_trial_length():
    # Point 6 of issue 30: taken piece by piece, e-prop's training memory does not
    # grow with the trial beyond what the trials' drives hold (a key and a goal per
    # step: 16 bytes a trial-step), where the whole-trial forms keep the rollout and
    # its signals. Broken on purpose (`segment_steps` ignored: the whole trial at
    # once) it grows as the whole trial's does.
    def temporary_bytes(rule, n_steps, n_trials=16):
        task = tiny_task(n_steps)
        config = tiny_train_config(n_replicates=1, learning={"kind": "eprop"})
        ensemble = mf.make_ensemble(
            tiny_model_config(cell="leaky", hidden_size=16),
            n_replicates=1,
            n_task_inputs=task.n_inputs,
            key=jax.random.key(3),
        )
        trainer = mf.Trainer(ensemble, task, config)
        params = take_replicate(trainer.initial_params, 0)
        frozen = take_replicate(trainer.frozen, 0)
        trials = task.training_trials(
            key=jax.random.key(4), n_replicates=1, n_batches=1, batch_size=n_trials
        )
        trials = jax.tree.map(lambda x: x[0, 0], trials)

        def gradient(params):
            batch = trainer.replicate_batch(params, frozen, trials, key=jax.random.key(5))
            return rule.value_and_grad(batch, params, None)[1]

        analysis = jax.jit(gradient).lower(params).compile().memory_analysis()
        if analysis is None:
            pytest.skip("this backend reports no memory analysis")
        return analysis.temp_size_in_bytes / n_trials

    def growth_per_trial_step(rule):
        return (temporary_bytes(rule, 140) - temporary_bytes(rule, 20)) / 120

    whole = growth_per_trial_step(EProp(feedback="symmetric", online=True))
    pieces = growth_per_trial_step(EProp(feedback="symmetric", online=True, segment_steps=10))
    assert pieces <= 16 < 10 * 16 < whole


def test_segment_steps_needs_the_online_form():
    from motorflow._plants import PointMass

    message = EProp(segment_steps=10).check_model(mf.LeakyCell, PointMass(), ())
    assert message is not None and "online" in message
    assert EProp(online=True, segment_steps=10).check_model(mf.LeakyCell, PointMass(), ()) is None


def test_the_online_form_refuses_a_nonlinear_plant():
    from motorflow._plants import PointMass, TwoLinkArm

    rule = EProp(online=True)
    assert rule.check_model(mf.LeakyCell, PointMass(), ()) is None
    message = rule.check_model(mf.LeakyCell, TwoLinkArm(), ())
    assert message is not None and "point_mass" in message


@pytest.mark.parametrize("cell", ["leaky", "gru"])
def test_the_feedback_path_makes_a_one_unit_network_exact(cell):
    # One unit without recurrent weights: the feedback it sees reaches the loss only
    # through its own state, so carrying the traces through the delayed feedback
    # (``feedback_path``) leaves no path out and symmetric e-prop's gradient of the
    # unit's weights is BPTT's; without it, it is not. Broken on purpose (the
    # feedback's sensitivity read one step too late) the comparison fails.
    task, config, ensemble = _trainer(cell, {"kind": "eprop"}, hidden_size=1)
    path = {"leaky": "network.cell.rnn", "gru": "network.cell.gru"}[cell]
    recurrent = {"leaky": "weight_rec", "gru": "weight_hh"}[cell]
    get = attribute_getter(f"{path}.{recurrent}")
    ensemble = eqx.tree_at(get, ensemble, jnp.zeros_like(get(ensemble)))
    exact = _gradients(ensemble, task, config, BPTT())
    found, cut = (
        _gradients(
            ensemble, task, config, EProp(feedback="symmetric", online=True, feedback_path=on)
        )
        for on in (True, False)
    )
    unit = attribute_getter(path)
    for want, got, without in zip(
        jax.tree.leaves(unit(exact)), jax.tree.leaves(unit(found)), jax.tree.leaves(unit(cut))
    ):
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-6)
        assert np.any(np.asarray(got) != 0)
    assert not all(
        np.allclose(w, c, rtol=1e-3, atol=1e-6)
        for w, c in zip(jax.tree.leaves(unit(exact)), jax.tree.leaves(unit(cut)))
    )


def test_the_trace_scans_working_memory_does_not_grow_with_the_trial():
    # e-prop's point: its traces run forward with a fixed state, so the compiled
    # scans need the same temporary memory for a trial 4 times as long. Broken on
    # purpose (a shifted copy of the trial's hidden states, as the scans once made)
    # the temporary bytes grow with the trial.
    from motorflow._training.rules._eprop_online import (
        leaky_local,
        online_gradient,
        plant_matrices,
    )

    model = mf.build_model(tiny_model_config(cell="leaky"), n_task_inputs=2, key=jax.random.key(1))
    unit = model.network.cell.rnn
    weights = CellWeights(unit.weight_in, unit.weight_rec, unit.bias)
    plant = plant_matrices(model)
    feedback = model.network.readout.weight.T
    n_in, n_hidden = unit.weight_in.shape[1], unit.weight_rec.shape[0]

    def temporary_bytes(function, *shapes):
        compiled = jax.jit(function).lower(*(jnp.ones(s) for s in shapes)).compile()
        analysis = compiled.memory_analysis()
        if analysis is None:
            pytest.skip("this backend reports no memory analysis")
        return analysis.temp_size_in_bytes

    def offline(x, h, signal):
        return eligibility_gradient(weights, 0.5, x, h, signal)

    def online(x, h, s, u, signal):
        local = leaky_local(0.5)
        return online_gradient(
            weights, local, plant, feedback, x, h, s, u, signal, feedback_delay=1
        )

    sizes = [
        (
            temporary_bytes(offline, (t, n_in), (t, n_hidden), (t, n_hidden)),
            temporary_bytes(online, (t, n_in), (t, n_hidden), (t, 4), (t, 2), (t, n_hidden)),
        )
        for t in (10, 40)
    ]
    assert sizes[0] == sizes[1]


def test_the_filtered_signal_gives_the_traces_sum_over_a_batch():
    # The rule sums L(t) e(t) over a batch by filtering the learning signal backward in
    # time instead of running the traces forward: the same sum. (Filtering with the
    # leak off by one step, or forward in time, fails this.)
    keys = jax.random.split(jax.random.key(11), 6)
    hidden, n_in, n_trials, n_steps, alpha = 5, 3, 4, 9, 0.3
    weights = CellWeights(
        weight_in=jax.random.normal(keys[0], (hidden, n_in)),
        weight_rec=0.5 * jax.random.normal(keys[1], (hidden, hidden)),
        bias=0.1 * jax.random.normal(keys[2], (hidden,)),
    )
    network_input = jax.random.normal(keys[3], (n_trials, n_steps, n_in))
    states = jnp.tanh(jax.random.normal(keys[4], (n_trials, n_steps, hidden)))
    signal = jax.random.normal(keys[5], (n_trials, n_steps, hidden))
    per_trial = jax.vmap(lambda x, h, s: eligibility_gradient(weights, alpha, x, h, s))(
        network_input, states, signal
    )
    summed = filtered_eligibility_gradient(weights, alpha, network_input, states, signal)
    for name in ("weight_in", "weight_rec", "bias"):
        np.testing.assert_allclose(
            getattr(summed, name), getattr(per_trial, name).sum(0), rtol=1e-5, atol=1e-6
        )
