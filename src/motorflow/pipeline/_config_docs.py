"""config/README.md's key tables, generated from the typed config and the registries.

Each table of config/README.md sits between ``<!-- generated: <section> -->`` and
``<!-- end generated -->``; everything around them is hand-written prose. A row is a
key path, its default (YAML, as a config writes it) and its meaning: the field's
``Field(description=...)``, with the allowed values appended where it names not all
of them. Each registered member of a family (a plant, a cell, a perturbation, a task
kind, a learning rule, a weight constraint, an update rule) has a section of its own,
``<family>.<kind>``, listing the keys it adds to the family's common ones; loss terms
and analyses are rows of the training and analysis tables. A member with no section
yet gets one (a heading, its class docstring, its table) after its family's last.

``python -m motorflow docs`` rewrites config/README.md in place; with ``--check`` it
only says whether the file is current (the tests check the same).
"""

from __future__ import annotations

import re
import types
import typing
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any, Literal

import annotated_types
import yaml
from pydantic.fields import FieldInfo

from .._cells import CELLS, CellConfig
from .._config import ModelConfig
from .._config_base import Block
from .._perturbations import PERTURBATIONS, AbstractPerturbation
from .._plants import PLANTS, PlantConfig
from .._tasks import TASKS, TaskConfig, parse_task
from .._training._config import SnapshotConfig, TrainConfig
from .._training.constraints import CONSTRAINTS, AbstractConstraint
from .._training.rules import LEARNING_RULES, AbstractLearningRule
from .._training.update_rules import UPDATE_RULES, AbstractUpdateRule
from ._cross_experiment_specs import ComparisonSpec, ConditionSweepSpec, ProtocolSpec, SweepSpec
from ._workflow_config import (
    ExperimentSpec,
    ResourcesConfig,
    StageResources,
    TrainResources,
    WorkflowConfig,
)

