"""Shared tiny setups: every test compiles in about a second on a laptop CPU."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import jax
import numpy as np
import pytest

import motorflow as mf
import motorflow.pipeline as mfp

# XLA's backend (LLVM) optimisation is most of the compile time of the tests' tiny
# programs, which run for milliseconds: a fresh process's tiny training costs 44 CPU-s
# with it and 18 without (benchmarks/README.md, "The test suite's time"). The tests run
# without it: every process of the session (xdist workers, each snakemake, its jobs and
# warm workers, the tests' subprocesses) inherits this variable. The programs are the same
# HLO, their numbers agree to float32 rounding, and every comparison is between two runs
# of one session. `MOTORFLOW_TEST_OPTIMIZED=1 pytest` runs the suite as users' jobs
# compile.
if not os.environ.get("MOTORFLOW_TEST_OPTIMIZED"):
    os.environ["JAX_DISABLE_MOST_OPTIMIZATIONS"] = "1"
    jax.config.update("jax_disable_most_optimizations", True)

# One XLA CPU device, set as the workflow's jobs set it (motorflow.pipeline.use_devices):
# a program's compile options differ with JAX's default (-1) and with 1 (jaxlib 0.10.2),
# so the persistent compilation cache never gave a test process a program a job had
# compiled, nor a job one a test had (the in-process fresh run of
# tests/test_edits_workflow.py compiled its 67 programs again, 18.6 s). The tests that
# need two devices start processes of their own with XLA's flag, which this leaves be
# (tests/test_sharding.py).
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    jax.config.update("jax_num_cpu_devices", 1)


@contextlib.contextmanager
def compiled_as_users_jobs_compile() -> Iterator[None]:
    """XLA's full optimisation inside the block: the hallmark trainings, whose programs
    run for minutes, gain nothing from turning it off (the curl-field fixture: 125.6
    CPU-s without, 122.5 with), and their thresholds hold for the numbers users' jobs
    give (field B's final speed, 0.052 m/s without against the bound of 0.05).

    The setting is not part of JAX's in-memory jit key (the persistent cache's key has
    it), so the block clears those caches on the way in and out: otherwise the block
    reuses programs compiled without optimisation and the tests after it programs
    compiled with it, and results differ by an ulp (a CI run, one worker: field B's
    hallmark missed, and two tests of bitwise equality failed after it)."""
    before = jax.config.read("jax_disable_most_optimizations")
    jax.clear_caches()
    jax.config.update("jax_disable_most_optimizations", False)
    try:
        yield
    finally:
        jax.clear_caches()
        jax.config.update("jax_disable_most_optimizations", before)


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


def replicate_batch(ensemble, task, config):
    """Replicate 0's parameters and its batch of 6 training trials of `task` (noise on),
    as a learning rule's `value_and_grad` takes them."""
    from motorflow._model._ensemble import take_replicate

    trainer = mf.Trainer(ensemble, task, config)
    params = take_replicate(trainer.initial_params, 0)
    frozen = take_replicate(trainer.frozen, 0)
    trials = task.training_trials(key=jax.random.key(4), n_replicates=1, n_batches=1, batch_size=6)
    trials = jax.tree.map(lambda x: x[0, 0], trials)
    return params, trainer.replicate_batch(params, frozen, trials, key=jax.random.key(5))


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
            key=trials_key,
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


# One folder for the whole test session, made by the process pytest was started in and
# inherited by its xdist workers: the compilation cache that every test and every
# snakemake a test starts shares, and what a session runs once for all its workers.
SESSION_VARIABLE = "MOTORFLOW_TEST_SESSION"


def pytest_configure(config):
    if not os.environ.get(SESSION_VARIABLE):
        os.environ[SESSION_VARIABLE] = tempfile.mkdtemp(prefix="motorflow-tests-")
        config.stash[_MADE_SESSION] = os.environ[SESSION_VARIABLE]


def pytest_unconfigure(config):
    made = config.stash.get(_MADE_SESSION, None)
    if made:
        shutil.rmtree(made, ignore_errors=True)
        os.environ.pop(SESSION_VARIABLE, None)


_MADE_SESSION = pytest.StashKey[str]()


