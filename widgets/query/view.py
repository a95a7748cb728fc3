"""The Query tab: SQL over the opened location (docs/SQL.md). Example and
saved queries and the schema beside an editor (Ctrl+Enter runs, Esc cancels,
errors underlined where DuckDB points); below, the result as a virtual table
(sorted in the worker, Ctrl+C copies) and a chart when it has a time or step
column. Double-clicking a row that carries a slice id or a memory moment asks
the window to show it (jump_requested). The runner (viewer/query_runner.py)
runs everything that touches data; this widget reads no files."""

from __future__ import annotations

import json
import re

import numpy as np
import pyarrow as pa
from PySide6.QtCore import QEvent, QSettings, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontDatabase,
    QGuiApplication,
    QKeySequence,
    QSyntaxHighlighter,
    QTextCharFormat,
    QTextCursor,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLayout,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTableView,
    QTextEdit,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from profscope.models.core.units import format_time_ps
from profscope.models.sql.examples import EXAMPLES, adapted
from profscope.models.sql.schema import NEEDS, SCHEMA, TABLES
from profscope.widgets.palette import Scheme, follow
from profscope.widgets.query.chart import QueryChart
from profscope.widgets.query.model import COPY_ROWS, ResultModel

SAVED_KEY = "query/saved"  # JSON list of [name, sql]
TEXT_KEY = "query/text"  # the editor's text when a query last ran
KEYWORDS = ("select from where group by order having limit offset join left right inner outer full cross on using "
            "as and or not in is null like ilike between case when then else end with distinct union all except "
            "intersect asc desc filter over partition window qualify cast true false exists describe summarize "
            "explain analyze values rows range preceding following current row unbounded nulls first last "
            "bigint integer double varchar boolean").split()
ROLE_SQL = Qt.UserRole
ROLE_SAVED = Qt.UserRole + 1
HINTS = {"slice": "double-click a row to select its event in the Timeline",
         "time": "double-click a row to show its time in the Timeline",
         "memory": "double-click a row to see that moment in the Memory view"}


def _column(*items) -> QWidget:
    """(widget or layout, stretch) items one above the other, without margins."""
    column = QWidget()
    layout = QVBoxLayout(column)
    layout.setContentsMargins(0, 0, 0, 0)
    for item, stretch in items:
        (layout.addLayout if isinstance(item, QLayout) else layout.addWidget)(item, stretch)
    return column


class SqlHighlighter(QSyntaxHighlighter):
    """Keywords, table names, numbers, then strings and comments (-- to the
    line's end, /* */ across lines) in one pass from the left, so quotes in
    comments and dashes in strings are what they look like."""

    WORDS = (("keyword", r"\b(?:" + "|".join(KEYWORDS) + r")\b"),
             ("table", r"(?<!\bas )\b(?:" + "|".join(TABLES) + r")\b"),  # not an alias
             ("number", r"\b\d+(?:\.\d+)?\b"))
    OPENERS = re.compile(r"--|/\*|'")
    STRING = re.compile(r"'(?:[^']|'')*'?")
    IN_COMMENT = 1  # block state: a /* comment runs on into the next line

    def __init__(self, document):
        super().__init__(document)
        self.formats: dict[str, QTextCharFormat] = {}
        self.patterns = [(name, re.compile(p, re.I)) for name, p in self.WORDS]
        self.set_scheme(Scheme.of())

    def set_scheme(self, scheme: Scheme) -> None:
        colors = {"keyword": scheme.data("#1565c0"), "table": scheme.data("#00838f"), "number": scheme.data("#6a1b9a"),
                  "string": scheme.data("#2e7d32"), "comment": scheme.shade(0.53)}
        for name, color in colors.items():
            f = QTextCharFormat()
            f.setForeground(color)
            f.setFontWeight(QFont.Bold if name == "keyword" else QFont.Normal)
            f.setFontItalic(name == "comment")
            self.formats[name] = f
        self.rehighlight()

    def highlightBlock(self, text: str) -> None:
        for name, pattern in self.patterns:
            for m in pattern.finditer(text):
                self.setFormat(m.start(), m.end() - m.start(), self.formats[name])
        at, state = 0, 0
        in_comment = self.previousBlockState() == self.IN_COMMENT
        while at < len(text):
            if in_comment:
                end = text.find("*/", at)
                stop = len(text) if end < 0 else end + 2
                self.setFormat(at, stop - at, self.formats["comment"])
                if end < 0:
                    state = self.IN_COMMENT
                    break
                in_comment, at = False, stop
                continue
            m = self.OPENERS.search(text, at)
            if m is None:
                break
            if m.group() == "--":
                self.setFormat(m.start(), len(text) - m.start(), self.formats["comment"])
                break
            if m.group() == "/*":
                self.setFormat(m.start(), 2, self.formats["comment"])
                in_comment, at = True, m.end()
                continue
            string = self.STRING.match(text, m.start())
            self.setFormat(string.start(), string.end() - string.start(), self.formats["string"])
            at = string.end()
        self.setCurrentBlockState(state)


