"""Deferred import of orbax-checkpoint.

Importing orbax makes absl call ``logging.basicConfig()``, which doubles every log
line of the host program (Snakemake's included), and costs about 0.5 s. Only the
code that saves or restores pays for it, in the processes that do so.
"""

from __future__ import annotations

import functools
import logging
from types import ModuleType
from typing import Any

import jax


@functools.cache
def orbax_checkpoint() -> ModuleType:
    """The ``orbax.checkpoint`` module, imported without touching the root logger."""
    handlers = list(logging.root.handlers)
    import orbax.checkpoint

    logging.root.handlers = handlers
    return orbax.checkpoint


def restore_target(like: Any) -> Any:
    """Abstract restore target of `like`: its jax arrays land on this process's first device.

    Saved device layouts are ignored, so state written by a job with several devices
    (a sharded ensemble) restores in a job with one, and the other way round.
    """
    device = jax.sharding.SingleDeviceSharding(jax.devices()[0])

    def target(leaf):
        if isinstance(leaf, (jax.Array, jax.ShapeDtypeStruct)):
            return jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=device)
        return orbax_checkpoint().utils.to_shape_dtype_struct(leaf)

    return jax.tree.map(target, like)
