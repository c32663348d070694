"""Interventions on the network's hidden units: clamp, stimulation, lesion, extra noise.

feedbax's intervenors act on a model's state at each stage of its step; these act on
the network's: at every step, after the cell's update (and its hidden noise) and
before the readout, so the output, the plant's control and the next step's recurrence
all see the intervened state. Acting after the update means a clamped unit *is* its
value in the stored states (before it, the cell would move it away within the step),
and it works alike for every cell, whatever its update.

The units are chosen by index (`units`) or as a fraction of them drawn once from a
seed (`fraction`, `seed`): a fixed pattern, the same for every trial and replicate,
as Churchland & Shenoy (2007, J Neurophysiol 97:348) stimulated through one electrode.
A clamp may instead hold the state's part in one of the readout's spaces (Kaufman et
al. 2014, Nat Neurosci 17:440), each replicate's own, computed from its readout at
every step (so training moves it with the readout).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, PRNGKeyArray
from pydantic import Field, Strict, model_validator

from .._config_errors import ConfigError
from ._base import (
    AbstractPerturbation,
    Drawn,
    Effects,
    NonNegativeDrawn,
    PositiveDrawn,
    TrialGeometry,
    shown,
)

# What a term does to its units: add to them, add noise of that std, hold them at a
# value, or hold them at their state before the step (held at every step of a window,
# they keep the state they had as it began).
ACTIONS = ("add", "noise", "hold", "freeze")
_HOLDS = ("hold", "freeze")
# What a term acts on: its units, or the part of the state in one of the readout's
# spaces (Kaufman et al. 2014's output-potent space, the readout's row space, or the
# output-null space, its complement; motorflow._analysis._output_spaces).
SPACES = ("units", "output_potent", "output_null")


def readout_projection(weight: Float[Array, "control hidden"], space: str) -> Array:
    """The orthogonal projection `(hidden, hidden)` onto the ``output_potent`` space of a
    readout of `weight` (its row space: ``pinv(W) W``) or the ``output_null`` space."""
    potent = jnp.linalg.pinv(weight) @ weight
    return potent if space == "output_potent" else jnp.eye(weight.shape[-1]) - potent


class UnitTerm(eqx.Module):
    """One intervention's action on its `units` (indices, a constant of the program):
    per step `t`, `amount[t]` is what it adds (``add``), the std of the noise it adds
    (``noise``), or, for ``hold``, 1 where the units are held at `value[t]` (else 0)
    and for ``freeze``, 1 where they are held at their state before the step's update.
    Only the per-step numbers are arrays, so a trial carries a few numbers a step, not
    a value per unit. A term on a `space` of the readout (``output_potent`` or
    ``output_null``, with no `units`) holds the state's part in that space instead: at
    zero (``hold``) or at its part before the step (``freeze``)."""

    amount: Float[Array, " time"]
    value: Float[Array, " time"] | None
    units: tuple[int, ...] = eqx.field(static=True)
    action: str = eqx.field(static=True)
    space: str = eqx.field(static=True, default="units")

    def __check_init__(self):
        if self.action not in ACTIONS:
            raise ValueError(f"action must be one of {ACTIONS}, not {self.action!r}")
        if self.space not in SPACES:
            raise ValueError(f"space must be one of {SPACES}, not {self.space!r}")
        if self.space != "units" and self.action not in _HOLDS:
            raise ValueError(f"a term on the {self.space} space holds it: not {self.action!r}")


class UnitEffects(eqx.Module):
    """What the interventions of one trial do to the hidden units: their terms, applied
    at each step after the cell's update, the additions and noises first, then the
    holds and freezes (a later one in the list wins on a unit two of them hold)."""

    terms: tuple[UnitTerm, ...]

    def __add__(self, other: UnitEffects) -> UnitEffects:
        return UnitEffects(self.terms + other.terms)

    def held(self, n_units: int) -> tuple[Array, Array]:
        """Which units' states the cell's update reaches, per step: ``(reached, kept)``,
        each `(time, n_units)`, with ``reached`` 0 where a hold or freeze sets the
        unit's state after the update (else 1) and ``kept`` 1 where a freeze keeps the
        state from before the step (else 0). Additions and noise leave the update's
        derivatives as they are; a later term wins, as in :meth:`apply`. A term on a
        readout space mixes units and has no per-unit form (ValueError)."""
        n_steps = self.terms[0].amount.shape[0]
        reached = jnp.ones((n_steps, n_units))
        kept = jnp.zeros((n_steps, n_units))
        for term in self.terms:
            if term.action not in _HOLDS:
                continue
            if term.space != "units":
                raise ValueError(f"a hold of the {term.space} space acts on no unit alone")
            units, on = np.asarray(term.units), (term.amount > 0)[:, None]
            reached = reached.at[:, units].set(jnp.where(on, 0.0, reached[:, units]))
            frozen = 1.0 if term.action == "freeze" else 0.0
            kept = kept.at[:, units].set(jnp.where(on, frozen, kept[:, units]))
        return reached, kept

    def apply(
        self,
        hidden: Float[Array, " hidden"],
        *,
        previous: Float[Array, " hidden"],
        readout: Float[Array, "control hidden"],
        key: PRNGKeyArray,
    ) -> Array:
        """The hidden state after one step's interventions (the terms hold that step's
        numbers, scalars; `previous`: the state before the step's update, which a
        freeze holds; `readout`: the readout's weight, whose spaces a term may hold;
        `key`: their noise, a key per term from it)."""
        ordered = sorted(enumerate(self.terms), key=lambda item: item[1].action in _HOLDS)
        for index, term in ordered:
            units = np.asarray(term.units)
            if term.action == "add":
                hidden = hidden.at[units].add(term.amount)
            elif term.action == "noise":
                draw = jax.random.normal(jax.random.fold_in(key, index), units.shape)
                hidden = hidden.at[units].add(term.amount * draw.astype(hidden.dtype))
            elif term.space != "units":
                target = previous if term.action == "freeze" else jnp.zeros_like(hidden)
                projection = readout_projection(readout, term.space)
                moved = hidden - projection @ (hidden - target)
                hidden = jnp.where(term.amount > 0, moved, hidden)
            else:
                value = term.value if term.action == "hold" else previous[units]
                held = jnp.where(term.amount > 0, value, hidden[units])
                hidden = hidden.at[units].set(held)
        return hidden


Units = Annotated[list[Annotated[int, Strict(), Field(ge=0)]], Field(min_length=1)]


_DEFAULT_FRACTION = 0.1


class _OnUnits(AbstractPerturbation):
    """An intervention on chosen hidden units: `units` by index, or else a `fraction` of
    the units drawn once from `seed` (the same pattern in every trial and replicate)."""

    units: Units | None = Field(
        None, description="the hidden units acted on, by index (instead of `fraction`)"
    )
    fraction: Annotated[float, Strict(), Field(gt=0, le=1)] = Field(
        _DEFAULT_FRACTION, description="the share of hidden units acted on, drawn once from `seed`"
    )
    seed: Annotated[int, Strict(), Field(ge=0)] = Field(
        0, description="the seed of the units drawn for `fraction`"
    )

    @model_validator(mode="after")
    def _one_choice(self):
        # (Compared with the defaults, not by the keys given: a stored block has them all.)
        drawn = (self.fraction, self.seed) != (_DEFAULT_FRACTION, 0)
        if self.units is not None and drawn:
            raise ConfigError(
                "units",
                f"the {self.kind} acts on `units` (indices) or on a `fraction` of them "
                "drawn from `seed`: give one of the two",
            )
        return self

    ON_UNITS: ClassVar[bool] = True

    def chosen_units(self, n_units: int) -> tuple[int, ...]:
        """The indices of the chosen units of `n_units`, in order (a program constant)."""
        if self.units is not None:
            return tuple(sorted(set(self.units)))
        count = max(1, round(self.fraction * n_units))
        with jax.ensure_compile_time_eval():  # a constant, also inside a trace
            order = np.asarray(jax.random.permutation(jax.random.key(self.seed), n_units))
        return tuple(sorted(int(unit) for unit in order[:count]))

    def term(self, action: str, amount: Array, n_units: int, value=None) -> Effects:
        """Effects of one term acting on the chosen units (`amount`, `value`: `(time,)`)."""
        units = self.chosen_units(n_units)
        term = UnitTerm(amount=amount, value=value, units=units, action=action)
        return Effects.only(amount.shape[0], network=UnitEffects((term,)))

    def model_problem(self, n_units: int) -> str | None:
        if self.units is not None and max(self.units) >= n_units:
            return (
                f"the {self.kind} acts on unit {max(self.units)}, but the network has "
                f"{n_units} hidden units (indices 0 to {n_units - 1})"
            )
        return None

    @staticmethod
    def _chosen(settings: Mapping[str, Any]) -> str:
        """The chosen units in a figure's label, from the block's plain values."""
        if settings.get("units") is not None:
            return f"units {','.join(str(u) for u in settings['units'])}"
        return f"{100 * settings['fraction']:g}% of units"


class _Windowed(_OnUnits):
    """An intervention on during ``[start, start + duration)`` whose size is the drawn
    setting named by `SIZE`: `ACTION` says what it does to the chosen units (one of
    `ACTIONS`), and `LABEL` (with ``{size}`` and ``{units}``) how a figure names it."""

    start: NonNegativeDrawn = Field(0.1, description="s from the trial's start")
    duration: PositiveDrawn = Field(0.05, description="s")

    TIMES: ClassVar[tuple[str, ...]] = ("start",)
    SIZE: ClassVar[str]
    ACTION: ClassVar[str]
    LABEL: ClassVar[str]

    def effects(self, params: dict[str, Array], trial: TrialGeometry) -> Effects:
        on = params["active"] * trial.window(params["start"], params["duration"])
        size = params[self.SIZE]
        if self.ACTION == "hold":
            value = jnp.broadcast_to(size, on.shape)
            return self.term("hold", on, trial.n_units, value=value)
        return self.term(self.ACTION, size * on, trial.n_units)

    @classmethod
    def describe(cls, settings: Mapping[str, Any]) -> str:
        label = cls.LABEL.format(size=shown(settings[cls.SIZE]), units=cls._chosen(settings))
        return f"{label} from {shown(settings['start'])} s"


class Stimulation(_Windowed):
    """Microstimulation: `amplitude` added to each chosen unit's state at every step of
    ``[start, start + duration)`` (Churchland & Shenoy 2007 stimulated premotor cortex
    around the go cue; here the current is a fixed offset of the units' activity, in
    the units of the hidden state, whose GRU range is -1 to 1)."""

    kind: Literal["stimulation"] = "stimulation"
    amplitude: Drawn = Field(0.5, description="added to each chosen unit's state per step")

    DRAWN: ClassVar[tuple[str, ...]] = ("amplitude", "start", "duration")
    UNITS: ClassVar[dict[str, str]] = {"amplitude": "1", "start": "s", "duration": "s"}
    SIZE: ClassVar[str] = "amplitude"
    LABEL: ClassVar[str] = "stimulation {size} of {units}"
    ACTION: ClassVar[str] = "add"


class Clamp(_Windowed):
    """The chosen units held during ``[start, start + duration)``, whatever the cell's
    update: at `value` (``at: value``), or each at its own state just before the window
    (``at: start``: frozen where the trial had brought them). With `space` set, the
    state's part in the readout's output-potent or output-null space is held instead
    (Kaufman et al. 2014, Nat Neurosci 17:440: preparation lives in the null space),
    at zero or at its part just before the window, and the rest moves freely."""

    kind: Literal["clamp"] = "clamp"
    value: Drawn = Field(0.0, description="the state the chosen units are held at (`at: value`)")
    at: Literal["value", "start"] = Field(
        "value",
        description="`value`: hold the units at `value`; `start`: hold each unit at its "
        "state just before the window (`value` unused)",
    )
    space: Literal["units", "output_potent", "output_null"] = Field(
        "units",
        description="`units`: hold the chosen units; `output_potent` / `output_null`: hold "
        "the state's part in the readout's output-potent space (its row space) / null space "
        "(the rest), each replicate's own, at 0 (`at: value`) or at its part just before "
        "the window (`at: start`); no `units` or `fraction` then",
    )

    @model_validator(mode="after")
    def _value_held(self):
        if self.at == "start" and self.value != 0.0:
            raise ConfigError(
                "value",
                "a clamp with `at: start` holds each unit at its own state as the window "
                "begins, so it takes no `value`: remove `value`, or use `at: value`",
            )
        if self.space == "units":
            return self
        if self.value != 0.0:
            raise ConfigError(
                "value",
                f"a clamp of the {self.space} space holds its part of the state at 0 or, "
                "with `at: start`, where the window found it; remove `value`",
            )
        if self.units is not None or (self.fraction, self.seed) != (_DEFAULT_FRACTION, 0):
            raise ConfigError(
                "space",
                f"a clamp of the {self.space} space acts on the whole state's part in it, "
                "not on chosen units: remove `units`, `fraction` and `seed`, or set "
                "`space: units`",
            )
        return self

    DRAWN: ClassVar[tuple[str, ...]] = ("value", "start", "duration")
    UNITS: ClassVar[dict[str, str]] = {"value": "1", "start": "s", "duration": "s"}
    SIZE: ClassVar[str] = "value"
    LABEL: ClassVar[str] = "clamp {units} at {size}"
    ACTION: ClassVar[str] = "hold"

    def effects(self, params: dict[str, Array], trial: TrialGeometry) -> Effects:
        if self.at == "value" and self.space == "units":
            return super().effects(params, trial)
        on = params["active"] * trial.window(params["start"], params["duration"])
        action = "freeze" if self.at == "start" else "hold"
        if self.space == "units":
            return self.term(action, on, trial.n_units)
        term = UnitTerm(amount=on, value=None, units=(), action=action, space=self.space)
        return Effects.only(on.shape[0], network=UnitEffects((term,)))

    def model_problem(self, n_units: int) -> str | None:
        return None if self.space != "units" else super().model_problem(n_units)

    @classmethod
    def describe(cls, settings: Mapping[str, Any]) -> str:
        space, at = settings.get("space", "units"), settings.get("at", "value")
        if space == "units" and at == "value":
            return super().describe(settings)
        if space == "units":
            what, held = cls._chosen(settings), "at their state"
        else:
            what, held = f"the {space.replace('_', '-')} part", "at its state"
        if at == "value":
            held = "at 0"
        return f"clamp {what} {held} from {shown(settings['start'])} s"


class UnitNoise(_Windowed):
    """Extra Gaussian noise of std `std` on each chosen unit's state during
    ``[start, start + duration)``, beyond the network's own hidden noise."""

    kind: Literal["unit_noise"] = "unit_noise"
    std: NonNegativeDrawn = Field(0.1, description="std of the noise added per step")

    DRAWN: ClassVar[tuple[str, ...]] = ("std", "start", "duration")
    UNITS: ClassVar[dict[str, str]] = {"std": "1", "start": "s", "duration": "s"}
    SIZE: ClassVar[str] = "std"
    LABEL: ClassVar[str] = "noise {size} on {units}"
    ACTION: ClassVar[str] = "noise"


class Lesion(_OnUnits):
    """The chosen units silenced for the whole trial: their state is zero at every
    step, so they reach neither the recurrence nor the readout (an inactivation)."""

    kind: Literal["lesion"] = "lesion"

    def effects(self, params: dict[str, Array], trial: TrialGeometry) -> Effects:
        on = jnp.broadcast_to(params["active"], (trial.n_steps,))
        return self.term("hold", on, trial.n_units, value=jnp.zeros_like(on))

    @classmethod
    def describe(cls, settings: Mapping[str, Any]) -> str:
        return f"lesion of {cls._chosen(settings)}"
