"""config/README.md's key tables are generated from the typed config and the registries
(`python -m motorflow docs`): they are current, every registered member of every family
has its table, and every key of the typed config is a row with its real default."""

from __future__ import annotations

import re

import pytest
import yaml
from workflow_helpers import REPO

import motorflow as mf
import motorflow.pipeline as mfp
from motorflow.pipeline._cli import main
from motorflow.pipeline._config_docs import (
    FAMILIES,
    NO_KEYS,
    SECTION,
    DocsError,
    render_readme,
    sections,
)

README = REPO / "config" / "README.md"
DOC = README.read_text()
GENERATED = {match["name"]: match["body"] for match in SECTION.finditer(DOC)}
MEMBERS = [(family, kind) for family, (members, _) in FAMILIES.items() for kind in members]
# Keys of WorkflowConfig documented in sections of their own (or as named blocks).
ELSEWHERE = (
    "tasks",
    "models",
    "trainings",
    "experiments",
    "sweeps",
    "protocols",
    "comparisons",
    "condition_sweeps",
    "resources",
)


def rows(section: str) -> dict[str, str]:
    """`key -> default` cells of a generated section of config/README.md."""
    found = re.findall(r"^\| `([^|]+?)` \| ([^|]+?) \|", GENERATED[section], flags=re.MULTILINE)
    return dict(found)


def check_documented(settings: dict[str, object], table: dict[str, str], what: str) -> None:
    """Each flattened setting is a row (or below one, e.g. a schedule's keys) with its
    default."""
    for key, value in settings.items():
        row = next((r for r in table if key == r or key.startswith(f"{r}.")), None)
        assert row, f"{what}: {key} is in no row of config/README.md"
        if row == key and table[row].startswith("`"):
            assert yaml.safe_load(table[row].strip("`")) == value, f"{what}.{key}: {table[row]}"


def test_generated_sections_are_current():
    wanted = sections()
    stale = [name for name, body in wanted.items() if GENERATED.get(name) != body]
    assert not stale, f"config/README.md is stale in {stale}: run python -m motorflow docs"
    assert render_readme(DOC) == DOC
    assert main(["docs", "--check", "--readme", str(README)]) == 0


@pytest.mark.parametrize(("family", "kind"), MEMBERS)
def test_each_registered_member_has_its_table(family, kind):
    name = f"{family}.{kind}"
    assert name in GENERATED, f"config/README.md has no <!-- generated: {name} --> section"
    before = DOC[: DOC.index(f"<!-- generated: {name} -->")]
    assert re.findall(r"^#+ (.*)$", before, flags=re.MULTILINE)[-1] == f"`kind: {kind}`"
    member = FAMILIES[family][0][kind]
    own = {key for key in member.model_fields if key != "kind"}
    assert set(rows(name)) <= own, f"{name}: documents keys it does not have"
    if not rows(name):
        assert GENERATED[name] == NO_KEYS


@pytest.mark.parametrize("term", sorted(mf.LOSS_TERMS))
def test_each_loss_term_has_its_rows(term):
    table = rows("trainings")
    assert f"loss.{term}.weight" in table
    for key in mf.LOSS_TERMS[term].model_fields:
        assert f"loss.{term}.{key}" in table


@pytest.mark.parametrize("name", sorted(mf.ANALYSES))
def test_each_analysis_has_its_rows(name):
    table = rows("other")
    assert any(key == f"analysis.{name}" or key.startswith(f"analysis.{name}.") for key in table)


def test_each_cell_is_listed():
    cell = GENERATED["models"].split("| `network.cell.kind` |")[1].split("\n")[0]
    for name in mf.CELLS:
        assert f"`{name}`" in cell


def test_a_new_member_gets_its_section():
    # Without spectral_norm's section (heading and table), the generator adds it back
    # after its family's last member, with its docstring.
    start = DOC.index("#### `kind: spectral_norm`")
    end = DOC.index("<!-- end generated -->", start) + len("<!-- end generated -->\n")
    rendered = render_readme(DOC[:start] + DOC[end:])
    assert "#### `kind: spectral_norm`\n\nCap the spectral norm" in rendered
    assert GENERATED["constraints.spectral_norm"] in rendered
    assert render_readme(rendered) == rendered


