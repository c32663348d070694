"""Settings that act only with a partner's value: set without it, they would change
nothing, so the config is refused naming both keys (issue 28's cross-field rule).

Each partner rule says which key needs which values of another key of the same
experiment. A key counts as set when it differs from its documented default (a
block given in part keeps its defaults, so presence alone says nothing). The
rules follow the keys' own descriptions: ``weight_decay`` is AdamW's decoupled
decay (Loshchilov & Hutter 2019), ``momentum`` SGD's heavy ball, ``feedback_scale``
e-prop's random feedback (Bellec et al. 2020), ``stiffness`` and ``damping`` the
corrective target of the RLS readout. A cell's settings need no rule: each is a key
of its own cell's block only (``network.cell``), so another cell refuses it as an
unknown key.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

from .._config import ModelConfig
from .._config_base import Block
from .._config_errors import ConfigError, one_error, plain
from .._training._config import TrainConfig


@dataclasses.dataclass(frozen=True)
class Partner:
    """`key` acts only while `partner` has one of `values`."""

    key: str
    partner: str
    values: tuple[Any, ...]


PARTNERS = (
    Partner("training.optimizer.weight_decay", "training.optimizer.name", ("adamw",)),
    Partner("training.optimizer.momentum", "training.optimizer.name", ("sgd",)),
    *(
        Partner(f"training.optimizer.schedule.{key}", "training.optimizer.schedule.kind", (kind,))
        for key, kind in (
            ("warmup_steps", "warmup_cosine"),
            ("end_factor", "warmup_cosine"),
            ("decay_rate", "exponential"),
            ("decay_steps", "exponential"),
        )
    ),
    Partner("training.learning.feedback_scale", "training.learning.feedback", ("random",)),
    Partner("training.learning.stiffness", "training.learning.target", ("corrective",)),
    Partner("training.learning.damping", "training.learning.target", ("corrective",)),
)

_MISSING = object()


def _lookup(blocks: Mapping[str, Block], key: str) -> tuple[Any, Any]:
    """The value at the dotted `key` and its documented default (`_MISSING` where the
    block has no such key, e.g. a learning rule of another kind)."""
    first, *parts = key.split(".")
    node: Any = blocks[first]
    for part in parts[:-1]:
        node = getattr(node, part, _MISSING)
        if not isinstance(node, Block):
            return _MISSING, _MISSING
    field = type(node).model_fields.get(parts[-1])
    if field is None:
        return _MISSING, _MISSING
    return getattr(node, parts[-1]), field.default


def idle_settings(model: ModelConfig, train: TrainConfig) -> Iterator[tuple[Partner, Any, Any]]:
    """Each rule broken by the experiment's model and training: the rule, the key's
    value and the partner's value."""
    blocks = {"model": model, "training": train}
    for rule in PARTNERS:
        value, default = _lookup(blocks, rule.key)
        if value is _MISSING or value == default:
            continue
        current, _ = _lookup(blocks, rule.partner)
        if current is not _MISSING and current not in rule.values:
            yield rule, value, current


def _message(rule: Partner, value: Any, current: Any, default: Any) -> str:
    name = rule.key.rsplit(".", 1)[1]
    partner = rule.partner.rsplit(".", 1)[1]
    needs = " or ".join(repr(v) for v in rule.values)
    return (
        f"{name} is {plain(value)!r}, but it acts only with {rule.partner} {needs}, and "
        f"{partner} is {current!r}: it would change nothing; set {partner} to {needs}, "
        f"or remove {name} (its default is {plain(default)!r})"
    )


def check_partners(
    model: ModelConfig, train: TrainConfig, path: str, swept: Mapping[str, Any] | None = None
) -> None:
    """Refuse every setting of the experiment at `path` that its partner makes idle.

    For a sweep's point, `swept` is the sweep's grid: only a swept key is refused
    there (under ``<sweep>.grid``), since the base experiment's own keys are checked
    with it.
    """
    errors = []
    blocks = {"model": model, "training": train}
    for rule, value, current in idle_settings(model, train):
        _, default = _lookup(blocks, rule.key)
        message = _message(rule, value, current, default)
        if swept is None:
            errors.append(ConfigError(f"{path}.{rule.key}", message))
        elif rule.key in swept:
            errors.append(ConfigError(f"{path}.grid.{rule.key}", message))
    if errors:
        raise one_error(errors)
