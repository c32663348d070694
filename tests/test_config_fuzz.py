"""Randomly broken configs: each gets one ConfigError naming a key, never a crash.

Mutations of valid configs (values swapped for values of other types and ranges,
keys deleted, renamed or added) are run through the checks the Snakefile runs. A
mutated config either resolves or raises :class:`motorflow.ConfigError` with a key
path; any other exception is a bug. Where the typed config accepts a mutant, the
generated JSON Schema (what Snakemake validates) must accept it too.
"""

from __future__ import annotations

import copy
import random

import jsonschema
import pytest
from workflow_helpers import REPO, tiny_config

import motorflow as mf
import motorflow.pipeline as mfp

SCHEMA = mfp.load_config_file(REPO / "workflow/schemas/config.schema.yaml")
# One validator for every mutant: `jsonschema.validate` checks the schema itself first on
# every call, 1.1 s each (most of this file's time: 84 of 92 s profiled).
VALIDATOR = jsonschema.validators.validator_for(SCHEMA)(SCHEMA)
MUTANTS_PER_BASE = 500

# Values of every JSON type, in and out of every range a setting has.
VALUES = [
    None, True, False, 0, 1, -1, 7, 2**31, -(2**40), 0.0, 0.5, -0.5, 1e-3, 1e300,
    float("nan"), float("inf"), "", "x", "gru", "1e-3", "../../etc", "a b", "x" * 100,
    [], [0], [1, 2], [[0, 0]], [[1, 1], [-1, -1]], ["network"], {}, {"x": 1},
    {"weight": -1}, {"kind": "exponential"},
]  # fmt: skip


def rich_config() -> dict:
    """A config that sets keys of every section, so mutations reach all of them."""
    config = tiny_config()
    config["trainings"]["quick"].update(
        optimizer={
            "name": "adamw",
            "learning_rate": 0.01,
            "clip_global_norm": 1.0,
            "schedule": {"kind": "warmup_cosine", "warmup_steps": 2},
        },
        loss={"position": {"weight": 2.0}, "effort": {"weight": 0.0}},
        trainable=["network.readout"],
        shared_trials=True,
    )
    config["models"]["leaky"] = {"dt": 0.05, "network": {"cell": {"kind": "leaky", "tau": 0.1}}}
    # A partial plant block (no kind) fits every kind's schema; the default kind holds.
    config["models"]["small"]["plant"] = {"n_substeps": 2}
    config["models"]["arm"] = {"plant": {"kind": "muscle_arm", "joint_viscosity": 0.1}}
    config["tasks"]["near"] = {
        "workspace": [[-0.15, 0.3], [0.15, 0.55]],
        "eval": {"center": [0.0, 0.42], "distances": [0.1]},
    }
    config["experiments"]["arm"] = {"task": "near", "model": "arm", "training": "quick"}
    config["experiments"]["noisy"]["override"]["training"] = {"n_batches": 10}
    config["sweeps"] = {"s": {"experiment": "quiet", "grid": {"seed": [1, 2]}}}
    config["resources"] = {"train": {"threads": 2, "gpus": 1, "gpu_model": "a100"}}
    config["evaluation"] = {"goal_radius": 0.1}
    config["track_code"] = True
    return config


def _nodes(value, path=()):
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _nodes(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _nodes(item, (*path, index))


def mutate(config: dict, rng: random.Random) -> dict:
    config = copy.deepcopy(config)
    nodes = [(path, value) for path, value in _nodes(config) if path]
    path, _ = rng.choice(nodes)
    *parents, last = path
    parent = config
    for key in parents:
        parent = parent[key]
    action = rng.choice(["replace", "replace", "delete", "rename", "add"])
    if action == "replace":
        parent[last] = copy.deepcopy(rng.choice(VALUES))
    elif action == "delete" and isinstance(parent, dict):
        del parent[last]
    elif action == "rename" and isinstance(parent, dict):
        parent[rng.choice(["x", "a b", "../x", "seed", "kind", "x" * 70])] = parent.pop(last)
    elif action == "add" and isinstance(parent[last], dict):
        parent[last][rng.choice(["x", "kind", "weight", "", "1"])] = rng.choice(VALUES)
    else:
        parent[last] = copy.deepcopy(rng.choice(VALUES))
    return config


@pytest.mark.parametrize("base", [tiny_config, rich_config], ids=["tiny", "rich"])
def test_mutated_configs_get_a_config_error_or_resolve(base):
    rng = random.Random(f"motorflow-{base.__name__}")
    rejected = 0
    for _ in range(MUTANTS_PER_BASE):
        config = mutate(base(), rng)
        try:
            settings = mfp.parse_config(config)
            mfp.resolve_experiments(settings)
        except mf.ConfigError as error:
            rejected += 1
            assert error.path and error.message, repr(error)
            continue
        # The typed config accepted it: so must the schema Snakemake validates.
        VALIDATOR.validate({**config, **settings.filled_sections()})
    # Most mutations break something; a fuzzer that broke nothing tested nothing.
    assert rejected > MUTANTS_PER_BASE // 2


def test_the_rich_base_config_is_valid():
    assert len(mfp.resolve_experiments(rich_config())) == 5
