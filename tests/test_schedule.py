"""Schedules: the batches each key names, the chunks a run's schedules cut, and that the
schedules of actions that cannot change results do not."""

import numpy as np
import pytest
from conftest import assert_trees_equal

import motorflow as mf
from motorflow._training._schedule import WallClock


def batches(n_batches: int, **schedule) -> list[int]:
    return mf.BatchSchedule.from_dict(schedule).batches(n_batches).tolist()


@pytest.mark.parametrize(
    ("schedule", "n_batches", "expected"),
    [
        ({"every": 4}, 10, [4, 8]),
        ({"every": 5}, 10, [5, 10]),
        ({"at": [7, 2, 7]}, 10, [2, 7]),
        ({"first": 3}, 10, [1, 2, 3]),
        ({"first": 30}, 5, [1, 2, 3, 4, 5]),
        # start, start + start*f, start + start*f + start*f**2, ...
        ({"exponential": {"start": 1, "factor": 2}}, 40, [1, 3, 7, 15, 31]),
        # 10, 25, 47.5, 81.25 rounded.
        ({"exponential": {"start": 10, "factor": 1.5}}, 100, [10, 25, 48, 81]),
        # Gaps that round to nothing still move on by one batch.
        ({"exponential": {"start": 1, "factor": 1}}, 4, [1, 2, 3, 4]),
        ({"times": 4}, 10, [2, 5, 8, 10]),
        ({"times": 3}, 9, [3, 6, 9]),
        ({"times": 20}, 5, [1, 2, 3, 4, 5]),
        # Keys combine: the union of their batches.
        ({"every": 10, "at": [3], "first": 2}, 30, [1, 2, 3, 10, 20, 30]),
    ],
)
def test_each_schedule_key_names_exactly_its_batches(schedule, n_batches, expected):
    assert batches(n_batches, **schedule) == expected


def test_a_run_validates_before_and_after_and_checkpoints_and_logs_at_the_end():
    config = mf.TrainConfig.from_dict(
        {
            "n_batches": 25,
            "validation": {"at": [3]},
            "log": {"every": 10},
            "checkpoint": {"times": 2},
        }
    )
    plan = mf.TrainingPlan(config)
    assert plan.validate.tolist() == [0, 3, 25]
    assert plan.log.tolist() == [10, 20, 25]
    assert plan.checkpoint.tolist() == [12, 25]
    assert list(plan.chunks(0)) == [(0, 3), (3, 10), (10, 12), (12, 20), (20, 25)]
    assert list(plan.chunks(12)) == [(12, 20), (20, 25)]
    assert plan.chunk_length == 25


def test_chunks_never_exceed_the_chunk_length():
    plan = mf.TrainingPlan(mf.TrainConfig.from_dict({"n_batches": 250, "validation": {"at": [1]}}))
    chunks = list(plan.chunks(0))
    assert chunks == [(0, 1), (1, 100), (100, 200), (200, 250)]
    assert all(stop - start <= plan.chunk_length for start, stop in chunks)


def test_wall_time_schedules_fire_after_their_period():
    now = [0.0]
    clock = WallClock(5.0, clock=lambda: now[0])
    fired = []
    for t in range(16):
        now[0] = float(t)
        fired.append(clock.due())
    assert [t for t, f in enumerate(fired) if f] == [5, 10, 15]
    assert not WallClock(None).due()


def test_log_and_checkpoint_schedules_change_no_result(tiny, tmp_path):
    # They cut the run into other compiled calls; each batch computes the same.
    reference = tiny().train()
    other = tiny(
        log={"every": 7, "first": 2},
        checkpoint={"exponential": {"start": 3, "factor": 1.5}, "seconds": 1e-3},
    ).train(checkpoint_dir=tmp_path)
    assert_trees_equal(other.state, reference.state)
    assert_trees_equal(other.history, reference.history)


def test_the_validation_schedule_sets_the_history_s_validation_steps(tiny):
    history = tiny(validation={"at": [5, 13], "every": 20}).train().history
    assert history["validation_step"].tolist() == [0, 5, 13, 20, 40]
    assert np.isfinite(history["validation"]["total"]).all()
