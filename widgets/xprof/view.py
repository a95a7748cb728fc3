"""The Statistics tab of xplane sessions: XProf's tools, one page each,
chosen from a list. Each page is a QWidget with set_data(the tool's JSON, as
XProf's converter writes it); the window computes the JSON in its worker
(profscope.models.analysis.xprof) and hands it over with set_data."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QListWidget, QStackedWidget, QVBoxLayout, QWidget

from profscope.widgets.xprof.pages import FrameworkOpsPage, InputPipelinePage, KernelsPage, OverviewPage

# (tool, title, page class): one line a page, in list order.
PAGES = [
    ("overview_page", "Overview", OverviewPage),
    ("input_pipeline_analyzer", "Input pipeline", InputPipelinePage),
    ("framework_op_stats", "Framework ops", FrameworkOpsPage),
    ("kernel_stats", "Kernels", KernelsPage),
]
TOOL_TITLES = {tool: title for tool, title, _ in PAGES}


class XprofStatsView(QWidget):
    """A list of XProf's tools and the page of the chosen one."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.list = QListWidget()
        self.list.setMaximumWidth(self.fontMetrics().horizontalAdvance("Input pipeline") * 2)
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
            page.set_data(self.data.get(tool))
            self.list.item(self.tools.index(tool)).setHidden(tool not in self.data)
        if not self.data:
            self.show_message("\n".join(errors) or "No XProf tools for this host.")
            return
        current = self.current_page()
        self.show_page(current if current in self.data else next(t for t in self.tools if t in self.data))

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
