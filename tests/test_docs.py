"""The documentation says what the code does: every `motorflow` command it shows parses,
the output reference names every file and variable a run writes, every metric with its
unit, and the README stays a landing page whose links reach the site's pages."""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest
import xarray as xr
from workflow_helpers import REPO, finished_tiny_pipeline

from motorflow._metrics import METRICS
from motorflow.pipeline._cli import _parse

DOCS = REPO / "docs"
OUTPUTS = (DOCS / "reference" / "outputs.md").read_text()
PAGES = sorted(DOCS.rglob("*.md"))


def code_blocks(text: str, language: str = "[a-z]*") -> list[str]:
    """The fenced code blocks of a Markdown text (those in `language`, a pattern)."""
    pattern = rf"^```{language}\n(.*?)^```"
    return re.findall(pattern, text, flags=re.MULTILINE | re.DOTALL)


def motorflow_commands() -> list[tuple[str, str]]:
    """Every `motorflow ...` command line in the README's and the pages' code blocks."""
    commands = []
    for page in [REPO / "README.md", *PAGES]:
        for block in code_blocks(page.read_text(), "(?:bash|sh)"):
            for line in block.splitlines():
                line = re.split(r"\s(?:#|>|\|)", line)[0].strip()
                if line.startswith("motorflow ") or line.startswith("python -m motorflow "):
                    commands.append((page.relative_to(REPO).as_posix(), line))
    return commands


@pytest.mark.parametrize(("page", "line"), motorflow_commands())
def test_every_motorflow_command_the_docs_show_parses(page, line):
    words = shlex.split(line)
    words = words[words.index("motorflow") + 1 :]
    _parse(words)  # argparse exits (SystemExit) on what it cannot parse


def test_an_export_with_its_folder_after_the_options_writes_there():
    # The README's own example failed with `unrecognized arguments` before the command
    # parsed intermixed: argparse alone fills positionals run by run between options.
    args = _parse(["export", "results/config/quiet", "--replicate", "0", "quiet-replicate0"])
    assert (args.experiment, args.replicate, args.folder) == (
        "results/config/quiet", 0, "quiet-replicate0"
    )
    exports = [line for _, line in motorflow_commands() if " export " in f" {line} "]
    assert any(re.search(r"--replicate \d+ [^-]", line) for line in exports), exports


def output_patterns() -> list[str]:
    """The paths of the output reference's first table, as glob patterns under
    results/<config>/ (`<name>` a wildcard; a folder or store covers what is inside)."""
    table = OUTPUTS.split("## Every file, in a line", 1)[1].split("\n## ", 1)[0]
    patterns = []
    for row in table.splitlines():
        if not row.startswith("| `"):
            continue
        for path in re.findall(r"`([^`]+)`", row.split(" | ")[0]):
            pattern = re.sub(r"<[^>]+>", "*", path)
            patterns.append(pattern)
            if pattern.endswith("/") or pattern.endswith(".zarr"):
                patterns.append(pattern.rstrip("/") + "/*")
    return patterns


def documented(relative: str, patterns: list[str]) -> bool:
    # The figures' extension is `figures.format`: the table says .png.
    relative = re.sub(r"\.(pdf|svg)$", ".png", relative)
    return any(fnmatch.fnmatchcase(relative, pattern) for pattern in patterns)


@pytest.mark.workflow
def test_the_output_reference_names_every_file_and_variable_a_run_writes():
    project = finished_tiny_pipeline()
    # Each results folder holds the mark naming its config files.
    (folder,) = [mark.parent for mark in (project / "results").rglob(".motorflow-config.json")]
    written = [
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        # Snakemake marks a finished directory output with a file of its own.
        if p.is_file() and p.name != ".snakemake_timestamp"
    ]
    assert len(written) > 100
    patterns = output_patterns()
    undocumented = sorted(path for path in written if not documented(path, patterns))
    assert not undocumented, f"docs/reference/outputs.md names no row for {undocumented}"
    # Every data variable of every store, by its name or its pattern
    # (`perturbation<i>_<setting>`, `snapshot.<array>`).
    spans = re.findall(r"`([^`\s(]+)", OUTPUTS)  # a span's first word: `loss (term, ...)`
    names = {re.sub(r"<[^>]+>", "*", name) for name in spans}
    names = {name for name in names if not name.startswith("*")}  # `<config>` names no variable
    missing = set()
    for store in sorted(folder.rglob("*.zarr")):
        for variable in xr.open_zarr(store).data_vars:
            if not any(fnmatch.fnmatchcase(str(variable), name) for name in names):
                missing.add(f"{store.name}: {variable}")
    assert not missing, f"docs/reference/outputs.md does not name {sorted(missing)}"


