"""Run the real `snakemake` on tiny configs in temporary directories."""

from __future__ import annotations

import copy
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]

TINY_CONFIG = {
    "tasks": {"reach": {"n_steps": 15, "eval": {"n_directions": 4, "distances": [0.5]}}},
    "models": {"small": {"network": {"hidden_size": 8}, "feedback": {"delay": 1}}},
    "trainings": {
        "quick": {
            "n_replicates": 2,
            "n_batches": 20,
            "batch_size": 8,
            "validation": {"every": 10},
            "log": {"every": 10},
            "checkpoint": {"every": 10},
        }
    },
    "experiments": {
        "quiet": {"task": "reach", "model": "small", "training": "quick"},
        "noisy": {
            "task": "reach",
            "model": "small",
            "training": "quick",
            "override": {"model": {"feedback": {"noise_std": 0.1}}},
        },
    },
    "evaluation": {
        "conditions": {
            "unperturbed": [],
            "curl_cw": [{"kind": "curl", "strength": [5.0, 10.0], "direction": "cw"}],
            "pulse": [{"kind": "force_pulse", "amplitude": 2.0, "start": 0.2, "duration": 0.1}],
        }
    },
    "protocols": {"noise": {"stages": ["quiet", "noisy"]}},
    "figures": {"dpi": 40},
    # The tests read the outputs where this names them (by default a config's
    # results folder is results/<config file name>: tests/test_results_folders.py).
    "results": "results",
}


def tiny_config() -> dict:
    return copy.deepcopy(TINY_CONFIG)


def at(path: str, value):
    """A config edit setting the dotted `path` to `value` (missing mappings are created)."""

    def edit(config):
        *parents, last = path.split(".")
        node = config
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value

    return edit


def make_workdir(path: Path, config: dict) -> Path:
    """A copy of the workflow (and its profiles) with `config` as its config/config.yaml."""
    path.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "Snakefile", path / "Snakefile")
    for folder in ("workflow", "profiles"):
        shutil.copytree(REPO / folder, path / folder, dirs_exist_ok=True)
    write_config(path, config)
    return path


class _NoAliasDumper(yaml.SafeDumper):
    """Writes a dict used twice as two copies: motorflow's loader refuses aliases."""

    def ignore_aliases(self, data):
        return True


def session_folder() -> Path:
    """The test session's shared folder (tests/conftest.py), on every xdist worker."""
    return Path(os.environ["MOTORFLOW_TEST_SESSION"])


