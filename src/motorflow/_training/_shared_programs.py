"""Compiled methods of a pytree object (a :class:`Trainer`), shared by every object of
equal static part.

``jax.jit`` of a bound method compiles per object: a sweep's trainers of equal settings
and shapes, trained one after another in one warm process, would each trace and compile
the same programs again (about a CPU-second a tiny experiment). ``eqx.filter_jit``
shares them, but flattens and hashes the whole object at every call (about 2.5 ms,
which a 10-batch chunk of a small network notices). :class:`shared_program` splits the
object once, into its arrays (the program's arguments) and the rest (settings, shapes,
functions: the program's key), and interns the key, so that a call passes a list of
arrays and a key compared by identity.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import Any, NamedTuple

import equinox as eqx
import jax


class ProgramKey:
    """The static part of an object (its pytree structure without the arrays, and the
    non-array leaves) as a jit static argument: hashed once, and equal keys interned to
    one object (:func:`program_parts`), so that each call compares by identity."""

    __slots__ = ("__weakref__", "_hash", "_shareable", "static", "structure")

    def __init__(self, structure: Any, static: Any):
        self.structure, self.static = structure, static
        try:
            self._hash, self._shareable = hash((structure, static)), True
        except TypeError:
            # A leaf that cannot be hashed (a list in a module's field): this object
            # keys programs of its own, as a bound method's jit would.
            self._hash, self._shareable = id(self), False

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, ProgramKey) or self._hash != other._hash:
            return False
        if not (self._shareable and other._shareable):
            return False
        return self.structure == other.structure and self.static == other.static


_INTERNED: weakref.WeakValueDictionary[ProgramKey, ProgramKey] = weakref.WeakValueDictionary()


def program_parts(obj: eqx.Module) -> tuple[ProgramKey, list]:
    """`obj`'s program key (interned: an equal key made before is returned) and its
    arrays, in the order the key's structure unflattens."""
    dynamic, static = eqx.partition(obj, eqx.is_array)
    leaves, structure = jax.tree.flatten(dynamic)
    key = ProgramKey(structure, static)
    return _INTERNED.setdefault(key, key), leaves


class _Bound(NamedTuple):
    """A shared program bound to one object's parts: call it, or lower it."""

    jitted: Any
    key: ProgramKey
    leaves: list

    def __call__(self, *args: Any) -> Any:
        return self.jitted(self.key, self.leaves, *args)

    def lower(self, *args: Any) -> Any:
        """``jax.jit``'s lowering for these arguments; its compiled program takes the
        object's arrays first: ``compiled(bound.leaves, *args)``."""
        return self.jitted.lower(self.key, self.leaves, *args)


class shared_program:
    """Decorator of a method of an ``eqx.Module`` whose class caches
    :func:`program_parts` in ``_program_parts`` (a ``functools.cached_property``): the
    method compiled once per program key, its positional arguments traced.

    Correct exactly when everything the method reads of the object that is not an array
    is in its static part: equal static parts then trace to the same program, whatever
    the arrays hold.
    """

    def __init__(self, method: Callable[..., Any]):
        functools.update_wrapper(self, method)
        self._method = method

        def run(key: ProgramKey, leaves: list, *args: Any) -> Any:
            dynamic = jax.tree.unflatten(key.structure, leaves)
            return method(eqx.combine(dynamic, key.static), *args)

        self.jitted = jax.jit(run, static_argnums=0)

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        key, leaves = obj._program_parts
        return _Bound(self.jitted, key, leaves)
