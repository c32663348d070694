"""A job that only logs pays no JAX import (issue 27 point 9: a sweep's start-ups).

Each check runs in a fresh interpreter, since this test process has JAX loaded.
"""

from __future__ import annotations

import subprocess
import sys

import pytest


def _loads_jax(code: str) -> bool:
    probe = code + "\nimport sys\nprint('jax' in sys.modules)"
    output = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    return output.stdout.strip().splitlines()[-1] == "True"


@pytest.mark.parametrize(
    "code",
    [
        "import motorflow.pipeline as mfp",
        "import motorflow.pipeline as mfp; mfp.stage_logging",
    ],
)
def test_logging_set_up_does_not_import_jax(code):
    # Fails if motorflow.pipeline._runtime (or the package) imports JAX eagerly.
    assert not _loads_jax(code)


@pytest.mark.parametrize(
    "stage",
    [
        "experiment_figures",
        "arm_figure",
        "protocol_figure",
        "comparison_figure",
        "sweep_figure, mfp.grid_point_names",
    ],
)
def test_a_figure_job_loads_neither_jax_nor_equinox(stage):
    # A figure job (one per experiment, sweep points included) reads its settings and
    # stores and draws: its imports are matplotlib's and xarray's, not the library's
    # models. Fails if the stage's module, the figures or the store readers import JAX.
    code = (
        "import motorflow.pipeline as mfp\n"
        f"mfp.{stage}, mfp.parse_setting_params, mfp.read_states, mfp.open_dataset\n"
        "import sys\n"
        "assert 'equinox' not in sys.modules"
    )
    assert not _loads_jax(code)


def test_compilation_cache_still_configures_jax(tmp_path):
    cache = tmp_path / "cache"
    code = (
        "import motorflow.pipeline as mfp, jax\n"
        f"mfp.enable_compilation_cache({str(cache)!r})\n"
        f"assert jax.config.jax_compilation_cache_dir == {str(cache)!r}"
    )
    assert _loads_jax(code)
    assert cache.is_dir()


@pytest.mark.parametrize(
    "names",
    [
        "mfp.train_experiment, mfp.train_job_experiment, mfp.job_invocation",
        "mfp.evaluate_experiment, mfp.evaluate_job_settings",
        "mfp.analyse_experiment, mf.TaskConfig, mf.AnalysisConfig",
    ],
)
def test_a_compute_job_loads_no_plotting(names):
    # Train, evaluate and analysis jobs (three per experiment) write stores, never
    # figures: matplotlib would add about 0.3 CPU-s to each. Fails if a stage's module
    # reaches the figures (as the analysis stage once did through the figure stages).
    code = (
        "import motorflow as mf, motorflow.pipeline as mfp\n"
        f"{names}, mfp.use_devices, mfp.enable_compilation_cache\n"
        "import sys\n"
        "assert 'matplotlib' not in sys.modules, sorted(m for m in sys.modules if 'motorflow' in m)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
