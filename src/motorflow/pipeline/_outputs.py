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
    """Save `figure` to `path` atomically, cropped to its content with a 0.1-inch margin.

    A PNG of a figure that constrained layout arranges (every figure of motorflow's) is
    drawn once and cropped to its inked pixels: that layout keeps every artist inside
    the canvas, so the crop loses nothing, and it saves the second drawing that
    matplotlib's own crop (``bbox_inches="tight"``: once to measure, once to render)
    costs, about a quarter of a figure's time. Other formats and layouts take
    matplotlib's crop.
    """
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    path = Path(path)
    tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")
    if path.suffix.lower() == ".png" and isinstance(
        figure.get_layout_engine(), ConstrainedLayoutEngine
    ):
        _save_png_cropped_to_ink(figure, tmp, dpi=dpi)
    else:
        figure.savefig(tmp, dpi=dpi, bbox_inches="tight")
    tmp.replace(path)
    logger.info("Wrote %s", path)


def _save_png_cropped_to_ink(figure: Figure, path: Path, *, dpi: int) -> None:
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import to_rgba
    from PIL import Image

    figure.set_dpi(dpi)
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    rgba = np.asarray(canvas.buffer_rgba())
    background = np.round(np.array(to_rgba(figure.get_facecolor())) * 255).astype(np.uint8)
    ink = rgba.view(np.uint32)[..., 0] != background.view(np.uint32)[0]  # a pixel a word
    rows, columns = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
    if rows.size:  # a margin of the pad all round, as bbox_inches="tight"'s default
        pad = round(0.1 * dpi)
        content = rgba[rows[0] : rows[-1] + 1, columns[0] : columns[-1] + 1]
        rgba = np.full((content.shape[0] + 2 * pad, content.shape[1] + 2 * pad, 4), background)
        rgba[pad : pad + content.shape[0], pad : pad + content.shape[1]] = content
    Image.fromarray(rgba).save(path, format="png", dpi=(dpi, dpi))
