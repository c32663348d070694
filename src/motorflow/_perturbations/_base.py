"""The perturbation interface: settings, per-trial draws, and per-step effects on a trial."""

from __future__ import annotations

import abc
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

import equinox as eqx
import jax.numpy as jnp
from jaxtyping import Array, Float
from pydantic import Field, PlainSerializer, PlainValidator, Strict, WithJsonSchema

from .._config_base import Block
from .._config_errors import ConfigError
from .._program_form import with_arguments

if TYPE_CHECKING:  # it imports this module
    from ._units import UnitEffects

# A window edge within this fraction of a step of a step's time counts as that step,
# so ``start: 0.3`` with ``dt: 0.01`` starts at step 30 despite float rounding.
_STEP_TOLERANCE = 1e-4


def drawn(**bounds: float) -> Any:
    """A setting that is a number, or a range ``[low, high]`` drawn uniformly per trial.

    `bounds` (``ge=0`` or ``gt=0``) hold for the number and for both ends of a range.
    """
    ((bound, limit),) = bounds.items() if bounds else (("", None),)
    schema_number: dict[str, Any] = {"type": "number"}
    if bound:
        schema_number[{"ge": "minimum", "gt": "exclusiveMinimum"}[bound]] = limit

    def number(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError("", f"must be a number or a range [low, high], got {value!r}")
        if not math.isfinite(value):
            raise ConfigError("", f"must be a finite number, got {value!r}")
        if (bound == "ge" and value < limit) or (bound == "gt" and value <= limit):
            symbol = ">=" if bound == "ge" else ">"
            raise ConfigError("", f"must be a number {symbol} {limit:g}, got {value!r}")
        return float(value)

    def validate(value: Any) -> float | tuple[float, float]:
        if isinstance(value, (list, tuple)):
            if len(value) != 2:
                raise ConfigError("", f"a range is a list [low, high], got {list(value)!r}")
            low, high = number(value[0]), number(value[1])
            if low > high:
                raise ConfigError("", f"a range [low, high] needs low <= high, got {list(value)}")
            return (low, high)
        return number(value)

    return Annotated[
        float | tuple[float, float],
        PlainValidator(validate),
        PlainSerializer(lambda value: list(value) if isinstance(value, tuple) else value),
        WithJsonSchema(
            {
                "anyOf": [
                    schema_number,
                    {"type": "array", "items": schema_number, "minItems": 2, "maxItems": 2},
                ]
            }
        ),
    ]


Drawn = drawn()
NonNegativeDrawn = drawn(ge=0)
PositiveDrawn = drawn(gt=0)
Frame = Annotated[
    Literal["world", "reach"],
    Field(
        description="the frame of `angle`: `world` (from +x) or `reach` (from the "
        "start-to-goal direction)"
    ),
]


class Effects(eqx.Module):
    """What the perturbations of one trial do at each step `t` (dim `time`).

    **Arguments:**

    - `force`: a Cartesian force on the effector (N), shape `(time, 2)`.
    - `viscosity`: a velocity-dependent field (N s/m), shape `(time, 2, 2)`: the
      effector feels ``viscosity[t] @ v`` at velocity `v` (a curl field of gain g,
      counter-clockwise positive, is ``g * [[0, -1], [1, 0]]``).
    - `feedback`: an offset added to the sensed effector position (m) before the
      feedback delay, shape `(time, 2)`.
    - `goal`: a displacement of the goal (m), shape `(time, 2)`: the network is shown,
      and the loss measures against, the displaced goal.
    - `network`: what interventions do to the hidden units (:class:`UnitEffects`), or
      None where the trial has none (its program then holds no trace of them).
    """

    force: Float[Array, "time 2"]
    viscosity: Float[Array, "time 2 2"]
    feedback: Float[Array, "time 2"]
    goal: Float[Array, "time 2"]
    network: UnitEffects | None = None

    @classmethod
    def none(cls, n_steps: int) -> Effects:
        """No effect at any of `n_steps` steps."""
        vector = jnp.zeros((n_steps, 2), jnp.float32)
        return cls(
            force=vector,
            viscosity=jnp.zeros((n_steps, 2, 2), jnp.float32),
            feedback=vector,
            goal=vector,
        )

    @classmethod
    def only(cls, n_steps: int, **fields: Array) -> Effects:
        """`fields` (e.g. ``force=...``), and no effect of any other kind."""
        none = cls.none(n_steps)
        return cls(
            **{name: fields.get(name, getattr(none, name)) for name in _EFFECT_FIELDS},
            network=fields.get("network"),
        )

    def __add__(self, other: Effects) -> Effects:
        if self.network is None or other.network is None:
            network = other.network if self.network is None else self.network
        else:
            network = self.network + other.network
        return Effects(
            force=self.force + other.force,
            viscosity=self.viscosity + other.viscosity,
            feedback=self.feedback + other.feedback,
            goal=self.goal + other.goal,
            network=network,
        )


_EFFECT_FIELDS = ("force", "viscosity", "feedback", "goal")


class TrialGeometry(eqx.Module):
    """Where one trial starts and where its goal is, each shape `(2,)`; the times of its
    `n_steps` steps are ``t * dt``; the network has `n_units` hidden units."""

    start: Float[Array, " 2"]
    goal: Float[Array, " 2"]
    n_steps: int = eqx.field(static=True)
    dt: float = eqx.field(static=True)
    n_units: int = eqx.field(static=True, default=0)

    def first_step_at(self, time: Float[Array, ""]) -> Float[Array, ""]:
        """The first step whose time is at or after `time` (s)."""
        return jnp.ceil(time / self.dt - _STEP_TOLERANCE)

    def window(self, start: Float[Array, ""], duration: Float[Array, ""]) -> Float[Array, " time"]:
        """1 at the steps t with ``start <= t * dt < start + duration``, else 0."""
        steps = jnp.arange(self.n_steps)
        first, end = self.first_step_at(start), self.first_step_at(start + duration)
        return ((steps >= first) & (steps < end)).astype(jnp.float32)

    def from_step(self, time: Float[Array, ""]) -> Float[Array, " time"]:
        """1 at the steps t with ``t * dt >= time``, else 0."""
        return (jnp.arange(self.n_steps) >= self.first_step_at(time)).astype(jnp.float32)

    def direction(self, angle_deg: Float[Array, ""], frame: str) -> Float[Array, " 2"]:
        """The unit vector at `angle_deg` counter-clockwise from +x (``world``) or from
        the start-to-goal direction (``reach``; 90 is to the left of the movement).

        A trial whose goal is its start has no reach direction; ``reach`` is then +x.
        """
        angle = jnp.deg2rad(angle_deg)
        if frame == "reach":
            toward = self.goal - self.start
            angle = angle + jnp.arctan2(toward[1], toward[0])
        return jnp.stack([jnp.cos(angle), jnp.sin(angle)])


class AbstractPerturbation(Block):
    """A perturbation: its settings (a config block) and what it does to a trial.

    Settings listed in `DRAWN` are numbers or ranges ``[low, high]`` drawn uniformly
    for every trial; `probability` is the chance that a trial is perturbed at all.
    The drawn values of a trial arrive in :meth:`effects` as scalars in `params`
    (``params["active"]`` is 1 or 0), so that every trial of a batch runs the same
    program. A subclass declares ``kind: Literal["<name>"]`` (its registry name),
    its settings, `DRAWN`, and :meth:`effects`; :meth:`time_settings` names the
    settings that are times, so a config can be checked against a trial's length;
    :meth:`describe` says what it does in a figure's labels.
    """

    kind: str
    probability: Annotated[float, Strict(), Field(ge=0, le=1)] = Field(
        1.0, description="chance that a trial is perturbed (drawn per trial)"
    )

    DRAWN: ClassVar[tuple[str, ...]] = ()
    #: whether it acts on the network's hidden units (an intervention), not the body
    ON_UNITS: ClassVar[bool] = False
    #: the unit of each `DRAWN` setting as stored (CF ``units`` strings: "N", "s",
    #: "m", "degree", "1"); the evaluation store labels its per-trial values with it.
    UNITS: ClassVar[dict[str, str]] = {}
    TIMES: ClassVar[tuple[str, ...]] = ()

    @abc.abstractmethod
    def effects(self, params: dict[str, Array], trial: TrialGeometry) -> Effects:
        """The per-step effects on one trial with the drawn `params` (scalars)."""

    @classmethod
    def describe(cls, settings: Mapping[str, Any]) -> str:
        """The perturbation in a few words for a figure's labels (``curl ↻ 10 N s/m``),
        from its block as a store keeps it (JSON: a drawn range is a list
        ``[low, high]``); by default its kind.

        A class method of the block's plain values, so a figure drawn from a store
        needs no validated config.
        """
        return settings["kind"]

    def program_form(self) -> AbstractPerturbation:
        """The block as it keys a compiled program: its drawn settings and `probability`
        :data:`motorflow._program_form.ARGUMENT` (they reach :meth:`effects` as the
        trials' drawn `params`, arrays), so perturbations of other strengths share one."""
        return with_arguments(self, (*self.DRAWN, "probability"))

    def ranges(self) -> dict[str, tuple[float, float]]:
        """Each drawn setting as ``(low, high)`` (a number as a range of width zero)."""
        ranges = {}
        for name in self.DRAWN:
            value = getattr(self, name)
            ranges[name] = tuple(value) if isinstance(value, tuple) else (value, value)
        return ranges

    def model_problem(self, n_units: int) -> str | None:
        """What keeps the perturbation from acting on a network of `n_units` hidden
        units (checked against each experiment's model), or None."""
        return None

    def latest_time(self) -> float:
        """The latest time (s) at which the perturbation may begin: it must fall inside
        the trial (checked against each experiment's ``n_steps * dt``)."""
        return max((self.ranges()[name][1] for name in self.TIMES), default=0.0)


def shown(setting: float | list[float]) -> str:
    """A drawn setting as a figure label shows it: ``10``, or the range ``5–15``."""
    if isinstance(setting, (list, tuple)):
        return f"{setting[0]:g}–{setting[1]:g}"
    return f"{setting:g}"


def endpoint_force(
    force: Float[Array, " 2"], viscosity: Float[Array, "2 2"], velocity: Float[Array, " 2"]
) -> Float[Array, " 2"]:
    """The force on an effector moving at `velocity` at a step whose effects are
    `force` (N) and the velocity-dependent field `viscosity` (N s/m)."""
    return force + viscosity @ velocity
