"""The pages of XProf's tools: each a QWidget with set_data(the tool's JSON)."""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QScrollArea, QVBoxLayout, QWidget

from profscope.widgets.xprof.step_chart import StepChart
from profscope.widgets.xprof.table_page import DataTablePage


def _p(table) -> dict:
    return table.get("p", {}) if isinstance(table, dict) else {}


def _label(text: str = "") -> QLabel:
    label = QLabel(text)
    label.setWordWrap(True)
    label.setTextFormat(Qt.RichText)
    label.setOpenExternalLinks(True)
    label.setTextInteractionFlags(Qt.TextBrowserInteraction)
    return label


def averages_html(p: dict) -> str:
    """The step-time table's averages (± standard deviation), in ms."""
    parts = (("Step time", "steptime_ms_average", "steptime_ms_standard_deviation"),
             ("Device compute", "device_compute_time_ms_avg", "device_compute_time_ms_sdv"),
             ("Host compute", "host_compute_time_ms_avg", "host_compute_time_ms_sdv"),
             ("Kernel launch", "kernel_launch_time_ms_avg", "kernel_launch_time_ms_sdv"),
             ("Input", "infeed_time_ms_avg", "infeed_time_ms_sdv"),
             ("Output", "outfeed_time_ms_avg", "outfeed_time_ms_sdv"),
             ("Compilation", "compile_time_ms_avg", "compile_time_ms_sdv"),
             ("All others", "other_time_ms_avg", "other_time_ms_sdv"),
             # TPU hosts: averages only
             ("TensorCore compute", "tc_compute_ms_average", ""), ("TensorCore input", "tc_infeed_ms_average", ""),
             ("TensorCore output", "tc_outfeed_ms_average", ""), ("TensorCore idle", "tc_idle_ms_average", ""),
             ("Host transfer", "host_transfer_ms_average", ""))
    cells = [f"<td>{title}</td><td align='right'>{html.escape(p.get(avg, '0.0'))} ms</td>"
             + (f"<td>± {html.escape(p.get(sdv, '0.0'))}</td>" if sdv else "<td></td>")
             for title, avg, sdv in parts if avg in p]
    return "<table cellspacing='6'>" + "".join(f"<tr>{c}</tr>" for c in cells) + "</table>"


