"""Spread the replicate axis over the devices JAX sees (CPU cores, GPUs).

Replicates are independent, so sharding their axis needs no communication: each
device trains its share. The number of devices used is the largest one that
divides the replicate count, so any count works (a prime count larger than the
device count runs on one device).
"""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec


def replicate_mesh(n_replicates: int, devices: list | None = None) -> Mesh | None:
    """A 1-D mesh over the most devices that divide `n_replicates`; None for one device."""
    devices = jax.devices() if devices is None else devices
    n_devices = max(d for d in range(1, len(devices) + 1) if n_replicates % d == 0)
    if n_devices == 1:
        return None
    return Mesh(np.asarray(devices[:n_devices]), ("replicate",))


def shard_replicates(tree: Any, mesh: Mesh | None, *, axis: int = 0) -> Any:
    """Place every array leaf of `tree` with its `axis` split over `mesh`."""
    if mesh is None:
        return tree
    spec = PartitionSpec(*([None] * axis), "replicate")
    sharding = NamedSharding(mesh, spec)
    return jax.tree.map(
        lambda leaf: jax.device_put(leaf, sharding) if eqx.is_array(leaf) else leaf, tree
    )


def replicated(tree: Any, mesh: Mesh | None) -> Any:
    """Place every array leaf of `tree` whole on every device of `mesh`."""
    if mesh is None:
        return tree
    sharding = NamedSharding(mesh, PartitionSpec())
    return jax.tree.map(
        lambda leaf: jax.device_put(leaf, sharding) if eqx.is_array(leaf) else leaf, tree
    )
