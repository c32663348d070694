"""A sweep's experiment names and grid values from its grid alone (``json`` and ``re``):
the sweep figure's job names its points without loading the config's models."""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .._identity import canonical_json


def _value_label(value: Any) -> str:
    text = canonical_json(value).strip('"')
    return re.sub(r"[^A-Za-z0-9_]", "", text.replace(".", "p").replace("-", "m"))


def grid_point_list(name: str, grid: Mapping[str, Sequence[Any]]) -> list[tuple[str, dict]]:
    """Each experiment the sweep `name` over `grid` expands to, in order: its name (the
    sweep's and each setting's last key with its value,
    ``noise-noise_std0p05-hidden_size16``) and its grid values ``{setting: value}``."""
    settings = list(grid)
    points = []
    for combination in itertools.product(*(grid[s] for s in settings)):
        labels = [f"{s.split('.')[-1]}{_value_label(v)}" for s, v in zip(settings, combination)]
        points.append(("-".join([name, *labels]), dict(zip(settings, combination))))
    return points


def grid_point_names(name: str, grid: Mapping[str, Sequence[Any]]) -> dict[str, dict[str, Any]]:
    """:func:`grid_point_list` by name (a config's sweeps never repeat a name: the
    config check refuses such a grid)."""
    return dict(grid_point_list(name, grid))
