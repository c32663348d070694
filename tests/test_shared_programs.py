"""Compiled methods shared by objects of equal static part (`shared_program`): a
seed sweep's trainers in one warm worker trace and compile their programs once."""

import functools
import gc

import equinox as eqx
import jax.numpy as jnp
import numpy as np

from motorflow._training._shared_programs import (
    _INTERNED,
    RECENT_KEYS,
    program_parts,
    shared_program,
)

TRACES = []


class Scaled(eqx.Module):
    """`weight` (traced) times `factor` (a constant of the program) plus `options`."""

    weight: jnp.ndarray
    factor: float
    options: object = ()

    @functools.cached_property
    def _program_parts(self):
        return program_parts(self)

    @shared_program
    def apply(self, x):
        TRACES.append((self.factor, self.options))
        return self.weight * self.factor * x + len(self.options)


def test_equal_static_parts_share_one_program_and_other_constants_get_their_own():
    TRACES.clear()
    x = jnp.arange(3.0)
    first, other_weights = Scaled(jnp.ones(3), 2.0), Scaled(5 * jnp.ones(3), 2.0)
    np.testing.assert_array_equal(first.apply(x), 2.0 * x)
    np.testing.assert_array_equal(other_weights.apply(x), 10.0 * x)
    assert TRACES == [(2.0, ())]  # the second object's arrays went into the same program
    # A constant the program holds differs: a program of its own, never the first's.
    np.testing.assert_array_equal(Scaled(jnp.ones(3), 3.0).apply(x), 3.0 * x)
    assert TRACES == [(2.0, ()), (3.0, ())]
    # The method's compiled call, as a benchmark reads it: the arrays come first.
    bound = other_weights.apply
    np.testing.assert_array_equal(bound.lower(x).compile()(bound.leaves, x), 10.0 * x)


def test_an_unhashable_static_part_gets_programs_of_its_own_and_right_results():
    TRACES.clear()
    x = jnp.arange(3.0)
    first, second = Scaled(jnp.ones(3), 2.0, [1]), Scaled(jnp.ones(3), 2.0, [1, 2])
    np.testing.assert_array_equal(first.apply(x), 2.0 * x + 1)
    np.testing.assert_array_equal(second.apply(x), 2.0 * x + 2)
    np.testing.assert_array_equal(first.apply(x), 2.0 * x + 1)
    assert TRACES == [(2.0, [1]), (2.0, [1, 2])]


def test_programs_outlive_their_objects_for_the_keys_used_last_only():
    # A sweep's next experiment of the same settings finds the programs of the one
    # before, gone by then; but a long-lived process (a warm worker) training ever new
    # settings keeps the programs of the last few only: each compiled program costs
    # memory mappings, and a process at the kernel's limit on them crashes in XLA.
    TRACES.clear()
    x = jnp.arange(3.0)
    Scaled(jnp.ones(3), 2.5).apply(x)
    gc.collect()
    np.testing.assert_array_equal(Scaled(4 * jnp.ones(3), 2.5).apply(x), 10.0 * x)
    assert TRACES == [(2.5, ())]

    def distinct_programs(start):
        for factor in range(start, start + 2 * RECENT_KEYS):
            Scaled(jnp.ones(3), float(factor)).apply(x).block_until_ready()
        gc.collect()
        return _mappings()

    after_first = distinct_programs(100)
    assert len(_INTERNED) <= RECENT_KEYS
    after_more = [distinct_programs(start) for start in (200, 300, 400)]
    if after_first is not None:  # Linux: each program held costs mappings (3 here)
        assert max(after_more) - after_first < RECENT_KEYS, (after_first, after_more)
    assert len(_INTERNED) <= RECENT_KEYS
    each = [(float(f), ()) for s in (100, 200, 300, 400) for f in range(s, s + 2 * RECENT_KEYS)]
    assert TRACES[1:] == each


def _mappings() -> int | None:
    try:
        with open("/proc/self/maps") as stream:
            return sum(1 for _ in stream)
    except OSError:
        return None
