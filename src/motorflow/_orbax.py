"""Deferred import of orbax-checkpoint.

Importing orbax makes absl call ``logging.basicConfig()``, which doubles every log
line of the host program (Snakemake's included), and costs about 0.5 s. Only the
code that saves or restores pays for it, in the processes that do so.
"""

from __future__ import annotations

import functools
import logging
from types import ModuleType


@functools.cache
def orbax_checkpoint() -> ModuleType:
    """The ``orbax.checkpoint`` module, imported without touching the root logger."""
    handlers = list(logging.root.handlers)
    import orbax.checkpoint

    logging.root.handlers = handlers
    return orbax.checkpoint
