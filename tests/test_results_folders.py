"""Several configs in one project: each writes only its own results folder.

A paper's repository runs several configs with --configfile, one after another. Each
config's outputs live apart (results/<config file name>/, or its `results` key), so
running one never changes, nor makes stale, what another made, even where both name
an experiment alike; a folder another config file wrote is refused before anything runs.
"""

from __future__ import annotations

import hashlib

import pytest
from workflow_helpers import make_workdir, planned_jobs, snakemake, tiny_config, write_config

import motorflow as mf
import motorflow.pipeline as mfp
from motorflow.pipeline._cli import main


def _config(hidden_size: int) -> dict:
    """A tiny config of one experiment, `quiet` (a different network per config)."""
    config = tiny_config()
    del config["results"]  # the default folder: results/<config file name>
    config["experiments"] = {"quiet": config["experiments"]["quiet"]}
    config["protocols"] = {}
    config["evaluation"] = {}
    config["models"]["small"]["network"]["hidden_size"] = hidden_size
    config["analysis"] = {"fixed_points": {"n_starts": 2, "steps": 50}}
    config["figures"]["experiments"] = []  # the comparison figure is each config's own
    return config


def checksums(folder) -> dict[str, str]:
    """Every file under `folder` (relative path) with its content's digest and mtime."""
    return {
        str(path.relative_to(folder)): (
            hashlib.sha256(path.read_bytes()).hexdigest(),
            path.stat().st_mtime_ns,
        )
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A workdir with two configs that both define `quiet`, each run in full, in turn."""
    workdir = make_workdir(tmp_path_factory.mktemp("project"), _config(6))
    write_config(workdir, _config(6), "config/first.yaml")
    write_config(workdir, _config(7), "config/second.yaml")
    snakemake(workdir, "--configfile", "config/first.yaml")
    first = checksums(workdir / "results" / "first")
    snakemake(workdir, "--configfile", "config/second.yaml")
    return workdir, first


def test_two_configs_with_one_experiment_name_never_touch_each_other(project):
    workdir, first_before = project
    results = workdir / "results"
    assert sorted(p.name for p in results.iterdir() if p.is_dir()) == ["first", "second"]
    # Running the second config changed nothing of the first's, byte or timestamp.
    assert checksums(results / "first") == first_before
    assert "quiet/model/ensemble.json" in first_before
    assert "figures/comparison.png" in first_before
    # Both trained their own `quiet`: the networks differ as their configs do.
    for name, size in (("first", 6), ("second", 7)):
        _, config = mf.load_ensemble(results / name / "quiet" / "model")
        assert config.network.hidden_size == size
    # Nothing is stale for either.
    for name in ("first", "second"):
        assert planned_jobs(workdir, "--configfile", f"config/{name}.yaml") == set()


def test_a_dry_run_claims_no_folder_and_the_default_config_has_its_own(project):
    workdir, _ = project
    jobs = planned_jobs(workdir)  # config/config.yaml: results/config/
    assert ("train", "experiment=quiet") in jobs
    assert not (workdir / "results" / "config").exists()


def test_another_file_of_the_same_name_is_refused_before_anything_runs(
    project, capsys, monkeypatch
):
    workdir, _ = project
    write_config(workdir, _config(8), "other/first.yaml")
    before = checksums(workdir / "results")
    result = snakemake(workdir, "--configfile", "other/first.yaml", check=False)
    assert result.returncode != 0
    message = result.stdout + result.stderr
    assert "results/first/ holds the results of config/first.yaml" in message
    assert "`results:`" in message and "Nothing was run" in message
    assert checksums(workdir / "results") == before
    # motorflow check says the same, from the same directory.
    monkeypatch.chdir(workdir)
    assert main(["check", "other/first.yaml"]) == 1
    assert "results/first/ holds the results of config/first.yaml" in capsys.readouterr().err


def test_the_results_key_names_the_folder_and_a_target_elsewhere_says_where(project):
    workdir, _ = project
    config = _config(8)
    config["results"] = "results/first-v2"
    write_config(workdir, config, "other/first.yaml")
    jobs = planned_jobs(workdir, "--configfile", "other/first.yaml")
    assert ("train", "experiment=quiet") in jobs
    result = snakemake(
        workdir,
        "--dry-run",
        "results/quiet/metrics.csv",
        "--configfile",
        "config/first.yaml",
        check=False,
    )
    assert result.returncode != 0
    assert "its outputs are under results/first/" in result.stdout + result.stderr


def test_the_folder_follows_the_config_files():
    assert mfp.results_folder(None, ["config/learning-rules.yaml"]) == "results/learning-rules"
    assert mfp.results_folder(None, ["a.yaml", "b.yml"]) == "results/a+b"
    assert mfp.results_folder("out/x/", ["a.yaml"]) == "out/x"
    for bad in ("/abs", "../up", "a/../b", ".hidden", ""):
        with pytest.raises(mf.ConfigError, match="is not a results folder"):
            mfp.results_folder(bad, ["a.yaml"])
