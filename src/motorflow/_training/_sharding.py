"""Spread the replicate axis over the devices JAX sees (CPU cores, GPUs).

Replicates are independent, so splitting their axis needs no communication: each
device trains its share, and no compiled program holds a collective (an all-gather
across CPU devices is a rendezvous of their threads, which XLA aborts after 40 s when
a busy machine starves one; tests/test_sharding.py reads every compiled program). A
count that does not divide evenly is padded with copies of the first replicates
inside the compiled program, so every device is used whatever the count; the copies
are dropped on the host (:meth:`ReplicateLayout.unpad`), so the state outside keeps
exactly the real replicates.
"""

from __future__ import annotations

import math
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec


class ReplicateLayout(eqx.Module):
    """How `n_replicates` are laid out over `mesh` (None: one device), padded to `n_padded`."""

    n_replicates: int
    n_padded: int
    mesh: Mesh | None

    @classmethod
    def over_devices(cls, n_replicates: int, devices: list | None = None) -> ReplicateLayout:
        devices = jax.devices() if devices is None else devices
        n_devices = min(len(devices), n_replicates)
        if n_devices == 1:
            return cls(n_replicates, n_replicates, None)
        mesh = Mesh(np.asarray(devices[:n_devices]), ("replicate",))
        return cls(n_replicates, n_devices * math.ceil(n_replicates / n_devices), mesh)

    def place(self, tree: Any) -> Any:
        """Put `tree`'s arrays whole on every device of the mesh (e.g. state restored on
        one device); without a mesh, on the first device, committed there as a restored
        state is (``motorflow._orbax.restore_target``). A fresh run and a resumed one then
        call the same compiled programs: JAX compiles a program for uncommitted arguments
        and another for committed ones, so a resumed run compiled every program again."""
        if self.mesh is None:
            sharding = jax.sharding.SingleDeviceSharding(jax.devices()[0])
        else:
            sharding = NamedSharding(self.mesh, PartitionSpec())
        return jax.tree.map(
            lambda leaf: jax.device_put(leaf, sharding) if eqx.is_array(leaf) else leaf, tree
        )

    def spread(self, tree: Any, *, axis: int = 0) -> Any:
        """Inside a compiled function: pad `axis` to `n_padded` and split it over the mesh."""
        if self.mesh is None:
            return tree
        extra = self.n_padded - self.n_replicates
        sharding = NamedSharding(self.mesh, PartitionSpec(*([None] * axis), "replicate"))

        whole = NamedSharding(self.mesh, PartitionSpec())

        def one(leaf):
            if not eqx.is_array(leaf):
                return leaf
            if extra:
                # Padded whole on every device, then each keeps its share: left to
                # itself, XLA would split the concatenation across the devices and
                # exchange its parts (all-to-all, a collective).
                leaf = jax.lax.with_sharding_constraint(leaf, whole)
                copies = jax.lax.slice_in_dim(leaf, 0, extra, axis=axis)
                leaf = jnp.concatenate([leaf, copies], axis=axis)
                leaf = jax.lax.with_sharding_constraint(leaf, whole)
            return jax.lax.with_sharding_constraint(leaf, sharding)

        return jax.tree.map(one, tree)

    def per_device(self, fn, *, replicated_args: tuple[int, ...] = ()):
        """`fn` run by each device on its own replicates (leading axis of every argument
        except those in `replicated_args`, which every device gets whole)."""
        if self.mesh is None:
            return fn

        def wrapped(*args):
            specs = tuple(
                PartitionSpec() if i in replicated_args else PartitionSpec("replicate")
                for i in range(len(args))
            )
            return jax.shard_map(
                fn,
                mesh=self.mesh,
                in_specs=specs,
                out_specs=PartitionSpec("replicate"),
                # Per-replicate code with no collectives: nothing to check.
                check_vma=False,
            )(*args)

        return wrapped

    def unpad(self, tree: Any, *, axis: int = 0) -> Any:
        """Outside compiled code: `tree` (the output of a compiled function, padded along
        `axis`) with the real replicates only, on one device. The shards are copied to
        the host one by one and cut there: cutting inside the compiled function would
        gather the axis across devices, a collective whose rendezvous XLA aborts when a
        busy machine starves one device's thread for 40 s."""
        if self.n_padded == self.n_replicates:
            return tree
        return jax.tree.map(
            lambda leaf: (
                jnp.asarray(np.take(np.asarray(leaf), np.arange(self.n_replicates), axis=axis))
                if eqx.is_array(leaf)
                else leaf
            ),
            tree,
        )