class SqlEditor(QPlainTextEdit):
    """Ctrl+Enter runs, Esc cancels (taken before the window's shortcuts)."""

    run_requested = Signal()
    cancel_requested = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setFont(QFontDatabase.systemFont(QFontDatabase.FixedFont))
        self.setLineWrapMode(QPlainTextEdit.NoWrap)
        self.setTabStopDistance(4 * self.fontMetrics().horizontalAdvance(" "))
        self.setPlaceholderText("SELECT ... FROM slices ...   (Ctrl+Enter runs, Esc cancels)")
        self.highlighter = SqlHighlighter(self.document())
        self.error_color = QColor(Scheme.of().error())
        self.textChanged.connect(lambda: self.setExtraSelections([]))

    @staticmethod
    def _is_run(event) -> bool:
        return event.key() in (Qt.Key_Return, Qt.Key_Enter) and event.modifiers() & Qt.ControlModifier

    def event(self, event) -> bool:
        if event.type() == QEvent.ShortcutOverride and (self._is_run(event) or event.key() == Qt.Key_Escape):
            event.accept()
            return True
        return super().event(event)

    def keyPressEvent(self, event) -> None:
        if self._is_run(event):
            self.run_requested.emit()
        elif event.key() == Qt.Key_Escape:
            self.cancel_requested.emit()
        else:
            super().keyPressEvent(event)

    def statement(self) -> tuple[str, int]:
        """What to run: the selection, else everything; and where it starts."""
        cursor = self.textCursor()
        if cursor.hasSelection():
            return cursor.selection().toPlainText(), cursor.selectionStart()
        return self.toPlainText(), 0

    def replace_text(self, text: str) -> None:
        """Sets the text as one edit (Ctrl+Z brings the old one back)."""
        cursor = self.textCursor()
        cursor.select(QTextCursor.Document)
        cursor.insertText(text)
        cursor.movePosition(QTextCursor.Start)
        self.setTextCursor(cursor)

    def mark_error(self, position: int) -> None:
        """Underlines the word at position and puts the cursor there."""
        position = max(0, min(position, len(self.toPlainText())))
        cursor = self.textCursor()
        cursor.setPosition(position)
        self.setTextCursor(cursor)
        marked = QTextCursor(cursor)
        marked.movePosition(QTextCursor.EndOfWord, QTextCursor.KeepAnchor)
        if not marked.hasSelection():
            marked.movePosition(QTextCursor.NextCharacter, QTextCursor.KeepAnchor)
        if not marked.hasSelection():  # at the very end: the character before
            marked.movePosition(QTextCursor.PreviousCharacter, QTextCursor.KeepAnchor, 1)
        selection = QTextEdit.ExtraSelection()
        selection.cursor = marked
        selection.format.setUnderlineStyle(QTextCharFormat.WaveUnderline)
        selection.format.setUnderlineColor(self.error_color)
        selection.format.setBackground(QColor(self.error_color.red(), self.error_color.green(),
                                              self.error_color.blue(), 40))
        self.setExtraSelections([selection])
        self.setFocus()


