"""A job's script reads the job its command describes (motorflow.pipeline._job) as it
read Snakemake's own job object; the command's text changes with the script."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from snakemake.iocontainers import InputFiles, OutputFiles, Params, ResourceList, Wildcards

import motorflow.pipeline as mfp
from motorflow.pipeline._job import Job, Names, run_job

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
    run = {"jax_cache_dir": "cache", "training": {"checkpoint": {"every": 5}}}
    text = mfp.describe_job("train", params=PARAMS, threads=2, run=run, **SNAKEMAKE)
    job = Job.from_command(text, ["logs/train/quiet.log"])
    assert job.run == run
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


def test_a_pack_member_reads_as_its_own_job_would():
    """A pack's job (resources.<stage>.pack) runs each member as its own job: the
    member's script sees the files, names and params its own job's script would."""
    alone = Job.from_command(
        mfp.describe_job("train", params=PARAMS, threads=2, **SNAKEMAKE), ["own.log"]
    )
    member = mfp.PackMember(
        "quiet",
        input={"trials": "trials.zarr", "histories": ["h1.zarr", "h2.zarr"], "init": [],
               "eval": "eval.zarr"},
        output={"model": "model", "history": "history.zarr", f"{mfp.UNNAMED_FILE}2": "extra.txt"},
        params=PARAMS,
        log=["own.log"],
        run={"jax_cache_dir": "cache"},
    )  # fmt: skip
    other = mfp.PackMember("noisy", input={}, output={}, params={}, log=["other.log"])
    text = mfp.describe_pack("train", [member, other], threads=2, resources={"gpu": 0})
    parts = json.loads(text)
    assert (parts["threads"], parts["resources"]["values"]) == (2, [0])  # what the client reads
    packed = Job.from_parts(parts["members"][0], parts["members"][0]["log"])
    assert (packed.rule, packed.threads, list(packed.log), packed.run) == (
        "train", 2, ["own.log"], {"jax_cache_dir": "cache"}
    )  # fmt: skip
    for ours, theirs in (
        (packed.input, alone.input),
        (packed.output, alone.output),
        (packed.params, alone.params),
        (packed.wildcards, alone.wildcards),
    ):
        assert list(ours) == list(theirs) and ours.spans() == theirs.spans()
    assert packed.input.histories == ["h1.zarr", "h2.zarr"] and not packed.input.init
    assert "#2" not in packed.output.keys() and packed.output[2] == "extra.txt"


def pack_script(tmp_path):
    (tmp_path / "stage.py").write_text(
        "import sys\n"
        "open(snakemake.output[0], 'w').write(snakemake.wildcards.experiment)\n"
        "print('ran', snakemake.wildcards.experiment)\n"
        "sys.exit(int(snakemake.params.status))\n"
    )
    return str(tmp_path / "stage.py")


def pack_of(tmp_path, statuses):
    members = [
        mfp.PackMember(
            name,
            input={},
            output={f"{mfp.UNNAMED_FILE}0": str(tmp_path / f"{name}.txt")},
            params={"status": str(status)},
            log=[str(tmp_path / f"{name}.log")],
        )
        for name, status in statuses.items()
    ]
    return mfp.describe_pack("stage", members, threads=1, resources={"gpu": 0})


def test_a_pack_runs_its_members_in_order_and_stops_at_the_first_that_fails(tmp_path, capfd):
    script = pack_script(tmp_path)
    assert run_job(script, pack_of(tmp_path, {"a": 0, "b": 0}), []) == 0
    assert capfd.readouterr().out.split() == ["ran", "a", "ran", "b"]
    assert (tmp_path / "a.txt").read_text() == "a" and (tmp_path / "b.txt").read_text() == "b"

    status = run_job(script, pack_of(tmp_path, {"c": 0, "d": 3, "e": 0}), [])
    out, err = capfd.readouterr()
    assert status == 3 and out.split() == ["ran", "c", "ran", "d"]
    assert not (tmp_path / "e.txt").exists()  # the member after the failure never ran
    assert f"stage of d failed in its pack (exit status 3); its log: {tmp_path / 'd.log'}" in err


def test_a_job_of_a_thousand_experiments_runs_from_one_shell_command(tmp_path):
    """A figure of every experiment of a 1,000-experiment sweep: its description is
    about three times what Linux allows one argument (MAX_ARG_STRLEN, 131,072 bytes),
    and Snakemake hands the whole command to `bash -c` as one argument."""
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "stage.py").write_text(
        "open(snakemake.output.out, 'w').write('\\n'.join(snakemake.input))\n"
    )
    names = [f"quiet_seed-{i // 27:02d}_noise-{0.01 * (i % 27):.2f}" for i in range(1000)]
    histories = [f"results/default/experiments/{name}/history.zarr" for name in names]
    metrics = [f"results/default/experiments/{name}/metrics.zarr" for name in names]
    text = mfp.describe_job(
        rule="stage",
        input=named(
            InputFiles, histories + metrics, {"histories": (0, 1000), "metrics": (1000, 2000)}
        ),
        output={"out": "out.txt"},
        params=PARAMS,
        wildcards={},
        threads=1,
        resources={"gpu": 0},
    )
    assert len(text) > 131_072
    work = tmp_path / "work"
    work.mkdir()
    folder = work / ".snakemake" / "motorflow-jobs"
    argument = mfp.job_argument(text, folder)
    assert len(argument) < 1000 and mfp.job_argument(text, folder) == argument  # one file
    # As the rule's command: the client's start, then what job_command's text names.
    command = (
        mfp.job_command(scripts, "stage.py")
        .replace("{params.job_client}", mfp.job_client(scripts))
        .replace("{params.job:q}", shlex.quote(argument))
        .replace("{log:q}", "")
    )
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=work,
        check=False,
        capture_output=True,
        text=True,
        env={
            "PYTHONPATH": str(REPO / "src"),
            "PATH": os.environ["PATH"],
            "MOTORFLOW_WARM_WORKERS": "0",  # the job's own process: its command starts it
        },
    )
    assert done.returncode == 0, done.stderr
    assert (work / "out.txt").read_text().split("\n") == histories + metrics


def test_a_short_description_is_its_own_argument_and_a_missing_file_is_named(tmp_path):
    text = mfp.describe_job("train", params=PARAMS, threads=2, **SNAKEMAKE)
    assert mfp.job_argument(text, tmp_path) == text and not any(tmp_path.iterdir())
    missing = "@" + str(tmp_path / "gone.json")
    with pytest.raises(FileNotFoundError, match="gone.json is missing.*run snakemake again"):
        Job.from_command(missing, [])
