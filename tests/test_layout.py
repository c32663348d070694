"""The package's layout: the science API apart from the workflow's plumbing.

`import motorflow` is the science (models, plants, tasks, perturbations, losses,
training, learning rules, analyses, figures); `motorflow.pipeline` is what runs the
workflow. The science never imports the pipeline, and nothing imports Snakemake.
In both, a PRNG `key` is always a keyword-only argument.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import motorflow
import motorflow.pipeline
from motorflow._lazy import _imported_names

PACKAGE = Path(motorflow.__file__).parent
NAMESPACES = (motorflow, motorflow.pipeline)


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


def defined_in(namespace: ModuleType, name: str) -> str:
    """The module that `name` of `namespace` is defined in: a class's or a function's
    ``__module__``; for any other value (a constant, a registry), the module the
    namespace's ``if TYPE_CHECKING:`` block imports it from."""
    value = getattr(namespace, name)
    if inspect.isclass(value) or inspect.isroutine(value):
        return value.__module__
    source = Path(namespace.__file__).read_text(encoding="utf-8")
    return importlib.util.resolve_name(_imported_names(source)[name], namespace.__name__)


def test_the_science_api_holds_no_plumbing():
    # What exists to run the workflow is exported by motorflow.pipeline only, and each
    # name lives in one of the two lists. A module that defines one of the pipeline's
    # names is plumbing (so is all of motorflow.pipeline): no science name comes from one.
    assert set(motorflow.__all__) & set(motorflow.pipeline.__all__) == set()
    plumbing = {defined_in(motorflow.pipeline, name) for name in motorflow.pipeline.__all__}
    offenders = {
        name: module
        for name in motorflow.__all__
        if (module := defined_in(motorflow, name)) in plumbing
        or module.startswith("motorflow.pipeline")
    }
    assert offenders == {}


def public_callables() -> Iterator[tuple[str, Callable]]:
    """Each function of both namespaces, each class (its signature is its
    ``__init__``'s) and each public method (and ``__call__``) of those classes and of
    every registered member of a family, that motorflow defines."""
    classes = []
    for namespace in NAMESPACES:
        for name in namespace.__all__:
            value = getattr(namespace, name)
            if isinstance(value, dict):  # a registry: its members (a metric is an instance)
                classes += [v if inspect.isclass(v) else type(v) for v in value.values()]
            elif inspect.isclass(value):
                classes.append(value)
            elif callable(value):
                yield f"{namespace.__name__}.{name}", value
    for cls in dict.fromkeys(classes):
        where = f"{cls.__module__}.{cls.__qualname__}"
        yield where, cls
        for attribute in dir(cls):
            if attribute.startswith("_") and attribute != "__call__":
                continue
            with warnings.catch_warnings():  # pydantic's deprecated class attributes
                warnings.simplefilter("ignore", DeprecationWarning)
                member = getattr(cls, attribute)
            module = getattr(member, "__module__", None) or ""
            if callable(member) and not inspect.isclass(member) and module.startswith("motorflow"):
                yield f"{where}.{attribute}", member


def test_every_key_argument_is_keyword_only():
    # A PRNG key is never passed by position (Equinox's convention): a call can't swap
    # it with a count, and a signature can grow without moving it.
    found = dict(public_callables())
    assert {"motorflow.train", "motorflow._tasks._runner.Task.sample"} <= set(found)
    positional = {
        where: str(inspect.signature(member))
        for where, member in found.items()
        if (key := inspect.signature(member).parameters.get("key")) is not None
        and key.kind is not inspect.Parameter.KEYWORD_ONLY
    }
    assert positional == {}
