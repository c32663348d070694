"""Config errors: a :class:`ConfigError` names the key path, the bad value and what is
allowed; several independent problems travel as one :class:`ConfigErrors`; and
pydantic's validation errors become them (:func:`config_error`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import pydantic


class ConfigError(ValueError):
    """A config value is missing, unknown or out of range.

    **Arguments:**

    - `path`: dotted key path of the bad entry, e.g. ``"model.network.hidden_size"``.
    - `message`: what is wrong and what is allowed.
    """

    def __init__(self, path: str, message: str):
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}" if path else message)


class ConfigErrors(ConfigError):
    """Several independent config problems at once, each a :class:`ConfigError`.

    `path` and `message` are the first problem's (so code that handles one error
    handles this one too); `errors` holds them all, and the text is one line each.
    """

    def __init__(self, errors: Iterable[ConfigError]):
        self.errors = tuple(one for error in errors for one in problems(error))
        if not self.errors:
            raise ValueError("ConfigErrors needs at least one error")
        ValueError.__init__(self, "\n".join(str(error) for error in self.errors))
        self.path, self.message = self.errors[0].path, self.errors[0].message


def problems(error: ConfigError) -> tuple[ConfigError, ...]:
    """Each problem of `error`: its `errors` when it holds several, else itself."""
    return error.errors if isinstance(error, ConfigErrors) else (error,)


def one_error(errors: Sequence[ConfigError]) -> ConfigError:
    """The one error, or all of them as a :class:`ConfigErrors` (several problems)."""
    return errors[0] if len(errors) == 1 else ConfigErrors(errors)


class Problems:
    """Collects the independent problems of a config, so a check reports them all
    at once; a check that depends on a failed one is skipped by its caller."""

    def __init__(self) -> None:
        self.errors: list[ConfigError] = []

    @contextlib.contextmanager
    def collecting(self) -> Iterator[None]:
        """Run the block; a :class:`ConfigError` it raises is kept, not raised."""
        try:
            yield
        except ConfigError as error:
            self.errors.extend(problems(error))

    def __bool__(self) -> bool:
        return bool(self.errors)

    def raise_any(self) -> None:
        """Raise every problem collected (one error, or a :class:`ConfigErrors`)."""
        if self.errors:
            raise one_error(self.errors)


# The `kind` values of every tagged union (`_config_base.tagged_union` adds them):
# pydantic puts the chosen kind into an error's location, which a key path leaves out.
UNION_TAGS: set[str] = set()


def _described(value: Any) -> str:
    text = repr(plain(value))
    return text if len(text) <= 80 else text[:77] + "..."


def plain(value: Any) -> Any:
    """Tuples as lists, at every depth: how a value reads in YAML and messages."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def _length_message(ctx: Mapping[str, Any], bound: str) -> str:
    items = "items" if ctx.get("field_type") != "Dictionary" else "entries"
    if bound == "min" and ctx["min_length"] == 1:
        return f"must be non-empty (at least 1 of its {items})"
    if bound == "min":
        return f"is too short: needs at least {ctx['min_length']} {items}"
    return f"is too long: takes at most {ctx['max_length']} {items}"


# What each pydantic error type means in a config, said once.
_MESSAGES = {
    "int_type": "must be an integer",
    "int_from_float": "must be an integer",
    "float_type": "must be a number",
    "bool_type": "must be true or false",
    "string_type": "must be text",
    "dict_type": "must be a mapping (key: value entries)",
    "model_type": "must be a mapping (key: value entries)",
    "model_attributes_type": "must be a mapping (key: value entries)",
    "list_type": "must be a list",
    "tuple_type": "must be a list",
    "finite_number": "must be a finite number",
    "missing": "is required",
}


def _message(error: Mapping[str, Any]) -> str:
    kind, ctx = error["type"], error.get("ctx", {})
    if kind in _MESSAGES:
        text = _MESSAGES[kind]
    elif kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        symbol = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<"}.get(kind, "<=")
        bound = list(ctx.values())[0]
        # Integer fields carry integer bounds; number fields float ones.
        what = "an integer" if isinstance(bound, int) else "a number"
        text = f"must be {what} {symbol} {bound:g}"
    elif kind == "literal_error":
        text = f"unknown value; allowed: {ctx['expected']}"
    elif kind == "too_short":
        text = _length_message(ctx, "min")
    elif kind == "too_long":
        text = _length_message(ctx, "max")
    elif kind == "string_pattern_mismatch":
        text = f"does not match the pattern {ctx['pattern']}"
    elif kind == "union_tag_not_found":
        text = f"needs a '{ctx['discriminator'].strip(chr(39))}' key naming its kind"
    else:
        text = error["msg"]
    if kind == "missing":
        return text
    return f"{text}, got {_described(error['input'])}"