def test_the_output_reference_lists_every_metric_with_its_unit():
    rows = dict(re.findall(r"^\| `(\w+)` \| ([^|]+) \|", OUTPUTS, flags=re.MULTILINE))
    for name, metric in METRICS.items():
        assert name in rows, f"docs/reference/outputs.md: no row for the metric {name}"
        assert rows[name].strip() == metric.UNITS, (name, rows[name], metric.UNITS)


def test_the_readme_is_a_landing_page_whose_links_reach_the_site():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 150
    # Its first lines are the two set-up commands.
    first = code_blocks(readme)[0].splitlines()
    assert first[0].endswith("snakemake --cores 2") and first[1].endswith("pytest")
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme):
        if not target.startswith("http"):
            assert (REPO / target).exists(), f"README.md links to {target}, which is missing"


def test_no_documented_snippet_writes_outside_results():
    # A reader who pastes a page's Python into the repository's root leaves nothing there
    # that git would show: every file a snippet saves goes below results/.
    for page in PAGES:
        for block in code_blocks(page.read_text()):
            saved = r"(?:savefig|to_csv|to_netcdf|to_zarr)\(\s*[\"']([^\"']+)"
            for path in re.findall(saved, block):
                assert path.startswith("results/"), f"{page.name}: a snippet writes {path}"


def test_the_command_line_reference_covers_every_command_and_option():
    from motorflow.pipeline._cli import _parser

    page = (DOCS / "reference" / "cli.md").read_text()
    _, commands = _parser()
    for name, parser in commands.items():
        assert f"## `motorflow {name}`" in page, f"docs/reference/cli.md: no section for {name}"
        section = page.split(f"## `motorflow {name}`", 1)[1].split("\n## ", 1)[0]
        for option in set(re.findall(r"--[\w-]+", parser.format_usage())):
            assert option in section, f"docs/reference/cli.md: {name} {option}"


def test_the_how_to_s_example_perturbation_works_as_it_says(monkeypatch):
    import jax.numpy as jnp
    import numpy as np

    from motorflow._config_base import registry
    from motorflow._perturbations import PERTURBATIONS, TrialGeometry

    page = (DOCS / "how-to" / "add-a-member.md").read_text()
    (source,) = [block for block in code_blocks(page, "python") if "class ForceRamp" in block]
    # The module as a user's file would be, in the package beside the others.
    module = types.ModuleType("motorflow._perturbations._ramp")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    module.__package__ = "motorflow._perturbations"
    exec(compile(source, "add-a-member.md", "exec"), module.__dict__)
    ramp_class = module.ForceRamp
    assert "force_ramp" in registry(*PERTURBATIONS.values(), ramp_class)
    ramp = ramp_class.model_validate({"kind": "force_ramp", "amplitude": 3, "angle": 180})
    trial = TrialGeometry(start=jnp.zeros(2), goal=jnp.ones(2), n_steps=50, dt=0.01)
    params = {"active": 1.0, "amplitude": 3.0, "angle": 180.0, "start": 0.1, "duration": 0.2}
    force = np.asarray(ramp.effects({k: jnp.float32(v) for k, v in params.items()}, trial).force)
    # Off before the window and after it; growing to 3 N along -x within it.
    assert not force[:10].any() and not force[30:].any()
    assert np.all(np.diff(-force[10:30, 0]) > 0) and abs(force[29, 0] + 3.0 * 19 / 20) < 1e-5
    np.testing.assert_allclose(force[10:30, 1], 0.0, atol=1e-5)


def test_the_how_to_s_example_cell_works_as_it_says(monkeypatch):
    import jax
    import jax.numpy as jnp

    from motorflow._cells import CELLS
    from motorflow._config_base import registry

    page = (DOCS / "how-to" / "add-a-member.md").read_text()
    (source,) = [block for block in code_blocks(page, "python") if "class LeakyReluConfig" in block]
    module = types.ModuleType("motorflow._cells._leaky_relu")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    module.__package__ = "motorflow._cells"
    exec(compile(source, "add-a-member.md", "exec"), module.__dict__)
    config_class = module.LeakyReluConfig
    assert "leaky_relu" in registry(*CELLS.values(), config_class)
    config = config_class.model_validate({"kind": "leaky_relu", "tau": 0.2})
    cell = config.build(6, 5, dt=0.05, key=jax.random.key(0))
    assert type(cell) is config.CELL and cell.KIND == "leaky_relu"
    assert float(cell.alpha) == 0.25 and cell(jnp.ones(6), jnp.zeros(5)).shape == (5,)
    # Its time constant is checked against the cell's step, as the others' are.
    assert config.step_problem(0.05) is None
    assert config.step_problem(0.5)[0] == "tau"


