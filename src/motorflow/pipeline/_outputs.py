"""Writing a stage's tables and figures: to a temporary sibling, renamed into place, so
an output is either complete or absent."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the training and evaluation jobs write tables, never figures
    import pandas as pd
    from matplotlib.figure import Figure

logger = logging.getLogger("motorflow")


def write_csv(table: pd.DataFrame, path: str | Path) -> None:
    """Write `table` to `path` atomically (a temporary sibling renamed into place)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    table.to_csv(tmp, index=False)
    tmp.replace(path)
    logger.info("Wrote %s", path)


def save_figure(figure: Figure, path: str | Path, *, dpi: int) -> None:
    """Save `figure` to `path` atomically, cropped to its content."""
    path = Path(path)
    tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")
    figure.savefig(tmp, dpi=dpi, bbox_inches="tight")
    tmp.replace(path)
    logger.info("Wrote %s", path)
