"""The Compare tab: a baseline and a candidate side by side (docs/DIFF.md).

Statistics: the kernel, op or op-type diff as a virtual table over the
StatsDiff columns (largest |delta| first; any column sorts; a filter and
thresholds hide rows without recomputing). Overview: per host pair,
baseline / candidate / delta. Memory: per allocator the peaks, the matched
allocations at each peak, and the two memory curves overlaid (aligned at the
start or at a step; realigning asks the window's worker)."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QSpinBox,
    QSplitter,
    QTableView,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from profscope.models.analysis import diff
from profscope.models.analysis.comparison import Comparison
from profscope.models.analysis.trace_stats import PS_PER_US
from profscope.models.core.units import format_bytes, format_time_ps
from profscope.widgets.compare.timelines import TimelinePair
from profscope.widgets.memory.plot import legend_row
from profscope.widgets.palette import BASELINE_COLOR, CANDIDATE_COLOR, DIFF_COLORS, Scheme, follow, style_plot
from profscope.widgets.plot_axes import BytesAxis, TimeAxis

COLUMNS = ("Name", "Type", "Baseline count", "Baseline total", "Baseline mean", "Candidate count",
           "Candidate total", "Candidate mean", "Δ total", "Ratio", "Status")
TABLE_TITLES = {"kernel_stats": "Kernels", "op_stats": "Operators", "op_types": "Op types per device"}
DELTA, STATUS = 8, 10
TEXT_COLUMNS = (0, 1, STATUS)


def row_status(d: diff.StatsDiff) -> np.ndarray:
    """Per row: "added", "removed", "grown", "shrunk" or "same" (changed rows by the sign of their delta)."""
    out = np.where(d.delta_total_ps > 0, "grown", np.where(d.delta_total_ps < 0, "shrunk", "same")).astype(object)
    out[d.status == diff.ADDED] = "added"
    out[d.status == diff.REMOVED] = "removed"
    return out


def signed_time(ps: float) -> str:
    return ("+" if ps > 0 else "−" if ps < 0 else "") + format_time_ps(abs(float(ps)))


class DiffModel(QAbstractTableModel):
    """The shown rows of a StatsDiff: filtered(), then a row order."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.full: diff.StatsDiff | None = None
        self.shown: diff.StatsDiff | None = None
        self.status = np.zeros(0, object)
        self.order = np.zeros(0, np.int64)
        self.sorted_by: tuple[int, Qt.SortOrder] | None = None  # None: the diff's order (|delta| down)
        self.scheme = Scheme.of()

    def set_diff(self, d: diff.StatsDiff | None, text: str = "", regex: bool = False, min_delta_us: float = 0.0,
                 min_change: float = 0.0) -> None:
        self.full = d
        self.refilter(text, regex, min_delta_us, min_change)

    def refilter(self, text: str = "", regex: bool = False, min_delta_us: float = 0.0, min_change: float = 0.0) -> None:
        self.beginResetModel()
        self.shown = self.full.filtered(text, regex, min_delta_us, min_change) if self.full is not None else None
        self.status = row_status(self.shown) if self.shown is not None else np.zeros(0, object)
        self.order = np.arange(len(self.status))
        if self.sorted_by is not None:
            self.order = self._order(*self.sorted_by)
        self.endResetModel()

    def _values(self, column: int):
        d = self.shown
        if column == 0:
            return d.name
        if column == 1:
            return d.device if d.table == "op_types" else d.type
        if column == STATUS:
            return self.status
        return {2: d.base_count, 3: d.base_total_ps, 4: d.base_mean_ps, 5: d.cand_count, 6: d.cand_total_ps,
                7: d.cand_mean_ps, DELTA: d.delta_total_ps, 9: d.ratio}[column]

    def name(self, row: int) -> str:
        return self.shown.name[self.order[row]]

    def rowCount(self, parent=QModelIndex()):
        return 0 if parent.isValid() else len(self.order)

    def columnCount(self, parent=QModelIndex()):
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section, orientation, role=Qt.DisplayRole):
        if orientation != Qt.Horizontal or role != Qt.DisplayRole or not 0 <= section < len(COLUMNS):
            return None
        if section == 1 and self.shown is not None and self.shown.table == "op_types":
            return "Device"
        # "Baseline" / "Candidate" over what: two lines, so the columns are as narrow as their values.
        return COLUMNS[section].replace(" ", "\n", 1) if 2 <= section <= 7 else COLUMNS[section]

    def data(self, index, role=Qt.DisplayRole):
        if not index.isValid() or self.shown is None:
            return None
        i, column = int(self.order[index.row()]), index.column()
        if role == Qt.DisplayRole:
            v = self._values(column)[i]
            if column in TEXT_COLUMNS:
                return str(v)
            absent = diff.ADDED if column in (2, 3, 4) else diff.REMOVED if column in (5, 6, 7) else None
            if self.shown.status[i] == absent:
                return "–"  # the side without this name
            if column in (2, 5):
                return f"{int(v):,}"
            if column == DELTA:
                return signed_time(v)
            if column == 9:
                return "" if np.isnan(v) else f"{float(v):.3f}×"
            return format_time_ps(float(v))
        if role == Qt.ForegroundRole and column in (DELTA, STATUS):
            color = DIFF_COLORS.get(self.status[i])
            return self.scheme.data(color) if color else None
        if role == Qt.ToolTipRole and column in (0, 1):
            return str(self._values(column)[i])
        if role == Qt.UserRole:
            return self._values(column)[i]
        if role == Qt.TextAlignmentRole and column not in TEXT_COLUMNS:
            return int(Qt.AlignRight | Qt.AlignVCenter)
        return None

    def _order(self, column: int, order: Qt.SortOrder) -> np.ndarray:
        values = self._values(column)
        if column in TEXT_COLUMNS:
            folded = [str(v).casefold() for v in values]
            idx = np.array(sorted(range(len(folded)), key=folded.__getitem__), np.int64)
        elif column == DELTA:  # by size of the change, as the diff comes
            idx = np.argsort(np.abs(values), kind="stable")
        else:
            idx = np.argsort(np.nan_to_num(np.asarray(values, np.float64), nan=-np.inf), kind="stable")
        return idx[::-1].copy() if order == Qt.DescendingOrder else idx

    def sort(self, column, order=Qt.AscendingOrder):
        if self.shown is None or not 0 <= column < len(COLUMNS):
            return
        self.layoutAboutToBeChanged.emit()
        self.sorted_by = (column, order)
        self.order = self._order(column, order)
        self.layoutChanged.emit()


