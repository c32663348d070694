"""The package's layout: the science API apart from the workflow's plumbing.

`import motorflow` is the science (models, plants, tasks, perturbations, losses,
training, learning rules, analyses, figures); `motorflow.pipeline` is what runs the
workflow. The science never imports the pipeline, and nothing imports Snakemake.
"""

from __future__ import annotations

import ast
from pathlib import Path

import motorflow
import motorflow.pipeline

PACKAGE = Path(motorflow.__file__).parent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> set[str]:
    """Every module `path` imports, as absolute names (relative imports resolved)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def science_modules() -> list[Path]:
    """Every module but the pipeline's and ``python -m motorflow`` (the command line)."""
    return [
        path
        for path in PACKAGE.rglob("*.py")
        if "pipeline" not in path.relative_to(PACKAGE).parts and path.name != "__main__.py"
    ]


def test_the_science_never_imports_the_pipeline():
    offenders = {
        _module_name(path): sorted(m for m in imported_modules(path) if "motorflow.pipeline" in m)
        for path in science_modules()
    }
    assert {name: found for name, found in offenders.items() if found} == {}


def test_the_library_never_imports_snakemake():
    offenders = [
        _module_name(path)
        for path in PACKAGE.rglob("*.py")
        if any(m.split(".")[0] == "snakemake" for m in imported_modules(path))
    ]
    assert offenders == []


def test_each_namespace_lists_its_names_once_and_they_resolve():
    for namespace in (motorflow, motorflow.pipeline):
        names = namespace.__all__
        assert len(names) == len(set(names)), namespace.__name__
        assert [n for n in names if not hasattr(namespace, n)] == []


def test_the_science_api_holds_no_plumbing():
    # What exists to run the workflow is exported by motorflow.pipeline only, and each
    # name lives in one of the two lists.
    assert set(motorflow.__all__) & set(motorflow.pipeline.__all__) == set()
    plumbing = {
        "claim_gpus",
        "use_devices",
        "SETTING_PARAM_PREFIX",
        "parse_setting_params",
        "rule_params",
        "write_trials",
        "stage_logging",
        "enable_compilation_cache",
        "train_experiment",
        "WorkflowConfig",
        "canonical_json",
    }
    assert plumbing <= set(motorflow.pipeline.__all__)
    defined_in_pipeline = {
        name
        for name in motorflow.__all__
        if getattr(getattr(motorflow, name), "__module__", "").startswith("motorflow.pipeline")
    }
    assert defined_in_pipeline == set()
