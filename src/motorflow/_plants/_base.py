"""The plant interface: a body the network drives, written as a vector field over a state pytree."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Annotated, ClassVar, Literal

import equinox as eqx
from jaxtyping import Array, Float, PyTree
from pydantic import Field

from .._config_base import Block, PositiveInt


def frozen(value):
    """Nested sequences as nested tuples (floats for numbers), `None` kept.

    A field converter: a setting read from YAML or JSON arrives as a list, which is
    unhashable and so cannot be an `eqx.field(static=True)`.
    """
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, Sequence):
        return tuple(frozen(item) for item in value)
    return float(value)


class AbstractPlant(eqx.Module):
    """A body driven by the network's control output and by an external endpoint force.

    A plant is pure continuous-time dynamics: it maps a state pytree, a control vector
    and an external force to the state's time derivative (:meth:`vector_field`).
    Stepping in time is :func:`motorflow._plants.step`'s job, which calls
    :meth:`constrain` after every sub-step. A plant holds no trainable arrays; every
    setting is an `eqx.field(static=True)` float, int or tuple, so a changed setting
    changes the tree structure and can never hide as an unhashed leaf.

    Subclasses define these class variables:

    - `n_controls`: the size of the control vector the network must emit.
    - `control_range`: `None` if any real control is valid, else `(low, high)`: the
      interval the plant expects its controls in. The caller should squash the
      network's output into it (e.g. a sigmoid for `(0, 1)`); the plant also clips
      into it, but a clipped control has zero gradient outside the range.
    - `record_dims`: the name of the last dim of each variable :meth:`record` returns.
    - `record_units`: the unit (SI string, CF ``units`` style: "m", "rad", "N", "1")
      of each variable :meth:`record` returns; same keys as `record_dims`.
    - `control_units`: the unit of the control vector ("N" for forces, "N*m" for
      torques, "1" for muscle excitations).
    - `workspace_note`: one line saying which effector positions
      :meth:`is_reachable` accepts, for error messages.
    - `linear` (optional, False unless set): whether the dynamics are linear.
    """

    n_controls: eqx.AbstractClassVar[int]
    record_dims: eqx.AbstractClassVar[dict[str, str]]
    record_units: eqx.AbstractClassVar[dict[str, str]]
    control_units: eqx.AbstractClassVar[str]
    control_range: eqx.AbstractClassVar[tuple[float, float] | None]
    workspace_note: eqx.AbstractClassVar[str]
    # Whether the vector field is linear in the state and the control: one step's
    # Jacobians are then the step itself (e-prop's online form is exact only then).
    linear: ClassVar[bool] = False

    @abc.abstractmethod
    def init(self, effector_pos: Float[Array, " xy"], effector_vel: Float[Array, " xy"]) -> PyTree:
        """The state with the effector at `effector_pos` moving with `effector_vel`.

        **Arguments:**

        - `effector_pos`: Cartesian effector position, shape `(2,)`; should satisfy
          :meth:`is_reachable`.
        - `effector_vel`: Cartesian effector velocity, shape `(2,)`.
        """

    @abc.abstractmethod
    def vector_field(
        self, state: PyTree, control: Float[Array, " control"], external_force: Float[Array, " xy"]
    ) -> PyTree:
        """The time derivative of `state`, a pytree with the same structure.

        **Arguments:**

        - `state`: the current state.
        - `control`: the network's output, shape `(n_controls,)`.
        - `external_force`: a Cartesian force on the effector (N), shape `(2,)`,
          held constant over the step.
        """

    @abc.abstractmethod
    def constrain(self, state: PyTree) -> PyTree:
        """Project `state` back into the admissible set (joint limits, activation bounds).

        :func:`motorflow._plants.step` applies it after every sub-step; a plant with no
        constraint returns `state` unchanged.
        """

    @abc.abstractmethod
    def effector(self, state: PyTree) -> tuple[Float[Array, " xy"], Float[Array, " xy"]]:
        """The Cartesian effector position and velocity, each shape `(2,)`."""

    @abc.abstractmethod
    def record(self, state: PyTree) -> dict[str, Array]:
        """The internal variables worth storing each time step, beyond the effector's.

        Keys are snake_case names; values have no time or batch axis.
        """

    @abc.abstractmethod
    def labels(self) -> dict[str, tuple[str, ...]]:
        """Labels along the plant's own dims, by dim name: ``actuator`` (one per control)
        and the last dim of each variable of :meth:`record` (see `record_dims`)."""

    @abc.abstractmethod
    def is_reachable(self, pos: Sequence[float]) -> bool:
        """Whether the effector can be placed at `pos` (two floats) by :meth:`init`.

        Plain Python and NumPy only: config validation calls it in a process that must
        not start a JAX backend.
        """


class PlantConfig(Block):
    """Settings common to every plant: how its dynamics are integrated.

    Each plant module defines a subclass with a ``kind`` literal (its registry name),
    the plant's own settings, and :meth:`build`; its class constants say what the
    pipeline needs to know of it without building it.
    """

    kind: str

    # Whether the plant is an arm, with joints: the workflow draws its postures.
    HAS_JOINTS: ClassVar[bool] = False
    # The preflight estimate's memory model (motorflow.pipeline._estimate), fitted on
    # the measured peaks (Snakemake's `max_rss`) of train jobs of each plant
    # (benchmarks/README.md, "Preflight estimate"): a train job's Python, JAX and XLA
    # before any array (bytes), and the floats the backward pass keeps per
    # (replicate, trial, step) for the plant (the integrator's intermediate values).
    # A plant not measured gets these, at or above every measured one.
    TRAIN_BASE_MEMORY: ClassVar[int] = 1000 * 2**20
    TRAIN_FLOATS_PER_STEP: ClassVar[int] = 200
    method: Literal["euler", "rk4"] = Field(
        "euler",
        description="integration of the plant over each step: `euler` or `rk4` (classic "
        "Runge-Kutta)",
    )
    n_substeps: Annotated[PositiveInt, Field(le=1000)] = Field(
        1,
        description="integration steps per network step, each `dt / n_substeps` long (at "
        "most 1000)",
    )

    def build(self) -> AbstractPlant:
        """The plant these settings describe."""
        raise NotImplementedError