class StatsPage(QWidget):
    name_selected = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.stats: dict[str, diff.StatsDiff] = {}
        self.table_box = QComboBox()
        self.filter_edit = QLineEdit(placeholderText="Filter names…", clearButtonEnabled=True)
        self.regex_box = QCheckBox("RE2")
        self.min_delta = QDoubleSpinBox(decimals=1, maximum=1e12, suffix=" µs", singleStep=10)
        self.min_delta.setToolTip("Hide rows whose total moved by less than this")
        self.min_change = QDoubleSpinBox(decimals=1, maximum=1e6, suffix=" %", singleStep=1)
        self.min_change.setToolTip("Hide rows whose total moved by less than this share of the baseline's "
                                   "(added and removed rows stay)")
        self.counts = QLabel(wordWrap=True)
        self.model = DiffModel(self)
        self.view = QTableView()
        self.view.setModel(self.model)
        self.view.setSortingEnabled(True)
        self.view.horizontalHeader().setSortIndicatorShown(False)  # the diff's own order until a header is clicked
        self.view.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.SingleSelection)
        self.view.verticalHeader().hide()
        self.view.horizontalHeader().setSectionResizeMode(0, QHeaderView.Stretch)  # names take the room left
        self.view.setTextElideMode(Qt.ElideMiddle)  # kernel names differ at their ends, not their starts
        self.view.setWordWrap(False)
        self.filter_edit.setMinimumWidth(160)
        self.table_box.setSizeAdjustPolicy(QComboBox.AdjustToContents)
        bar = QHBoxLayout()
        for w in (QLabel("Table"), self.table_box, self.filter_edit, self.regex_box):
            bar.addWidget(w)
        bar.addStretch(1)
        # The thresholds share the counts' line: one row of every control was ~800 px wide at least, and the
        # Compare tab's minimum width squeezed the Sessions dock.
        thresholds = QHBoxLayout()
        for w in (QLabel("Hide |Δ| below"), self.min_delta, QLabel("and below"), self.min_change):
            thresholds.addWidget(w)
        thresholds.addWidget(self.counts, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addLayout(thresholds)
        layout.addWidget(self.view, 1)
        self.table_box.currentIndexChanged.connect(self._show_table)
        self.filter_edit.textChanged.connect(self.refilter)
        self.regex_box.toggled.connect(self.refilter)
        self.min_delta.valueChanged.connect(self.refilter)
        self.min_change.valueChanged.connect(self.refilter)
        self.view.horizontalHeader().sortIndicatorChanged.connect(
            lambda *_: self.view.horizontalHeader().setSortIndicatorShown(True))
        self.view.selectionModel().currentRowChanged.connect(
            lambda current, _: self.name_selected.emit(self.model.name(current.row())) if current.isValid() else None)
        follow(self, self._apply_scheme)

    def _apply_scheme(self, scheme: Scheme) -> None:
        self.model.scheme = scheme
        self.counts.setStyleSheet(f"color: {scheme.secondary().name()}")
        self.view.viewport().update()

    def set_stats(self, stats: dict[str, diff.StatsDiff]) -> None:
        self.stats = stats
        previous = self.table_box.currentData()
        self.table_box.blockSignals(True)
        self.table_box.clear()
        for table in diff.TABLES:
            if table in stats:
                self.table_box.addItem(f"{TABLE_TITLES[table]} ({len(stats[table]):,})", table)
        # The first table with rows (a trace without GPU activity has no kernels), or the one shown before.
        with_rows = [k for k in range(self.table_box.count()) if len(stats[self.table_box.itemData(k)])]
        pick = self.table_box.findData(previous)
        self.table_box.setCurrentIndex(pick if pick >= 0 else with_rows[0] if with_rows else 0)
        self.table_box.blockSignals(False)
        self._show_table()

    def show_table(self, table: str) -> None:
        self.table_box.setCurrentIndex(self.table_box.findData(table))

    def _show_table(self) -> None:
        self.model.sorted_by = None
        self.view.horizontalHeader().setSortIndicatorShown(False)
        self.model.set_diff(self.stats.get(self.table_box.currentData()), *self._filters())
        for column in range(1, len(COLUMNS)):  # each as wide as its values (the first 1,000 rows), the name the rest
            self.view.resizeColumnToContents(column)
        self._count()

    def _filters(self) -> tuple:
        return (self.filter_edit.text(), self.regex_box.isChecked(), self.min_delta.value(),
                self.min_change.value() / 100)

    def refilter(self, *_) -> None:
        try:
            self.model.refilter(*self._filters())
        except Exception as e:  # an RE2 pattern being typed
            self.counts.setText(str(e).splitlines()[0])
            return
        self._count()

    def _count(self) -> None:
        full, shown = self.model.full, self.model.shown
        if full is None:
            self.counts.setText("No timelines to compare")
            return
        tally = {s: int((self.model.status == s).sum()) for s in ("added", "removed", "grown", "shrunk", "same")}
        parts = ", ".join(f"{n:,} {s}" for s, n in tally.items() if n)
        delta = float(shown.delta_total_ps.sum()) if len(shown) else 0.0
        self.counts.setText(f"{len(shown):,} of {len(full):,} rows: {parts or 'none'}; Δ total {signed_time(delta)}")


OVERVIEW_ROWS = (
    ("step_count", "Steps"),
    ("step_mean_us", "Step time, mean"),
    ("step_median_us", "Step time, median"),
    ("step_min_us", "Step time, min"),
    ("step_max_us", "Step time, max"),
    ("span_us", "Span"),
    ("idle_us", "Idle"),
    ("compute_us", "Compute"),
    ("non_compute_us", "Non-compute"),
    ("busiest_device", "Busiest device"),
    ("busiest_device_busy_us", "Busiest device busy"),
)


def _overview_text(key: str, value) -> str:
    if value is None:
        return "–"
    if isinstance(value, str):
        return value
    if key == "step_count":
        return f"{value:,}"
    return format_time_ps(value * PS_PER_US)


class OverviewPage(QTableWidget):
    """Per host pair: a row per number, baseline / candidate / delta columns."""

    def set_overview(self, overview: diff.OverviewDiff | None) -> None:
        hosts = overview.to_json()["hosts"] if overview is not None else []
        self.clear()
        self.setColumnCount(1 + 3 * len(hosts))
        self.setRowCount(len(OVERVIEW_ROWS))
        labels = ["Host"]
        for h in hosts:
            name = h["host"] if h["status"] == "compared" else f"{h['host']} ({h['status']})"
            labels += [f"{name}\nbaseline", "candidate", "Δ"]
        self.setHorizontalHeaderLabels(labels)
        self.verticalHeader().hide()
        scheme = Scheme.of(self)
        for r, (key, title) in enumerate(OVERVIEW_ROWS):
            self.setItem(r, 0, QTableWidgetItem(title))
            for k, h in enumerate(hosts):
                v = h[key]
                cells = [v.get("baseline"), v.get("candidate"), v.get("delta")]
                for c, value in enumerate(cells):
                    text = _overview_text(key, value)
                    if c == 2 and isinstance(value, (int, float)) and value:
                        text = ("+" if value > 0 else "−") + _overview_text(key, abs(value))
                    item = QTableWidgetItem(text)
                    item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                    if c == 2 and isinstance(value, (int, float)) and value and key != "step_count":
                        item.setForeground(scheme.data(DIFF_COLORS["grown" if value > 0 else "shrunk"]))
                    self.setItem(r, 1 + 3 * k + c, item)
        self.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.resizeColumnsToContents()


ALLOCATION_COLUMNS = (
    "Op",
    "Shape",
    "Baseline bytes",
    "Baseline count",
    "Candidate bytes",
    "Candidate count",
    "Δ bytes",
    "Status",
)


class MemoryPage(QWidget):
    align_requested = Signal(object)  # a step number, or None: the first snapshot

    def __init__(self, parent=None):
        super().__init__(parent)
        self.memory: diff.MemoryDiff | None = None
        self.allocator_box = QComboBox(minimumContentsLength=20)
        self.align_box = QComboBox()
        self.align_box.addItems(["Aligned at the start", "Aligned at step"])
        self.step_box = QSpinBox(maximum=10**9, enabled=False)
        self.peaks = QLabel(textFormat=Qt.RichText)
        self.table = QTableWidget(0, len(ALLOCATION_COLUMNS))
        self.table.setHorizontalHeaderLabels(ALLOCATION_COLUMNS)
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(0, QHeaderView.Stretch)
        # The Memory tab's axes: bytes at round values of the unit shown, time in round time units.
        # The legend in a row above the plot (as the Memory tab's), not over the curves.
        self.plot_widget = pg.GraphicsLayoutWidget()
        self.legend = legend_row(self.plot_widget, columns=2)
        self.plot = self.plot_widget.addPlot(
            row=1, col=0, axisItems={"left": BytesAxis("left", "in use"),
                                     "bottom": TimeAxis("bottom", "time from the alignment point")}
        )
        self.plot.legend = self.legend  # plot(name=...) adds its entry; styled with the plot (style_plot)
        self.plot.showGrid(x=True, y=True, alpha=0.2)
        self.lines: list[pg.PlotDataItem] = []
        bar = QHBoxLayout()
        for w in (QLabel("Allocator"), self.allocator_box, self.align_box, self.step_box):
            bar.addWidget(w)
        bar.addStretch(1)
        split = QSplitter(Qt.Vertical)
        split.addWidget(self.plot_widget)
        split.addWidget(self.table)
        split.setSizes([400, 300])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.peaks)
        layout.addWidget(split, 1)
        self.allocator_box.currentIndexChanged.connect(lambda _: self._show_allocator())
        self.align_box.currentIndexChanged.connect(self._align)
        self.step_box.editingFinished.connect(self._align)
        follow(self, self._apply_scheme)

    def _align(self, *_) -> None:
        at_step = self.align_box.currentIndex() == 1
        self.step_box.setEnabled(at_step)
        self.align_requested.emit(self.step_box.value() if at_step else None)

    def set_memory(self, memory: diff.MemoryDiff | None) -> None:
        self.memory = memory
        previous = self.allocator_box.currentText()
        self.allocator_box.blockSignals(True)
        self.allocator_box.clear()
        for a in memory.allocators if memory is not None else []:
            self.allocator_box.addItem(a.memory_id)
        if self.allocator_box.findText(previous) >= 0:
            self.allocator_box.setCurrentText(previous)
        self.allocator_box.blockSignals(False)
        self._show_allocator()

    def allocator(self) -> diff.AllocatorDiff | None:
        k = self.allocator_box.currentIndex()
        return self.memory.allocators[k] if self.memory is not None and 0 <= k < len(self.memory.allocators) else None

    def _apply_scheme(self, scheme: Scheme) -> None:
        self.plot_widget.setBackground(scheme.base)
        self._show_allocator()

    def _show_allocator(self) -> None:
        scheme = Scheme.of(self)
        a = self.allocator()
        self.plot.clear()
        self.legend.clear()
        self.lines = []
        self.table.setRowCount(0)
        if a is None:
            self.peaks.setText("No memory profiles to compare" if self.memory is None else "No allocators")
            style_plot(self.plot, scheme)
            return
        doc = a.peaks()
        self.peaks.setText(
            " &nbsp; ".join(
                f"{title}: {_bytes(doc[key]['baseline'])} → {_bytes(doc[key]['candidate'])} "
                f"(<b>{_signed_bytes(doc[key]['delta'])}</b>)"
                for key, title in (
                    ("lifetime_peak_bytes", "Lifetime peak"),
                    ("window_peak_bytes", "Peak in the profile"),
                )
            )
        )
        t = a.curves.time_ps.astype(np.float64)
        for label, values, color in (
            ("baseline", a.curves.baseline, BASELINE_COLOR),
            ("candidate", a.curves.candidate, CANDIDATE_COLOR),
        ):
            pen = pg.mkPen(scheme.data(color), width=1.5)
            # A profile of one moment (a JAX device memory profile) is a point, not a line.
            dot = {"symbol": "o", "symbolBrush": scheme.data(color), "symbolPen": pen} \
                if np.isfinite(values).sum() == 1 else {}
            line = self.plot.plot(t, values, name=label, pen=pen, connect="finite", **dot)
            self.lines.append(line)
        style_plot(self.plot, scheme)
        self.plot.enableAutoRange()
        rows = a.allocations
        self.table.setRowCount(len(rows))
        for r in range(len(rows)):
            status = diff.GROWTH[rows.status[r]]
            d = int(rows.cand_bytes[r] - rows.base_bytes[r])
            cells = (
                rows.op[r],
                rows.shape[r],
                format_bytes(int(rows.base_bytes[r])),
                f"{int(rows.base_count[r]):,}",
                format_bytes(int(rows.cand_bytes[r])),
                f"{int(rows.cand_count[r]):,}",
                _signed_bytes(d),
                status,
            )
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if 2 <= c <= 6:
                    item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                if c >= 6 and status in DIFF_COLORS:
                    item.setForeground(scheme.data(DIFF_COLORS[status]))
                if c == 0 and rows.stack is not None:  # rows matched by call stack: the stack, innermost first
                    item.setToolTip(rows.stack[r].replace(" < ", "\n"))
                self.table.setItem(r, c, item)


