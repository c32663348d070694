"""Read a config file as plain data: YAML without code, references or surprises.

The loader accepts one YAML (or JSON) document of mappings, lists, strings,
numbers, booleans and nulls, read by the YAML 1.2 core schema: ``010`` is 10,
``0o10`` 8, ``0x1F`` 31, ``1e3`` the number 1000.0, ``.inf`` and ``.nan`` numbers;
only ``true``/``false`` (``True``, ``TRUE``, ...) are booleans, and ``yes``, ``no``,
``on``, ``off``, ``1:00``, ``0b11``, ``1_000`` and dates are text (a YAML 1.1 reader,
such as PyYAML's, reads them otherwise). It refuses what could hide or run
something: a duplicate key (YAML would silently keep the last), anchors and
aliases, explicit tags, directives, several documents, a file that is not UTF-8,
one over :data:`MAX_BYTES` or nested over :data:`MAX_DEPTH` levels, and
Snakemake's YTE templating (``__use_yte__``), which evaluates values as Python.
Every error is one :class:`ConfigError` whose path is ``file:line:column``.
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import yaml

from .._config_errors import ConfigError

MAX_BYTES = 1_000_000
# Sections, blocks and settings nest a handful of levels; 64 leaves room and no crash.
MAX_DEPTH = 64

# The YAML 1.2 core schema's tags of plain scalars (spec 1.2.2, section 10.3.2); any
# other plain scalar is a string. The first that matches wins, so `10` is an int.
_CORE_SCHEMA = [
    ("null", r"~|null|Null|NULL|", ["~", "n", "N", ""]),
    ("bool", r"true|True|TRUE|false|False|FALSE", list("tTfF")),
    ("int", r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+", list("-+0123456789")),
    (
        "float",
        r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)",
        list("-+0123456789."),
    ),
]


class _Loader(yaml.SafeLoader):
    """SafeLoader reading plain scalars by the YAML 1.2 core schema; duplicate keys refused."""

    yaml_implicit_resolvers: dict = {}

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict[Any, yaml.Mark] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, Hashable):
                continue  # SafeLoader refuses it, with its mark
            if key in seen:
                raise _DuplicateKey(key, key_node.start_mark, seen[key])
            seen[key] = key_node.start_mark
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        text = self.construct_scalar(node)
        if text.startswith(("0o", "0x")):
            return int(text[2:], 8 if text[1] == "o" else 16)
        return int(text, 10)  # leading zeros are decimal: 010 is 10

    def construct_yaml_float(self, node: yaml.ScalarNode) -> float:
        text = self.construct_scalar(node)
        if text.lstrip("+-").lower() in (".inf", ".nan"):
            return float(text.replace(".", ""))
        return float(text)


for _name, _pattern, _first in _CORE_SCHEMA:
    # Only the resolved plain scalars reach these constructors (tags are refused).
    _Loader.add_implicit_resolver(
        f"tag:yaml.org,2002:{_name}", re.compile(rf"(?:{_pattern})\Z"), _first
    )
_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)
_Loader.add_constructor("tag:yaml.org,2002:float", _Loader.construct_yaml_float)


class _DuplicateKey(Exception):
    def __init__(self, key: Any, mark: yaml.Mark, first: yaml.Mark):
        self.key, self.mark, self.first = key, mark, first


def _at(path: Path, line: int, column: int) -> str:
    """``file:line:column``, 1-based, as compilers and editors write a place in a file."""
    return f"{path}:{line}:{column}"


def _marked(path: Path, mark: Any) -> str:
    return _at(path, mark.line + 1, mark.column + 1) if mark is not None else str(path)


def _check_events(text: str, path: Path) -> None:
    """Refuse anchors, aliases, explicit tags, directives, extra documents and deep
    nesting, before building anything (the events stream: a refusal parses no further)."""
    documents = depth = 0
    for event in yaml.parse(text, Loader=_Loader):
        where = _marked(path, event.start_mark)
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise ConfigError(
                    where,
                    f"is nested more than {MAX_DEPTH} levels deep; a config needs far fewer: "
                    "flatten it",
                )
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            depth -= 1
        if isinstance(event, yaml.DocumentStartEvent):
            documents += 1
            if documents > 1:
                raise ConfigError(
                    where, "a second YAML document ('---'); a config is one document: remove it"
                )
            if event.version or event.tags:
                raise ConfigError(
                    where,
                    "a %YAML or %TAG directive; a config is read as plain YAML 1.2: remove it",
                )
        if isinstance(event, yaml.AliasEvent):
            raise ConfigError(
                where,
                f"an alias (*{event.anchor}); write the values out instead of referencing them",
            )
        if isinstance(event, yaml.NodeEvent) and event.anchor is not None:
            raise ConfigError(
                where,
                f"an anchor (&{event.anchor}); write the values out instead of referencing them",
            )
        tag = getattr(event, "tag", None)
        if tag is not None:
            raise ConfigError(
                where,
                f"an explicit tag ({tag}); a config holds plain values only: remove the tag "
                "(quote a value to make it text)",
            )


def _read_text(path: Path) -> str:
    """The file's text; refused when it is larger than :data:`MAX_BYTES` (read no further)
    or is not UTF-8."""
    try:
        with path.open("rb") as file:
            data = file.read(MAX_BYTES + 1)
    except OSError as error:
        raise ConfigError(str(path), f"cannot be read: {error.strerror or error}") from None
    if len(data) > MAX_BYTES:
        raise ConfigError(
            str(path),
            f"is larger than {MAX_BYTES:,} bytes, the most a config may be; a config needs "
            "far less: is this the right file?",
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        before = data[: error.start]
        line = before.count(b"\n") + 1
        column = error.start - (before.rfind(b"\n") + 1) + 1
        raise ConfigError(
            _at(path, line, column),
            f"is not UTF-8 text (byte {data[error.start]:#04x}); save the file as UTF-8",
        ) from None


def _parsed(text: str, path: Path) -> Any:
    try:
        _check_events(text, path)
        return yaml.load(text, Loader=_Loader)
    except _DuplicateKey as error:
        raise ConfigError(
            _marked(path, error.mark),
            f"the key {error.key!r} appears twice in one mapping (first on line "
            f"{error.first.line + 1}); YAML would silently keep only the last, so merge them",
        ) from None
    except yaml.reader.ReaderError as error:
        before = text[: error.position]
        line, column = before.count("\n") + 1, error.position - (before.rfind("\n") + 1) + 1
        code = error.character if isinstance(error.character, int) else ord(error.character)
        raise ConfigError(
            _at(path, line, column),
            f"is not valid YAML: the character U+{code:04X} is not allowed in YAML text; remove it",
        ) from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        problem = error.problem or error.context or "invalid YAML"
        hint = "fix it"
        if "\\t" in problem:
            hint = "indent with spaces, not tabs"
        elif "unhashable" in problem:
            hint = "a key is a name, never a list or a mapping"
        raise ConfigError(_marked(path, mark), f"is not valid YAML: {problem}; {hint}") from None
    except yaml.YAMLError as error:
        raise ConfigError(str(path), f"is not valid YAML: {error}") from None
    except RecursionError:
        raise ConfigError(str(path), "is nested too deeply; flatten it") from None


def load_config_file(path: str | Path) -> dict[str, Any]:
    """The config in `path` as plain data, or a :class:`ConfigError` naming
    ``file:line:column`` (or the file, for what has no place in it)."""
    path = Path(path)
    config = _parsed(_read_text(path), path)
    if config is None:
        config = {}
    if not isinstance(config, dict):
        raise ConfigError(
            str(path),
            f"must be a mapping of sections (tasks:, models:, ...), got {type(config).__name__}",
        )
    if "__use_yte__" in config:
        raise ConfigError(
            f"{path}: __use_yte__",
            "templating is not allowed: a motorflow config is data, never evaluated as code; "
            "write the values out and remove __use_yte__",
        )
    return config