def finished_tiny_pipeline() -> Path:
    """A project where the tiny config's pipeline has run to completion: run once per
    test session for all its xdist workers (the first to ask runs it, the others wait
    on the lock). Shared: read it, or change a :func:`copy_project` of it."""
    folder = session_folder() / "tiny_pipeline"
    with open(session_folder() / "tiny_pipeline.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or its process dies
        if not (folder / ".complete").exists():
            shutil.rmtree(folder, ignore_errors=True)
            snakemake(make_workdir(folder, tiny_config()))
            (folder / ".complete").touch()
    return folder


def copy_project(project: Path, destination: Path) -> Path:
    """A copy of `project` as finished as it was: files keep their times, and the jobs'
    records in .snakemake name no machine path (a moved project reruns nothing:
    tests/test_workflow.py)."""
    shutil.copytree(project, destination, symlinks=True, dirs_exist_ok=True)
    (destination / ".complete").unlink(missing_ok=True)
    return destination


def write_config(workdir: Path, config: dict, name: str = "config/config.yaml") -> Path:
    """`config` as the file `name` of `workdir`; its jobs compile into the session's
    shared cache unless it names a cache of its own (each end-to-end run's jobs compiled
    every program anew in a cache of their own workdir)."""
    if "jax_cache_dir" not in config:
        config = {**config, "jax_cache_dir": str(session_folder() / "jax_cache")}
    target = workdir / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(yaml.dump(config, Dumper=_NoAliasDumper, sort_keys=False))
    return target


def snakemake_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", "--cores", "2", *args]


def snakemake_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a test's snakemake: the library under test comes first."""
    return {**os.environ, "PYTHONPATH": str(REPO / "src"), **(env or {})}


def snakemake(
    workdir: Path, *args: str, check: bool = True, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """Run snakemake in `workdir`; the library is the one under test.

    The command runs in a fork of a process that imported Snakemake and motorflow once
    (tests/snakemake_forks.py), which saves each command about 5 CPU-s of imports;
    ``MOTORFLOW_TEST_FORKS=0`` starts a fresh Python for each instead."""
    command, environment = snakemake_command(*args), snakemake_env(env)
    forks = _forks(environment)
    if forks is not None:
        return _checked(forks.run(command[3:], workdir, environment), command, check)
    result = subprocess.run(  # noqa: PLW1510 - the caller decides what a failure means
        command, cwd=workdir, env=environment, capture_output=True, text=True
    )
    return _checked(result, command, check)


def _checked(
    result: subprocess.CompletedProcess, command: list[str], check: bool
) -> subprocess.CompletedProcess:
    args = command[5:]  # after python -m snakemake --cores 2
    if check and result.returncode != 0:
        raise AssertionError(
            f"snakemake {' '.join(args)} failed ({result.returncode}):\n"
            f"{result.stdout[-4000:]}\n{result.stderr[-6000:]}"
        )
    return result


# Variables that Python, JAX or XLA read as they start or import: a command whose
# environment sets one otherwise than the forked process had it starts a fresh Python.
_READ_AT_START = ("PYTHON", "JAX_", "XLA_", "TF_", "CUDA_")


class _Forks:
    """The xdist worker's process of snakemake_forks.py and the environment it began in."""

    def __init__(self, environment: dict[str, str]):
        self.environment = _read_at_start(environment)
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("snakemake_forks.py"))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=environment,
            text=True,
        )
        self.pid = os.getpid()
        if self.process.stdout.readline().strip() != "ready":
            raise RuntimeError("tests/snakemake_forks.py did not start")

    def alive(self) -> bool:
        """Started by this process (not inherited through a fork) and still running."""
        return self.pid == os.getpid() and self.process.poll() is None

    def run(self, args: list[str], workdir: Path, environment: dict[str, str]):
        folder = Path(tempfile.mkdtemp(prefix="snakemake-", dir=session_folder()))
        request = {
            "args": args,
            "cwd": str(workdir),
            "env": environment,
            "stdout": str(folder / "stdout"),
            "stderr": str(folder / "stderr"),
        }
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        if not answer:
            raise RuntimeError("tests/snakemake_forks.py ended during a command")
        streams = [(folder / name).read_text(errors="replace") for name in ("stdout", "stderr")]
        shutil.rmtree(folder)
        return subprocess.CompletedProcess(
            [sys.executable, "-m", "snakemake", *args], json.loads(answer), *streams
        )


def _read_at_start(environment: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in environment.items() if k.startswith(_READ_AT_START)}


_FORKS: list[_Forks] = []


def _forks(environment: dict[str, str]) -> _Forks | None:
    """This process's forking process, started on first use; None where the command
    must start a fresh Python (``MOTORFLOW_TEST_FORKS=0``, or an environment that sets a
    variable read at start otherwise)."""
    if os.environ.get("MOTORFLOW_TEST_FORKS") == "0":
        return None
    if not (_FORKS and _FORKS[0].alive()):
        _FORKS[:] = [_Forks(snakemake_env())]
    return _FORKS[0] if _read_at_start(environment) == _FORKS[0].environment else None


_JOB = re.compile(r"^(?:local)?rule (\w+):$")
_WILDCARDS = re.compile(r"^\s+wildcards: (.*)$")


def planned_jobs(workdir: Path, *args: str) -> set[tuple[str, str]]:
    """The (rule, wildcards) of every job a dry run would execute."""
    result = snakemake(workdir, "--dry-run", *args)
    jobs: list[list[str]] = []
    for line in (result.stdout + result.stderr).splitlines():
        if match := _JOB.match(line):
            jobs.append([match.group(1), ""])
        elif (match := _WILDCARDS.match(line)) and jobs:
            jobs[-1][1] = match.group(1)
    return {(rule, wildcards) for rule, wildcards in jobs}