def _bytes(n) -> str:
    return "–" if n is None else format_bytes(n)


def _signed_bytes(n) -> str:
    if n is None:
        return "–"
    return ("+" if n > 0 else "−" if n < 0 else "") + format_bytes(abs(n))


STEP_CHOICES = ("Whole trace", "Steps", "Median step")


class SideBar(QWidget):
    """One side's host and step choice (the statistics and overview cover those steps)."""

    steps_changed = Signal()
    host_chosen = Signal(str)

    def __init__(self, title: str, parent=None):
        super().__init__(parent)
        self.host_box = QComboBox(minimumContentsLength=8)
        self.host_box.setToolTip("The host (rank) of this side")
        self.steps_box = QComboBox()
        self.steps_box.addItems(STEP_CHOICES)
        self.range_edit = QLineEdit(placeholderText="2-3", enabled=False, maximumWidth=70)
        self.range_edit.setToolTip("ProfilerStep#A to #B (A, or A-B)")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for w in (QLabel(title), self.host_box, self.steps_box, self.range_edit):
            layout.addWidget(w)
        self.steps_box.currentIndexChanged.connect(self._mode)
        self.range_edit.editingFinished.connect(self.steps_changed)
        self.host_box.activated.connect(lambda k: self.host_chosen.emit(self.host_box.itemData(k)))

    def _mode(self, k: int) -> None:
        self.range_edit.setEnabled(k == 1)
        if k != 1 or self.range_edit.text().strip():
            self.steps_changed.emit()

    def spec(self) -> str:
        k = self.steps_box.currentIndex()
        return "" if k == 0 else "median" if k == 2 else self.range_edit.text().strip()

    def show_side(self, hosts: list[str], host: str, spec: str) -> None:
        """The loaded side's hosts (the picker only when there is a choice) and step choice."""
        for w in (self.host_box, self.steps_box):
            w.blockSignals(True)
        self.host_box.clear()
        for h in hosts:
            self.host_box.addItem(h or "All hosts", h)
        self.host_box.setCurrentIndex(max(0, self.host_box.findData(host)))
        self.host_box.setVisible(len(hosts) > 1)
        self.steps_box.setCurrentIndex(0 if not spec else 2 if spec == "median" else 1)
        if spec and spec != "median":
            self.range_edit.setText(spec)
        self.range_edit.setEnabled(self.steps_box.currentIndex() == 1)
        for w in (self.host_box, self.steps_box):
            w.blockSignals(False)


