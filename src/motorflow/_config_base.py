"""The typed-config machinery: strict value types, partial blocks, registries of kinds.

Every config block is a frozen pydantic model (:class:`Block`): unknown keys are
errors, numbers are never read from text, a partial block keeps the documented
default of every key it does not name (at every depth), and every error becomes one
:class:`ConfigError` naming the key path, the bad value and what is allowed
(`_config_errors`).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, ClassVar, Literal, Self, TypeVar, Union

import pydantic
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict, model_validator

from ._config_errors import UNION_TAGS, ConfigError, config_error

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
            merged[key] = merge_settings(_expanded(old), _expanded(value))
        else:
            merged[key] = copy.deepcopy(value)
    return merged


# The kinds of the tagged unions that take a bare kind for a block of that kind with
# its defaults (``cell: leaky`` is ``cell: {kind: leaky}``): `tagged_union`'s
# `shorthand` adds them. Merges read the bare kind so too.
SHORTHAND_KINDS: set[str] = set()


def _expanded(value: Any) -> Any:
    """A bare kind of a shorthand union as the mapping it stands for, else `value`."""
    if isinstance(value, str) and value in SHORTHAND_KINDS:
        return {"kind": value}
    return value


def _same_kind(old: Any, new: Any) -> bool:
    """Both are mappings (or bare kinds), and `new` names no other ``kind`` than `old`."""
    old, new = _expanded(old), _expanded(new)
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
    for key, item in _expanded(value).items():
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
    # A family member's kind, its registry key (`registry`): a block of a tagged union
    # declares it as its `kind` field's default, and gets it from there.
    KIND: ClassVar[str]

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        field = cls.model_fields.get("kind")
        if field is not None and isinstance(field.default, str):
            cls.KIND = field.default

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
    if isinstance(value, float) and math.isnan(value):
        # NaN hashes by identity: a program form's ARGUMENT, dumped afresh each time
        # (`motorflow._program_form`), must hash alike (a validated block holds none).
        return "NaN"
    return value


Member = TypeVar("Member")


def registry(*members: type[Member]) -> dict[str, type[Member]]:
    """A family's registry: each member's ``KIND`` -> the member, in the given order.

    Every family builds its registry so: plants, perturbations, tasks, learning rules,
    constraints and update rules (config blocks of a tagged union, whose ``KIND`` is
    their ``kind`` field's default: :class:`Block`), cells, loss terms, metrics and
    analyses (which declare ``KIND``)."""
    kinds = [member.KIND for member in members]
    if len(set(kinds)) != len(kinds):
        raise ValueError(f"a kind is registered twice: {kinds}")
    return dict(zip(kinds, members))


def tagged_union(
    members: Sequence[type[Block]], default: str | None = None, *, shorthand: bool = False
) -> Any:
    """One block of several kinds, chosen by its ``kind`` key (a registry's config type).

    Each member declares ``kind: Literal["<name>"]``; the JSON Schema becomes a
    ``oneOf`` with a discriminator, and an unknown kind is an error listing the kinds.
    With `default`, a mapping without a ``kind`` key is of that kind. With `shorthand`,
    a bare kind stands for a block of that kind with its defaults (``cell: leaky`` is
    ``cell: {kind: leaky}``), in the schema too.
    """
    kinds = tuple(member.model_fields["kind"].default for member in members)
    UNION_TAGS.update(kinds)
    union = Annotated[Union[tuple(members)], Field(discriminator="kind")]  # noqa: UP007
    if default is None and not shorthand:
        return union
    if shorthand:
        SHORTHAND_KINDS.update(kinds)

    def read(value: Any) -> Any:
        if shorthand and isinstance(value, str):
            value = {"kind": value}  # an unknown kind too: its error lists the kinds
        if default is not None and isinstance(value, Mapping) and "kind" not in value:
            return {"kind": default, **value}
        return value

    if not shorthand:
        return Annotated[union, BeforeValidator(read)]
    # The schema of a shorthand union takes the bare kinds beside the blocks.
    given = Union[Literal[kinds], union]  # noqa: UP007
    return Annotated[union, BeforeValidator(read, json_schema_input_type=given)]
