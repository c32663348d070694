"""Typed configuration blocks, built from plain (YAML/JSON) values.

Every block is a frozen dataclass with defaults; ``from_dict`` rejects unknown keys
and bad values with a :class:`ConfigError` naming the key path, the value and what
is allowed. Blocks turn back into plain dicts with ``to_dict`` (stored as JSON next
to models and in Zarr attributes).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Self


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


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _require(ok: bool, key: str, message: str) -> None:
    if not ok:
        raise ConfigError(key, message)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _positive_int(value: Any, key: str) -> None:
    _require(
        isinstance(value, int) and not isinstance(value, bool) and value > 0,
        key,
        f"must be a positive integer, got {value!r}",
    )


def _nonnegative_int(value: Any, key: str) -> None:
    _require(
        isinstance(value, int) and not isinstance(value, bool) and value >= 0,
        key,
        f"must be an integer >= 0, got {value!r}",
    )


def _positive_number(value: Any, key: str) -> None:
    _require(
        _is_number(value) and math.isfinite(value) and value > 0,
        key,
        f"must be a finite number > 0, got {value!r}",
    )


def _nonnegative_number(value: Any, key: str) -> None:
    _require(
        _is_number(value) and math.isfinite(value) and value >= 0,
        key,
        f"must be a finite number >= 0, got {value!r}",
    )


def _one_of(value: Any, allowed: Sequence[str], key: str) -> None:
    _require(
        value in allowed,
        key,
        f"unknown value {value!r}; allowed: {', '.join(map(repr, allowed))}",
    )


class _Block:
    """Mixin: parse from a mapping with path-aware errors; dump to plain values."""

    _nested: ClassVar[dict[str, type]] = {}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None = None, path: str = "") -> Self:
        data = {} if data is None else data
        if not isinstance(data, Mapping):
            raise ConfigError(path, f"must be a mapping, got {data!r}")
        names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
        unknown = sorted(set(data) - set(names))
        if unknown:
            raise ConfigError(
                _join(path, str(unknown[0])),
                f"unknown key {unknown[0]!r}; allowed keys here: {', '.join(names)}",
            )
        kwargs: dict[str, Any] = {}
        for key, value in data.items():
            nested = cls._nested.get(key)
            if nested is not None:
                value = nested.from_dict(value, _join(path, key))
            elif isinstance(value, list):
                value = _freeze(value)
            kwargs[key] = value
        try:
            return cls(**kwargs)
        except ConfigError as error:
            raise ConfigError(_join(path, error.path), error.message) from None

    def to_dict(self) -> dict[str, Any]:
        """Plain values (lists, dicts, numbers, strings) that `from_dict` reads back."""
        return {
            f.name: _plain(getattr(self, f.name))
            for f in dataclasses.fields(self)  # type: ignore[arg-type]
        }


def _freeze(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


def _plain(value: Any) -> Any:
    return value.to_dict() if hasattr(value, "to_dict") else _thaw(value)


def _thaw(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_thaw(v) for v in value]
    return value


CELLS = ("gru", "rnn", "leaky")


@dataclasses.dataclass(frozen=True)
class MechanicsConfig(_Block):
    """Point mass: `mass` (kg) and viscous `damping` (N s/m)."""

    mass: float = 1.0
    damping: float = 0.0

    def __post_init__(self):
        _positive_number(self.mass, "mass")
        _nonnegative_number(self.damping, "damping")


@dataclasses.dataclass(frozen=True)
class NetworkConfig(_Block):
    """Recurrent controller: cell type, size, leak time constant, hidden noise."""

    cell: str = "gru"
    hidden_size: int = 50
    tau: float = 0.1
    hidden_noise_std: float = 0.0

    def __post_init__(self):
        _one_of(self.cell, CELLS, "cell")
        _positive_int(self.hidden_size, "hidden_size")
        _positive_number(self.tau, "tau")
        _nonnegative_number(self.hidden_noise_std, "hidden_noise_std")


@dataclasses.dataclass(frozen=True)
class FeedbackConfig(_Block):
    """Sensory feedback of position and velocity: `delay` in steps, additive noise."""

    delay: int = 1
    noise_std: float = 0.0

    def __post_init__(self):
        _nonnegative_int(self.delay, "delay")
        _nonnegative_number(self.noise_std, "noise_std")


@dataclasses.dataclass(frozen=True)
class ModelConfig(_Block):
    """A closed-loop controller: mechanics + network + feedback, stepped every `dt` s."""

    _nested: ClassVar[dict[str, type]] = {
        "mechanics": MechanicsConfig,
        "network": NetworkConfig,
        "feedback": FeedbackConfig,
    }
    dt: float = 0.05
    mechanics: MechanicsConfig = MechanicsConfig()
    network: NetworkConfig = NetworkConfig()
    feedback: FeedbackConfig = FeedbackConfig()

    def __post_init__(self):
        _positive_number(self.dt, "dt")
        _require(
            self.network.cell != "leaky" or self.network.tau >= self.dt,
            "network.tau",
            f"the leaky cell needs tau >= dt ({self.dt}), got {self.network.tau}",
        )


def _point(value: Any, key: str) -> None:
    _require(
        isinstance(value, tuple)
        and len(value) == 2
        and all(_is_number(v) and math.isfinite(v) for v in value),
        key,
        f"must be a list of two finite numbers [x, y], got {_thaw(value)!r}",
    )


@dataclasses.dataclass(frozen=True)
class CenterOutConfig(_Block):
    """Evaluation reaches from `center` in `n_directions` directions x `distances`."""

    center: tuple[float, float] = (0.0, 0.0)
    n_directions: int = 7
    distances: tuple[float, ...] = (0.5,)

    def __post_init__(self):
        _point(self.center, "center")
        _positive_int(self.n_directions, "n_directions")
        _require(
            isinstance(self.distances, tuple)
            and len(self.distances) > 0
            and all(_is_number(d) and math.isfinite(d) and d > 0 for d in self.distances),
            "distances",
            f"must be a non-empty list of numbers > 0, got {_thaw(self.distances)!r}",
        )


@dataclasses.dataclass(frozen=True)
class TaskConfig(_Block):
    """Reaching between uniform random points in a rectangular workspace.

    `workspace` is ``[[x_min, y_min], [x_max, y_max]]``; each trial lasts `n_steps`.
    """

    _nested: ClassVar[dict[str, type]] = {"eval": CenterOutConfig}
    kind: str = "reach"
    n_steps: int = 100
    workspace: tuple[tuple[float, float], tuple[float, float]] = ((-1.0, -1.0), (1.0, 1.0))
    eval: CenterOutConfig = CenterOutConfig()

    def __post_init__(self):
        _one_of(self.kind, ("reach",), "kind")
        _positive_int(self.n_steps, "n_steps")
        _require(
            isinstance(self.workspace, tuple) and len(self.workspace) == 2,
            "workspace",
            f"must be [[x_min, y_min], [x_max, y_max]], got {_thaw(self.workspace)!r}",
        )
        _point(self.workspace[0], "workspace[0]")
        _point(self.workspace[1], "workspace[1]")
        lower, upper = self.workspace
        _require(
            lower[0] < upper[0] and lower[1] < upper[1],
            "workspace",
            f"needs x_min < x_max and y_min < y_max, got {_thaw(self.workspace)!r}",
        )
        # The evaluation reaches must lie where the network was trained to reach.
        center, reach = self.eval.center, max(self.eval.distances)
        for angle in range(self.eval.n_directions):
            theta = 2 * math.pi * angle / self.eval.n_directions
            goal = (center[0] + reach * math.cos(theta), center[1] + reach * math.sin(theta))
            inside = all(
                lower[i] - 1e-9 <= value <= upper[i] + 1e-9 for i, value in enumerate(goal)
            )
            _require(
                inside and all(lower[i] <= center[i] <= upper[i] for i in range(2)),
                "eval",
                f"the center-out goals (center {list(center)}, distance {reach}) leave the "
                f"workspace {_thaw(self.workspace)}: the goal at "
                f"[{goal[0]:.3g}, {goal[1]:.3g}] was never trained; move the center, shorten "
                "the distances or widen the workspace",
            )


LOSS_TERMS = ("position", "final_velocity", "effort", "hidden")


@dataclasses.dataclass(frozen=True)
class LossTermConfig(_Block):
    """One loss term: its `weight` and, for `position`, a time `discount_power`.

    With ``discount_power = p`` the error at step t is weighted by ``((t+1)/n_steps)**p``
    so that the end of the reach dominates; ``p = 0`` weighs every step equally.
    """

    weight: float = 1.0
    discount_power: float = 0.0

    def __post_init__(self):
        _nonnegative_number(self.weight, "weight")
        _nonnegative_number(self.discount_power, "discount_power")


def _default_loss_terms() -> dict[str, LossTermConfig]:
    return {
        "position": LossTermConfig(weight=1.0, discount_power=6.0),
        "final_velocity": LossTermConfig(weight=1.0),
        "effort": LossTermConfig(weight=1e-5),
        "hidden": LossTermConfig(weight=1e-5),
    }


@dataclasses.dataclass(frozen=True)
class LossConfig:
    """The loss terms of `LOSS_TERMS` with their weights; every term is always present.

    A config names only the terms and keys it changes: ``{position: {weight: 2}}``
    keeps position's `discount_power` of 6 and every other term's default. A term
    with weight 0 adds nothing to the loss (it is still recorded in the history).
    """

    terms: dict[str, LossTermConfig] = dataclasses.field(default_factory=_default_loss_terms)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None = None, path: str = "") -> LossConfig:
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise ConfigError(path, f"must be a mapping of loss terms, got {data!r}")
        terms = _default_loss_terms()
        for name, term in data.items():
            _one_of_at(name, LOSS_TERMS, _join(path, str(name)))
            merged = {**terms[name].to_dict(), **term} if isinstance(term, Mapping) else term
            terms[name] = LossTermConfig.from_dict(merged, _join(path, name))
        return cls(terms)

    def to_dict(self) -> dict[str, Any]:
        return {name: term.to_dict() for name, term in self.terms.items()}


def _one_of_at(value: Any, allowed: Sequence[str], path: str) -> None:
    if value not in allowed:
        raise ConfigError(path, f"unknown loss term; allowed: {', '.join(allowed)}")


OPTIMIZERS = ("adam", "adamw", "sgd")
SCHEDULES = ("constant", "warmup_cosine", "exponential")


@dataclasses.dataclass(frozen=True)
class ScheduleConfig(_Block):
    """Learning-rate schedule over batches.

    - ``constant``: the optimizer's `learning_rate` throughout.
    - ``warmup_cosine``: linear from 0 to `learning_rate` over `warmup_steps`, then
      cosine decay to ``learning_rate * end_factor`` at the last batch.
    - ``exponential``: ``learning_rate * decay_rate ** (batch / decay_steps)``.
    """

    kind: str = "constant"
    warmup_steps: int = 0
    end_factor: float = 0.0
    decay_rate: float = 0.1
    decay_steps: int = 1000

    def __post_init__(self):
        _one_of(self.kind, SCHEDULES, "kind")
        _nonnegative_int(self.warmup_steps, "warmup_steps")
        _nonnegative_number(self.end_factor, "end_factor")
        _positive_number(self.decay_rate, "decay_rate")
        _positive_int(self.decay_steps, "decay_steps")


@dataclasses.dataclass(frozen=True)
class OptimizerConfig(_Block):
    """Optax optimizer: `name`, `learning_rate`, schedule and optional clipping."""

    _nested: ClassVar[dict[str, type]] = {"schedule": ScheduleConfig}
    name: str = "adam"
    learning_rate: float = 1e-2
    weight_decay: float = 1e-4
    momentum: float = 0.0
    clip_global_norm: float | None = None
    schedule: ScheduleConfig = ScheduleConfig()

    def __post_init__(self):
        _one_of(self.name, OPTIMIZERS, "name")
        _positive_number(self.learning_rate, "learning_rate")
        _nonnegative_number(self.weight_decay, "weight_decay")
        _require(
            _is_number(self.momentum) and 0 <= self.momentum < 1,
            "momentum",
            f"must be a number in [0, 1), got {self.momentum!r}",
        )
        if self.clip_global_norm is not None:
            _positive_number(self.clip_global_norm, "clip_global_norm")


# Training keys that shape only the resume state (checkpoints), never the results.
RESUME_ONLY_KEYS = ("checkpoint_every", "keep_checkpoints")


@dataclasses.dataclass(frozen=True)
class TrainConfig(_Block):
    """How an ensemble trains.

    `trainable` lists paths into the model (``network``, ``network.readout``, ...).
    Every `log_every` batches the validation loss is measured and logged; that is
    also the number of batches run per compiled call. A checkpoint is written every
    `checkpoint_every` batches (a multiple of `log_every`), keeping the newest
    `keep_checkpoints` plus the best by validation loss.
    """

    _nested: ClassVar[dict[str, type]] = {"optimizer": OptimizerConfig, "loss": LossConfig}
    n_replicates: int = 5
    n_batches: int = 1000
    batch_size: int = 250
    shared_trials: bool = False
    trainable: tuple[str, ...] = ("network",)
    optimizer: OptimizerConfig = OptimizerConfig()
    loss: LossConfig = dataclasses.field(default_factory=LossConfig)
    log_every: int = 100
    checkpoint_every: int = 100
    keep_checkpoints: int = 2

    def __post_init__(self):
        _positive_int(self.n_replicates, "n_replicates")
        _positive_int(self.n_batches, "n_batches")
        _positive_int(self.batch_size, "batch_size")
        _require(
            isinstance(self.shared_trials, bool),
            "shared_trials",
            f"must be true or false, got {self.shared_trials!r}",
        )
        _require(
            isinstance(self.trainable, tuple)
            and len(self.trainable) > 0
            and all(isinstance(p, str) for p in self.trainable),
            "trainable",
            f"must be a non-empty list of model paths such as 'network', got {_thaw(self.trainable)!r}",
        )
        _positive_int(self.log_every, "log_every")
        _positive_int(self.checkpoint_every, "checkpoint_every")
        _require(
            self.checkpoint_every % self.log_every == 0,
            "checkpoint_every",
            f"must be a multiple of log_every ({self.log_every}), got {self.checkpoint_every}",
        )
        _positive_int(self.keep_checkpoints, "keep_checkpoints")

    def result_settings(self) -> dict[str, Any]:
        """`to_dict` without the keys that shape only the resume state (`RESUME_ONLY_KEYS`)."""
        settings = self.to_dict()
        for name in RESUME_ONLY_KEYS:
            settings.pop(name)
        return settings


def check_model_fits_task(model: ModelConfig, task: TaskConfig, path: str = "") -> None:
    """Cross-block checks: a feedback delay must leave steps to act on."""
    if model.feedback.delay >= task.n_steps:
        raise ConfigError(
            _join(path, "model.feedback.delay"),
            f"delay ({model.feedback.delay} steps) must be smaller than the task's "
            f"n_steps ({task.n_steps})",
        )
