"""Write a directory so that it appears complete or not at all."""

from __future__ import annotations

import contextlib
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_directory(path: str | Path) -> Iterator[Path]:
    """Yield a temporary sibling of `path` to fill; on success it replaces `path`.

    Leftovers of earlier writes that were killed are removed first; on an error the
    temporary directory is removed and `path` is left as it was.
    """
    path = Path(path).absolute()
    for leftover in path.parent.glob(f".{path.name}.tmp-*"):
        shutil.rmtree(leftover, ignore_errors=True)
    tmp = path.with_name(f".{path.name}.tmp-{uuid.uuid4().hex[:8]}")
    try:
        yield tmp
        if path.exists():
            old = path.with_name(f".{path.name}.tmp-old-{uuid.uuid4().hex[:8]}")
            path.rename(old)
            tmp.rename(path)
            shutil.rmtree(old)
        else:
            tmp.rename(path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
