import pytest
from conftest import raises_config_error

import motorflow as mf
import motorflow.pipeline as mfp


def test_defaults_round_trip_through_plain_dicts():
    for block in (mf.ModelConfig, mf.TaskConfig, mf.TrainConfig):
        config = block.from_dict({})
        assert block.from_dict(config.to_dict()) == config


def test_unknown_key_is_named_with_its_path():
    with pytest.raises(
        mf.ConfigError, match=r"^model\.network\.hiden_size: unknown key.*hidden_size"
    ):
        mf.ModelConfig.from_dict({"network": {"hiden_size": 4}}, "model")


@pytest.mark.parametrize(
    ("block", "data", "path", "allowed"),
    [
        (
            mf.ModelConfig,
            {"network": {"hidden_size": 0}},
            "network.hidden_size",
            "an integer >= 1",
        ),
        (
            mf.ModelConfig,
            {"network": {"cell": "lstm"}},
            "network.cell",
            ", ".join(repr(kind) for kind in mf.CELLS) + ", got 'lstm'",
        ),
        (mf.ModelConfig, {"feedback": {"delay": -1}}, "feedback.delay", "an integer >= 0"),
        (mf.ModelConfig, {"dt": "fast"}, "dt", "must be a number, got 'fast'"),
        (mf.ModelConfig, {"dt": 0}, "dt", "a number > 0, got 0"),
        (mf.TaskConfig, {"workspace": [[1, 1], [-1, -1]]}, "workspace", "x_min < x_max"),
        (mf.TrainConfig, {"optimizer": {"name": "rmsprop"}}, "optimizer.name", "'adam'"),
        (
            mf.TrainConfig,
            {"optimizer": {"schedule": {"kind": "step"}}},
            "optimizer.schedule.kind",
            "'warmup_cosine'",
        ),
        (mf.TrainConfig, {"loss": {"jerk": {"weight": 1}}}, "loss.jerk", "position"),
        (
            mf.TrainConfig,
            {"n_batches": 50, "validation": {"at": [10, 60]}},
            "validation.at",
            "batch 60 is beyond the last batch (50",
        ),
        (mf.TrainConfig, {"validation": {}}, "validation", "names at least one of: every, at"),
        (mf.TrainConfig, {"validation": {"seconds": 60}}, "validation.seconds", "wall-time"),
        (mf.TrainConfig, {"log_every": 10}, "log_every", "validation: {every: N}"),
        (
            mf.TrainConfig,
            {"checkpoint": {"exponential": {"factor": 0.5}}},
            "checkpoint.exponential.factor",
            ">= 1",
        ),
        (mf.TrainConfig, {"n_replicates": True}, "n_replicates", "must be an integer, got True"),
    ],
)
def test_bad_values_name_the_key_value_and_what_is_allowed(block, data, path, allowed):
    with raises_config_error(path, allowed):
        block.from_dict(data)


def test_delay_must_leave_steps_to_act_on():
    model = mf.ModelConfig.from_dict({"feedback": {"delay": 10}})
    task = mf.TaskConfig.from_dict({"n_steps": 10})
    with pytest.raises(mf.ConfigError, match=r"model\.feedback\.delay.*n_steps \(10\)"):
        mf.check_model_fits_task(model, task)


def test_evaluation_conditions_replace_the_default_and_keep_their_order():
    base = {
        "tasks": {"t": {}},
        "models": {"m": {}},
        "trainings": {"x": {}},
        "experiments": {"e": {"task": "t", "model": "m", "training": "x"}},
    }
    assert list(mfp.parse_config(base).evaluation.conditions) == ["unperturbed"]
    conditions = {"curl_ccw": [{"kind": "curl", "direction": "ccw"}], "none": []}
    settings = mfp.parse_config({**base, "evaluation": {"conditions": conditions}})
    assert list(settings.evaluation.conditions) == ["curl_ccw", "none"]
    assert settings.evaluation.goal_radius == 0.05  # the rest of the block keeps its defaults
    (curl,) = settings.evaluation.conditions["curl_ccw"]
    assert curl == mf.CurlField(direction="ccw") and curl.strength == 10.0
