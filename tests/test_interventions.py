"""Interventions on the network's units (clamp, stimulation, lesion, extra noise): each
acts exactly on its units in its window, after the cell's update, with every cell; an
inactive one changes nothing bitwise; they train; their draws are stored."""

import itertools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import tiny_model_config, tiny_task, tiny_train_config

import motorflow as mf
import motorflow.pipeline as mfp
from motorflow._perturbations import PERTURBATIONS

N_UNITS, DT = 8, 0.05  # the tiny model's size; the tiny task's 12 steps at dt 0.05
CHOSEN = [1, 4]
# A window of steps 3..5 (0.15 to 0.30 s).
WINDOW = {"start": 0.15, "duration": 0.15}
STEPS = [3, 4, 5]


def intervention(kind: str, **settings):
    return PERTURBATIONS[kind].from_dict({"kind": kind, **settings})


INTERVENTIONS = {
    "clamp": intervention("clamp", units=CHOSEN, value=0.7, **WINDOW),
    "stimulation": intervention("stimulation", units=CHOSEN, amplitude=0.4, **WINDOW),
    "unit_noise": intervention("unit_noise", units=CHOSEN, std=0.3, **WINDOW),
    "lesion": intervention("lesion", units=CHOSEN),
}


def evaluated(conditions, network=None, readout=None):
    """The tiny ensemble's evaluation states in `conditions` (with its noise on); with
    `readout`, its replicates' readout weights `(replicate, control, unit)`."""
    config = tiny_model_config(**(network or {}))
    ensemble = mf.make_ensemble(config, n_replicates=2, n_task_inputs=2, key=jax.random.key(0))
    if readout is not None:
        ensemble = eqx.tree_at(lambda m: m.network.readout.weight, ensemble, readout)
    return mf.evaluate(ensemble, tiny_task(), config, key=jax.random.key(1), conditions=conditions)


def hidden(states, condition):
    return states.hidden.sel(condition=condition).transpose(..., "time", "unit").values


@pytest.mark.parametrize("cell", ["gru", "rnn", "leaky"])
def test_a_clamped_unit_is_its_value_in_the_window_and_nothing_changes_before(cell):
    states = evaluated({"free": (), "clamped": (INTERVENTIONS["clamp"],)}, network={"cell": cell})
    free, clamped = hidden(states, "free"), hidden(states, "clamped")
    np.testing.assert_array_equal(clamped[..., STEPS, :][..., CHOSEN], np.float32(0.7))
    # Before the window, and the free units at its first step, exactly as without it.
    np.testing.assert_array_equal(clamped[..., :3, :], free[..., :3, :])
    others = [u for u in range(N_UNITS) if u not in CHOSEN]
    np.testing.assert_array_equal(clamped[..., 3, others], free[..., 3, others])
    # Released after it, the units move on from the clamp: the trial differs.
    assert not np.allclose(clamped[..., 6:, :], free[..., 6:, :])
    # The output is the readout of the clamped state: the control differs in the window.
    assert not np.allclose(
        states.control.sel(condition="clamped").isel(time=3),
        states.control.sel(condition="free").isel(time=3),
    )


@pytest.mark.parametrize("cell", ["gru", "leaky"])
def test_a_unit_clamped_at_its_start_keeps_the_state_it_had_before_the_window(cell):
    frozen_clamp = intervention("clamp", units=CHOSEN, at="start", **WINDOW)
    states = evaluated({"free": (), "frozen": (frozen_clamp,)}, network={"cell": cell})
    free, frozen = hidden(states, "free"), hidden(states, "frozen")
    np.testing.assert_array_equal(frozen[..., :3, :], free[..., :3, :])
    before = free[..., 2, CHOSEN]  # the state the window begins from, per trial
    for step in STEPS:
        np.testing.assert_array_equal(frozen[..., step, CHOSEN], before)
    assert not np.allclose(free[..., 5, CHOSEN], before)  # left free, they move on
    others = [u for u in range(N_UNITS) if u not in CHOSEN]
    np.testing.assert_array_equal(frozen[..., 3, others], free[..., 3, others])
    assert not np.allclose(frozen[..., 6:, :], free[..., 6:, :])


# A readout that reads units 0 and 1 only: its potent space is theirs by construction,
# the null space the other units'.
AXIS_READOUT = jnp.zeros((2, 2, N_UNITS)).at[:, 0, 0].set(1.5).at[:, 1, 1].set(-0.8)
POTENT, NULL = [0, 1], list(range(2, N_UNITS))


