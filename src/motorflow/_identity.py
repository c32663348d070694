"""Digests of what a result depends on: pytrees (structure, settings and arrays) and code."""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np


def tree_digest(tree: Any) -> str:
    """SHA-256 of a pytree: its structure, every setting in it and every array's bytes.

    The structure's text holds the static fields of Equinox modules (a feedback
    delay, a mass, a cell type), so two models that differ only in a setting that
    holds no weights have different digests, as do models with different weights.
    """
    import jax  # here, not at import: canonical_json's users (a figure job) need none
    import jax.numpy as jnp

    def is_key(leaf: Any) -> bool:
        return isinstance(leaf, jax.Array) and jnp.issubdtype(leaf.dtype, jax.dtypes.prng_key)

    leaves, structure = jax.tree.flatten(tree)
    sha = hashlib.sha256(str(structure).encode())
    for leaf in leaves:
        if isinstance(leaf, (jax.Array, np.ndarray, np.generic)):
            array = np.asarray(jax.random.key_data(leaf) if is_key(leaf) else leaf)
            sha.update(f"array {array.dtype} {array.shape}".encode())
            sha.update(np.ascontiguousarray(array).tobytes())
        else:
            sha.update(f"value {type(leaf).__name__} {leaf!r}".encode())
    return sha.hexdigest()


@functools.cache
def code_version() -> str:
    """SHA-256 of the motorflow library's source (every ``.py`` file, with its path)."""
    sha = hashlib.sha256()
    package = Path(__file__).resolve().parent
    for path in sorted(package.rglob("*.py")):
        sha.update(str(path.relative_to(package)).encode())
        sha.update(path.read_bytes())
    return sha.hexdigest()


def canonical_json(value: Any) -> str:
    """A deterministic JSON text of plain values (sorted keys, no spaces)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def json_digest(value: Any) -> str:
    """SHA-256 of plain (JSON) values, independent of key order."""
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()