# Each family: its registry and the base class whose keys every member shares.
FAMILIES: dict[str, tuple[Mapping[str, type[Block]], type[Block]]] = {
    "tasks": (TASKS, TaskConfig),
    "plants": (PLANTS, PlantConfig),
    "cells": (CELLS, CellConfig),
    "perturbations": (PERTURBATIONS, AbstractPerturbation),
    "learning_rules": (LEARNING_RULES, AbstractLearningRule),
    "constraints": (CONSTRAINTS, AbstractConstraint),
    "update_rules": (UPDATE_RULES, AbstractUpdateRule),
}
# Top-level keys of WorkflowConfig with tables of their own (or named blocks).
OWN_SECTIONS = (
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
HEADER = "| key | default | meaning |\n|---|---|---|\n"
NO_KEYS = "No keys of its own.\n"
SECTION = re.compile(
    r"<!-- generated: (?P<name>[\w.]+) -->\n(?P<body>.*?)<!-- end generated -->", re.DOTALL
)

Row = tuple[str, str, str]


class DocsError(ValueError):
    """config/README.md's generated sections do not match the config's families."""


def yaml_value(value: Any) -> str:
    """`value` as one line of YAML (``null``, ``[0.0, 0.0]``, ``{every: 100}``)."""
    text = yaml.safe_dump(_plain(value), default_flow_style=True, width=10**6, sort_keys=False)
    return text.removesuffix("\n").removesuffix("\n...").strip()


def _plain(value: Any) -> Any:
    if isinstance(value, Block) and type(value).replaced_whole:
        # A schedule: the keys it names (the others are unset).
        return {key: item for key, item in value.to_dict().items() if item is not None}
    if isinstance(value, Block):
        return value.to_dict()
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def _listed(names: list[str]) -> str:
    quoted = [f"`{name}`" for name in names]
    return ", ".join(quoted[:-1]) + f" or {quoted[-1]}" if len(quoted) > 1 else quoted[0]


def _choices(annotation: Any) -> list[str]:
    """The values of a ``Literal`` annotation (also inside ``X | None``), else none."""
    if typing.get_origin(annotation) is Literal:
        return [str(value) for value in typing.get_args(annotation)]
    for member in typing.get_args(annotation) if typing.get_origin(annotation) else ():
        if typing.get_origin(member) is Literal:
            return _choices(member)
    return []


def meaning(text: str | None, choices: list[str] = (), drawn: bool = False) -> str:
    """A description as a table cell: with the `choices` it does not name appended."""
    text = text or ""
    if len(choices) > 1 and not all(f"`{choice}`" in text for choice in choices):
        text = f"{text}; one of {_listed(choices)}" if text else f"one of {_listed(choices)}"
    if drawn:
        text += "; *drawn*"
    return text.replace("|", "\\|").replace("\n", " ")


# A constraint's words, and the attribute holding its bound.
_BOUNDS = {
    annotated_types.Gt: ("> {}", "gt"),
    annotated_types.Ge: ("≥ {}", "ge"),
    annotated_types.Lt: ("< {}", "lt"),
    annotated_types.Le: ("≤ {}", "le"),
    annotated_types.MinLen: ("at least {} item(s)", "min_length"),
    annotated_types.MaxLen: ("at most {} items", "max_length"),
}


def _metadata(annotation: Any) -> list[Any]:
    found = []
    for item in getattr(annotation, "__metadata__", ()):
        found += item.metadata if isinstance(item, FieldInfo) else [item]
    return found


def _words(constraints: list[Any]) -> list[str]:
    """The tightest lower and upper bound (and lengths) among `constraints`, in words."""
    tightest: dict[str, tuple[float, str]] = {}
    for constraint in constraints:
        for kind, (text, attribute) in _BOUNDS.items():
            if not isinstance(constraint, kind):
                continue
            value = getattr(constraint, attribute)
            side = {"gt": "low", "ge": "low", "lt": "high", "le": "high"}.get(attribute, attribute)
            # Of two bounds on a side the stricter wins (> 0 beside ≥ 10: ≥ 10).
            rank = (value, attribute in ("gt", "lt"))
            if side in ("low", "min_length") and (side not in tightest or rank > tightest[side][0]):
                tightest[side] = (rank, text.format(f"{value:g}"))
            if side in ("high", "max_length") and (
                side not in tightest or (value, attribute == "le") < tightest[side][0]
            ):
                tightest[side] = ((value, attribute == "le"), text.format(f"{value:g}"))
    order = ("low", "high", "min_length", "max_length")
    return [tightest[side][1] for side in order if side in tightest]


def bounds(field: FieldInfo) -> str:
    """The allowed range of a value as the typed config enforces it, appended to its
    meaning: `` [> 0, ≤ 1]``, for a list its length and each item's (`` [at most 32
    items; each > 0]``); empty where it has none."""
    own, each = list(field.metadata), []
    for arm in typing.get_args(field.annotation):
        if typing.get_origin(field.annotation) in (typing.Union, types.UnionType):
            own += _metadata(arm)  # an arm of `X | None`: the value's own bounds
            arms = typing.get_args(arm) if typing.get_origin(arm) in (tuple, list) else ()
            each += [m for inner in arms for m in _metadata(inner)]
        else:
            each += _metadata(arm)  # an item of a list or tuple
    words = _words(own)
    if "at least 1 item(s)" in words and "at most 1 items" in words:
        words = [w for w in words if "item" not in w] + ["exactly 1 item"]
    low = next((w for w in words if w.startswith("at least")), None)
    high = next((w for w in words if w.startswith("at most")), None)
    if low and high and low.split()[2] == high.split()[2]:
        words = [w for w in words if w not in (low, high)] + [f"exactly {low.split()[2]} items"]
    if each_words := _words(each):
        words.append("each " + ", ".join(each_words))
    text = "; ".join(words).replace(" 1 item(s)", " 1 item").replace("item(s)", "items")
    if str in (field.annotation, *typing.get_args(field.annotation)):
        text = text.replace(" items", " characters").replace(" 1 item", " 1 character")
    return f" [{text}]" if words else ""


def _family_of(value: Any) -> tuple[str, Mapping[str, type[Block]]] | None:
    for name, (members, base) in FAMILIES.items():
        if isinstance(value, base) and type(value) in members.values():
            return name, members
    return None


def _default(field: FieldInfo, value: Any) -> str:
    return "(required)" if field.is_required() else f"`{yaml_value(value)}`"


def block_rows(cls: type[Block], defaults: Any = None, prefix: str = "") -> Iterator[Row]:
    """A row per key of `cls`, descending into sub-blocks (a registered member: its
    ``kind``). `defaults`: the block whose values are the defaults (else the fields')."""
    for name, field in cls.model_fields.items():
        key = prefix + name
        value = getattr(defaults, name) if defaults is not None else field.default
        family = _family_of(value)
        if family:
            kinds = list(family[1])
            yield f"{key}.kind", _default(field, value.kind), meaning(field.description, kinds)
        elif isinstance(value, Block) and not type(value).replaced_whole and value.to_dict():
            yield from block_rows(type(value), value, f"{key}.")
        elif isinstance(value, Block) and not field.description:
            # A block without settings (e.g. an analysis that has none): its docstring.
            summary = (type(value).__doc__ or "").strip().split("\n\n")[0]
            yield key, _default(field, value), meaning(" ".join(summary.split()))
        else:
            drawn = name in getattr(cls, "DRAWN", ())
            text = meaning(field.description, _choices(field.annotation), drawn)
            yield key, _default(field, value), text + bounds(field)


def own_fields(member: type[Block], members: Mapping[str, type[Block]], base: type[Block]):
    """The fields `member` adds to (or redefines from) its nearest registered ancestor,
    or the family's `base`."""
    parent = next(c for c in member.__mro__[1:] if c is base or c in members.values())
    inherited = parent.model_fields
    return {
        name: field
        for name, field in member.model_fields.items()
        if name != "kind" and (name not in inherited or repr(field) != repr(inherited[name]))
    }


def _subset(cls: type[Block], fields: Mapping[str, FieldInfo]) -> type[Block]:
    """A stand-in for `cls` that has only `fields` (for :func:`block_rows`)."""
    return type(
        cls.__name__, (), {"model_fields": dict(fields), "DRAWN": getattr(cls, "DRAWN", ())}
    )


def table(rows: Iterator[Row] | list[Row]) -> str:
    rows = list(rows)
    if not rows:
        return NO_KEYS
    return HEADER + "".join(f"| `{key}` | {default} | {text} |\n" for key, default, text in rows)


def _task_rows() -> Iterator[Row]:
    kinds = list(TASKS)
    yield "kind", f"`{parse_task({}).kind}`", meaning("the task (each kind's keys below)", kinds)
    common = {name: f for name, f in TaskConfig.model_fields.items() if name != "kind"}
    yield from block_rows(_subset(TaskConfig, common))


def _resources_rows() -> Iterator[Row]:
    """StageResources' keys, each default said per stage where the stages differ."""
    stages = ResourcesConfig()
    for name, field in StageResources.model_fields.items():
        by_stage = {
            stage: getattr(getattr(stages, stage), name) for stage in ResourcesConfig.model_fields
        }
        counts = Counter(yaml_value(value) for value in by_stage.values())
        usual = counts.most_common(1)[0][0]
        parts = [
            f"`{text}` for {_listed([s for s, v in by_stage.items() if yaml_value(v) == text])}".replace(
                "` or `", "` and `"
            )
            for text in counts
            if text != usual
        ]
        default = ", ".join([*parts, f"else `{usual}`"]) if parts else f"`{usual}`"
        yield name, default, meaning(field.description, _choices(field.annotation))
    # The train stage's own keys.
    for name, field in TrainResources.model_fields.items():
        if name not in StageResources.model_fields:
            default = yaml_value(getattr(stages.train, name))
            yield name, f"`{default}`", meaning(field.description, _choices(field.annotation))


def _other_rows() -> Iterator[Row]:
    fields = {k: f for k, f in WorkflowConfig.model_fields.items() if k not in OWN_SECTIONS}
    return block_rows(_subset(WorkflowConfig, fields))


def sections() -> dict[str, str]:
    """Every generated section's text, by its name, in the order of the README."""
    found = {
        "tasks": table(_task_rows()),
        "models": table(block_rows(ModelConfig, ModelConfig())),
        "trainings": table(block_rows(TrainConfig, TrainConfig())),
        "snapshots": table(block_rows(SnapshotConfig)),
        "experiments": table(block_rows(ExperimentSpec)),
        "sweeps": table(block_rows(SweepSpec)),
        "protocols": table(block_rows(ProtocolSpec)),
        "comparisons": table(block_rows(ComparisonSpec)),
        "condition_sweeps": table(block_rows(ConditionSweepSpec)),
        "other": table(_other_rows()),
        "resources": table(_resources_rows()),
    }
    for family, (members, base) in FAMILIES.items():
        common = {name: field for name, field in base.model_fields.items() if name != "kind"}
        if common and family != "tasks":
            found[family] = table(block_rows(_subset(base, common)))
        for kind, member in members.items():
            fields = own_fields(member, members, base)
            found[f"{family}.{kind}"] = table(block_rows(_subset(member, fields)))
    return found


def _new_member(text: str, family: str, kind: str, body: str) -> str:
    """`text` with a section for `kind` after its family's last member's (heading,
    the class docstring's first paragraph, the table)."""
    last = [m for m in SECTION.finditer(text) if m["name"].startswith(f"{family}.")]
    if not last:
        raise DocsError(f"config/README.md has no section of the {family} family to follow")
    before = text[: last[-1].start()]
    level = re.findall(r"^(#+) `kind: ", before, flags=re.MULTILINE)[-1]
    after = re.compile(rf"^#{{1,{len(level)}}} ", re.MULTILINE).search(text, last[-1].end())
    at = after.start() if after else len(text)
    doc = (FAMILIES[family][0][kind].__doc__ or "").strip().split("\n\n")[0]
    intro = " ".join(line.strip() for line in doc.splitlines())
    added = f"{level} `kind: {kind}`\n\n{intro}\n\n" if intro else f"{level} `kind: {kind}`\n\n"
    added += f"<!-- generated: {family}.{kind} -->\n{body}<!-- end generated -->\n\n"
    return text[:at].rstrip("\n") + "\n\n" + added + text[at:]


def render_readme(text: str) -> str:
    """`text` (config/README.md) with every generated section rewritten; a registered
    member without a section gets one. A :class:`DocsError` for a section of nothing."""
    wanted = sections()
    present = [match["name"] for match in SECTION.finditer(text)]
    unknown = [name for name in present if name not in wanted]
    if unknown:
        raise DocsError(
            f"config/README.md has generated sections of nothing in the config: {unknown}; "
            "remove them (with their headings)"
        )
    for name, body in wanted.items():
        if name not in present:
            family, _, kind = name.partition(".")
            if not kind:
                raise DocsError(f"config/README.md lacks its generated section {name!r}")
            text = _new_member(text, family, kind, body)
    return SECTION.sub(
        lambda m: f"<!-- generated: {m['name']} -->\n{wanted[m['name']]}<!-- end generated -->",
        text,
    )