EXPERIMENT_STORES = ("history.zarr", "states.zarr", "metrics.zarr")


def assert_same_results(
    workdir_a: Path,
    workdir_b: Path,
    experiments: list[str],
    stores_of_each: tuple[str, ...] = EXPERIMENT_STORES,
) -> None:
    """Every Zarr store and model of the experiments holds identical arrays in both.

    `stores_of_each` names the experiment stores compared (default: all of them). The
    history's ``run_record`` attribute (machine, times) describes how, not what, and
    is left out.
    """
    import equinox as eqx
    import numpy as np
    import xarray as xr

    import motorflow as mf
    import motorflow.pipeline as mfp

    stores = [
        Path("trials", d.name, s)
        for d in (workdir_a / "results/trials").iterdir()
        for s in ("train.zarr", "eval.zarr")
    ]
    for experiment in experiments:
        stores += [Path(experiment, s) for s in stores_of_each]
    # Only the stores a run wrote (a run may have stopped at a stage); both runs must agree.
    stores = [s for s in stores if (workdir_a / "results" / s).exists()]
    assert all((workdir_b / "results" / s).exists() for s in stores)
    for store in stores:
        a = mfp.open_dataset(workdir_a / "results" / store)
        b = mfp.open_dataset(workdir_b / "results" / store)
        assert ("run_record" in a.attrs) == ("run_record" in b.attrs)
        a.attrs.pop("run_record", None), b.attrs.pop("run_record", None)
        xr.testing.assert_identical(a, b)
    models = [
        Path(experiment, name) for experiment in experiments for name in ("model", "model_best")
    ]
    for model in [m for m in models if (workdir_a / "results" / m).exists()]:
        model_a, config_a = mf.load_ensemble(workdir_a / "results" / model)
        model_b, config_b = mf.load_ensemble(workdir_b / "results" / model)
        assert config_a == config_b
        assert mf.load_training_record(workdir_a / "results" / model) == mf.load_training_record(
            workdir_b / "results" / model
        )
        for x, y in zip(
            jax_leaves(eqx.filter(model_a, eqx.is_array)),
            jax_leaves(eqx.filter(model_b, eqx.is_array)),
        ):
            np.testing.assert_array_equal(x, y)


def jax_leaves(tree):
    import jax

    return jax.tree.leaves(tree)


def train_through_stages(experiment, results: Path) -> None:
    """The trial specs (if missing) and training of `experiment` through the stage
    functions the workflow's scripts call, into the workflow's layout under `results`."""
    import motorflow.pipeline as mfp

    trials = results / "trials" / experiment.dataset
    if not trials.exists():
        mfp.make_trials(
            experiment.dataset_spec(),
            train_path=trials / "train.zarr",
            eval_path=trials / "eval.zarr",
        )
    parent = experiment.init_from
    mfp.train_experiment(
        experiment,
        trials_path=trials / "train.zarr",
        eval_path=trials / "eval.zarr",
        model_path=results / experiment.name / "model",
        best_model_path=results / experiment.name / "model_best",
        history_path=results / experiment.name / "history.zarr",
        checkpoint_dir=results / experiment.name / "checkpoints",
        init_path=results / parent / "model" if parent else None,
        progress=False,
    )


def evaluate_through_stage(experiment, results: Path, evaluation) -> None:
    """The evaluation of `experiment`, trained into `results` (the workflow's layout),
    through the stage function the workflow's script calls."""
    import motorflow.pipeline as mfp

    folder = results / experiment.name
    mfp.evaluate_experiment(
        experiment.name,
        task=experiment.task,
        seed=experiment.seed,
        model_path=folder / "model",
        eval_path=results / "trials" / experiment.dataset / "eval.zarr",
        states_path=folder / "states.zarr",
        metrics_path=folder / "metrics.zarr",
        table_path=folder / "metrics.csv",
        evaluation=evaluation,
    )
