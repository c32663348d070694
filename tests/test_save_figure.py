"""Figures are written cropped to their content: nothing drawn is cut, little blank kept."""

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image

from motorflow._figures._style import figure_legend, log_scale_if_possible
from motorflow.pipeline._outputs import save_figure

DPI = 80
PAD = round(0.1 * DPI)  # matplotlib's pad_inches around a tight crop


def loss_like_figure() -> Figure:
    """Two panels (one on a log axis spanning decades), a title and a legend below."""
    fig = Figure(figsize=(8, 4), layout="constrained")
    left, right = fig.subplots(1, 2)
    x = np.arange(50)
    left.plot(x, 10.0 ** (-x / 8), label="loss")
    log_scale_if_possible(left, 10.0 ** (-x / 8))
    right.plot(x, np.sin(x / 5), label="sine")
    for ax in (left, right):
        ax.set_xlabel("batch")
        ax.set_ylabel("value (a.u.)")
    figure_legend(fig, [left, right])
    fig.suptitle("a figure")
    return fig


def ink(rgba: np.ndarray) -> np.ndarray:
    """Where a white-background image holds anything drawn."""
    return np.any(rgba != 255, axis=-1)


def test_a_png_keeps_everything_drawn_with_a_margin_of_the_pad(tmp_path):
    path = tmp_path / "figure.png"
    save_figure(loss_like_figure(), path, dpi=DPI)
    saved = np.asarray(Image.open(path).convert("RGBA"))
    canvas = FigureCanvasAgg(loss_like_figure())
    canvas.figure.set_dpi(DPI)
    canvas.draw()
    whole = np.asarray(canvas.buffer_rgba())
    # Nothing drawn is cut: the same inked pixels as the uncropped canvas.
    assert ink(saved).sum() == ink(whole).sum()
    rows, columns = np.flatnonzero(ink(saved).any(1)), np.flatnonzero(ink(saved).any(0))
    margins = (rows[0], saved.shape[0] - 1 - rows[-1], columns[0], saved.shape[1] - 1 - columns[-1])
    assert margins == (PAD,) * 4
    assert Image.open(path).info["dpi"] == pytest.approx((DPI, DPI), abs=0.01)
    assert [p.name for p in tmp_path.iterdir()] == ["figure.png"]  # no temporary left


def test_the_crop_matches_matplotlibs_tight_crop(tmp_path):
    save_figure(loss_like_figure(), tmp_path / "ours.png", dpi=DPI)
    loss_like_figure().savefig(tmp_path / "tight.png", dpi=DPI, bbox_inches="tight")
    ours, tight = (Image.open(tmp_path / name).size for name in ("ours.png", "tight.png"))
    # matplotlib crops to the text's boxes, which may hold a few blank pixels
    assert np.all(np.abs(np.subtract(ours, tight)) <= PAD), (ours, tight)


@pytest.mark.parametrize("suffix", ["svg", "pdf"])
def test_vector_formats_are_written_by_matplotlib(tmp_path, suffix):
    path = tmp_path / f"figure.{suffix}"
    save_figure(loss_like_figure(), path, dpi=DPI)
    head = path.read_bytes()[:200]
    assert (b"<svg" in head or b"<?xml" in head) if suffix == "svg" else head.startswith(b"%PDF")
