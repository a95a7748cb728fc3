"""XProf's roofline_model as a page: a log-log chart of FLOP rate against
operational intensity with the device's compute roof and memory-bandwidth
roofs (HBM, and where the device has them CMEM, VMEM or a GPU's shared
memory; their ridge points marked), each op of the whole profile a point sized
by its time, the whole program a star; hovering a point names it. The table
holds every row twice (with and without infeed/outfeed: a check box picks) and
per-step program rows: the chart takes the whole profile's rows. set_data
takes roofline_model's JSON (the list of DataTables, as dicts or text)."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QLabel, QVBoxLayout, QWidget

from profscope.widgets.palette import Scheme, follow, style_plot
from profscope.widgets.xprof.hlo_page import as_json

GIB_PER_GB = (1 << 30) / 1e9  # bandwidths are GiB/s, FLOP rates GFLOP/s
ROOFS = (
    ("peak_hbm_bw", "HBM", "#1976d2"),
    ("peak_cmem_read_bw", "CMEM read", "#7b1fa2"),
    ("peak_cmem_write_bw", "CMEM write", "#ab47bc"),
    ("peak_vmem_read_bw", "VMEM read", "#00897b"),
    ("peak_vmem_write_bw", "VMEM write", "#4db6ac"),  # a GPU's: its SMs' shared memory (XProf's SHM/L1)
)
NO_ROOFS = (
    "No roofline. XProf draws it for the XLA ops of a device (GPU, TPU) against that device's peak "
    "FLOP rate and memory bandwidth; this profile is host-only (CPU)."
)


def column_values(table: dict, column_id: str) -> list:
    """A DataTable column's values, row by row (None for each row when the table lacks it)."""
    ids = [c.get("id") for c in table.get("cols", [])]
    k = ids.index(column_id) if column_id in ids else -1
    rows = [r.get("c") or [] for r in table.get("rows", [])]
    return [(row[k] or {}).get("v") if 0 <= k < len(row) else None for row in rows]


class DecadeAxis(pg.AxisItem):
    """A log axis labelled at its decades only (pyqtgraph labels 2..9 of each too, which crowd together on a
    tall chart); every tick keeps its label when fewer than two decades are in view."""

    def tickStrings(self, values, scale, spacing):
        strings = super().tickStrings(values, scale, spacing)
        if not self.logMode:
            return strings
        decades = [abs(v - round(v)) < 1e-9 for v in values]
        return strings if sum(decades) < 2 else [s if d else "" for s, d in zip(strings, decades)]


