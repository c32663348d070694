"""Shared tiny setups: every test compiles in about a second on a laptop CPU."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import jax
import numpy as np
import pytest

import motorflow as mf
import motorflow.pipeline as mfp


def tiny_model_config(**network) -> mf.ModelConfig:
    # Noise on: a test of keys or resuming must be able to tell a right key from a wrong one.
    return mf.ModelConfig.from_dict(
        {
            "network": {"hidden_size": 8, "hidden_noise_std": 0.01, **network},
            "feedback": {"noise_std": 0.05},
        }
    )


def tiny_task(n_steps: int = 12) -> mf.Task:
    return mf.Task(mf.TaskConfig.from_dict({"n_steps": n_steps, "eval": {"n_directions": 4}}))


def tiny_train_settings(**overrides) -> dict:
    """The tiny training as a config mapping (a workflow config's `trainings` entry)."""
    base = {
        "n_replicates": 3,
        "n_batches": 40,
        "batch_size": 8,
        "validation": {"every": 10},
        "log": {"every": 10},
        "checkpoint": {"every": 10},
    }
    return {**base, **overrides}


def tiny_train_config(**overrides) -> mf.TrainConfig:
    return mf.TrainConfig.from_dict(tiny_train_settings(**overrides))


@contextlib.contextmanager
def raises_config_error(path: str, *fragments: str) -> Iterator[pytest.ExceptionInfo]:
    """Expect a :class:`motorflow.ConfigError` naming exactly the key `path`, with every
    one of `fragments` in its message."""
    with pytest.raises(mf.ConfigError) as error:
        yield error
    message = str(error.value)
    assert error.value.path == path, message
    for fragment in fragments:
        assert fragment in error.value.message, message


def assert_trees_equal(a, b) -> None:
    """Same structure and bit-identical leaves (NaN equals NaN)."""
    leaves_a, tree_a = jax.tree.flatten(a)
    leaves_b, tree_b = jax.tree.flatten(b)
    assert tree_a == tree_b
    for x, y in zip(leaves_a, leaves_b):
        if isinstance(x, jax.Array) and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
            x, y = jax.random.key_data(x), jax.random.key_data(y)
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


class TinySetup:
    def __init__(self, network: dict | None = None, **train_overrides):
        self.model_config = tiny_model_config(**(network or {}))
        self.task = tiny_task()
        self.config = tiny_train_config(**train_overrides)
        init_key, trials_key, self.train_key = jax.random.split(jax.random.key(0), 3)
        self.ensemble = mf.make_ensemble(
            self.model_config,
            n_replicates=self.config.n_replicates,
            n_task_inputs=self.task.n_inputs,
            key=init_key,
        )
        self.trials = self.task.training_trials(
            trials_key,
            n_replicates=self.config.n_replicates,
            n_batches=self.config.n_batches,
            batch_size=self.config.batch_size,
            shared=self.config.shared_trials,
        )

    def train(self, **kwargs) -> mf.TrainResult:
        kwargs.setdefault("progress", False)
        return mf.train(
            self.ensemble, self.trials, self.task, self.config, key=self.train_key, **kwargs
        )


@pytest.fixture
def tiny():
    return TinySetup


@pytest.fixture(scope="session", autouse=True)
def compilation_cache(tmp_path_factory):
    """Programs compiled once are loaded, not compiled again, by later tests (a temp dir)."""
    directory = tmp_path_factory.mktemp("jax_cache")
    mfp.enable_compilation_cache(directory)
    return directory
