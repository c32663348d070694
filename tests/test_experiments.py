import jsonschema
import pytest
from conftest import raises_config_error
from workflow_helpers import REPO, tiny_config

import motorflow as mf
import motorflow.pipeline as mfp

SCHEMA = mfp.load_config_file(REPO / "workflow/schemas/config.schema.yaml")


def test_overrides_merge_into_the_named_blocks():
    experiments = mfp.resolve_experiments(tiny_config())
    assert experiments["noisy"].model.feedback.noise_std == 0.1
    assert experiments["noisy"].model.feedback.delay == 1  # kept from the block
    assert experiments["quiet"].model.feedback.noise_std == 0.0
    assert experiments["quiet"].model.network.hidden_size == 8


def test_experiments_with_the_same_data_settings_share_a_dataset():
    config = tiny_config()
    config["experiments"]["reseeded"] = {**config["experiments"]["quiet"], "seed": 1}
    experiments = mfp.resolve_experiments(config)
    assert experiments["quiet"].dataset == experiments["noisy"].dataset
    assert experiments["reseeded"].dataset != experiments["quiet"].dataset
    assert experiments["quiet"].dataset.startswith("reach-")


def test_a_sweep_expands_every_grid_point_into_a_named_experiment():
    config = tiny_config()
    config["sweeps"] = {
        "grid": {
            "experiment": "noisy",
            "grid": {"model.feedback.noise_std": [0.05, 0.2], "model.network.hidden_size": [4, 16]},
        }
    }
    experiments = mfp.resolve_experiments(config)
    swept = {name: exp for name, exp in experiments.items() if name.startswith("grid-")}
    assert set(swept) == {
        "grid-noise_std0p05-hidden_size4",
        "grid-noise_std0p05-hidden_size16",
        "grid-noise_std0p2-hidden_size4",
        "grid-noise_std0p2-hidden_size16",
    }
    point = swept["grid-noise_std0p2-hidden_size16"]
    assert (point.model.feedback.noise_std, point.model.network.hidden_size) == (0.2, 16)
    assert point.train == experiments["noisy"].train


@pytest.mark.parametrize(
    ("edit", "path", "words"),
    [
        (
            lambda c: c["experiments"]["quiet"].update(model="nope"),
            "experiments.quiet.model",
            "not defined in models",
        ),
        (
            lambda c: c["experiments"].update({"../escape": c["experiments"]["quiet"]}),
            "experiments.'../escape'",
            "not a valid name",
        ),
        (lambda c: c["experiments"].clear(), "experiments", "must be non-empty"),
        (
            lambda c: c["models"]["small"]["feedback"].update(delay=15),
            "experiments.quiet.model.feedback.delay",
            "n_steps (15)",
        ),
        (
            lambda c: c["experiments"]["noisy"]["override"].update(body={}),
            "experiments.noisy.override.body",
            "unknown key 'body'",
        ),
        (
            lambda c: c["experiments"]["noisy"]["override"]["model"].update(netwrk={}),
            "experiments.noisy.override.model.netwrk",
            "unknown key",
        ),
        (
            lambda c: c["trainings"]["quick"].update(n_batches=0),
            "trainings.quick.n_batches",
            "an integer >= 1",
        ),
        (lambda c: c["experiments"]["quiet"].update(seed=-1), "experiments.quiet.seed", "integer"),
        (
            lambda c: c.update(
                sweeps={"s": {"experiment": "quiet", "grid": {"model.network.hidden_size": [8, 8]}}}
            ),
            "sweeps.s.grid",
            "both expand",
        ),
        (
            lambda c: c.update(sweeps={"s": {"experiment": "ghost", "grid": {"seed": [1]}}}),
            "sweeps.s.experiment",
            "not defined",
        ),
        (
            lambda c: (
                c.update(sweeps={"quiet": {"experiment": "quiet", "grid": {"seed": [1]}}})
                or c["experiments"].update({"quiet-seed1": c["experiments"]["quiet"]})
            ),
            "sweeps.quiet",
            "already uses",
        ),
    ],
)
def test_bad_configs_name_the_key_path(edit, path, words):
    config = tiny_config()
    edit(config)
    with raises_config_error(path, words):
        mfp.resolve_experiments(config)


@pytest.mark.parametrize("name", sorted(p.name for p in (REPO / "config").glob("*.yaml")))
def test_shipped_configs_are_valid(name):
    config = mfp.load_config_file(REPO / "config" / name)
    jsonschema.validate(config, SCHEMA)
    assert mfp.resolve_experiments(config)


def test_the_schema_file_is_the_one_the_typed_config_generates():
    """One source of truth: regenerate with `python -m motorflow schema`."""
    assert SCHEMA == mfp.config_json_schema(), (
        "workflow/schemas/config.schema.yaml is stale: run "
        "`python -m motorflow schema > workflow/schemas/config.schema.yaml`"
    )
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_the_schema_accepts_every_library_key_with_its_default():
    """The schema and the typed configs describe the same keys."""
    config = tiny_config()
    for kind, task in mf.TASKS.items():
        config["tasks"][f"full_{kind}"] = task().to_dict()
    config["models"]["full"] = mf.ModelConfig().to_dict()
    config["trainings"]["full"] = mf.TrainConfig().to_dict()
    config["experiments"]["quiet"]["override"] = {"model": mf.ModelConfig().to_dict()}
    config.update(mfp.parse_config(config).filled_sections())
    jsonschema.validate(config, SCHEMA)
    for section in ("tasks", "models", "trainings"):
        config = tiny_config()
        config[section]["full"] = {"unknown_key": 1}
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(config, SCHEMA)
        with pytest.raises(mf.ConfigError, match="unknown_key"):
            mfp.parse_config(config)


def test_experiment_keys_are_distinct_and_reproducible():
    import jax
    import numpy as np

    keys = mfp.experiment_keys(3)
    data = {name: np.asarray(jax.random.key_data(key)) for name, key in keys.items()}
    assert len({d.tobytes() for d in data.values()}) == len(keys) == 7
    # A stream added later leaves the earlier ones' keys as they were: fold_in(root, i).
    root = jax.random.key(3)
    for index, name in enumerate(keys):
        np.testing.assert_array_equal(
            data[name], jax.random.key_data(jax.random.fold_in(root, index))
        )
    again = mfp.experiment_keys(3)
    for name in keys:
        np.testing.assert_array_equal(jax.random.key_data(again[name]), data[name])
