"""The suite compiles without XLA's backend optimisation; the hallmark fixtures switch it
back on for a block (`compiled_as_users_jobs_compile`). The block must leave no program
compiled under the other setting behind it, or results differ by an ulp."""

from __future__ import annotations

import equinox as eqx
import jax
from conftest import assert_trees_equal, compiled_as_users_jobs_compile, tiny_model_config

import motorflow as mf


def test_programs_compiled_in_the_optimised_block_do_not_leak_out_of_it():
    config = tiny_model_config(cell="leaky")
    key = jax.random.key(7)
    with compiled_as_users_jobs_compile():
        # Compiles the ensemble's initialisation with optimisation on...
        mf.make_ensemble(config, n_replicates=3, n_task_inputs=2, key=jax.random.key(3))
    # ...which, were it reused here, would differ from a replicate built alone by an ulp.
    ensemble = mf.make_ensemble(config, n_replicates=3, n_task_inputs=2, key=key)
    alone = mf.build_model(config, n_task_inputs=2, key=mf.replicate_keys(3, key=key)[2])
    taken = mf.take_replicate(ensemble, 2)
    assert_trees_equal(eqx.filter(taken, eqx.is_array), eqx.filter(alone, eqx.is_array))