def test_the_site_builds_without_a_warning_and_documents_every_public_name(tmp_path):
    # `mkdocs build --strict` fails on any warning: a broken link or anchor, a page left
    # out of the navigation, a docstring mkdocstrings cannot read.
    import motorflow as mf

    site = tmp_path / "site"
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=REPO, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    api = (site / "reference" / "api" / "index.html").read_text()
    documented_names = set(re.findall(r'id="motorflow\.(\w+)"', api))
    assert set(mf.__all__) <= documented_names, sorted(set(mf.__all__) - documented_names)
    # Every page of docs/ is in the navigation and was built.
    for page in PAGES:
        relative = page.relative_to(DOCS).with_suffix("")
        built_page = site / ("" if relative.name == "index" else relative) / "index.html"
        assert built_page.exists(), page


# The config each page's YAML adds to (its keys merged over the file's, as a second
# --configfile would be); the default config unless the page is about another.
BASE_CONFIG = {
    "explanation/preferred-directions.md": "config/preferred-directions.yaml",
    "tutorials/adaptation-protocol.md": "config/curl-field-adaptation.yaml",
    "how-to/large-sweeps.md": "benchmarks/configs/sweep-100.yaml",
}
# The how-to's perturbation is the one its page defines, in no registry.
NOT_A_CONFIG = {"how-to/add-a-member.md"}


def config_snippets() -> list[tuple[str, int, str]]:
    """Every YAML block of the site's own pages (not the included config reference or
    benchmarks), as (page, index, text)."""
    snippets = []
    for page in PAGES:
        name = page.relative_to(DOCS).as_posix()
        if "--8<--" in page.read_text() or name in NOT_A_CONFIG:
            continue
        for index, block in enumerate(code_blocks(page.read_text(), "yaml")):
            if not block.startswith("# excerpt"):  # a sketch of a shipped config, with ...
                snippets.append((name, index, block))
    return snippets


@pytest.mark.parametrize(("page", "index", "block"), config_snippets())
def test_every_config_snippet_on_the_site_passes_the_workflow_s_checks(page, index, block):
    import yaml

    import motorflow.pipeline as mfp

    base = REPO / BASE_CONFIG.get(page, "config/config.yaml")
    mfp.check_config(mfp.read_config([base], yaml.safe_load(block)))


@pytest.mark.workflow
def test_the_first_tutorial_runs_as_written_on_a_finished_run(tmp_path, monkeypatch):
    # The tutorial's results folder is the tiny pipeline's (the same experiments and
    # conditions as the default config); its commands and Python run in order, from the
    # project's root, as a reader pastes them.
    import matplotlib

    from motorflow.pipeline._cli import main

    matplotlib.use("Agg")
    shutil.copytree(finished_tiny_pipeline() / "results", tmp_path / "results" / "config")
    monkeypatch.chdir(tmp_path)
    before = set(tmp_path.rglob("*"))
    page = (DOCS / "tutorials" / "first-pipeline.md").read_text()
    blocks = re.findall(r"^```(bash|python)\n(.*?)^```", page, flags=re.MULTILINE | re.DOTALL)
    ran = []
    for language, block in blocks:
        if language == "python":
            exec(compile(block, "first-pipeline.md", "exec"), {})
            ran.append("python")
            continue
        for line in block.splitlines():
            if line.startswith("motorflow "):
                assert main(shlex.split(line)[1:]) == 0, line
                ran.append(line)
    assert ran.count("python") >= 2 and any(" export " in line for line in ran), ran
    # What the tutorial says it writes, all of it below results/.
    new = {p.relative_to(tmp_path).as_posix() for p in set(tmp_path.rglob("*")) - before}
    assert "results/config/replicate0.png" in new
    assert "results/quiet-replicate0/model.eqx" in new
    assert all(path.startswith("results/") for path in new), sorted(new)


def test_the_library_tutorial_runs_as_written(tmp_path, monkeypatch):
    # Its Python blocks in order, in one session, from an empty project folder.
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    page = (DOCS / "tutorials" / "library.md").read_text()
    namespace: dict = {}
    for block in code_blocks(page, "python"):
        exec(compile(block, "library.md", "exec"), namespace)
    assert (tmp_path / "results" / "library" / "trajectories.png").stat().st_size > 0
    history, metrics = namespace["history"], namespace["metrics"]
    # It trained: every replicate's loss fell, and it reaches somewhere near its goals.
    total = history.loss.sel(term="total")
    assert (total.isel(batch=-1) < total.isel(batch=0)).all()
    assert float(metrics.endpoint_error.mean()) < 0.1
    # The pack's members are their seeds' runs: different, each checkpointed on its own.
    mf = namespace["mf"]
    seed1, seed2 = (mf.history_dataset(namespace[name].history) for name in ("seed1", "seed2"))
    assert not (seed1.loss == seed2.loss).all()
    assert (tmp_path / "results" / "library" / "seed1").is_dir()
    assert {p.name for p in tmp_path.iterdir()} == {"results"}