def test_a_clamp_of_the_potent_space_freezes_the_output_and_leaves_the_null_space_free():
    potent = intervention("clamp", space="output_potent", at="start", **WINDOW)
    null = intervention("clamp", space="output_null", **WINDOW)  # at 0
    states = evaluated({"free": (), "potent": (potent,), "null": (null,)}, readout=AXIS_READOUT)
    free, held, silent = (hidden(states, c) for c in ("free", "potent", "null"))
    np.testing.assert_array_equal(held[..., :3, :], free[..., :3, :])
    for step in STEPS:  # the potent units stay where the window found them
        np.testing.assert_allclose(held[..., step, POTENT], free[..., 2, POTENT], atol=1e-6)
        np.testing.assert_allclose(silent[..., step, NULL], 0.0, atol=1e-6)
    # The rest moves as the cell drives it: at the window's first step, as without it.
    np.testing.assert_allclose(held[..., 3, NULL], free[..., 3, NULL], atol=1e-6)
    np.testing.assert_allclose(silent[..., 3, POTENT], free[..., 3, POTENT], atol=1e-6)
    assert not np.allclose(held[..., 5, NULL], held[..., 3, NULL])


def test_a_frozen_potent_space_holds_any_readouts_output_while_the_state_moves():
    readout = jax.random.normal(jax.random.key(5), (2, 2, N_UNITS))
    potent = intervention("clamp", space="output_potent", at="start", **WINDOW)
    states = evaluated({"free": (), "potent": (potent,)}, readout=readout)
    output = states.output.sel(condition="potent").transpose(..., "time", "actuator").values
    for step in STEPS:  # the readout sees the state of the step before the window
        np.testing.assert_allclose(output[..., step, :], output[..., 2, :], atol=1e-5)
    state = hidden(states, "potent")
    assert np.abs(state[..., 5, :] - state[..., 3, :]).max() > 1e-3  # the null part moves
    assert not np.allclose(output[..., 6:, :], output[..., 5:6, :])  # released after it


@pytest.mark.parametrize(
    ("settings", "key"),
    [
        ({"space": "output_potent", "value": 0.5}, "value"),
        ({"space": "output_null", "units": [0]}, "space"),
        ({"space": "output_potent", "fraction": 0.5}, "space"),
    ],
)
def test_a_clamp_of_a_space_refuses_settings_of_units_or_values(settings, key):
    with pytest.raises(ValueError, match=key):
        intervention("clamp", **settings)


def test_stimulation_adds_to_its_units_at_each_step_of_its_window_only():
    states = evaluated({"free": (), "stimulated": (INTERVENTIONS["stimulation"],)})
    free, stimulated = hidden(states, "free"), hidden(states, "stimulated")
    np.testing.assert_array_equal(stimulated[..., :3, :], free[..., :3, :])
    np.testing.assert_allclose(
        stimulated[..., 3, CHOSEN] - free[..., 3, CHOSEN], 0.4, rtol=1e-5, atol=1e-6
    )
    others = [u for u in range(N_UNITS) if u not in CHOSEN]
    np.testing.assert_array_equal(stimulated[..., 3, others], free[..., 3, others])


def test_a_lesioned_unit_is_silent_at_every_step():
    states = evaluated({"intact": (), "lesioned": (INTERVENTIONS["lesion"],)})
    lesioned, intact = hidden(states, "lesioned"), hidden(states, "intact")
    np.testing.assert_array_equal(lesioned[..., CHOSEN], 0.0)
    assert np.abs(intact[..., CHOSEN]).min() > 0  # they were active before


def test_unit_noise_moves_only_its_units_from_its_window_on():
    states = evaluated({"quiet": (), "noisy": (INTERVENTIONS["unit_noise"],)})
    quiet, noisy = hidden(states, "quiet"), hidden(states, "noisy")
    np.testing.assert_array_equal(noisy[..., :3, :], quiet[..., :3, :])
    others = [u for u in range(N_UNITS) if u not in CHOSEN]
    np.testing.assert_array_equal(noisy[..., 3, others], quiet[..., 3, others])
    added = noisy[..., 3, CHOSEN] - quiet[..., 3, CHOSEN]
    assert np.all(added != 0) and 0.05 < added.std() < 1.0


@pytest.mark.parametrize("kind", sorted(INTERVENTIONS))
def test_an_inactive_intervention_changes_nothing_bitwise(kind):
    inactive = INTERVENTIONS[kind].model_copy(update={"probability": 0.0})
    states = evaluated({"none": (), "inactive": (inactive,)})
    np.testing.assert_array_equal(hidden(states, "inactive"), hidden(states, "none"))
    np.testing.assert_array_equal(
        states.pos.sel(condition="inactive"), states.pos.sel(condition="none")
    )