class RooflinePage(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.message = QLabel(wordWrap=True)
        self.hover = QLabel(" ")
        self.plot = pg.PlotWidget(axisItems={"left": DecadeAxis("left")})
        self.plot.setMenuEnabled(False)
        item = self.plot.getPlotItem()
        item.setLogMode(x=True, y=True)
        item.setLabel("bottom", "Operational intensity (FLOP/byte)")
        item.setLabel("left", "FLOP rate (GFLOP/s)")
        item.showGrid(x=True, y=True, alpha=0.25)
        item.addLegend(offset=(10, 10))
        self.points = pg.ScatterPlotItem(hoverable=True, brush=pg.mkBrush(229, 57, 53, 160), pen=None)
        self.points.sigHovered.connect(self._hovered)
        item.addItem(self.points)
        self.program = pg.ScatterPlotItem(hoverable=True, symbol="star", size=18, brush=pg.mkBrush(251, 140, 0),
                                          pen=pg.mkPen(90, 60, 0))
        self.program.setZValue(1)  # above the ops' discs
        self.program.sigHovered.connect(self._hovered)
        item.addItem(self.program)
        self.roof_items: list = []
        # XProf's tables hold every row with and without infeed/outfeed: which the chart shows.
        self.feeds = QCheckBox("Include infeed/outfeed", checked=True, visible=False)
        self.feeds.toggled.connect(lambda _on: self._draw())
        self.table: dict = {}
        layout = QVBoxLayout(self)
        layout.addWidget(self.feeds)
        layout.addWidget(self.message, 1)
        self.message.setAlignment(Qt.AlignTop | Qt.AlignLeft)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.hover)
        follow(self, self._restyle)

    def _restyle(self, scheme: Scheme) -> None:
        self.plot.setBackground(scheme.base)
        style_plot(self.plot.getPlotItem(), scheme)

    def set_data(self, data) -> None:
        tables = as_json(data) or []
        self.table = tables[0] if tables and isinstance(tables[0], dict) else {}
        self.feeds.setVisible({True, False} <= set(column_values(self.table, "include_infeed_outfeed")))
        self._draw()

    def _draw(self) -> None:
        table = self.table
        p = table.get("p") or {}
        item = self.plot.getPlotItem()
        for roof in self.roof_items:
            item.removeItem(roof)
        self.roof_items = []
        peak = float(p.get("peak_flop_rate", 0) or 0)
        xs, ys, times = (np.array([float(v or 0) for v in column_values(table, c)]) for c in (
            "operational_intensity", "measured_flop_rate", "total_self_time"))
        names = ["" if v is None else str(v) for v in column_values(table, "operation")]
        # The whole profile's rows ("Total", not the average or per-step ones), with infeed/outfeed or without.
        steps, categories = column_values(table, "step"), column_values(table, "category")
        feeds = column_values(table, "include_infeed_outfeed")
        wanted = self.feeds.isChecked() if self.feeds.isVisibleTo(self) else (feeds[0] if feeds else None)
        whole = np.array([s in (None, "Total") and f == wanted for s, f in zip(steps, feeds)], bool)
        program = whole & np.array([c == "Program" for c in categories], bool)
        keep = whole & ~program & (xs > 0) & (ys > 0)
        sizes = 6 + 24 * np.sqrt(times / times[keep].max()) if keep.any() and times[keep].max() > 0 \
            else np.full(len(xs), 8.0)
        self.points.setData(
            x=np.log10(xs[keep]) if keep.any() else [],
            y=np.log10(ys[keep]) if keep.any() else [],
            size=sizes[keep] if keep.any() else [],
            data=[(names[r], xs[r], ys[r], times[r]) for r in np.flatnonzero(keep)],
        )
        shown = program & (xs > 0) & (ys > 0)
        self.program.setData(x=np.log10(xs[shown]), y=np.log10(ys[shown]),
                             data=[("Program (whole profile)", xs[r], ys[r], None) for r in np.flatnonzero(shown)])
        if peak > 0:
            low, high = 1e-2, 1e4
            gpu = "GPU" in str(p.get("device_type", ""))
            for key, label, color in ROOFS:
                label = "SHM/L1" if gpu and key == "peak_vmem_write_bw" else label
                bandwidth = float(p.get(key, 0) or 0) * GIB_PER_GB
                if bandwidth <= 0:
                    continue
                ridge = peak / bandwidth
                x = np.array([low, ridge, high])
                y = np.minimum(peak, x * bandwidth)
                line = item.plot(x, y, pen=pg.mkPen(color, width=2), name=f"{label} roof (ridge {ridge:.3g} FLOP/B)")
                marker = pg.ScatterPlotItem(
                    [np.log10(ridge)], [np.log10(peak)], symbol="d", size=10, brush=pg.mkBrush(color)
                )
                item.addItem(marker)
                self.roof_items += [line, marker]
        empty = peak <= 0 and not keep.any() and not shown.any()
        self.message.setText(NO_ROOFS if empty else "")
        self.message.setVisible(empty)
        self.plot.setVisible(not empty)
        self.hover.setVisible(not empty)
        if not empty and not keep.any():  # roofs without points: say why rather than leave the chart bare
            self.hover.setText(f"No op to place: none of the {len(xs):,} rows has a FLOP rate and an operational "
                               "intensity (the profile's ops carry no FLOP or byte counts).")
        elif not empty:
            self.hover.setText(" ")
        item.enableAutoRange()

    def _hovered(self, _item, points, _event) -> None:
        if len(points):
            name, x, y, time = points[0].data()
            own = "" if time is None else f", {time:,.1f} µs self time"
            self.hover.setText(f"{name}: {x:.3g} FLOP/byte, {y:.3g} GFLOP/s{own}")
        else:
            self.hover.setText(" ")

    def hover_text(self) -> str:
        return self.hover.text()

    def roof_count(self) -> int:
        return sum(1 for r in self.roof_items if isinstance(r, pg.PlotDataItem))
