"""The typed-config machinery: strict value types, partial blocks, key-path errors.

Every config block is a frozen pydantic model (:class:`Block`): unknown keys are
errors, numbers are never read from text, a partial block keeps the documented
default of every key it does not name (at every depth), and every error becomes one
:class:`ConfigError` naming the key path, the bad value and what is allowed.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Annotated, Any, ClassVar, Self, Union

import pydantic
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict, model_validator


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


# Strict scalar types: `True` is no integer, "100" no number, 2.5 no count.
Integer = Annotated[int, Strict()]
PositiveInt = Annotated[int, Strict(), Field(ge=1)]
NonNegativeInt = Annotated[int, Strict(), Field(ge=0)]
Number = Annotated[float, Strict()]
PositiveNumber = Annotated[float, Strict(), Field(gt=0)]
NonNegativeNumber = Annotated[float, Strict(), Field(ge=0)]
Boolean = Annotated[bool, Strict()]
Text = Annotated[str, Strict()]
Point = tuple[Number, Number]


def merge_settings(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with `override` merged in at every depth (neither is changed).

    A mapping that names another ``kind`` than the one it overrides replaces it
    whole: the settings of one kind of part mean nothing to another.
    """
    merged = copy.deepcopy(dict(base))
    for key, value in override.items():
        old = merged.get(key)
        if _same_kind(old, value):
            merged[key] = merge_settings(old, value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _same_kind(old: Any, new: Any) -> bool:
    """Both are mappings, and `new` names no other ``kind`` than `old`."""
    return (
        isinstance(old, Mapping)
        and isinstance(new, Mapping)
        and new.get("kind", old.get("kind")) == old.get("kind")
    )


def _merges_over(current: Any, value: Any) -> bool:
    """Whether `value` is merged over the block `current` (else it replaces it)."""
    return (
        isinstance(current, Block)
        and not current.replaced_whole
        and _same_kind(current.to_dict(), value)
    )


def over_block(block: Block, value: Mapping[str, Any], path: str = "", cls: Any = None) -> Block:
    """`value` merged over `block` (an override), read by `cls` (default: `block`'s
    type). A `value` naming another ``kind`` replaces the block whole."""
    merged = (
        _over_block(block, value)
        if _same_kind(block.to_dict(), value)
        else copy.deepcopy(dict(value))
    )
    return (cls or type(block)).from_dict(merged, path)


def _over_block(block: Block, value: Mapping[str, Any]) -> dict[str, Any]:
    """`value` over the settings of `block`, descending only into sub-blocks: a mapping
    of names (e.g. evaluation conditions) is replaced whole, never merged."""
    merged = block.to_dict()
    for key, item in value.items():
        current = getattr(block, key, None) if isinstance(key, str) else None
        if _merges_over(current, item):
            merged[key] = _over_block(current, item)
        else:
            merged[key] = copy.deepcopy(item)
    return merged


class Block(BaseModel):
    """A frozen config block: parsed with :meth:`from_dict`, dumped with :meth:`to_dict`."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
    # Keys this block does not take, with what to write instead (renamed keys,
    # keys that belong elsewhere): the unknown-key error says it.
    key_hints: ClassVar[dict[str, str]] = {}
    # A block given in a config replaces this one whole rather than being merged over
    # it (a schedule: `{at: [5]}` means only batch 5, not batch 5 as well).
    replaced_whole: ClassVar[bool] = False

    @model_validator(mode="before")
    @classmethod
    def _known_keys_over_defaults(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        allowed = list(cls.model_fields)
        for key in data:
            if key not in allowed:
                hint = cls.key_hints.get(key) if isinstance(key, str) else None
                raise ConfigError(
                    str(key),
                    f"unknown key {key!r}"
                    + (f": {hint}" if hint else f"; allowed keys here: {', '.join(allowed)}"),
                )
        # A partial sub-block keeps its field's documented default for every key it
        # does not name (e.g. loss.position.discount_power when only weight is given).
        merged = dict(data)
        for name, field in cls.model_fields.items():
            default, value = field.default, data.get(name)
            if _merges_over(default, value):
                merged[name] = _over_block(default, value)
        return merged

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None = None, path: str = "") -> Self:
        """The block from plain values; a :class:`ConfigError` under `path` if they are bad."""
        try:
            return cls.model_validate({} if data is None else data)
        except pydantic.ValidationError as error:
            raise config_error(error, path, data) from None

    def to_dict(self) -> dict[str, Any]:
        """Plain values (lists, dicts, numbers, strings) that `from_dict` reads back."""
        return self.model_dump(mode="json")

    def __hash__(self) -> int:
        # pydantic's hash of a frozen model hashes its field values, which fails on a
        # mapping (loss terms, per-group learning rates). The plain values, frozen, hash
        # alike for equal blocks: a block then keys a compiled program (a trainer's
        # settings are its static part under `eqx.filter_jit`).
        return hash((type(self), _frozen(self.to_dict())))


def _frozen(value: Any) -> Any:
    """`value` (plain values) with every dict and list made a tuple, so it hashes."""
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda pair: str(pair[0]))
        return tuple((key, _frozen(item)) for key, item in items)
    if isinstance(value, list):
        return tuple(_frozen(item) for item in value)
    return value


# The `kind` values of every tagged union (see `tagged_union`): pydantic puts the
# chosen kind into an error's location, which a key path leaves out.
_UNION_TAGS: set[str] = set()


def registry(*members: type[Block]) -> dict[str, type[Block]]:
    """A family's registry: each member's ``kind`` default -> the member."""
    return {member.model_fields["kind"].default: member for member in members}


def tagged_union(members: Sequence[type[Block]], default: str | None = None) -> Any:
    """One block of several kinds, chosen by its ``kind`` key (a registry's config type).

    Each member declares ``kind: Literal["<name>"]``; the JSON Schema becomes a
    ``oneOf`` with a discriminator, and an unknown kind is an error listing the kinds.
    With `default`, a mapping without a ``kind`` key is of that kind.
    """
    _UNION_TAGS.update(member.model_fields["kind"].default for member in members)
    union = Annotated[Union[tuple(members)], Field(discriminator="kind")]  # noqa: UP007
    if default is None:
        return union

    def of_default_kind(value: Any) -> Any:
        if isinstance(value, Mapping) and "kind" not in value:
            return {"kind": default, **value}
        return value

    return Annotated[union, BeforeValidator(of_default_kind)]


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
            if not (index and isinstance(part, str) and part in _UNION_TAGS)
        ]
    kept, node = [], data
    for part in location:
        is_key = isinstance(node, Mapping) and part in node
        is_index = isinstance(node, (list, tuple)) and isinstance(part, int) and part < len(node)
        if is_key or is_index:
            node = node[part]
        elif isinstance(node, Mapping) and part in _UNION_TAGS and node.get("kind", part) == part:
            continue
        else:
            node = None
        kept.append(part)
    return kept


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
        return ConfigError(
            _format_path(path, [*location, "kind"]),
            f"unknown kind; allowed: {first['ctx']['expected_tags']}, got {first['ctx']['tag']!r}",
        )
    if first["type"] == "missing":
        return ConfigError(
            _format_path(path, location),
            f"is required: add the key '{location[-1]}' here",
        )
    return ConfigError(_format_path(path, location) or "(top level)", _message(first))
