"""A job's script reads the job its command describes (motorflow.pipeline._job) as it
read Snakemake's own job object; the command's text changes with the script."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from snakemake.iocontainers import InputFiles, OutputFiles, Params, ResourceList, Wildcards

import motorflow.pipeline as mfp
from motorflow.pipeline._job import Job, Names

REPO = Path(__file__).resolve().parents[1]


def named(kind, values, spans):
    items = kind(values)
    for name, (start, end) in spans.items():
        items._set_name(name, start, end=end)
    return items


# As Snakemake gives them to a params function: a named list input (a function's list,
# here one of two files and one empty), named and unnamed outputs, the settings.
SNAKEMAKE = {
    "input": named(
        InputFiles,
        ["trials.zarr", "h1.zarr", "h2.zarr", "eval.zarr"],
        {"trials": (0, None), "histories": (1, 3), "init": (3, 3), "eval": (3, None)},
    ),
    "output": named(OutputFiles, ["model", "history.zarr", "extra.txt"], {"model": (0, None), "history": (1, None)}),
    "wildcards": named(Wildcards, ["quiet"], {"experiment": (0, None)}),
    "resources": named(ResourceList, [2, 1, "{}", 0], {"_cores": (0, None), "_nodes": (1, None), "run": (2, None), "gpu": (3, None)}),
}  # fmt: skip
PARAMS = {"setting_0": "model.delay=2", "panel_stages": ["early", "late"], "description": "a b"}


def test_a_described_job_reads_as_snakemakes_own_job_object():
    text = mfp.describe_job("train", params=PARAMS, threads=2, **SNAKEMAKE)
    job = Job.from_command(text, ["logs/train/quiet.log"])
    params = Params(fromdict=PARAMS)
    assert (job.rule, job.threads, job.log[0]) == ("train", 2, "logs/train/quiet.log")
    for ours, theirs in (
        (job.input, SNAKEMAKE["input"]),
        (job.output, SNAKEMAKE["output"]),
        (job.wildcards, SNAKEMAKE["wildcards"]),
        (job.resources, SNAKEMAKE["resources"]),
        (job.params, params),
    ):
        assert list(ours) == list(theirs)
        assert list(ours.keys()) == list(theirs.keys())
        for name in theirs.keys():  # noqa: SIM118 - a named list iterates its values
            assert getattr(ours, name) == getattr(theirs, name) == ours[name] == theirs[name]
            assert ours.get(name) == theirs.get(name)
        assert ours.get("missing", 5) == theirs.get("missing", 5) == 5
        assert [(k, v) for k, v in ours.items()] == [(k, v) for k, v in theirs.items()]
        assert ours[-1] == theirs[-1]
    # A list input spans its files; an empty one is empty (`init` of a first stage).
    assert job.input.histories == ["h1.zarr", "h2.zarr"] and isinstance(job.input.histories, Names)
    assert not job.input.init and job.input.eval == "eval.zarr"
    assert dict(job.params.items()) == PARAMS


def test_the_command_names_its_script_by_content_and_no_path_of_this_machine(tmp_path):
    script = tmp_path / "stage.py"
    script.write_text("print('one')\n")
    first = mfp.job_command(tmp_path, "stage.py")
    assert str(tmp_path) not in first and first.startswith("{params.job_client} stage.py ")
    script.write_text("print('two')\n")  # an edit: Snakemake's code trigger sees it
    assert mfp.job_command(tmp_path, "stage.py") != first
    script.write_text("print('one')\n")
    assert mfp.job_command(tmp_path, "stage.py") == first


def test_a_job_in_a_process_of_its_own_exits_with_its_scripts_status(tmp_path):
    (tmp_path / "stage.py").write_text(
        "import sys\n"
        "open(snakemake.output.out, 'w').write(snakemake.wildcards.experiment)\n"
        "sys.exit(int(snakemake.params.status))\n"
    )
    text = mfp.describe_job(
        rule="stage",
        input={},
        output={"out": str(tmp_path / "out.txt")},
        params={"status": "4"},
        wildcards={"experiment": "quiet"},
        threads=1,
        resources={"gpu": 0},
    )
    done = subprocess.run(
        [sys.executable, "-m", "motorflow.pipeline._job", str(tmp_path / "stage.py"), text],
        check=False,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO / "src"), "PATH": ""},
    )
    assert done.returncode == 4, done.stderr
    assert (tmp_path / "out.txt").read_text() == "quiet"
