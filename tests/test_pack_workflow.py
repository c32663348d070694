"""Packs end to end (``resources.<stage>.pack``): the real `snakemake` trains the tiny
config's two experiments in one job, each exactly as trained alone; an edit of one
reruns its pack, where the other resumes its finished checkpoint; and unpacking reruns
the trainings without training again. Every stage packed makes every file the
unpacked pipeline makes, with the same contents."""

import pytest
from workflow_helpers import (
    assert_same_results,
    at,
    copy_project,
    finished_tiny_pipeline,
    make_workdir,
    planned_jobs,
    snakemake,
    tiny_config,
    write_config,
)

pytestmark = pytest.mark.workflow

MEMBERS = ("quiet", "noisy")
# The train stage's outputs of both experiments: what a pack's job makes.
TRAINED = [f"results/{name}/{out}" for name in MEMBERS for out in ("model", "history.zarr")]
FINISHED = "This configuration finished training earlier"


def packed_config(edit=None) -> dict:
    config = tiny_config()
    config["resources"] = {"train": {"pack": 2}}
    if edit:
        edit(config)
    return config


def log(workdir, name: str) -> str:
    return (workdir / "results" / "logs" / "train" / f"{name}.log").read_text()


@pytest.fixture(scope="module")
def trained_pack(tmp_path_factory):
    """A project whose two experiments were trained in one pack, and the plan of that
    run (copy it to change it)."""
    workdir = make_workdir(tmp_path_factory.mktemp("packed"), packed_config())
    plan = planned_jobs(workdir, *TRAINED)
    snakemake(workdir, *TRAINED)
    return workdir, plan


def test_a_pack_trains_each_experiment_as_alone_and_an_edit_reruns_only_its_pack(
    trained_pack, tmp_path
):
    project, plan = trained_pack
    assert plan >= {("train_pack_0", "")}
    assert not {job for job in plan if job[0] == "train"}
    workdir = copy_project(project, tmp_path / "packed")
    # Each model and history is bitwise what the unpacked pipeline trained (two CPU
    # devices there, one device here, mapped over the pack).
    alone = finished_tiny_pipeline()
    assert_same_results(workdir, alone, list(MEMBERS), ("history.zarr",))
    for name in MEMBERS:  # the pack's lines, each starting with its experiment's name
        assert f"{name}: Training 2 replicates" in log(workdir, name)

    # An edit of one member reruns its pack; the other resumes its finished checkpoint.
    write_config(workdir, packed_config(at("experiments.noisy.override.model.feedback.delay", 2)))
    assert {rule for rule, _ in planned_jobs(workdir, *TRAINED)} == {"train_pack_0"}
    snakemake(workdir, *TRAINED)
    assert f"quiet: {FINISHED}" in log(workdir, "quiet")
    assert "noisy: Training from the first batch" in log(workdir, "noisy")
    assert_same_results(workdir, alone, ["quiet"], ("history.zarr",))

    # Unpacked again: the trainings rerun, alone, and each resumes its checkpoint.
    write_config(workdir, tiny_config())
    assert planned_jobs(workdir, *TRAINED) == {
        ("train", "experiment=quiet"),
        ("train", "experiment=noisy"),
    }
    snakemake(workdir, *TRAINED)
    assert FINISHED in log(workdir, "quiet") and FINISHED in log(workdir, "noisy")
    assert_same_results(workdir, alone, list(MEMBERS), ("history.zarr",))
    assert not planned_jobs(workdir, *TRAINED)


def test_a_packs_cluster_job_asks_for_what_the_profile_sets_for_training(tmp_path):
    """The SLURM profile's set-resources name the train rule; a pack's rule takes them
    (its early-warning signal: a pack checkpoints before its time limit)."""
    workdir = make_workdir(tmp_path, packed_config())
    result = snakemake(workdir, "--profile", "profiles/slurm", "--dry-run", *TRAINED)
    plan = result.stdout + result.stderr
    job = plan[plan.index("rule train_pack_0:") :]
    resources = next(line for line in job.splitlines() if line.strip().startswith("resources:"))
    assert "slurm_extra=--signal=USR1@300" in resources
    assert "mem_mb=4000" in resources and "runtime=120" in resources