def _without_union_tags(location: Sequence[Any], data: Any) -> list[Any]:
    """`location` without the kinds pydantic puts after a tagged union's value.

    Walking `data` along the location tells a key (present in the data) from a tag
    (absent, and naming the value's kind), so a name that happens to be a kind (a
    task named ``reach``) stays. Without `data`, every kind after the first part goes.
    """
    if data is None:
        return [
            part
            for index, part in enumerate(location)
            if not (index and isinstance(part, str) and part in UNION_TAGS)
        ]
    kept, node = [], data
    for part in location:
        is_key = isinstance(node, Mapping) and part in node
        is_index = isinstance(node, (list, tuple)) and isinstance(part, int) and part < len(node)
        if is_key or is_index:
            node = node[part]
        elif isinstance(node, Mapping) and part in UNION_TAGS and node.get("kind", part) == part:
            continue
        else:
            node = None
        kept.append(part)
    return kept


def _value_at(data: Any, location: Sequence[Any]) -> Any:
    """The value of `data` at `location` (None where it has none)."""
    for part in location:
        if isinstance(data, Mapping) and part in data:
            data = data[part]
        elif isinstance(data, (list, tuple)) and isinstance(part, int) and part < len(data):
            data = data[part]
        else:
            return None
    return data


def _format_path(prefix: str, parts: Sequence[Any]) -> str:
    path = prefix
    for index, part in enumerate(parts):
        if part == "[key]":
            continue
        if isinstance(part, int):
            path += f"[{part}]"
        elif index + 1 < len(parts) and parts[index + 1] == "[key]":
            path += f".{part!r}" if path else repr(part)
        else:
            path += f".{part}" if path else str(part)
    return path


def config_error(error: pydantic.ValidationError, path: str = "", data: Any = None) -> ConfigError:
    """Every error of a pydantic validation of `data` under `path`: one
    :class:`ConfigError`, or a :class:`ConfigErrors` when several keys are wrong
    (pydantic checks every field; a key's first error only)."""
    found: list[ConfigError] = []
    for details in error.errors(include_url=False):
        for one in problems(_one_config_error(details, path, data)):
            # A key's first error only: a union's alternatives report the same key
            # again, and a list with a bad item may also report the list.
            if not any(_nested(one.path, other.path) for other in found):
                found.append(one)
    return one_error(found)


def _nested(path: str, other: str) -> bool:
    """The key paths are the same, or one is inside the other."""
    inner, outer = (path, other) if len(path) >= len(other) else (other, path)
    return inner == outer or inner.startswith((f"{outer}.", f"{outer}["))


def _one_config_error(first: Mapping[str, Any], path: str, data: Any) -> ConfigError:
    location = _without_union_tags(first["loc"], data)
    cause = first.get("ctx", {}).get("error")
    if isinstance(cause, ConfigError):
        # Raised by a validator: its path is relative to the block it checked.
        return one_error(
            [
                ConfigError(
                    _format_path(path, location + (one.path.split(".") if one.path else [])),
                    one.message,
                )
                for one in problems(cause)
            ]
        )
    if first["type"] == "missing" and location and isinstance(location[-1], int):
        # A short fixed-length list (e.g. a point [x, y] given one number).
        return ConfigError(
            _format_path(path, location[:-1]),
            f"is too short: needs {location[-1] + 1} or more items, got "
            f"{_described(first['input'])}",
        )
    if first["type"] == "union_tag_invalid":
        # A bare kind (`cell: lstm`) is the value itself; else the block's `kind` key.
        bare = isinstance(_value_at(data, location), str)
        return ConfigError(
            _format_path(path, location if bare else [*location, "kind"]),
            f"unknown kind; allowed: {first['ctx']['expected_tags']}, got {first['ctx']['tag']!r}",
        )
    if first["type"] == "missing":
        return ConfigError(
            _format_path(path, location),
            f"is required: add the key '{location[-1]}' here",
        )
    return ConfigError(_format_path(path, location) or "(top level)", _message(first))