def test_a_section_of_nothing_is_an_error(tmp_path):
    stale = DOC.replace("<!-- generated: plants.arm -->", "<!-- generated: plants.leg -->")
    with pytest.raises(DocsError, match="plants.leg"):
        render_readme(stale)
    readme = tmp_path / "README.md"
    readme.write_text(DOC.replace("`kind: bptt`\n", "`kind: bptt`\n\nstale\n", 1))
    assert main(["docs", "--check", "--readme", str(readme)]) == 0
    readme.write_text(DOC.replace("| `n_steps` | `100` |", "| `n_steps` | `99` |"))
    assert main(["docs", "--check", "--readme", str(readme)]) == 1
    assert main(["docs", "--readme", str(readme)]) == 0
    assert readme.read_text() == DOC


def union_keys(settings: dict[str, object], *unions: str) -> dict[str, object]:
    """`settings` without the keys of a registered member's block (documented in its
    family's tables), keeping its `kind`."""
    return {
        key: value
        for key, value in settings.items()
        if not any(key.startswith(f"{u}.") and key != f"{u}.kind" for u in unions)
    }


def test_every_key_is_documented_with_its_default():
    flat = mfp.flatten_settings
    model = union_keys(flat(mf.ModelConfig().to_dict()), "plant")
    check_documented(model, rows("models"), "models")
    check_documented(
        union_keys(flat(mf.TrainConfig().to_dict()), "learning"), rows("trainings"), "trainings"
    )
    task = flat(mf.ReachConfig().to_dict())
    common = {k: v for k, v in task.items() if k.split(".")[0] in mf.TaskConfig.model_fields}
    check_documented(common, rows("tasks"), "tasks")
    config = mfp.parse_config(
        {section: {"x": {}} for section in ("tasks", "models", "trainings")}
        | {"experiments": {"x": {"task": "x", "model": "x", "training": "x"}}}
    )
    other = {
        key: value
        for key, value in flat(config.filled_sections()).items()
        if key.split(".")[0] not in ELSEWHERE
    }
    check_documented(other, rows("other"), "other")
    assert set(rows("resources")) == set(
        mfp.WorkflowConfig.model_fields["resources"].default.train.to_dict()
    )


@pytest.mark.parametrize(("family", "kind"), MEMBERS)
def test_every_member_key_is_documented_with_its_default(family, kind):
    members = FAMILIES[family][0]
    member = members[kind]
    required = {k: 1 for k, field in member.model_fields.items() if field.is_required()}
    settings = mfp.flatten_settings(member.from_dict(required).to_dict())
    table = dict(rows(f"{family}.{kind}"))
    if family in GENERATED:
        table |= rows(family)
    for parent in member.__mro__[1:]:
        if parent is not member and parent in members.values():
            table |= rows(f"{family}.{parent.model_fields['kind'].default}")
    settings = {k: v for k, v in settings.items() if k != "kind" and k not in required}
    check_documented(settings, table, f"{family}.{kind}")


# Keys whose bounds the typed config enforces, and the words their rows must hold.
BOUNDED_ROWS = {
    "figures.dpi": "[≥ 10; ≤ 1200]",
    "eval.n_directions": "[≥ 1; ≤ 3600]",
    "eval.distances": "[at least 1 item; at most 100 items; each > 0]",
    "max_isometric_force": "[exactly 6 items; each > 0]",
    "probability": "[≥ 0; ≤ 1]",
    "optimizer.clip_global_norm": "[> 0]",  # an `X | None` value
}


@pytest.mark.parametrize(("key", "words"), BOUNDED_ROWS.items())
def test_each_row_says_the_bounds_the_config_enforces(key, words):
    text = (REPO / "config" / "README.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith(f"| `{key}` |")]
    assert rows and all(row.endswith(f"{words} |") for row in rows), rows


def test_a_value_beyond_a_documented_bound_is_refused():
    # The documented bound is the enforced one: 1200 passes, 1201 is refused.
    config = {
        "tasks": {"reach": {}},
        "models": {"m": {}},
        "trainings": {"t": {}},
        "experiments": {"e": {"task": "reach", "model": "m", "training": "t"}},
    }
    mfp.parse_config({**config, "figures": {"dpi": 1200}})
    with pytest.raises(mf.ConfigError, match="figures.dpi"):
        mfp.parse_config({**config, "figures": {"dpi": 1201}})