EVERY_STAGE = {stage: {"pack": 2} for stage in ("train", "evaluate", "analysis", "figures")}
# The rules of an experiment's jobs alone.
ALONE = {"train", "evaluate", "analysis", "experiment_figures", "analysis_figures"}


def files_below(folder):
    return {path.relative_to(folder) for path in folder.rglob("*") if path.is_file()}


def test_every_stage_packed_makes_the_unpacked_pipelines_files(trained_pack, tmp_path):
    """From the trained pack (the train stage's pack is the same job under both configs)."""
    config = tiny_config()
    config["resources"] = EVERY_STAGE
    workdir = copy_project(trained_pack[0], tmp_path / "packed")
    write_config(workdir, config)
    # One job per stage for both experiments, none of an experiment alone.
    rules = {rule for rule, wildcards in planned_jobs(workdir)}
    assert {f"{rule}_pack_0" for rule in ("evaluate", "analysis")} <= rules
    assert {"experiment_figures_pack_0", "analysis_figures_pack_0"} <= rules
    assert not rules & ALONE
    snakemake(workdir)
    alone = finished_tiny_pipeline()
    stores = ("history.zarr", "states.zarr", "metrics.zarr", "analysis.zarr")
    assert_same_results(workdir, alone, list(MEMBERS), stores)
    for name in MEMBERS:
        table = f"results/{name}/metrics.csv"
        assert (workdir / table).read_text() == (alone / table).read_text()
        assert f"Wrote results/{name}/states.zarr" in (workdir / f"results/logs/evaluate/{name}.log").read_text()
    # The same figures and logs (a pack's benchmark record is its own).
    for folder in ("results/figures", "results/logs"):
        assert files_below(workdir / folder) == files_below(alone / folder)
    assert not planned_jobs(workdir)

    # An edit of one experiment reruns its packs, and no experiment's job alone.
    edit = at("experiments.noisy.override.model.feedback.delay", 2)
    config = tiny_config()
    edit(config)
    config["resources"] = EVERY_STAGE
    write_config(workdir, config)
    rules = {rule for rule, _ in planned_jobs(workdir)}
    assert {"evaluate_pack_0", "analysis_pack_0", "experiment_figures_pack_0"} <= rules
    assert not rules & ALONE


def test_the_arm_figures_pack_only_the_experiments_with_an_arm(tmp_path):
    """The arm figure's packs take the experiments with an arm, in order; the others
    have none (packs.smk cuts each rule's packs among the files it makes)."""
    config = tiny_config()
    arm = {"kind": "arm", "upper_arm_length": 2.0, "forearm_length": 2.0,
           "joint_limits_deg": None, "shoulder_pos": [0.0, -2.0]}  # fmt: skip
    config["models"]["arm"] = {**config["models"]["small"], "plant": arm}
    for name in ("reach_a", "reach_b"):
        config["experiments"][name] = {"task": "reach", "model": "arm", "training": "quick"}
    config["resources"] = {"figures": {"pack": 2}}
    jobs = planned_jobs(make_workdir(tmp_path, config))
    assert ("arm_figure_pack_0", "") in jobs
    assert not {job for job in jobs if job[0] == "arm_figure"}
    result = snakemake(tmp_path, "--dry-run", "--printshellcmds", "--forceall")
    plan = result.stdout + result.stderr
    job = plan[plan.index("rule arm_figure_pack_0:") :]
    outputs = next(line for line in job.splitlines() if line.strip().startswith("output:"))
    assert outputs.split(":", 1)[1].strip().split(", ") == [
        "results/figures/reach_a/arm.png",
        "results/figures/reach_b/arm.png",
    ]
    # The others' figures pack without them: quiet and noisy, then the arms.
    assert {("experiment_figures_pack_0", ""), ("experiment_figures_pack_1", "")} <= jobs
