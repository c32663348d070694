import equinox as eqx
import jax.numpy as jnp
import numpy as np

import motorflow as mf
from motorflow._losses import Span


def make_rollout(n_trials=2, n_steps=4, hidden=3):
    pos = jnp.ones((n_trials, n_steps, 2))
    return mf.Rollout(
        pos=pos,
        vel=jnp.full((n_trials, n_steps, 2), 2.0),
        control=jnp.full((n_trials, n_steps, 2), 3.0),
        hidden=jnp.full((n_trials, n_steps, hidden), 0.5),
        output=jnp.full((n_trials, n_steps, 2), 3.0),
        feedback=jnp.zeros((n_trials, n_steps, 4)),
        network_input=jnp.zeros((n_trials, n_steps, 6)),
        plant={},
    )


def test_terms_have_their_documented_values():
    goal = jnp.zeros((2, 4, 2))
    config = mf.LossConfig.from_dict(
        {
            "position": {"weight": 1.0, "discount_power": 1},
            "final_velocity": {"weight": 2.0},
            "effort": {"weight": 0.5},
            "hidden": {"weight": 0.0},
        }
    )
    terms = mf.loss_terms(config, make_rollout(), mf.Targets(goal))
    # squared error 2 at each step, weights 1/4, 2/4, 3/4, 4/4
    np.testing.assert_allclose(terms["position"], 2 * (1 + 2 + 3 + 4) / 4)
    np.testing.assert_allclose(terms["final_velocity"], 8.0)
    np.testing.assert_allclose(terms["effort"], 4 * 2 * 9.0)
    np.testing.assert_allclose(terms["hidden"], 4 * 3 * 0.25)
    assert float(terms["hold"]) == 0.0  # no steps to hold
    np.testing.assert_allclose(mf.total_loss(config, terms), 5.0 + 16.0 + 36.0)


def test_every_term_is_recorded_and_weight_zero_adds_nothing():
    goal = jnp.zeros((2, 4, 2))
    config = mf.LossConfig.from_dict({"position": {"weight": 0}})
    terms = mf.loss_terms(config, make_rollout(), mf.Targets(goal))
    assert set(terms) == {"position", "final_velocity", "effort", "hidden", "hold"}
    assert float(terms["position"]) > 0
    without = {name: value for name, value in terms.items() if name != "position"}
    np.testing.assert_allclose(
        mf.total_loss(config, terms),
        sum(config.terms[name].weight * value for name, value in without.items()),
    )


def test_hold_sums_the_squared_drift_from_the_start_over_the_held_steps():
    pos = jnp.zeros((2, 4, 2)).at[0, :, 0].set(jnp.array([0.0, 1.0, 2.0, 3.0]))
    rollout = eqx.tree_at(lambda r: r.pos, make_rollout(), pos)
    hold = jnp.array([[True, True, True, False], [True] * 4])
    terms = mf.loss_terms(mf.LossConfig(), rollout, mf.Targets(jnp.zeros((2, 4, 2)), hold))
    # speed 2 on every axis: 8 per held step; trial 0 also drifts 1 and 2 on its held
    # steps 1 and 2 (step 3 is free)
    np.testing.assert_allclose(terms["hold"], (3 * 8 + 1 + 4 + 4 * 8) / 2)


def test_the_loss_config_holds_every_registered_term_with_its_own_defaults():
    config = mf.LossConfig.from_dict({"effort": {"weight": 2.0}})
    assert list(config.terms) == list(mf.LOSS_TERMS)
    for name, term in config.terms.items():
        assert type(term) is mf.LOSS_TERMS[name] and term.KIND == name
        if name != "effort":
            assert term == mf.LOSS_TERMS[name]()
    assert config.terms["effort"].weight == 2.0
    assert mf.LossConfig().terms["hold"].weight == 100.0


def test_each_term_scores_each_trial_on_its_own():
    rollout = make_rollout(n_trials=3)
    rollout = eqx.tree_at(lambda r: r.control, rollout, rollout.control.at[1].set(0.0))
    targets = mf.Targets(jnp.zeros((3, 4, 2)))
    for name, term in mf.LossConfig().terms.items():
        per_trial = term.per_trial(rollout, targets, Span.whole(rollout))
        assert per_trial.shape == (3,), name
    effort = mf.EffortTerm().per_trial(rollout, targets, Span.whole(rollout))
    np.testing.assert_allclose(effort, [4 * 2 * 9.0, 0.0, 4 * 2 * 9.0])


def test_a_term_counts_in_a_task_only_where_it_can_add_to_its_loss():
    # What `motorflow info` lists among the loss weights.
    from motorflow._losses import HoldTerm, PositionTerm
    from motorflow._tasks import TASKS

    holding = [kind for kind, task in TASKS.items() if task.holds()]
    assert sorted(holding) == ["delayed_reach", "posture"]
    assert HoldTerm().counts_in(TASKS["posture"]) and HoldTerm().counts_in(TASKS["delayed_reach"])
    assert not HoldTerm().counts_in(TASKS["reach"])
    assert not HoldTerm(weight=0).counts_in(TASKS["posture"])
    assert PositionTerm().counts_in(TASKS["reach"]) and not PositionTerm(weight=0).counts_in(
        TASKS["reach"]
    )