@pytest.fixture(scope="session", autouse=True)
def compilation_cache():
    """Programs compiled once are loaded, not compiled again, by later tests, on every
    worker and in every end-to-end run's jobs (tests/workflow_helpers.write_config)."""
    directory = Path(os.environ[SESSION_VARIABLE]) / "jax_cache"
    mfp.enable_compilation_cache(directory)
    return directory


# What runs where and when. Each test's measured seconds (tests/durations.json, written
# by tests/record_durations.py) mark the long ones `slow`: `pytest -m fast` is every
# test that is neither `slow` nor runs the real snakemake (`workflow`). Under xdist the
# tests sharing a module- or class-scoped fixture run on one worker, so the fixture is
# made once, and the longest groups of tests start first, so that the workers end
# together. (xdist's own `xdist_group` marks do not group under pytest 9, whose node ids
# no longer read the suffix xdist writes: SharedFixtureScheduling below does it.)
SLOW_MARKERS = ("workflow", "slow", "slurm")
# A test over 2 s is slow: at 3 s the fast tier's 1,537 tests had grown to 4 min 24 s
# (2026-12-07); at 2 s it runs in under 3 min.
SLOW_SECONDS = 2.0
MEASURED = json.loads((Path(__file__).with_name("durations.json")).read_text())


@pytest.hookimpl(wrapper=True)  # before every other hook: -m selects by `fast`
def pytest_collection_modifyitems(config, items):
    groups = _shared_fixture_groups(items)
    _mark_and_order(items, groups)
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:  # for the scheduler in the controller, read once every worker collected
        _write_json(
            _groups_file(worker), {item.nodeid: group for item, group in groups.items()}
        )
    return (yield)


def _mark_and_order(items, groups: dict) -> None:
    # A test that shares a long fixture is as slow as the test that happened to make it.
    slow_groups = {
        groups[item]
        for item in items
        if item in groups and MEASURED.get(item.nodeid, 0.0) > SLOW_SECONDS
    }
    for item in items:
        if MEASURED.get(item.nodeid, 0.0) > SLOW_SECONDS or groups.get(item) in slow_groups:
            item.add_marker(pytest.mark.slow)
        if not any(item.get_closest_marker(name) for name in SLOW_MARKERS):
            item.add_marker(pytest.mark.fast)
    # The scheduler hands the groups out in the order of their first test; a group's
    # tests stay together, in their order, so its fixtures are made once.
    seconds: dict[str, float] = {}
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        group = groups.get(item, item.nodeid)
        seconds[group] = seconds.get(group, 0.0) + MEASURED.get(item.nodeid, 0.0)
        first.setdefault(group, index)
    order = {item: index for index, item in enumerate(items)}

    def key(item):
        group = groups.get(item, item.nodeid)
        return (-seconds[group], first[group], order[item])

    items.sort(key=key)


def _groups_file(worker: str) -> Path:
    return Path(os.environ[SESSION_VARIABLE]) / f"groups-{worker}.json"


def _write_json(path: Path, value) -> None:
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(value))
    partial.replace(path)


def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SharedFixtureScheduling(LoadScopeScheduling):
        """xdist's scheduling by scope, a scope being a group of tests that share a
        fixture (as the workers wrote them) or else one test."""

        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:  # every worker has collected, each wrote the same
                written = sorted(Path(os.environ[SESSION_VARIABLE]).glob("groups-*.json"))
                self.groups = json.loads(written[0].read_text()) if written else {}
            return self.groups.get(nodeid, nodeid)

    return SharedFixtureScheduling(config, log)


def _shared_fixture_groups(items) -> dict:
    """Each test's group: its module and the module- or class-scoped fixtures it shares
    with others there (tests joined by any shared fixture are one group); tests that
    use none are left out."""
    parent: dict[str, str] = {}

    def find(name: str) -> str:
        while parent.setdefault(name, name) != name:
            name = parent[name]
        return name

    shared_of = {}
    for item in items:
        definitions = getattr(item, "_fixtureinfo", None)
        if definitions is None:
            continue
        names = [
            f"{item.module.__name__}::{name}"
            for name in item.fixturenames
            if definitions.name2fixturedefs.get(name)
            and definitions.name2fixturedefs[name][-1].scope in ("module", "class")
        ]
        if names:
            shared_of[item] = names
            for name in names[1:]:
                parent[find(name)] = find(names[0])
    return {item: find(names[0]) for item, names in shared_of.items()}