class OverviewPage(QWidget):
    """XProf's overview: the step-time chart, its averages, the bottleneck
    statement with recommendations and the run environment."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.chart = StepChart()
        self.statement = _label()
        self.averages = _label()
        self.environment = _label()
        self.recommendations = _label()
        self.diagnostics = _label()
        inner = QWidget()
        layout = QVBoxLayout(inner)
        layout.addWidget(self.statement)
        layout.addWidget(self.chart, 1)
        row = QHBoxLayout()
        row.addWidget(self.averages, 1, Qt.AlignTop)
        row.addWidget(self.environment, 1, Qt.AlignTop)
        layout.addLayout(row)
        layout.addWidget(self.recommendations)
        layout.addWidget(self.diagnostics)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(inner)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(scroll)

    def set_data(self, data) -> None:
        tables = data if isinstance(data, list) else []
        get = (lambda k: tables[k] if k < len(tables) and isinstance(tables[k], dict) else {})
        steps, env, rec, diag = get(1), get(2), get(3), get(6)
        self.chart.set_table(steps)
        rp = _p(rec)
        bottleneck = rp.get("bottleneck", "")
        extra = [rp.get(k, "") for k in ("kernel_launch_statement", "all_other_statement",
                                          "device_collectives_statement", "precision_statement") if rp.get(k)]
        statement = rp.get("statement", "")
        if not bottleneck and not statement and _p(steps).get("input_conclusion"):
            # A TPU host: XProf states its bottleneck with the step table (input, then output).
            statement = _p(steps)["input_conclusion"]
            extra = [_p(steps)["output_conclusion"]] if _p(steps).get("output_conclusion") else []
        heading = f"Bottleneck: {html.escape(bottleneck)}" if bottleneck else "Bottleneck" if statement else (
            "Bottleneck: unknown")
        self.statement.setText(f"<h3>{heading}</h3><p>{html.escape(statement)}</p>"
                               + "".join(f"<p>{html.escape(s)}</p>" for s in extra))
        self.averages.setText("<b>Average step time</b>" + averages_html(_p(steps)))
        ep = _p(env)
        self.environment.setText(
            "<b>Run environment</b><table cellspacing='6'>"
            + "".join(f"<tr><td>{title}</td><td>{html.escape(str(ep.get(key, '')))}</td></tr>" for title, key in (
                ("Hosts", "host_count"), ("Device type", "device_type"), ("Device cores", "device_core_count"),
                ("Training", "is_training"))) + "</table>")
        groups: dict[str, list[str]] = {}
        for row in rec.get("rows", []) if isinstance(rec, dict) else []:
            cells = [c.get("v", "") if c else "" for c in row.get("c", [])]
            if len(cells) >= 3:
                groups.setdefault(str(cells[2]), []).append(str(cells[1]))  # links are XProf's own HTML
        self.recommendations.setText("<b>Recommendations</b>" + "".join(
            f"<p><i>{html.escape(title)}</i><ul>{''.join(f'<li>{link}</li>' for link in links)}</ul></p>"
            for title, links in groups.items()))
        messages = [f"{c[0].get('v', '')}: {html.escape(str(c[1].get('v', '')))}"
                    for c in (r.get("c", []) for r in diag.get("rows", [])) if len(c) >= 2]
        self.diagnostics.setText("<br>".join(messages))
        self.diagnostics.setVisible(bool(messages))


class InputPipelinePage(QWidget):
    """XProf's input pipeline analysis: the input-bound statement, the step
    chart and the host's input ops."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.statement = _label()
        self.chart = StepChart()
        self.ops = DataTablePage("Host input ops", "opName", "category", shares=("timeInPercent",
                                                                                 "selfTimeInPercent"),
                                 empty="No tf.data input ops on the host in this profile.", noun="input ops")
        layout = QVBoxLayout(self)
        layout.addWidget(self.statement)
        layout.addWidget(self.chart, 1)
        layout.addWidget(self.ops, 2)

    def op_tables(self) -> list:
        return self.ops.op_tables()

    def set_data(self, data) -> None:
        tables = data if isinstance(data, list) else []
        steps = tables[1] if len(tables) > 1 else {}
        host = tables[2] if len(tables) > 2 else {}
        p = _p(steps)
        self.statement.setText(f"<p>{html.escape(p.get('input_conclusion', ''))}</p>"
                               f"<p>{p.get('summary_nextstep', '')}</p>")  # XProf's HTML (a link)
        self.chart.set_table(steps)
        hp = _p(host)
        breakdown = ", ".join(f"{title} {float(hp.get(key, 0) or 0) / 1000:.2f} ms" for title, key in (
            ("enqueue", "enqueue_us"), ("demanded file read", "demanded_file_read_us"),
            ("advanced file read", "advanced_file_read_us"), ("preprocessing", "preprocessing_us"),
            ("other", "unclassified_nonequeue_us")))
        self.ops.set_table(host, f"Input time on the host: {breakdown}" if hp else "")


class FrameworkOpsPage(QWidget):
    """XProf's TensorFlow / JAX op statistics, with IDLE or without."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.idle = QCheckBox("Include IDLE")
        self.idle.toggled.connect(self._show)
        self.table = DataTablePage("Framework ops", "operation", "type",
                                   shares=("host_total_self_time_percent", "device_total_self_time_percent",
                                           "Host_cumulative_total_self_time_percent",
                                           "device_cumulative_total_self_time_percent"),
                                   empty="No framework ops in this profile: XProf counts TensorFlow ops on the "
                                         "host and the ops of device (GPU, TPU) planes.", noun="ops")
        layout = QVBoxLayout(self)
        layout.addWidget(self.idle)
        layout.addWidget(self.table, 1)
        self.data: list = []

    def op_tables(self) -> list:
        return self.table.op_tables()

    def set_data(self, data) -> None:
        self.data = data if isinstance(data, list) else []
        self._show()

    def _show(self) -> None:
        k = 0 if self.idle.isChecked() else 1
        self.table.set_table(self.data[k] if k < len(self.data) else None)


class KernelsPage(QWidget):
    """XProf's GPU kernel statistics."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.table = DataTablePage("Kernels", "kernel_name", "op_name", noun="kernels")
        layout = QVBoxLayout(self)
        layout.addWidget(self.table)

    def op_tables(self) -> list:
        return self.table.op_tables()

    def set_data(self, data) -> None:
        table = data if isinstance(data, dict) else None
        empty = not (table or {}).get("rows")
        self.table.set_table(table, "No GPU kernels in this profile." if empty else "")
