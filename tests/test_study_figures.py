"""What the study figures show (issue 36 items 20-21): read back from the matplotlib figure each drawer returns.

Oracles: the published figures themselves (shared/reference, quoted in the study files) for where a diamond sits,
and the size of the saved PNG for the figure's shape.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from iowatt.scenarios.reproduce import load_study, run_section

from iowatt.commands.reproduce import section_figure
from iowatt.output import figures

pytestmark = pytest.mark.skipif(not figures.plots_available(), reason="matplotlib is not installed")


def _drawn(monkeypatch, kind: str, drawer):
    """Capture the Figure the drawer of `kind` returns, before draw_study_figure closes it."""
    captured = []

    def spy(data):
        fig = drawer(data)
        captured.append(fig)
        return fig

    monkeypatch.setattr(figures, f"_draw_{kind}", spy)
    return captured


def _png_size(path: Path) -> tuple[int, int]:
    width, height = struct.unpack(">II", path.read_bytes()[16:24])  # the IHDR chunk (PNG specification, section 11.2.2)
    return width, height


def test_gnn_diamonds_are_relative_to_the_published_9550(tmp_path, monkeypatch):
    """Issue 36 item 21: the published SSD energies (9550 371.0 J, PM1743 653.8 J) were divided by iowatt's predicted 9550,
    so the PM1743 diamond sat at 653.8 / 405 instead of the study's own 653.8 / 371.0 = 1.762."""
    captured = _drawn(monkeypatch, "bars", figures._draw_bars)
    study, path = load_study("micron_9550_gnn_bam")
    result = run_section(study.sections[0], path.parent)
    figures.draw_study_figure(section_figure(result), tmp_path / "gnn")
    ax = captured[0].axes[0]
    diamonds = [(x, y) for line in ax.get_lines() if line.get_marker() == "D" for x, y in zip(line.get_xdata(), line.get_ydata(), strict=True)]
    energy_slot = 2  # the third metric, SSD energy (J); runs 9550, CM7-R, PM1743 at offsets -0.27, 0, +0.27
    levels = sorted(round(y, 3) for x, y in diamonds if abs(x - energy_slot) < 0.4)
    assert levels == [1.0, round(1 / 0.64, 3), round(653.8 / 371.0, 3)]


def test_the_fill_study_trace_is_stacked_panels_not_a_strip(tmp_path):
    """Issue 36 item 21: three trace panels side by side made a 2700 x 480 strip of tiny text; stacked they are about
    as wide as a page. Oracle: the PNG header's width and height."""
    study, path = load_study("storagereview_ckpt_fill")
    section = next(s for s in study.sections if s.figure == "trace" and len(s.metrics) == 3)
    result = run_section(section, path.parent)
    figures.draw_study_figure(section_figure(result), tmp_path / "fill")
    width, height = _png_size(tmp_path / "fill.png")
    assert width <= 1000 and height > width


def test_a_run_without_a_published_figure_says_so_and_why(tmp_path, monkeypatch):
    """Issue 36 item 21: the accelerator-count figure showed no published bar for unet3d without saying why; the empty
    slot now reads 'no published figure' and the section's note (why) is printed under the panel."""
    captured = _drawn(monkeypatch, "pairs", figures._draw_pairs)
    study, path = load_study("mlperf_storage_v1")
    section = next(s for s in study.sections if s.title.startswith("Largest accelerator count"))
    result = run_section(section, path.parent)
    figures.draw_study_figure(section_figure(result), tmp_path / "count")
    ax = captured[0].axes[0]
    texts = [t.get_text() for t in ax.texts]
    assert sum(t == "no published\nfigure" for t in texts) == 2  # unet3d on H100 and on A100
    assert ax.get_xlabel().replace("\n", " ").startswith("Unet3D was submitted with 1 H100")
