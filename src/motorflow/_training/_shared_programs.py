"""Compiled methods of a pytree object (a :class:`Trainer`), shared by every object of
equal static part.

``jax.jit`` of a bound method compiles per object: a sweep's trainers of equal settings
and shapes, trained one after another in one warm process, would each trace and compile
the same programs again (about a CPU-second a tiny experiment). ``eqx.filter_jit``
shares them, but flattens and hashes the whole object at every call (about 2.5 ms,
which a 10-batch chunk of a small network notices). :class:`shared_program` splits the
object once, into its arrays (the program's arguments) and the rest (settings, shapes,
functions: the program's key), and interns the key, so that a call passes a list of
arrays to the key's own jitted function.

A key's programs live as long as the key: while an object of its static part lives, and
for the :data:`RECENT_KEYS` keys used last after that (a seed sweep's next experiment
of the same shapes finds them). Older ones are freed with their compiled code: each
costs the process several hundred memory mappings, and a long-lived process (a warm
worker, a test session) that kept every program it ever compiled would reach the
kernel's limit on mappings (``vm.max_map_count``, 65530) after about a hundred
distinct trainings, where XLA fails with a segmentation fault.
"""

from __future__ import annotations

import functools
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, NamedTuple

import equinox as eqx
import jax


class ProgramKey:
    """The static part of an object (its pytree structure without the arrays, and the
    non-array leaves): hashed once, equal keys interned to one object
    (:func:`program_parts`), holding the programs compiled for it (`programs`, by
    :class:`shared_program`)."""

    __slots__ = ("__weakref__", "_hash", "_shareable", "programs", "static", "structure")

    def __init__(self, structure: Any, static: Any):
        self.structure, self.static = structure, static
        self.programs: dict[shared_program, Any] = {}
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


# Each live key, weakly (a WeakValueDictionary would hold its keys, here the values
# themselves, for ever).
_INTERNED: weakref.WeakKeyDictionary[ProgramKey, weakref.ref[ProgramKey]] = (
    weakref.WeakKeyDictionary()
)

RECENT_KEYS = 8
"""How many keys (with their programs) outlive their objects: the ones used last."""

_RECENT: OrderedDict[ProgramKey, None] = OrderedDict()


def program_parts(obj: eqx.Module) -> tuple[ProgramKey, list]:
    """`obj`'s program key (interned: an equal key made before is returned) and its
    arrays, in the order the key's structure unflattens."""
    dynamic, static = eqx.partition(obj, eqx.is_array)
    leaves, structure = jax.tree.flatten(dynamic)
    key = ProgramKey(structure, static)
    found = _INTERNED.get(key)
    if found is None or (interned := found()) is None:
        _INTERNED[key] = weakref.ref(key)
    else:
        key = interned
    _RECENT[key] = None
    _RECENT.move_to_end(key)
    while len(_RECENT) > RECENT_KEYS:
        _RECENT.popitem(last=False)
    return key, leaves


class _Bound(NamedTuple):
    """A shared program bound to one object's arrays: call it, or lower it."""

    jitted: Any
    leaves: list

    def __call__(self, *args: Any) -> Any:
        return self.jitted(self.leaves, *args)

    def lower(self, *args: Any) -> Any:
        """``jax.jit``'s lowering for these arguments; its compiled program takes the
        object's arrays first: ``compiled(bound.leaves, *args)``."""
        return self.jitted.lower(self.leaves, *args)


def _jit(method: Callable[..., Any], structure: Any, static: Any) -> Any:
    """`method` jitted for objects of this structure and static part: its arguments
    are the object's arrays and the method's positional arguments. (It holds the key's
    parts, not the key, so that a key and its programs are freed together.)"""

    def run(leaves: list, *args: Any) -> Any:
        return method(eqx.combine(jax.tree.unflatten(structure, leaves), static), *args)

    run.__name__ = run.__qualname__ = method.__name__
    return jax.jit(run)


class shared_program:
    """Decorator of a method of an ``eqx.Module`` whose class caches
    :func:`program_parts` in ``_program_parts`` (a ``functools.cached_property``): the
    method compiled once per program key, its positional arguments traced. The bound
    method's ``jitted`` is that key's ``jax.jit`` function.

    Correct exactly when everything the method reads of the object that is not an array
    is in its static part: equal static parts then trace to the same program, whatever
    the arrays hold.
    """

    def __init__(self, method: Callable[..., Any]):
        functools.update_wrapper(self, method)
        self._method = method

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        key, leaves = obj._program_parts
        jitted = key.programs.get(self)
        if jitted is None:
            jitted = key.programs[self] = _jit(self._method, key.structure, key.static)
        return _Bound(jitted, leaves)
