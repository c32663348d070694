"""Building models from config, and ensembles of them with a leading replicate axis."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import PRNGKeyArray

from .._config import ModelConfig
from ._feedback import N_FEEDBACK, FeedbackChannel
from ._loop import ClosedLoop
from ._network import Network
from ._setting import Setting


def build_model(config: ModelConfig, *, n_task_inputs: int, key: PRNGKeyArray) -> ClosedLoop:
    """One closed-loop model from its config.

    **Arguments:**

    - `config`: the model config.
    - `n_task_inputs`: how many task inputs the network receives (2 for reaching).
    - `key`: initialises the network weights.
    """
    cell_key, readout_key = jax.random.split(key)
    network_config = config.network
    # The cell steps `substeps` times per step of the loop.
    cell = network_config.cell.build(
        n_task_inputs + N_FEEDBACK,
        network_config.hidden_size,
        dt=config.dt / network_config.substeps,
        key=cell_key,
    )
    plant = config.plant.build()
    readout = eqx.nn.Linear(config.network.hidden_size, plant.n_controls, key=readout_key)
    if plant.control_range is not None:
        # Bounded controls (muscle excitations) start near their low end, so an untrained
        # network does not co-contract every muscle into the joint limits; MotorNet's
        # example GRU policies initialise their output bias to -5 likewise.
        bias = jnp.full(plant.n_controls, -5.0, dtype=readout.bias.dtype)
        readout = eqx.tree_at(lambda linear: linear.bias, readout, bias)
    output_feedback = None
    if network_config.cell.feeds_output_back():
        # FORCE's feedback weights J^Gz ~ U(-1, 1) (Sussillo & Abbott 2009); their own
        # key, folded from the model's, so that the other weights are drawn as without.
        output_feedback = jax.random.uniform(
            jax.random.fold_in(key, 1),
            (config.network.hidden_size, plant.n_controls),
            minval=-1.0,
            maxval=1.0,
        )
    network = Network(
        cell=cell,
        readout=readout,
        hidden_noise_std=Setting.of(config.network.hidden_noise_std, "network.hidden_noise_std"),
        n_substeps=config.network.substeps,
        output_feedback=output_feedback,
    )
    return ClosedLoop(
        plant=plant,
        dt=float(config.dt),
        method=config.plant.method,
        n_substeps=config.plant.n_substeps,
        network=network,
        feedback=FeedbackChannel(
            delay=int(config.feedback.delay),
            noise_std=Setting.of(config.feedback.noise_std, "feedback.noise_std"),
        ),
    )


def replicate_keys(n_replicates: int, *, key: PRNGKeyArray) -> PRNGKeyArray:
    """The per-replicate initialisation keys used by :func:`make_ensemble`."""
    return jax.random.split(key, n_replicates)


def make_ensemble(
    config: ModelConfig, *, n_replicates: int, n_task_inputs: int, key: PRNGKeyArray
) -> ClosedLoop:
    """`n_replicates` models as one module whose array leaves lead with a replicate axis.

    Replicate i is the model ``build_model(config, key=replicate_keys(n, key=key)[i])``.
    """
    keys = replicate_keys(n_replicates, key=key)
    return eqx.filter_vmap(lambda k: build_model(config, n_task_inputs=n_task_inputs, key=k))(keys)


def n_replicates(ensemble: eqx.Module) -> int:
    """Size of the ensemble's replicate axis."""
    leaves = jax.tree.leaves(eqx.filter(ensemble, eqx.is_array))
    return int(leaves[0].shape[0])


def take_replicate(ensemble: eqx.Module, index: int) -> eqx.Module:
    """Replicate `index` of an ensemble, as an ordinary model."""
    arrays, static = eqx.partition(ensemble, eqx.is_array)
    return eqx.combine(jax.tree.map(lambda leaf: leaf[index], arrays), static)
