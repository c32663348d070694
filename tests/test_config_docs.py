"""config/README.md documents every key of the typed config, with its real default."""

from __future__ import annotations

import re

import pytest
import yaml
from workflow_helpers import REPO

import motorflow as mf

DOC = (REPO / "config" / "README.md").read_text()
# Each documented section and the typed config its table describes.
SECTIONS = {
    "## `tasks.<name>`": mf.TaskConfig,
    "## `models.<name>`": mf.ModelConfig,
    "## `trainings.<name>`": mf.TrainConfig,
    "## Other sections": mf.WorkflowConfig,
}
# Keys of WorkflowConfig documented in sections of their own (or as named blocks).
ELSEWHERE = ("tasks", "models", "trainings", "experiments", "sweeps", "protocols", "resources")


def table(heading: str) -> dict[str, str]:
    """`key -> default` cells of the first table under `heading`."""
    section = re.split(r"\n##+ ", DOC[DOC.index(heading) :])[0]
    rows = re.findall(r"^\| `([^|]+?)` \| ([^|]+?) \|", section, flags=re.MULTILINE)
    return {key.strip("`"): default.strip() for key, default in rows}


def pattern(row: str) -> str:
    """A documented key as a pattern: ``<term>`` and ``<name>`` stand for any name."""
    return (
        re.escape(row)
        .replace(re.escape("<term>"), "[a-z_]+")
        .replace(re.escape("<name>"), "[A-Za-z0-9_-]+")
    )


def documented(key: str, rows: dict[str, str]) -> bool:
    return any(re.fullmatch(pattern(row), key) for row in rows)


def defaults(block: type) -> dict[str, object]:
    if block is mf.WorkflowConfig:
        config = mf.parse_config(
            {section: {"x": {}} for section in ("tasks", "models", "trainings")}
            | {"experiments": {"x": {"task": "x", "model": "x", "training": "x"}}}
        )
        return {
            key: value
            for key, value in mf.flatten_settings(config.filled_sections()).items()
            if key.split(".")[0] not in ELSEWHERE
        }
    return mf.flatten_settings(block().to_dict())


@pytest.mark.parametrize("heading", SECTIONS)
def test_every_key_is_documented_with_its_default(heading):
    rows = table(heading)
    for key, value in defaults(SECTIONS[heading]).items():
        assert documented(key, rows), f"{key} is not in config/README.md under {heading}"
        cell = rows.get(key)
        if cell and cell.startswith("`"):
            assert yaml.safe_load(cell.strip("`")) == value, f"{key}: documented {cell}"


@pytest.mark.parametrize("heading", SECTIONS)
def test_every_documented_key_exists(heading):
    keys = defaults(SECTIONS[heading])
    for row in table(heading):
        assert any(re.fullmatch(pattern(row), key) for key in keys), f"{row} is no key of {heading}"


@pytest.mark.parametrize("kind", sorted(mf.PLANTS))
def test_every_plant_key_is_documented_with_its_default(kind):
    config = mf.PLANTS[kind]()
    rows = table(f"### `kind: {kind}`")
    inherited = {}
    for base in type(config).__mro__[1:]:
        if base is not mf.PlantConfig and base in mf.PLANTS.values():
            inherited |= table(f"### `kind: {base().kind}`")
    common = set(mf.PlantConfig.model_fields)
    for key, value in mf.flatten_settings(config.to_dict()).items():
        if key in common:
            continue
        assert key in rows or key in inherited, f"plant {kind}: {key} is not documented"
        cell = rows.get(key) or inherited[key]
        assert yaml.safe_load(cell.strip("`")) == value, f"{kind}.{key}: documented {cell}"
    assert set(rows) <= set(config.to_dict()), f"plant {kind}: documents unknown keys"


@pytest.mark.parametrize("kind", sorted(mf.PERTURBATIONS))
def test_every_perturbation_key_is_documented_with_its_default(kind):
    config = mf.PERTURBATIONS[kind]().to_dict()
    rows = table(f"### `kind: {kind}`")
    common = table("## Perturbations")
    for key, value in config.items():
        if key == "kind":
            continue
        cell = rows.get(key) or common.get(key)
        assert cell, f"perturbation {kind}: {key} is not documented"
        assert yaml.safe_load(cell.strip("`")) == value, f"{kind}.{key}: documented {cell}"
    assert set(rows) <= set(config), f"perturbation {kind}: documents unknown keys"


def test_every_resources_key_is_documented():
    rows = table("## `resources.<stage>`")
    assert set(rows) == set(mf.WorkflowConfig.model_fields["resources"].default.train.to_dict())