class CompareView(QWidget):
    """Statistics, Overview and Memory pages of one Comparison."""

    align_requested = Signal(object)
    name_selected = Signal(str)
    steps_requested = Signal(object)  # (baseline, candidate) step choices: "", "A", "A-B" or "median"
    host_requested = Signal(int, str)  # side (0 baseline, 1 candidate), host ("" = all)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.comparison: Comparison | None = None
        self.title = QLabel(textFormat=Qt.PlainText)
        self.title.setWordWrap(True)
        self.notes = QLabel(textFormat=Qt.PlainText)
        self.notes.setWordWrap(True)
        self.sides = [SideBar("Baseline"), SideBar("Candidate")]
        self.steps_error = QLabel(textFormat=Qt.PlainText, wordWrap=True)
        self.stats_page = StatsPage()
        self.overview_page = OverviewPage()
        self.memory_page = MemoryPage()
        self.pages = QTabWidget()
        self.pages.addTab(self.stats_page, "Statistics")
        self.pages.addTab(self.overview_page, "Overview")
        self.pages.addTab(self.memory_page, "Memory")
        self.timelines_page = TimelinePair()
        self.pages.addTab(self.timelines_page, "Timelines")
        layout = QVBoxLayout(self)
        layout.addWidget(self.title)
        layout.addWidget(self.notes)
        bar = QHBoxLayout()
        for k, side in enumerate(self.sides):
            bar.addWidget(side)
            side.steps_changed.connect(self._request_steps)
            side.host_chosen.connect(lambda host, k=k: self.host_requested.emit(k, host))
        bar.addWidget(self.steps_error, 1)
        layout.addLayout(bar)
        layout.addWidget(self.pages, 1)
        self.memory_page.align_requested.connect(self.align_requested)
        self.stats_page.name_selected.connect(self.name_selected)
        self.stats_page.name_selected.connect(self.timelines_page.highlight)
        follow(self, self._apply_scheme)

    def _apply_scheme(self, scheme: Scheme) -> None:
        self.notes.setStyleSheet(f"color: {scheme.secondary().name()}")
        self.steps_error.setStyleSheet(f"color: {scheme.error().name()}")

    def _request_steps(self) -> None:
        steps = (self.sides[0].spec(), self.sides[1].spec())
        if self.comparison is not None and steps != self.comparison.steps:
            self.steps_requested.emit(steps)

    def set_step_stats(self, result) -> None:
        """The statistics and overview over new step choices (the window's worker
        made them: (stats, overview, steps)), or why they could not be made."""
        if isinstance(result, str):
            self.steps_error.setText(result)
            if self.comparison is not None:  # the controls show what the rows are for again
                self._show_sides(self.comparison)
            return
        stats, overview, steps = result
        self.steps_error.clear()
        if self.comparison is not None:
            self.comparison.stats, self.comparison.overview, self.comparison.steps = stats, overview, steps
        self.stats_page.set_stats(stats)
        self.overview_page.set_overview(overview)

    def set_comparison(self, c: Comparison) -> None:
        self.comparison = c
        self.title.setText(f"Baseline: {c.baseline.place.label()}\nCandidate: {c.candidate.place.label()}")
        self.notes.setText("\n".join(c.notes))
        self.notes.setVisible(bool(c.notes))
        self.steps_error.clear()
        self._show_sides(c)
        self.stats_page.set_stats(c.stats)
        self.overview_page.set_overview(c.overview)
        self.memory_page.set_memory(c.memory)
        self.pages.setTabEnabled(0, bool(c.stats))
        self.pages.setTabEnabled(1, c.overview is not None)
        self.pages.setTabEnabled(2, c.memory is not None)
        self.timelines_page.set_timelines(c.baseline.timeline, c.candidate.timeline, ("Baseline", "Candidate"))
        self.pages.setTabEnabled(3, c.baseline.timeline is not None and c.candidate.timeline is not None)
        if not c.stats and c.memory is not None:
            self.pages.setCurrentWidget(self.memory_page)
        elif c.stats:
            self.pages.setCurrentWidget(self.stats_page)

    def _show_sides(self, c: Comparison) -> None:
        for side, loaded, spec in zip(self.sides, (c.baseline, c.candidate), c.steps):
            side.show_side(loaded.hosts, loaded.place.host, spec)
            side.setEnabled(bool(c.stats))

    def set_memory(self, memory: diff.MemoryDiff) -> None:
        """The memory diff realigned (the window's worker made it)."""
        if self.comparison is not None:
            self.comparison.memory = memory
        self.memory_page.set_memory(memory)
