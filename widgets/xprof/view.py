"""The Statistics tab of xplane sessions: XProf's tools, one page each,
chosen from a list. Each page is a QWidget with set_data(the tool's JSON, as
XProf's converter writes it); the window computes the JSON in its worker
(profscope.models.analysis.xprof) and hands it over with set_data.

Two pages ask for more: memory_viewer shows one XLA module at a time (its
entry is {"modules": names, "module": shown, "data": that module's JSON};
choosing another emits module_requested), and op_profile holds one
grouping (choosing the other emits group_by_requested); the window answers
with set_module_data and add_op_profile."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QListWidget, QStackedWidget, QVBoxLayout, QWidget

from profscope.widgets.xprof.hlo_page import HloPage
from profscope.widgets.xprof.memory_viewer_page import MemoryViewerPage
from profscope.widgets.xprof.op_profile_page import OpProfilePage
from profscope.widgets.xprof.pages import FrameworkOpsPage, InputPipelinePage, KernelsPage, OverviewPage
from profscope.widgets.xprof.roofline_page import RooflinePage

# (tool, title, page class): one line a page, in list order.
PAGES = [
    ("overview_page", "Overview", OverviewPage),
    ("input_pipeline_analyzer", "Input pipeline", InputPipelinePage),
    ("framework_op_stats", "Framework ops", FrameworkOpsPage),
    ("kernel_stats", "Kernels", KernelsPage),
    ("hlo_stats", "HLO ops", HloPage),
    ("op_profile", "Op profile", OpProfilePage),
    ("roofline_model", "Roofline", RooflinePage),
    ("memory_viewer", "Memory viewer", MemoryViewerPage),
]
TOOL_TITLES = {tool: title for tool, title, _ in PAGES}


class XprofStatsView(QWidget):
    """A list of XProf's tools and the page of the chosen one."""

    module_requested = Signal(str)  # memory_viewer: another XLA module chosen
    group_by_requested = Signal(str)  # op_profile: the grouping ("program", "category") not loaded
    op_selected = Signal(str)  # an op, kernel or HLO instruction chosen in a table (its name)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.list = QListWidget()
        self.stack = QStackedWidget()
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setAlignment(Qt.AlignCenter)
        self.pages: dict[str, QWidget] = {}
        self.tools: list[str] = []
        for tool, title, page_class in PAGES:
            page = page_class()
            self.pages[tool] = page
            self.tools.append(tool)
            self.stack.addWidget(page)
            self.list.addItem(title)
        self.stack.addWidget(self.message)
        # As wide as its longest title, whatever a page's own minimum width asks for.
        self.list.setFixedWidth(self.list.sizeHintForColumn(0) + 2 * self.list.frameWidth() + 12)
        self.memory_page: MemoryViewerPage = self.pages["memory_viewer"]  # type: ignore[assignment]
        self.op_profile_page: OpProfilePage = self.pages["op_profile"]  # type: ignore[assignment]
        self.memory_page.module_selected.connect(self._module_chosen)
        self.op_profile_page.group_by_requested.connect(self.group_by_requested)
        for page in self.pages.values():
            for table, column in getattr(page, "op_tables", list)():
                table.selectionModel().currentRowChanged.connect(
                    lambda current, _old, column=column: self._row_chosen(current, column()))
        self.list.currentRowChanged.connect(self._chosen)
        layout = QHBoxLayout(self)
        layout.addWidget(self.list)
        right = QVBoxLayout()
        right.addWidget(self.stack, 1)
        layout.addLayout(right, 1)
        self.data: dict = {}
        self.show_message("Open an xplane session (TensorFlow 2.4+, JAX) to see XProf's tools.")

    def set_data(self, data: dict | None) -> None:
        """Each tool's JSON by tool name (None: nothing loaded)."""
        self.data = dict(data or {})
        errors = self.data.pop("errors", [])
        for tool, page in self.pages.items():
            if tool == "memory_viewer":
                self._set_memory(self.data.get(tool))
            else:
                page.set_data(self.data.get(tool))
            self.list.item(self.tools.index(tool)).setHidden(tool not in self.data)
        if not self.data:
            self.show_message("\n".join(errors) or "No XProf tools for this host.")
            return
        current = self.current_page()
        self.show_page(current if current in self.data else next(t for t in self.tools if t in self.data))

    def _set_memory(self, entry: dict | None) -> None:
        entry = entry or {}
        self.memory_page.set_modules(entry.get("modules", []), entry.get("module", ""))
        self.memory_page.set_data(entry.get("data") or {})

    def _module_chosen(self, name: str) -> None:
        self.memory_page.summary.setText(f"<b>{name}</b> · loading…")
        self.module_requested.emit(name)

    def set_module_data(self, name: str, data: dict) -> None:
        """A module's memory_viewer JSON, asked for with module_requested."""
        entry = self.data.get("memory_viewer")
        if entry is None or name not in entry.get("modules", []):
            return  # another host's data came meanwhile
        entry.update(module=name, data=data)
        self.memory_page.set_modules(entry["modules"], name)
        self.memory_page.set_data(data)

    def module_failed(self, name: str, message: str) -> None:
        self.memory_page.summary.setText(f"<b>{name}</b> · {message}")

    def add_op_profile(self, data: dict) -> None:
        """op_profile's JSON of another grouping, asked for with group_by_requested (merged: both kept)."""
        if "op_profile" in self.data:
            self.data["op_profile"] = merged = {**self.data["op_profile"], **data}
            self.op_profile_page.set_data(merged)

    def _row_chosen(self, current, column: int) -> None:
        name = current.siblingAtColumn(column).data() if current.isValid() and column >= 0 else None
        if name:
            self.op_selected.emit(str(name))

    def select_op(self, name: str) -> bool:
        """Selects the row of an op (by name) in the tables of the page shown; whether it has one."""
        page = self.pages.get(self.current_page())
        if page is None or self.stack.currentWidget() is not page:
            return False
        for table, column in getattr(page, "op_tables", list)():
            model, c = table.model(), column()
            if c < 0 or not model.rowCount():
                continue
            found = model.match(model.index(0, c), Qt.DisplayRole, name, 1, Qt.MatchExactly | Qt.MatchRecursive)
            if found:
                table.setCurrentIndex(found[0])
                table.scrollTo(found[0])
                return True
        return False

    def current_page(self) -> str:
        row = self.list.currentRow()
        return self.tools[row] if 0 <= row < len(self.tools) else ""

    def show_page(self, tool: str) -> None:
        if tool in self.pages:
            self.list.setCurrentRow(self.tools.index(tool))
            self.stack.setCurrentWidget(self.pages[tool])

    def show_message(self, text: str) -> None:
        self.message.setText(text)
        self.stack.setCurrentWidget(self.message)

    def _chosen(self, row: int) -> None:
        if 0 <= row < len(self.tools):
            self.stack.setCurrentWidget(self.pages[self.tools[row]])