class QueryView(QWidget):
    jump_requested = Signal(object)  # a query_model.Jump

    def __init__(self, runner, settings: QSettings, parent=None):
        super().__init__(parent)
        self.runner, self.settings = runner, settings
        self.examples = EXAMPLES  # adapted to the opened data (set_facts)
        self.model = ResultModel(self)
        self.queries = QTreeWidget(headerHidden=True)
        self.save_button = QPushButton("Save…", toolTip="Save the editor's query under a name")
        self.delete_button = QPushButton("Delete", enabled=False, toolTip="Delete the selected saved query")
        self.editor = SqlEditor()
        self.run_button = QPushButton("Run", toolTip="Run the query, or the selected part (Ctrl+Enter)")
        self.cancel_button = QPushButton("Cancel", enabled=False, toolTip="Stop the running query (Esc)")
        self.message = QLabel(wordWrap=True, textInteractionFlags=Qt.TextSelectableByMouse)
        self.message.setFont(QFontDatabase.systemFont(QFontDatabase.FixedFont))  # DuckDB's caret lines up
        self.message.hide()
        self.schema = QTreeWidget()
        self.schema.setHeaderLabels(["Table / column", "Type"])
        self.summary = QLabel("Write a query and press Ctrl+Enter, or pick an example.")
        self.table_view = QTableView()
        self.table_view.setModel(self.model)
        self.table_view.setSortingEnabled(True)
        self.table_view.setAlternatingRowColors(True)
        self.table_view.setWordWrap(False)
        self.table_view.verticalHeader().setDefaultSectionSize(22)
        self.table_view.horizontalHeader().setResizeContentsPrecision(200)  # column widths from the first rows
        self.table_view.setSelectionBehavior(QAbstractItemView.SelectItems)
        self.chart = QueryChart()
        self.chart.hide()

        buttons = QHBoxLayout()
        buttons.addWidget(self.save_button)
        buttons.addWidget(self.delete_button)
        editor_bar = QHBoxLayout()
        editor_bar.addWidget(self.run_button)
        editor_bar.addWidget(self.cancel_button)
        editor_bar.addWidget(QLabel("Ctrl+Enter runs the query (or the selection) · Esc cancels"), 1)
        top = QSplitter(Qt.Horizontal)
        for w, stretch in ((_column((self.queries, 1), (buttons, 0)), 0),
                           (_column((self.editor, 1), (self.message, 0), (editor_bar, 0)), 1), (self.schema, 0)):
            top.addWidget(w)
            top.setStretchFactor(top.count() - 1, stretch)
        top.setSizes([220, 560, 250])
        self.results = results = QSplitter(Qt.Horizontal)
        results.addWidget(self.table_view)
        results.addWidget(self.chart)
        bottom = _column((self.summary, 0), (results, 1))
        self.splitter = QSplitter(Qt.Vertical)
        self.splitter.addWidget(top)
        self.splitter.addWidget(bottom)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([260, 480])
        layout = QVBoxLayout(self)
        layout.addWidget(self.splitter)

        self._fill_schema()
        self._fill_queries()
        self.editor.setPlainText(settings.value(TEXT_KEY, "") or EXAMPLES[-1][1])
        self.editor.run_requested.connect(self.run)
        self.editor.cancel_requested.connect(self.runner.cancel)
        self.run_button.clicked.connect(self.run)
        self.cancel_button.clicked.connect(self.runner.cancel)
        self.save_button.clicked.connect(self.save_dialog)
        self.delete_button.clicked.connect(self.delete_selected)
        self.queries.itemClicked.connect(self._load_item)
        self.queries.itemActivated.connect(self._run_item)
        self.queries.currentItemChanged.connect(
            lambda item, _: self.delete_button.setEnabled(item is not None and bool(item.data(0, ROLE_SAVED))))
        self.schema.itemDoubleClicked.connect(self._insert_name)
        self.table_view.activated.connect(self._jump)
        self.model.sort_requested.connect(lambda column, desc: self.runner.sort(self.model.table, column, desc))
        self.table_view.installEventFilter(self)  # Ctrl+C: the selection, not only the current cell
        runner.finished.connect(self.show_outcome)
        runner.facts_changed.connect(self.set_facts)
        runner.failed.connect(self.show_error)
        runner.sorted.connect(self._apply_order)
        runner.busy_changed.connect(self.cancel_button.setEnabled)
        follow(self, self._apply_scheme)

    def _apply_scheme(self, scheme: Scheme) -> None:
        self.editor.highlighter.set_scheme(scheme)
        self.editor.error_color = QColor(scheme.error())
        self.message.setStyleSheet(f"color: {scheme.error().name()}; padding: 4px")
        self.summary.setStyleSheet(f"color: {scheme.secondary().name()}")

    # ------------------------------------------------------------ queries and schema

    def _fill_schema(self) -> None:
        for table in TABLES:
            item = QTreeWidgetItem(self.schema, [table, "view" if table in NEEDS else "table"])
            for name, type_ in SCHEMA[table]:
                QTreeWidgetItem(item, [name, type_])
        self.schema.resizeColumnToContents(0)
        self.schema.setToolTip("Double-click a name to insert it; docs/SQL.md says what each column means")

    def saved(self) -> list[tuple[str, str]]:
        try:
            return [(str(name), str(sql)) for name, sql in json.loads(self.settings.value(SAVED_KEY, "[]") or "[]")]
        except (ValueError, TypeError):
            return []

    def _fill_queries(self) -> None:
        self.queries.clear()
        for title, entries, saved in (("Examples", self.examples, False), ("Saved queries", self.saved(), True)):
            group = QTreeWidgetItem(self.queries, [title])
            group.setFlags(Qt.ItemIsEnabled)
            for name, sql in entries:
                item = QTreeWidgetItem(group, [name])
                item.setData(0, ROLE_SQL, sql)
                item.setData(0, ROLE_SAVED, saved)
                item.setToolTip(0, sql)
        self.queries.expandAll()

    def set_facts(self, facts) -> None:
        """The opened data's steps, metrics and hparams: the examples use them."""
        examples = adapted(facts)
        if examples != self.examples:
            self.examples = examples
            self._fill_queries()

    def save_query(self, name: str, sql: str) -> None:
        """Saves (or replaces) a named query in the settings."""
        entries = [(n, s) for n, s in self.saved() if n != name] + [(name, sql)]
        self.settings.setValue(SAVED_KEY, json.dumps(entries))
        self._fill_queries()

    def delete_query(self, name: str) -> None:
        self.settings.setValue(SAVED_KEY, json.dumps([(n, s) for n, s in self.saved() if n != name]))
        self._fill_queries()

    def save_dialog(self) -> None:
        sql = self.editor.toPlainText().strip()
        if not sql:
            return
        first = sql.splitlines()[0].lstrip("- ").strip()
        name, ok = QInputDialog.getText(self, "Save query", "Name:", text=first[:60])
        if ok and name.strip():
            self.save_query(name.strip(), sql)

    def delete_selected(self) -> None:
        item = self.queries.currentItem()
        if item is not None and item.data(0, ROLE_SAVED):
            self.delete_query(item.text(0))

    def _load_item(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        if item.data(0, ROLE_SQL):
            self.editor.replace_text(item.data(0, ROLE_SQL))

    def _run_item(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        if item.data(0, ROLE_SQL):
            self._load_item(item)
            self.run()

    def _insert_name(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        self.editor.insertPlainText(item.text(0))
        self.editor.setFocus()

    def set_location(self, path: str | None) -> None:
        """Another location was opened (None: none is): the rows, chart and messages were the previous one's."""
        self.model.set_result(pa.table({}))
        self.show_chart(None)
        self.message.hide()
        self.editor.setExtraSelections([])
        self.summary.setText(f"Queries run over {path}: write one and press Ctrl+Enter, or pick an example."
                             if path else "Open a profile or a log dir: queries run over what it holds.")

    # ------------------------------------------------------------ running

    def run(self) -> None:
        sql, offset = self.editor.statement()
        if not sql.strip():
            self.show_error("Nothing to run: write a query first.", None)
            return
        self.settings.setValue(TEXT_KEY, self.editor.toPlainText())
        self.message.hide()
        self.editor.setExtraSelections([])
        self.summary.setText("Running…")
        self.runner.run(sql, offset)

    def show_outcome(self, outcome) -> None:
        table = outcome.result.table
        self.message.setVisible(bool(outcome.warnings))
        self.message.setText("Not loaded: " + "; ".join(outcome.warnings) if outcome.warnings else "")
        self.table_view.horizontalHeader().setSortIndicator(-1, Qt.AscendingOrder)
        self.model.set_result(table)
        self.table_view.resizeColumnsToContents()
        for column in range(table.num_columns):  # long names and texts: keep every column in sight
            self.table_view.setColumnWidth(column, min(self.table_view.columnWidth(column), 320))
        self.show_chart(outcome.chart)
        rows = f"{table.num_rows:,} row{'s' if table.num_rows != 1 else ''}"
        if outcome.result.truncated:
            rows = f"the first {rows} (the query has more)"
        jump = self.model.jump(0) if table.num_rows else None
        hint = f" · {HINTS[jump.kind]}" if jump is not None else ""
        why = f" · {outcome.why_empty}" if outcome.why_empty else ""
        self.summary.setText(f"{rows} in {format_time_ps(outcome.seconds * 1e12)}{hint}{why}")

    def show_chart(self, data) -> None:
        self.chart.set_data(data)
        if data is not None and not self.chart.isVisible():  # hidden, its width was 0: share the room
            self.chart.show()
            width = self.results.width()
            self.results.setSizes([width * 11 // 20, width - width * 11 // 20])
        self.chart.setVisible(data is not None)

    def show_error(self, message: str, position: int | None) -> None:
        self.message.setText(message)
        self.message.show()
        self.model.set_result(pa.table({}))  # the rows above were another query's
        self.show_chart(None)
        self.summary.setText("The query failed." if position is None else "The query failed: the underlined place.")
        if position is not None:
            self.editor.mark_error(position)

    def _apply_order(self, table, column: int, descending: bool, order: np.ndarray) -> None:
        if table is self.model.table:  # a newer result replaced it meanwhile
            self.model.set_order(order)
            self.table_view.horizontalHeader().setSortIndicator(
                column, Qt.DescendingOrder if descending else Qt.AscendingOrder)

    # ------------------------------------------------------------ rows

    def copy_selection(self) -> None:
        """The selected cells' rows and columns as tab-separated text, with a header."""
        ranges = self.table_view.selectionModel().selection()
        if ranges.isEmpty():
            return
        rows = np.unique(np.concatenate([np.arange(r.top(), r.bottom() + 1) for r in ranges]))
        columns = sorted({c for r in ranges for c in range(r.left(), r.right() + 1)})
        note = ""
        if len(rows) > COPY_ROWS:
            rows, note = rows[:COPY_ROWS], f" (the first {COPY_ROWS:,}; `profscope query` writes them all)"
        QGuiApplication.clipboard().setText(self.model.rows_as_tsv(rows, columns))
        self.summary.setText(f"Copied {len(rows):,} row{'s' if len(rows) != 1 else ''}{note}.")

    def eventFilter(self, obj, event) -> bool:
        if obj is self.table_view and event.type() == QEvent.KeyPress and event.matches(QKeySequence.Copy):
            self.copy_selection()
            return True
        return super().eventFilter(obj, event)

    def _jump(self, index) -> None:
        jump = self.model.jump(index.row())
        if jump is None:
            self.summary.setText("This row has no slice id (session, host, id), start_ns or memory snapshot "
                                 "(allocator, snapshot) to show.")
        else:
            self.jump_requested.emit(jump)
