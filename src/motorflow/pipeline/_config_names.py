"""Names in a workflow config (experiments, blocks, conditions): identifiers that become
file paths, so nothing else is accepted."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, WithJsonSchema

from .._config_errors import ConfigError

# The schema's pattern (JSON Schema's `$` ends the text); Python checks the whole
# string with `re.fullmatch` (a Python `$` alone also matches before a final newline).
NAME_PATTERN = r"^[A-Za-z0-9_-]+$"
MAX_NAME_LENGTH = 64


def check_name(name: Any, path: str = "") -> str:
    """Names become paths: only letters, digits, ``_`` and ``-``, at most 64 characters."""
    if not isinstance(name, str) or not re.fullmatch(NAME_PATTERN, name):
        raise ConfigError(
            path,
            f"{name!r} is not a valid name: use only letters, digits, '_' and '-' "
            "(names become file paths)",
        )
    if len(name) > MAX_NAME_LENGTH:
        raise ConfigError(
            path,
            f"{name[:20]!r}... is {len(name)} characters long; names have at most "
            f"{MAX_NAME_LENGTH} characters (they become file paths)",
        )
    return name


def _not_a_yaml_value(name: Any) -> Any:
    if name is None or isinstance(name, bool):
        raise ConfigError(
            "",
            f"a name read as {name!r}: YAML reads a bare null, ~, true or false as a "
            'value; quote it ("null": ...) or choose another name',
        )
    return name


Name = Annotated[
    str,
    BeforeValidator(_not_a_yaml_value),
    AfterValidator(check_name),
    WithJsonSchema({"type": "string", "pattern": NAME_PATTERN, "maxLength": MAX_NAME_LENGTH}),
]
