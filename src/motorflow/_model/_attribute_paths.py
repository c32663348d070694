"""Dotted attribute paths into a model (``network.readout.weight``)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any


def attribute_getter(path: str) -> Callable[[Any], Any]:
    """The function that reads `path` from a model, as ``eqx.tree_at`` takes it."""
    parts = path.split(".")
    return lambda tree: functools.reduce(getattr, parts, tree)
