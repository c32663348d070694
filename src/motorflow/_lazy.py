"""A package's names imported on first use, so that importing the package is cheap:
the ``motorflow`` command answers ``--help`` without loading JAX.

A package lists its names as ordinary ``from .module import name`` lines under
``if TYPE_CHECKING:`` (what a type checker and an editor read) and hands its
``__getattr__`` to :func:`lazy_names`, which reads those same lines from the
package's source: one list, as with scientific Python's ``lazy_loader`` stubs.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from pathlib import Path


def _imported_names(source: str) -> dict[str, str]:
    """Each name imported under the source's top-level ``if TYPE_CHECKING:`` -> the
    (relative) module it comes from."""
    where: dict[str, str] = {}
    for block in ast.parse(source).body:
        if not (isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"):
            continue
        for line in block.body:
            if not isinstance(line, ast.ImportFrom):
                raise TypeError(f"only 'from ... import ...' lines, not {ast.unparse(line)!r}")
            for alias in line.names:
                name = alias.asname or alias.name
                if name in where:
                    raise TypeError(f"{name!r} is imported twice")
                where[name] = "." * line.level + (line.module or "")
    return where


def lazy_names(package: str) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of `package` (its ``__name__``), which
    import each name of its ``if TYPE_CHECKING:`` block when it is first used."""
    module = sys.modules[package]
    where = _imported_names(Path(module.__file__).read_text(encoding="utf-8"))

    def __getattr__(name: str) -> object:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(where[name], package), name)
        setattr(module, name, value)  # the next use is a plain attribute
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(module)) | set(where))

    return __getattr__, __dir__
