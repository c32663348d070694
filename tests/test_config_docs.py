"""config/README.md documents every key of the typed config, with its real default."""

from __future__ import annotations

import re

import pytest
import yaml
from workflow_helpers import REPO

import motorflow as mf
import motorflow.pipeline as mfp

DOC = (REPO / "config" / "README.md").read_text()
# Each documented section and the typed config its table describes.
SECTIONS = {
    "## `tasks.<name>`": mf.TaskConfig,
    "## `models.<name>`": mf.ModelConfig,
    "## `trainings.<name>`": mf.TrainConfig,
    "## Other sections": mfp.WorkflowConfig,
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
        .replace(re.escape("<schedule>"), "(validation|log|checkpoint)")
    )


def documented(key: str, rows: dict[str, str]) -> bool:
    return any(re.fullmatch(pattern(row), key) for row in rows)


def defaults(block: type) -> dict[str, object]:
    if block is mfp.WorkflowConfig:
        config = mfp.parse_config(
            {section: {"x": {}} for section in ("tasks", "models", "trainings")}
            | {"experiments": {"x": {"task": "x", "model": "x", "training": "x"}}}
        )
        return {
            key: value
            for key, value in mfp.flatten_settings(config.filled_sections()).items()
            if key.split(".")[0] not in ELSEWHERE
        }
    if block is mf.TaskConfig:
        # The keys every kind has; each kind's own are under its `### kind:` heading.
        settings = mfp.flatten_settings(mf.ReachConfig().to_dict())
        return {k: v for k, v in settings.items() if k.split(".")[0] in block.model_fields}
    return mfp.flatten_settings(block().to_dict())


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


def check_kind_documented(config, registry, base) -> None:
    """`config`'s own keys (not `base`'s) are in the table under its ``### `kind:` ``
    heading, or a registered parent kind's, with their defaults."""
    kind = config.kind
    rows = table(f"### `kind: {kind}`")
    inherited = {}
    for parent in type(config).__mro__[1:]:
        if parent is not base and parent in registry.values():
            inherited |= table(f"### `kind: {parent().kind}`")
    common = set(base.model_fields)
    for key, value in mfp.flatten_settings(config.to_dict()).items():
        if key.split(".")[0] in common:
            continue
        assert key in rows or key in inherited, f"{kind}: {key} is not documented"
        cell = rows.get(key) or inherited[key]
        assert yaml.safe_load(cell.strip("`")) == value, f"{kind}.{key}: documented {cell}"
    assert set(rows) <= set(config.to_dict()), f"{kind}: documents unknown keys"


@pytest.mark.parametrize("kind", sorted(mf.LEARNING_RULES))
def test_every_learning_rule_key_is_documented_with_its_default(kind):
    config = mf.LEARNING_RULES[kind]().to_dict()
    rows = table(f"#### `kind: {kind}`")
    for key, value in config.items():
        if key != "kind":
            assert key in rows, f"learning rule {kind}: {key} is not documented"
            assert yaml.safe_load(rows[key].strip("`")) == value, f"{kind}.{key}: {rows[key]}"
    assert set(rows) <= set(config), f"learning rule {kind}: documents unknown keys"


@pytest.mark.parametrize("kind", sorted(mf.PLANTS))
def test_every_plant_key_is_documented_with_its_default(kind):
    check_kind_documented(mf.PLANTS[kind](), mf.PLANTS, mf.PlantConfig)


@pytest.mark.parametrize("kind", sorted(mf.TASKS))
def test_every_task_key_is_documented_with_its_default(kind):
    check_kind_documented(mf.TASKS[kind](), mf.TASKS, mf.TaskConfig)


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
    assert set(rows) == set(mfp.WorkflowConfig.model_fields["resources"].default.train.to_dict())


@pytest.mark.parametrize("kind", sorted(mf.CONSTRAINTS))
def test_every_constraint_key_is_documented_with_its_default(kind):
    config = mf.CONSTRAINTS[kind]().to_dict()
    rows = table(f"#### `kind: {kind}`")
    for key, value in config.items():
        if key == "kind":
            continue
        assert key in rows, f"constraint {kind}: {key} is not documented"
        assert yaml.safe_load(rows[key].strip("`")) == value, f"{kind}.{key}: {rows[key]}"
    assert set(rows) <= set(config), f"constraint {kind}: documents unknown keys"


@pytest.mark.parametrize("kind", sorted(mf.UPDATE_RULES))
def test_every_update_rule_key_is_documented_with_its_default(kind):
    rows = table("### Update rules") | table(f"#### `kind: {kind}`")
    fields = mf.UPDATE_RULES[kind].model_fields
    for key, field in fields.items():
        if key == "kind":
            continue
        assert key in rows, f"update rule {kind}: {key} is not documented"
        if field.is_required():
            assert rows[key] == "(required)", f"{kind}.{key}: {rows[key]}"
        else:
            block = mf.UPDATE_RULES[kind]
            documented = {"rate": 1, key: yaml.safe_load(rows[key].strip("`"))}
            assert block.from_dict(documented) == block(rate=1), f"{kind}.{key}: {rows[key]}"
    assert set(rows) <= set(fields), f"update rule {kind}: documents unknown keys"
