"""Read a config file as plain data: YAML without code, references or surprises.

The loader accepts one YAML (or JSON) document of mappings, lists, strings,
numbers, booleans and nulls. It refuses what could hide or run something: a
duplicate key (YAML would silently keep the last), anchors and aliases, explicit
tags, several documents, a file that is not UTF-8, and Snakemake's YTE templating
(``__use_yte__``), which evaluates values as Python. Numbers follow YAML 1.2, so
``1e-3`` is a number (YAML 1.1 readers return it as a string). Every error names
the file, line and column.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from .._config import ConfigError

MAX_BYTES = 1_000_000
# Sections, blocks and settings nest a handful of levels; 64 leaves room and no crash.
MAX_DEPTH = 64

# YAML 1.2 core schema floats; PyYAML's 1.1 resolver needs a dot and a signed exponent.
_FLOAT = re.compile(
    r"""^(?:[-+]?(?:[0-9][0-9_]*)?\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""",
    re.VERBOSE,
)


class _Loader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 floats and duplicate keys refused."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise _DuplicateKey(key, line, seen[key])
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:float"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))


class _DuplicateKey(Exception):
    def __init__(self, key: Any, line: int, first_line: int):
        self.key, self.line, self.first_line = key, line, first_line


def _where(path: Path, mark: Any) -> str:
    return f"{path}, line {mark.line + 1}, column {mark.column + 1}"


def _check_events(text: str, path: Path) -> None:
    """Refuse anchors, aliases, explicit tags, extra documents and deep nesting, before
    building anything (the events stream: a refusal parses no further)."""
    documents = depth = 0
    for event in yaml.parse(text, Loader=_Loader):
        where = _where(path, event.start_mark)
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise ConfigError(
                    where, f"is nested more than {MAX_DEPTH} levels deep; a config needs far fewer"
                )
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            depth -= 1
        if isinstance(event, yaml.DocumentStartEvent):
            documents += 1
            if documents > 1:
                raise ConfigError(where, "a second YAML document ('---'); a config is one document")
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
        if tag is not None and tag != "!":
            raise ConfigError(where, f"an explicit tag ({tag}); a config holds plain values only")


def load_config_file(path: str | Path) -> dict[str, Any]:
    """The config in `path` as plain data, or a :class:`ConfigError` naming file and line."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ConfigError(str(path), f"cannot be read: {error.strerror or error}") from None
    if len(data) > MAX_BYTES:
        raise ConfigError(
            str(path), f"is {len(data):,} bytes; a config is at most {MAX_BYTES:,} bytes"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise ConfigError(
            f"{path}, line {line}",
            f"is not UTF-8 text (byte {data[error.start]:#04x}); save it as UTF-8",
        ) from None
    try:
        _check_events(text, path)
        config = yaml.load(text, Loader=_Loader)
    except _DuplicateKey as error:
        raise ConfigError(
            f"{path}, line {error.line}",
            f"the key {error.key!r} appears twice in one mapping (first on line "
            f"{error.first_line}); YAML would silently keep only the last, so merge them",
        ) from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        problem = error.problem or error.context or "invalid YAML"
        hint = " (indent with spaces, not tabs)" if "\t" in problem or "\\t" in problem else ""
        raise ConfigError(
            _where(path, mark) if mark else str(path), f"is not valid YAML: {problem}{hint}"
        ) from None
    except yaml.YAMLError as error:
        raise ConfigError(str(path), f"is not valid YAML: {error}") from None
    except RecursionError:
        raise ConfigError(str(path), "is nested too deeply") from None
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
            "templating is not allowed: a motorflow config is data, never evaluated as code",
        )
    return config
