"""The HParams tab: filter panel, session-group table (or parallel
coordinates), and for the selected group its sessions and metric charts.

Every change builds a ListSessionGroupsRequest and asks the GroupTable for
the order of the groups (numpy, a few milliseconds for ten thousand); the
model shows one page of it. Widgets read no files: the window hands over a
loaded HParamsData and asks the data for metric series."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QItemSelection, QItemSelectionModel, Qt, QTimer, Signal
from PySide6.QtGui import QActionGroup, QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMenu,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QToolButton,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from profscope.models.hparams.experiment import NUMBER, STRING, HParamsData, HParamsError, format_value
from profscope.protos import api_pb2
from profscope.widgets.hparams.curves import CurvesPanel, session_color
from profscope.widgets.hparams.filters import FilterPanel
from profscope.widgets.hparams.layout import apply_after_columns, apply_before_columns, layout_state
from profscope.widgets.hparams.parallel_coords import ParallelCoordinates
from profscope.widgets.hparams.scales import LINEAR, SCALES, Axis, default_scale
from profscope.widgets.hparams.scatter_matrix import ScatterMatrix
from profscope.widgets.hparams.table import (
    FORMATS,
    STATUS_NAMES,
    Columns,
    GroupModel,
    metric_label,
    table_rows,
)
from profscope.widgets.palette import Scheme, follow

PAGE_SIZES = (("50 per page", 50), ("100 per page", 100), ("500 per page", 500), ("Show all", 0))
AGGREGATIONS = (("Average", api_pb2.AGGREGATION_AVG), ("Median", api_pb2.AGGREGATION_MEDIAN),
                ("Minimum", api_pb2.AGGREGATION_MIN), ("Maximum", api_pb2.AGGREGATION_MAX))


class HParamsView(QWidget):
    watch_toggled = Signal(bool)
    layout_changed = Signal()  # what layout_state() gives changed (debounced)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.data: HParamsData | None = None
        self.experiment: api_pb2.Experiment | None = None
        self.order = np.zeros(0, np.int64)  # every group passing the filters, sorted
        self.page = 0
        self.sort_keys: list[tuple[int, int]] = []  # (table column, order)
        self.columns = Columns([], [])
        self.hidden: set[int] = set()  # table columns the user hid
        self.scales: dict[tuple, str] = {}  # (kind, key) -> the scale the user chose
        self._axis_columns: list[int] = []
        self._fit_columns = False  # size the columns to their contents at the next refresh
        self.saved_widths: dict[int, int] = {}  # column -> width from a saved layout (not fitted)

        self._build_table_and_plots()
        self._build_controls()
        self._build_details()
        self._lay_out()
        self._connect()

    def _build_table_and_plots(self) -> None:
        """The filter panel, the groups' table and the plots of the centre tabs, with their controls."""
        self.filters = FilterPanel()
        self.model = GroupModel(self)
        self.table = QTreeView()  # groups expand into their sessions
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.ExtendedSelection)  # several groups' curves at once
        self.table.setAlternatingRowColors(True)
        self.table.setUniformRowHeights(True)
        self.table.setWordWrap(False)
        header = self.table.header()
        header.setSectionsMovable(True)  # the plots follow the table's order
        header.setStretchLastSection(False)
        header.setSectionsClickable(True)
        header.setSectionResizeMode(QHeaderView.Interactive)
        header.setContextMenuPolicy(Qt.CustomContextMenu)
        header.setTextElideMode(Qt.ElideMiddle)  # a long metric name in a capped column: both ends, all on hover
        self.parallel = ParallelCoordinates()
        self.color_box = QComboBox(minimumContentsLength=16)
        self.scales_button = QToolButton(text="Scales", popupMode=QToolButton.InstantPopup)
        self.scales_button.setToolTip("Linear, logarithmic or quantile axes and sliders, per column")
        self.scales_menu = QMenu(self)
        self.scales_button.setMenu(self.scales_menu)
        self.scale_note = QLabel()
        self.center = QTabWidget()
        self.center.addTab(self.table, "Table")
        self.center.addTab(self.parallel, "Parallel coordinates")
        self.scatter = ScatterMatrix()
        self.scatter.describe = self._describe_group
        self.center.addTab(self.scatter, "Scatter matrix")
        self.scatter_x: list | None = None  # the matrix' columns (hparams, metrics) the user chose; None: default
        self.scatter_y: list | None = None  # its rows (metrics)
        self._scatter_columns: tuple[list[int], list[int]] = ([], [])  # as last drawn
        self.scatter_button = QToolButton(text="Scatter columns", popupMode=QToolButton.InstantPopup)
        self.scatter_button.setToolTip("Which hparams and metrics the scatter matrix shows across and down")
        self.scatter_menu = QMenu(self)
        self.scatter_menu.aboutToShow.connect(self._build_scatter_menu)
        self.scatter_button.setMenu(self.scatter_menu)
        # Shown above the plots (not the table): colour and scales apply to both plots.
        self.plot_controls = QWidget()
        row = QHBoxLayout(self.plot_controls)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(QLabel("Colour by:"))
        row.addWidget(self.color_box)
        row.addWidget(self.scales_button)
        row.addWidget(self.scatter_button)
        row.addWidget(self.scale_note, 1)
        self.plot_controls.hide()


    def _build_controls(self) -> None:
        """Aggregation, paging, columns, export and watching."""
        self.aggregation_box = QComboBox()
        for name, value in AGGREGATIONS:
            self.aggregation_box.addItem(name, value)
        self.aggregation_metric = QComboBox(minimumContentsLength=12,
                                            sizeAdjustPolicy=QComboBox.AdjustToMinimumContentsLengthWithIcon)
        self.aggregation_metric.setToolTip(
            "The metric that picks the representative session (median, minimum, maximum)"
        )
        self.missing_first = QCheckBox("Missing values first")
        self.page_size = QComboBox()
        for name, size in PAGE_SIZES:
            self.page_size.addItem(name, size)
        self.page_size.setCurrentIndex(1)
        self.prev_button, self.next_button = QPushButton("◀"), QPushButton("▶")
        self.page_label = QLabel()
        self.columns_button = QToolButton(text="Columns", popupMode=QToolButton.InstantPopup)
        self.columns_menu = QMenu(self)
        self.columns_button.setMenu(self.columns_menu)
        self.export_button = QToolButton(text="Export", popupMode=QToolButton.InstantPopup)
        export_menu = QMenu(self)
        for fmt in FORMATS:
            export_menu.addAction(f"Copy as {fmt}", lambda f=fmt: self.copy(f))
        export_menu.addSeparator()
        for fmt in FORMATS:
            export_menu.addAction(f"Save as {fmt}…", lambda f=fmt: self.save_dialog(f))
        self.export_button.setMenu(export_menu)
        self.watch_box = QCheckBox("Watch for new sessions")
        self.message = QLabel(wordWrap=True)
        self.message.hide()


    def _build_details(self) -> None:
        """The selected groups' sessions and one chart per metric."""
        self.sessions_table = QTableWidget()
        self.sessions_table.verticalHeader().hide()
        self.sessions_table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.curves = CurvesPanel()
        self.selected: tuple[list[str], list[str]] = ([], [])  # group names, session names picked alone
        self._curves_key = None  # what the curves panel shows (or is loading)
        # Where the selected sessions' curves come from: request_curves(data, sessions, metrics, on_curves)
        # hands them to on_curves once read (the window reads them in its worker; tests and the report at
        # once). The view reads no files. None: no curves.
        self.request_curves = None
        self.details_title = QLabel(
            "Select groups or sessions to see their sessions and training curves.", wordWrap=True
        )
        self.details_title.setStyleSheet("font-weight: bold")
        details = self.details = QWidget()
        dl = QVBoxLayout(details)
        dl.setContentsMargins(0, 0, 0, 0)
        dl.addWidget(self.details_title)
        details_split = QSplitter(Qt.Horizontal)
        details_split.addWidget(self.sessions_table)
        details_split.addWidget(self.curves)
        details_split.setStretchFactor(0, 2)
        details_split.setStretchFactor(1, 3)
        details_split.setSizes([480, 720])  # room for Session | Status | Started and a metric or two
        dl.addWidget(details_split, 1)


    def _lay_out(self) -> None:
        # Two rows, so the tab's minimum width stays small (the dock and the
        # filter panel get the room; nothing is clipped at 1280 px).
        bar = QVBoxLayout()
        aggregate_row, actions_row = QHBoxLayout(), QHBoxLayout()
        aggregate_row.addWidget(QLabel("Aggregate groups by:"))
        aggregate_row.addWidget(self.aggregation_box)
        aggregate_row.addWidget(QLabel("of"))
        aggregate_row.addWidget(self.aggregation_metric, 1)
        actions_row.addWidget(self.missing_first)
        actions_row.addStretch(1)
        actions_row.addWidget(self.columns_button)
        actions_row.addWidget(self.export_button)
        actions_row.addWidget(self.watch_box)
        bar.addLayout(aggregate_row)
        bar.addLayout(actions_row)
        pager = QHBoxLayout()
        pager.addWidget(self.page_size)
        pager.addWidget(self.prev_button)
        pager.addWidget(self.next_button)
        pager.addWidget(self.page_label, 1)

        middle = QWidget()
        ml = QVBoxLayout(middle)
        ml.setContentsMargins(0, 0, 0, 0)
        ml.addLayout(bar)
        ml.addWidget(self.message)
        ml.addWidget(self.plot_controls)
        ml.addWidget(self.center, 1)
        ml.addLayout(pager)
        vertical = QSplitter(Qt.Vertical)
        vertical.addWidget(middle)
        vertical.addWidget(self.details)
        vertical.setSizes([520, 320])
        horizontal = QSplitter(Qt.Horizontal)
        horizontal.addWidget(self.filters)
        horizontal.addWidget(vertical)
        horizontal.setSizes([360, 1100])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(horizontal)


    def _connect(self) -> None:
        header = self.table.header()
        # Typing in a filter restarts a short timer; the query runs once the user pauses.
        self._debounce = QTimer(self, singleShot=True, interval=120)
        self._debounce.timeout.connect(self.refresh)
        self.filters.changed.connect(self._debounce.start)
        for box in (self.aggregation_box, self.aggregation_metric):
            box.currentIndexChanged.connect(self.refresh)
        self.missing_first.toggled.connect(self.refresh)
        self.page_size.currentIndexChanged.connect(lambda: self._go(0))
        self.prev_button.clicked.connect(lambda: self._go(self.page - 1))
        self.next_button.clicked.connect(lambda: self._go(self.page + 1))
        header.sectionClicked.connect(self._on_header)
        header.customContextMenuRequested.connect(self._header_menu)
        self.table.selectionModel().selectionChanged.connect(self._on_selection)
        self.color_box.currentIndexChanged.connect(self._update_plots)
        self.center.currentChanged.connect(self._on_center_tab)
        self.parallel.brushed.connect(self._on_brush)
        self.scatter.brushed.connect(self._on_scatter_brush)
        self.scatter.group_clicked.connect(self.select_group)
        self.watch_box.toggled.connect(self.watch_toggled)
        self._restoring = False
        self._layout_timer = QTimer(self, singleShot=True, interval=400)
        self._layout_timer.timeout.connect(self.layout_changed)
        header.sectionMoved.connect(self._layout_edited)
        header.sectionMoved.connect(self._update_plots)
        header.sectionResized.connect(self._layout_edited)
        self.color_box.currentIndexChanged.connect(self._layout_edited)
        self.curves.smoothing.valueChanged.connect(self._layout_edited)
        self.curves.x_box.currentIndexChanged.connect(self._layout_edited)
        QShortcut(QKeySequence.Copy, self.table, lambda: self.copy("CSV"))
        follow(self, self._apply_scheme)

    def _apply_scheme(self, scheme: Scheme) -> None:
        self.message.setStyleSheet(f"color: {scheme.error().name()}")

    # ------------------------------------------------------------ data

    def set_data(self, data: HParamsData | None, layout: dict | None = None) -> None:
        """Shows a log dir's groups. Without `layout` it is the same log dir
        again (a reload): filters, sorting, selection and layout are kept,
        and the filters grow to take in new values. With one (a saved
        layout_state(), or {}), a log dir opened afresh."""
        again = layout is None and self.data is not None
        if again:
            layout = self.layout_state()
            filters = self.filters.state()
            sort = [(self.columns.items[c], order) for c, order in self.sort_keys]
            aggregation_metric = self.aggregation_metric.currentData()
        else:
            filters, sort, aggregation_metric = {}, [], None
            self.selected, self._curves_key = ([], []), None
            self.scatter.clear_brush()
            self.parallel.brushes = {}
        self.data = data
        self.experiment = data.experiment() if data is not None else None
        self._restoring = True  # no layout_changed while the saved layout is put back
        apply_before_columns(self, layout or {})
        self._build_columns(filters, aggregation_metric)
        items = self.columns.items
        self.sort_keys = [(items.index(item), order) for item, order in sort if item in items]
        apply_after_columns(self, layout or {})
        self._restoring = False
        self.refresh()
        if any(self.selected):
            self._show_selection()  # new data: the sessions' rows and curves afresh

    def set_color_metric(self, metric: tuple[str, str] | None) -> None:
        """Colours the plots by a metric (None: one colour); unknown metrics are ignored."""
        for i in range(self.color_box.count()):  # findData does not compare tuples
            if self.color_box.itemData(i) == metric:
                self.color_box.setCurrentIndex(i)

    def layout_state(self) -> dict:
        """Column order, visibility, widths and scales, the colour metric and
        more, to remember per log dir (JSON)."""
        return layout_state(self)

    def _layout_edited(self, *_args) -> None:
        if not self._restoring and self.data is not None:
            self._layout_timer.start()

    def _build_columns(self, filter_state: dict | None = None, aggregation_metric=None) -> None:
        exp = self.experiment
        hparams = [h.name for h in exp.hparam_infos] if exp else []
        metrics = [(m.name.group, m.name.tag) for m in exp.metric_infos] if exp else []
        table = self._table()
        if table is not None:  # hparams the sessions hold but the experiment lacks
            hparams += [h for h in table.hparam_names if h not in hparams]
        self.columns = Columns(hparams, metrics)
        self.sort_keys = []
        self.aggregation_metric.blockSignals(True)
        self.aggregation_metric.clear()
        self.color_box.blockSignals(True)
        self.color_box.clear()
        self.color_box.addItem("(none)", None)
        for m in metrics:
            self.aggregation_metric.addItem(metric_label(*m), m)
            self.color_box.addItem(metric_label(*m), m)
        self.color_box.setCurrentIndex(1 if metrics else 0)
        if aggregation_metric in metrics:
            self.aggregation_metric.setCurrentIndex(metrics.index(aggregation_metric))
        self.aggregation_metric.blockSignals(False)
        self.color_box.blockSignals(False)
        filters = {}
        if table is not None:
            for i, (kind, key) in enumerate(self.columns.items):
                if kind in ("hparam", "metric"):
                    filters[(kind, key)] = (self.columns.title(i), table.column_of(kind, key))
        self.filters.set_columns(filters, {item: self.scale_of(item) for item in filters}, filter_state)
        self._build_scales_menu()
        self.columns_menu.clear()
        self.hidden = set()
        for i in range(len(self.columns)):
            action = self.columns_menu.addAction(self.columns.title(i))
            action.setCheckable(True)
            action.setChecked(True)
            action.toggled.connect(lambda on, c=i: self.set_column_visible(c, on))
        self.model.set_table(table, self.columns)
        header = self.table.header()
        for i in range(len(self.columns)):
            self.table.setColumnHidden(i, False)
            header.moveSection(header.visualIndex(i), i)
        self._fit_columns = True

    # ------------------------------------------------------------ scales

    def _numeric(self, item) -> bool:
        table = self._table()
        if table is None or item[0] not in ("hparam", "metric"):
            return False
        column = table.column_of(*item)
        kinds = set(column.kind.tolist())
        return NUMBER in kinds and STRING not in kinds

    def scale_of(self, item) -> str:
        """The column's scale: the user's choice, else log for a positive
        hparam spanning two decades, else linear."""
        if item in self.scales:
            return self.scales[item]
        table = self._table()
        if table is None:
            return LINEAR
        return default_scale(table.column_of(*item).number, item[0] == "hparam")

    def set_scale(self, item, kind: str) -> None:
        """Puts a column's axes and range slider on another scale."""
        self.scales[item] = kind
        self._layout_edited()
        f = self.filters.filters.get(item)
        if f is not None:
            f.set_scale(kind)
        self._build_scales_menu()
        self._update_plots()

    def _scale_submenu(self, menu: QMenu, item) -> None:
        group = QActionGroup(menu)
        current = self.scale_of(item)
        for kind, name in SCALES:
            action = menu.addAction(name, lambda k=kind: self.set_scale(item, k))
            action.setCheckable(True)
            action.setChecked(kind == current)
            group.addAction(action)

    def _build_scales_menu(self) -> None:
        self.scales_menu.clear()
        for i, item in enumerate(self.columns.items):
            if self._numeric(item):
                self._scale_submenu(self.scales_menu.addMenu(self.columns.title(i)), item)
        self.scales_button.setEnabled(not self.scales_menu.isEmpty())

    def _header_menu(self, pos) -> None:
        """Right click on a column title: its scale, and the columns shown."""
        header = self.table.header()
        item = self.columns.items[header.logicalIndexAt(pos)] if self.columns.items else None
        menu = QMenu(self)
        if item is not None and self._numeric(item):
            self._scale_submenu(menu.addMenu("Scale"), item)
        menu.addMenu(self.columns_menu).setText("Columns")
        menu.exec(header.mapToGlobal(pos))

    def set_column_visible(self, column: int, visible: bool) -> None:
        self.table.setColumnHidden(column, not visible)
        (self.hidden.discard if visible else self.hidden.add)(column)
        self._layout_edited()
        self._update_plots()

    def _table(self):
        if self.data is None:
            return None
        metric = self.aggregation_metric.currentData() or ("", "")
        return self.data.groups(
            self.filters.allowed_statuses(), self.aggregation_box.currentData(), tuple(metric), True
        )

    # ------------------------------------------------------------ query

    def request(self) -> api_pb2.ListSessionGroupsRequest:
        """The current filters, sort keys and statuses as TensorBoard's request."""
        req = api_pb2.ListSessionGroupsRequest(
            allowed_statuses=self.filters.allowed_statuses(), aggregation_type=self.aggregation_box.currentData()
        )
        metric = self.aggregation_metric.currentData()
        if metric:
            req.aggregation_metric.group, req.aggregation_metric.tag = metric
        params = {}
        for (kind, key), f in self.filters.filters.items():
            if f.is_active():
                f.apply(params.setdefault((kind, key), _col_param(kind, key)))
        sorts = []
        for column, order in self.sort_keys:
            kind, key = self.columns.items[column]
            cp = params.pop((kind, key), None) or _col_param(kind, key)
            cp.order, cp.missing_values_first = order, self.missing_first.isChecked()
            sorts.append(cp)
        req.col_params.extend(sorts + list(params.values()))
        return req

    def refresh(self) -> None:
        self._debounce.stop()
        table = self._table()
        if table is None:
            self.model.set_table(None, self.columns)
            self.order = np.zeros(0, np.int64)
            self._show_page()
            return
        if table is not self.model.table:
            self.model.set_table(table, self.columns)
        try:
            request = self.request()
            self.order = table.select(request.col_params)
            self.show_message("")
        except HParamsError as e:
            self.order = np.zeros(0, np.int64)
            self.show_message(str(e))
        self.model.sort_keys = list(self.sort_keys)
        self._go(0)
        if self._fit_columns and self.model.rowCount():
            for c in range(len(self.columns)):
                if c in self.saved_widths:  # the width the user gave it last time
                    self.table.setColumnWidth(c, self.saved_widths[c])
                    continue
                self.table.resizeColumnToContents(c)
                self.table.setColumnWidth(c, min(self.table.columnWidth(c), 220))
            self._fit_columns = False
        if self.model.rowCount() and not any(self.selected):
            self.select_row(0)  # the best group's curves at once
        self._update_plots()

    def _go(self, page: int) -> None:
        size = self.page_size.currentData() or max(len(self.order), 1)
        pages = max(1, -(-len(self.order) // size))
        self.page = min(max(page, 0), pages - 1)
        self._show_page()

    def _show_page(self) -> None:
        size = self.page_size.currentData() or max(len(self.order), 1)
        start = self.page * size
        self.model.set_rows(self.order[start : start + size])
        self._restore_selection()
        total = len(self.model.table) if self.model.table is not None else 0
        shown = self.model.rowCount()
        self.page_label.setText(
            f"groups {start + 1 if shown else 0:,}–{start + shown:,} of {len(self.order):,} matching ({total:,} in all)"
        )
        self.prev_button.setEnabled(self.page > 0)
        self.next_button.setEnabled(start + size < len(self.order))

    def _on_header(self, column: int) -> None:
        kind = self.columns.items[column][0]
        if kind not in ("hparam", "metric"):
            self.sort_keys = []  # the group name order
        else:
            shift = bool(QGuiApplication.keyboardModifiers() & Qt.ShiftModifier)
            existing = [i for i, (c, _) in enumerate(self.sort_keys) if c == column]
            if existing:
                i = existing[0]
                c, order = self.sort_keys[i]
                flipped = (c, api_pb2.ORDER_DESC if order == api_pb2.ORDER_ASC else api_pb2.ORDER_ASC)
                self.sort_keys = self.sort_keys[:i] + [flipped] + self.sort_keys[i + 1 :] if shift else [flipped]
            elif shift:
                self.sort_keys.append((column, api_pb2.ORDER_ASC))
            else:
                self.sort_keys = [(column, api_pb2.ORDER_ASC)]
        self.refresh()

    def sort_by(self, keys: list[tuple[int, int]]) -> None:
        self.sort_keys = list(keys)
        self.refresh()

    def show_message(self, text: str) -> None:
        self.message.setText(text)
        self.message.setVisible(bool(text))

    # ------------------------------------------------------------ parallel coordinates

    def _on_center_tab(self, index: int) -> None:
        self.plot_controls.setVisible(index != 0)
        self.scatter_button.setVisible(index == 2)
        self._update_plots()

    def _update_plots(self) -> None:
        """Redraws the plot shown (the others when they are shown)."""
        if self.center.currentIndex() == 1:
            self._update_parallel()
        elif self.center.currentIndex() == 2:
            self._update_scatter()

    def _color_values(self) -> tuple[np.ndarray | None, str]:
        metric = self.color_box.currentData()
        if not metric or self.model.table is None:
            return None, ""
        return self.model.table.metric_column(*metric).number[self.order], metric_label(*metric)

    def _visible_plot_columns(self) -> list[int]:
        """Hparam and metric columns shown in the table, in its order."""
        header = self.table.header()
        columns = [
            i for i, (kind, _) in enumerate(self.columns.items) if kind in ("hparam", "metric") and i not in self.hidden
        ]
        return sorted(columns, key=header.visualIndex)

    def _update_parallel(self) -> None:
        table = self.model.table
        if table is None:
            self.parallel.set_data([], np.zeros(0, np.int64), None, "")
            return
        self._axis_columns = self._visible_plot_columns()
        axes = [self._axis(i, self.order) for i in self._axis_columns]
        self.parallel.set_data(axes, self.order, *self._color_values())
        self._show_scale_notes(axes)

    # ------------------------------------------------------------ scatter matrix

    def scatter_columns(self) -> tuple[list[int], list[int]]:
        """The matrix' columns and rows (table columns): the user's choice
        among the visible columns, else the first four hparams across and
        the first four metrics with values down."""
        visible = self._visible_plot_columns()
        if self.scatter_x is not None:
            across = [i for i in visible if self.columns.items[i] in self.scatter_x]
        else:
            across = [i for i in visible if self.columns.items[i][0] == "hparam"][:4]
        if self.scatter_y is not None:
            down = [i for i in visible if self.columns.items[i] in self.scatter_y]
        else:
            table = self.model.table
            down = [
                i
                for i in visible
                if self.columns.items[i][0] == "metric"
                and table is not None
                and (table.column_of(*self.columns.items[i]).kind != 0).any()
            ][:4]
        return across, down

    def _update_scatter(self) -> None:
        table = self.model.table
        if table is None:
            self.scatter.set_data([], [], np.zeros(0, np.int64), None, "")
            return
        self._scatter_columns = self.scatter_columns()
        across, down = ([self._axis(i, self.order, ticks=5) for i in part] for part in self._scatter_columns)
        self.scatter.set_data(across, down, self.order, *self._color_values())
        self._show_scale_notes(across + [a for a in down if a.title not in {b.title for b in across}])

    def _build_scatter_menu(self) -> None:
        self.scatter_menu.clear()
        across, down = self.scatter_columns()
        for title, chosen, kinds, attr in (
            ("Across (x)", across, ("hparam", "metric"), "scatter_x"),
            ("Down (y, metrics)", down, ("metric",), "scatter_y"),
        ):
            self.scatter_menu.addSection(title)
            for i in self._visible_plot_columns():
                if self.columns.items[i][0] in kinds:
                    action = self.scatter_menu.addAction(self.columns.title(i))
                    action.setCheckable(True)
                    action.setChecked(i in chosen)
                    action.toggled.connect(lambda on, c=i, a=attr, ch=chosen: self._choose_scatter(a, ch, c, on))

    def _choose_scatter(self, attr: str, chosen: list[int], column: int, on: bool) -> None:
        columns = [c for c in chosen if c != column] + ([column] if on else [])
        setattr(self, attr, [self.columns.items[c] for c in columns])
        self._layout_edited()
        self._update_plots()

    def _on_scatter_brush(self, column: int, row: int, x_range, y_range) -> None:
        """A rectangle sets both columns' filters, as brushing an axis of the
        parallel coordinates does (a click in its cell clears both)."""
        across, down = self._scatter_columns
        for table_column, axis, span in (
            (across[column], self.scatter.columns[column], x_range),
            (down[row], self.scatter.rows[row], y_range),
        ):
            f = self.filters.filters.get(self.columns.items[table_column])
            if f is not None:
                self._brush_filter(f, axis, *(span or (None, None)))
        self.refresh()

    def _describe_group(self, group: int) -> str:
        """A group's name and the values the scatter matrix shows."""
        table = self.model.table
        lines = [f"Group {self.model.labels[group]} ({len(table.sessions[group])} session(s))"]
        across, down = self._scatter_columns
        for c in dict.fromkeys(across + down):
            lines.append(f"{self.columns.title(c)}: {format_value(self.model.value(group, c))}")
        return "\n".join(lines)

    def _axis(self, column: int, groups: np.ndarray, ticks: int = 6) -> Axis:
        item = self.columns.items[column]
        return Axis(self.columns.title(column), self.model.table.column_of(*item), groups, self.scale_of(item), ticks)

    def _show_scale_notes(self, axes: list[Axis]) -> None:
        notes = [f"{a.title}: {a.note}" for a in axes if a.note]
        self.scale_note.setText("; ".join(notes))
        self.scale_note.setToolTip("\n".join(notes))

    def _on_brush(self, axis: int, lo, hi) -> None:
        column = self._axis_columns[axis]
        f = self.filters.filters.get(self.columns.items[column])
        if f is None:
            return
        self._brush_filter(f, self.parallel.axes[axis], lo, hi)
        self.refresh()  # at once: a brush is one deliberate gesture, not typing

    @staticmethod
    def _brush_filter(f, axis: Axis, lo, hi) -> None:
        """A brushed range of an axis' positions as the column's filter
        (None: cleared): the closed interval of values it covers, or the
        checkboxes of the values inside it."""
        if f.kind == "range":
            f.set_interval(None, None) if lo is None else f.set_interval(*axis.interval(lo, hi))
        elif f.kind == "discrete":
            for box, value in f.control:
                box.setChecked(lo is None or axis.selects(value, lo, hi))

    # ------------------------------------------------------------ selection and details

    def select_row(self, row: int) -> None:
        """Selects the group on a row of the page (alone)."""
        self.table.setCurrentIndex(self.model.index(row, 0))

    def select_group(self, group: int) -> None:
        """Selects a group in the table (turning to its page)."""
        where = np.flatnonzero(self.order == group)
        if not len(where):
            return
        size = self.page_size.currentData() or max(len(self.order), 1)
        position = int(where[0])
        if position // size != self.page:
            self._go(position // size)
        self.select_row(position % size)
        self.table.scrollTo(self.model.index(position % size, 0))

    def _on_selection(self) -> None:
        """The table's selected rows: groups (all their sessions) and single sessions."""
        groups, sessions = [], []
        table = self.model.table
        for index in self.table.selectionModel().selectedRows(0):
            if index.internalId():  # a session row
                group = self.model.group_at(index.internalId() - 1)
                sessions.append(table.sessions[group][index.row()].name)
            else:
                groups.append(table.names[self.model.group_at(index.row())])
        self.selected = (groups, sessions)
        self._show_selection()

    def _restore_selection(self) -> None:
        """Selects again, quietly, the rows of the page that were selected
        (a new page, filter or reload resets the model's rows)."""
        table, selection = self.model.table, QItemSelection()
        groups, sessions = self.selected
        if table is None:
            return
        wanted_groups, wanted_sessions = set(groups), set(sessions)
        last = self.model.columnCount() - 1
        for row in range(self.model.rowCount()):
            g = self.model.group_at(row)
            parent = self.model.index(row, 0)
            if table.names[g] in wanted_groups:
                selection.select(parent, self.model.index(row, last))
            for k, s in enumerate(table.sessions[g]):
                if s.name in wanted_sessions:
                    selection.select(self.model.index(k, 0, parent), self.model.index(k, last, parent))
        model = self.table.selectionModel()
        model.blockSignals(True)
        model.select(selection, QItemSelectionModel.ClearAndSelect)
        model.blockSignals(False)
        self.table.viewport().update()

    def selected_sessions(self) -> list[tuple[int, object]]:
        """(group index, Session) of the selection, in table order of groups."""
        table = self.model.table
        if table is None:
            return []
        groups, sessions = self.selected
        wanted_groups, wanted_sessions = set(groups), set(sessions)
        index = {name: g for g, name in enumerate(table.names)}
        out = []
        for g in sorted(
            {index[n] for n in groups if n in index}
            | {g for g, ss in enumerate(table.sessions) for s in ss if s.name in wanted_sessions}
        ):
            out += [(g, s) for s in table.sessions[g] if table.names[g] in wanted_groups or s.name in wanted_sessions]
        return out

    def _show_selection(self) -> None:
        """The selected sessions in the details table, their curves loading,
        and the selected groups marked in the plots."""
        table = self.model.table
        chosen = self.selected_sessions()
        groups = {g for g, _ in chosen}
        self.parallel.highlight = next(iter(groups)) if len(groups) == 1 else None
        self.parallel.update()
        self.scatter.highlight = groups
        self.scatter.update()
        self.details_title.setToolTip("")
        if not chosen:
            self.details_title.setText("Select groups or sessions to see their sessions and training curves.")
        elif len(groups) == 1:
            g = next(iter(groups))
            self.details_title.setText(f"Group {self.model.labels[g]}: {len(chosen)} session(s)")
            self.details_title.setToolTip(f"group {table.names[g]}")
        else:
            self.details_title.setText(f"{len(groups)} groups, {len(chosen)} sessions")
        metrics = table.metric_names if table is not None else []
        self.sessions_table.clear()
        headers = ["Session", "Group", "Status", "Start", "End"] + [metric_label(*m) for m in metrics]
        self.sessions_table.setColumnCount(len(headers))
        self.sessions_table.setHorizontalHeaderLabels(headers)
        self.sessions_table.setRowCount(len(chosen))
        scheme = Scheme.of(self)
        for r, (g, s) in enumerate(chosen):
            values = {(m.group, m.tag): m.value for m in s.metrics}
            cells = [
                s.name,
                self.model.labels[g],
                STATUS_NAMES.get(s.status, str(s.status)),
                _time(s.start_time),
                _time(s.end_time),
            ] + [format_value(values.get(m)) for m in metrics]
            for c, text in enumerate(cells):
                self.sessions_table.setItem(r, c, QTableWidgetItem(text))
            self.sessions_table.item(r, 1).setToolTip(f"group {table.names[g]}")
            self.sessions_table.item(r, 0).setData(Qt.DecorationRole, scheme.data(session_color(r)))  # its line
        self.sessions_table.resizeColumnsToContents()
        self._load_curves([s.name for _, s in chosen], metrics)

    def _load_curves(self, sessions: list[str], metrics: list[tuple[str, str]]) -> None:
        """Asks for the sessions' curves (through request_curves) unless shown already."""
        key = (id(self.data), tuple(sessions), tuple(metrics))
        if key == self._curves_key:
            return
        self._curves_key = key
        if not sessions or self.request_curves is None:
            self.curves.set_curves([], metrics, [])
            return
        self.curves.show_message(f"Reading the curves of {len(sessions):,} session(s)…")
        self.request_curves(
            self.data, sessions, metrics, lambda curves: self._show_curves(key, curves, metrics, sessions)
        )

    def _show_curves(self, key, curves, metrics, sessions) -> None:
        if key == self._curves_key:  # not superseded meanwhile
            self.curves.set_curves(curves, metrics, sessions)

    # ------------------------------------------------------------ export

    def export_text(self, fmt: str) -> str:
        """Every matching group (all pages) in the table's order, visible columns only."""
        columns = [c for c in range(len(self.columns)) if c not in self.hidden]
        header, rows = table_rows(self.model, self.order, columns)
        return FORMATS[fmt][0](header, rows)

    def copy(self, fmt: str) -> None:
        QGuiApplication.clipboard().setText(self.export_text(fmt))

    def save_dialog(self, fmt: str) -> None:
        suffix = FORMATS[fmt][1]
        path, _ = QFileDialog.getSaveFileName(
            self, f"Save table as {fmt}", f"session_groups.{suffix}", f"{fmt} (*.{suffix})"
        )
        if path:
            with open(path, "w", encoding="utf-8") as f:
                f.write(self.export_text(fmt))


def _col_param(kind: str, key) -> api_pb2.ColParams:
    if kind == "hparam":
        return api_pb2.ColParams(hparam=key)
    return api_pb2.ColParams(metric=api_pb2.MetricName(group=key[0], tag=key[1]))


def _time(seconds: float) -> str:
    if not seconds:
        return ""
    import datetime

    return datetime.datetime.fromtimestamp(seconds).strftime("%Y-%m-%d %H:%M:%S")