def test_each_kind_acts_on_its_units_in_its_window_in_its_effects():
    geometry = mf.TrialGeometry(
        start=jnp.zeros(2), goal=jnp.array([0.0, 0.1]), n_steps=12, dt=DT, n_units=N_UNITS
    )
    actions = {"clamp": "hold", "lesion": "hold", "stimulation": "add", "unit_noise": "noise"}
    for kind, item in INTERVENTIONS.items():
        params = mf.draw_params(item, (), key=jax.random.key(0))
        (term,) = item.effects(params, geometry).network.terms
        assert (term.units, term.action) == (tuple(CHOSEN), actions[kind])
        steps = np.flatnonzero(np.asarray(term.amount)).tolist()
        assert steps == (list(range(12)) if kind == "lesion" else STEPS), kind
    # Two interventions: both terms, and no body effect.
    both = mf.total_effects(
        [INTERVENTIONS["stimulation"], INTERVENTIONS["lesion"]],
        [
            mf.draw_params(INTERVENTIONS[k], (), key=jax.random.key(0))
            for k in ("stimulation", "lesion")
        ],
        geometry,
    )
    assert [t.action for t in both.network.terms] == ["add", "hold"]
    assert not np.any(np.asarray(both.force))


def test_a_fraction_of_units_is_one_fixed_draw_of_its_seed():
    chosen = intervention("stimulation", fraction=0.25, seed=3).chosen_units(N_UNITS)
    assert len(chosen) == 2
    assert chosen == intervention("lesion", fraction=0.25, seed=3).chosen_units(N_UNITS)
    others = {intervention("lesion", fraction=0.25, seed=s).chosen_units(N_UNITS) for s in range(6)}
    assert len(others) > 1  # the seed chooses the pattern


def test_larger_fractions_of_one_seed_hold_the_smaller_ones_units():
    """A lesion sweep (config/lesion.yaml) silences growing shares of one order: each
    lesion adds units to the smaller one's, so the sweep's points differ only by them."""
    sizes = [intervention("lesion", fraction=f).chosen_units(32) for f in (0.05, 0.2, 0.5)]
    assert [len(units) for units in sizes] == [2, 6, 16]
    for smaller, larger in itertools.pairwise(sizes):
        assert set(smaller) < set(larger)


@pytest.mark.parametrize(
    "held",
    [{"units": CHOSEN, "value": 0.0}, {"space": "output_potent", "at": "start"}],
    ids=["units", "potent_space"],
)
def test_a_network_trained_with_its_units_clamped_trains_and_learns_otherwise(tmp_path, held):
    """With a readout's space held, the gradient also flows through its projection."""
    config = mf.TaskConfig.from_dict(
        {
            "n_steps": 12,
            "eval": {"n_directions": 4},
            "perturbations": [{"kind": "clamp", **held, "start": 0.1, "duration": 0.2}],
        }
    )
    task = mf.Task(config)
    trials = task.training_trials(key=jax.random.key(0), n_replicates=2, n_batches=4, batch_size=4)
    assert trials.params[0]["value"].shape == (2, 4, 4)
    # The trial specs keep the intervention and its draws, as the trials stage writes them.
    mfp.write_trials(trials, tmp_path / "train.zarr")
    back = mfp.read_trials(tmp_path / "train.zarr")
    assert back.perturbations == trials.perturbations
    np.testing.assert_array_equal(back.params[0]["value"], trials.params[0]["value"])
    model = tiny_model_config()
    ensemble = mf.make_ensemble(model, n_replicates=2, n_task_inputs=2, key=jax.random.key(1))
    train = tiny_train_config(
        n_replicates=2,
        n_batches=4,
        batch_size=4,
        validation={"every": 4},
        log={"every": 4},
        checkpoint={"every": 4},
    )
    result = mf.train(ensemble, trials, task, train, key=jax.random.key(2), progress=False)
    assert np.isfinite(result.history["loss"]["total"]).all()
    bare = mf.train(
        ensemble, trials.perturbed_by((), ()), task, train, key=jax.random.key(2), progress=False
    )
    assert not np.array_equal(
        result.ensemble.network.readout.weight, bare.ensemble.network.readout.weight
    )


def test_the_evaluation_store_labels_each_interventions_draws(tmp_path):
    states = evaluated({"free": (), "stimulated": (INTERVENTIONS["stimulation"],)})
    mfp.write_dataset(states, tmp_path / "states.zarr")
    states = mfp.open_dataset(tmp_path / "states.zarr")
    assert states.perturbation0_amplitude.dims == ("condition", "trial")
    assert states.perturbation0_active.attrs["kind"] == "stimulation"
    np.testing.assert_array_equal(states.perturbation0_active.values[:, 0], [0, 1])
