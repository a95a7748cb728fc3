"""The filter panel: one control per hparam and metric, built from the
values the groups hold: checkboxes for small discrete sets, a regexp field
for strings, a range slider for numbers; each with "exclude missing".
`changed` fires on every edit (the view debounces typing)."""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QValidator
from PySide6.QtWidgets import (
    QCheckBox,
    QDoubleSpinBox,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)
from superqt import QDoubleRangeSlider

from profscope.models.hparams.experiment import (
    BOOL,
    MISSING,
    NUMBER,
    STRING,
    Column,
    HParamsError,
    compile_regexp,
    format_value,
)
from profscope.protos import api_pb2
from profscope.widgets.hparams.scales import LINEAR, Scale, make_scale
from profscope.widgets.palette import Scheme

MAX_CHECKBOXES = 12  # more distinct values than this: a regexp field or a range


class ValueBox(QDoubleSpinBox):
    """A number field that shows six significant digits (1e-05, 0.000123,
    12345.7) and keeps the exact value typed; no rounding to decimals."""

    def __init__(self, lo: float, hi: float, value: float):
        super().__init__(decimals=300, minimum=lo, maximum=hi, value=value)  # 300: never rounds
        self.setStepType(QDoubleSpinBox.AdaptiveDecimalStepType)
        self.setKeyboardTracking(False)

    def textFromValue(self, value: float) -> str:
        return f"{value:.6g}"

    def valueFromText(self, text: str) -> float:
        try:
            return float(text)
        except ValueError:
            return self.value()

    def validate(self, text: str, pos: int):
        try:
            float(text)
            return QValidator.Acceptable, text, pos
        except ValueError:
            return QValidator.Intermediate, text, pos


class RangeControl(QWidget):
    """Min and max fields over a range slider; value() is (lo, hi).
    The slider moves along the column's scale (a log scale gives each
    decade the same room); the fields hold exact values."""

    changed = Signal()

    def __init__(self, lo: float, hi: float, scale: Scale, parent=None):
        super().__init__(parent)
        span = (hi - lo) or 1.0
        self.full_range = (lo, lo + span)
        self.scale = scale
        self._value = self.full_range
        self.slider = QDoubleRangeSlider(Qt.Horizontal)
        self.slider.setRange(0.0, 1.0)
        self.low, self.high = (ValueBox(*self.full_range, v) for v in self.full_range)
        row = QHBoxLayout()
        row.addWidget(self.low)
        row.addWidget(QLabel("to"))
        row.addWidget(self.high)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(row)
        layout.addWidget(self.slider)
        self._show()
        self.slider.valueChanged.connect(self._from_slider)
        self.low.valueChanged.connect(self._from_fields)
        self.high.valueChanged.connect(self._from_fields)

    def value(self) -> tuple[float, float]:
        return self._value

    def setValue(self, value: tuple[float, float]) -> None:
        a, b = self.full_range
        lo, hi = sorted(value)
        value = (min(max(lo, a), b), min(max(hi, a), b))
        if value != self._value:
            self._value = value
            self._show()
            self.changed.emit()

    def _show(self) -> None:
        """The fields and the slider's handles at the current values, quietly."""
        lo, hi = self._value
        t0 = 0.0 if lo <= self.full_range[0] else float(self.scale.unit(lo))
        t1 = 1.0 if hi >= self.full_range[1] else float(self.scale.unit(hi))
        for widget, v in ((self.low, lo), (self.high, hi), (self.slider, (t0, t1))):
            widget.blockSignals(True)
            widget.setValue(v)
            widget.blockSignals(False)

    def set_scale(self, scale: Scale) -> None:
        self.scale = scale
        self._show()

    def _from_slider(self, value) -> None:
        t0, t1 = value
        lo, hi = self.scale.interval(t0, t1)
        # A handle at its end is the end of the data, whatever the scale's margins.
        self.setValue((self.full_range[0] if t0 <= 0 else lo, self.full_range[1] if t1 >= 1 else hi))

    def _from_fields(self) -> None:
        self.setValue((self.low.value(), self.high.value()))


class ColumnFilter(QGroupBox):
    """One column's filter. apply(cp) writes it into a ColParams."""

    changed = Signal()

    def __init__(self, title: str, column: Column, is_metric: bool = False, scale: str = LINEAR, parent=None):
        super().__init__(title if len(title) <= 34 else title[:15] + "…" + title[-18:], parent)
        self.scale_kind = scale
        self.kind = None  # "range", "discrete" or "regexp" once built
        self.setToolTip(title)
        self.layout_ = QVBoxLayout(self)
        self.layout_.setContentsMargins(6, 4, 6, 4)
        self.exclude_missing = QCheckBox("Exclude missing values")
        self.exclude_missing.setVisible(bool((column.kind == MISSING).any()))
        self.exclude_missing.toggled.connect(self.changed)
        self.control = self._build(column, is_metric)
        self.layout_.addWidget(self.exclude_missing)

    def _build(self, column: Column, is_metric: bool):
        present = column.kind != MISSING
        kinds = set(column.kind[present].tolist())
        distinct = list(dict.fromkeys(v for v in column.values if v is not None and not isinstance(v, (list, dict))))
        numeric = kinds <= {NUMBER, BOOL} and NUMBER in kinds
        if numeric and (is_metric or len(distinct) > 6):
            self.finite = column.number[present & np.isfinite(column.number)]
            if len(self.finite):
                return self._range(float(self.finite.min()), float(self.finite.max()))
        if len(distinct) <= MAX_CHECKBOXES and distinct:
            return self._checkboxes(sorted(distinct, key=lambda v: (isinstance(v, str), v)))
        if STRING in kinds:
            return self._regexp()
        return None

    def _checkboxes(self, values: list) -> list[tuple[QCheckBox, object]]:
        boxes = []
        row = QHBoxLayout()
        for value in values:
            box = QCheckBox(format_value(value), checked=True)
            box.toggled.connect(self.changed)
            row.addWidget(box)
            boxes.append((box, value))
            if len(boxes) % 3 == 0:
                self.layout_.addLayout(row)
                row = QHBoxLayout()
        self.layout_.addLayout(row)
        self.kind = "discrete"
        return boxes

    def _regexp(self) -> QLineEdit:
        edit = QLineEdit(placeholderText="regular expression (partial match)")
        edit.setClearButtonEnabled(True)
        edit.textChanged.connect(self._check_regexp)
        self.layout_.addWidget(edit)
        self.kind = "regexp"
        return edit

    def _range(self, lo: float, hi: float) -> RangeControl:
        control = RangeControl(lo, hi, make_scale(self.scale_kind, self.finite))
        control.changed.connect(self.changed)
        self.layout_.addWidget(control)
        self.kind = "range"
        self.full_range = control.full_range
        return control

    def set_scale(self, kind: str) -> None:
        """Moves the slider along another scale; the bounds set stay."""
        self.scale_kind = kind
        if self.kind == "range":
            self.control.set_scale(make_scale(kind, self.finite))

    def _check_regexp(self, text: str) -> None:
        try:
            compile_regexp(text)
            self.control.setStyleSheet("")
            self.control.setToolTip("")
        except HParamsError as e:
            self.control.setStyleSheet(f"border: 1px solid {Scheme.of(self.control).error().name()}")
            self.control.setToolTip(str(e))
        self.changed.emit()

    def is_active(self) -> bool:
        if self.exclude_missing.isChecked():
            return True
        if self.control is None:
            return False
        if self.kind == "discrete":
            return not all(box.isChecked() for box, _ in self.control)
        if self.kind == "regexp":
            return bool(self.control.text())
        return not self._at_ends()

    def _ends(self) -> tuple[bool, bool]:
        """Whether each bound is at the end of the data (no bound)."""
        lo, hi = self.control.value()
        tolerance = (self.full_range[1] - self.full_range[0]) * 1e-12
        return lo <= self.full_range[0] + tolerance, hi >= self.full_range[1] - tolerance

    def _at_ends(self) -> bool:
        return all(self._ends())

    def apply(self, cp: api_pb2.ColParams) -> None:
        cp.exclude_missing_values = self.exclude_missing.isChecked()
        if self.control is None:
            return
        if self.kind == "discrete":
            if not all(box.isChecked() for box, _ in self.control):
                cp.filter_discrete.SetInParent()
                cp.filter_discrete.extend([v for box, v in self.control if box.isChecked()])
        elif self.kind == "regexp":
            text = self.control.text()
            try:
                if text:
                    compile_regexp(text)
                    cp.filter_regexp = text
            except HParamsError:
                pass  # shown on the field; the filter waits for a valid pattern
        elif not self._at_ends():
            lo, hi = self.control.value()
            low_end, high_end = self._ends()
            # A bound at the end of the data means "no bound" (infinities pass too).
            cp.filter_interval.min_value = -math.inf if low_end else lo
            cp.filter_interval.max_value = math.inf if high_end else hi

    def state(self) -> dict:
        """What the user set, in values (not positions), for restore()."""
        out = {"exclude": self.exclude_missing.isChecked()}
        if self.kind == "discrete":
            out["unchecked"] = [(type(v), v) for box, v in self.control if not box.isChecked()]
        elif self.kind == "regexp":
            out["regexp"] = self.control.text()
        elif self.kind == "range":
            (lo, hi), (low_end, high_end) = self.control.value(), self._ends()
            out["range"] = (None if low_end else lo, None if high_end else hi)
        return out

    def restore(self, state: dict) -> None:
        """A state() taken over another set of values: values new since stay
        allowed, a bound at the end of the data stays at the (new) end."""
        self.blockSignals(True)
        self.exclude_missing.setChecked(state.get("exclude", False))
        if self.kind == "discrete" and "unchecked" in state:
            for box, v in self.control:
                box.setChecked((type(v), v) not in state["unchecked"])
        elif self.kind == "regexp" and "regexp" in state:
            self.control.setText(state["regexp"])
        elif self.kind == "range" and "range" in state:
            lo, hi = state["range"]
            self.control.setValue((self.full_range[0] if lo is None else lo, self.full_range[1] if hi is None else hi))
        self.blockSignals(False)

    def set_interval(self, lo: float | None, hi: float | None) -> None:
        """Sets a range filter (from brushing); None clears it."""
        if self.kind != "range":
            return
        a, b = self.full_range
        self.control.setValue((a, b) if lo is None else (max(a, lo), min(b, hi)))


class FilterPanel(QScrollArea):
    changed = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.setMinimumWidth(340)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.status_boxes = {s: QCheckBox(name.removeprefix("STATUS_").lower(), checked=True)
                             for name, s in api_pb2.Status.items()}
        for box in self.status_boxes.values():
            box.toggled.connect(self.changed)
        self.filters: dict[tuple[str, object], ColumnFilter] = {}
        self._build({}, {})

    def _build(self, columns: dict, scales: dict) -> None:
        body = QWidget()
        layout = QVBoxLayout(body)
        statuses = QGroupBox("Session status")
        row = QHBoxLayout(statuses)
        for box in self.status_boxes.values():
            row.addWidget(box)  # moves the boxes into the new panel
        layout.addWidget(statuses)
        self.filters = {}
        for key, (title, column) in columns.items():
            f = ColumnFilter(title, column, is_metric=key[0] == "metric", scale=scales.get(key, LINEAR))
            f.changed.connect(self.changed)
            layout.addWidget(f)
            self.filters[key] = f
        if not columns:
            layout.addWidget(QLabel("Open a log dir with HParams data."))
        layout.addStretch(1)
        self.setWidget(body)
        # Scrolls vertically only, so it is never narrower than its widest filter.
        self.setMinimumWidth(max(340, body.minimumSizeHint().width() + self.verticalScrollBar().sizeHint().width()
                                 + 2 * self.frameWidth()))

    def set_columns(self, columns: dict, scales: dict | None = None, state: dict | None = None) -> None:
        """columns: (kind, key) -> (title, Column), in display order; scales:
        (kind, key) -> the scale its range slider moves along; state: a
        state() of the panel before (new values join what the user set)."""
        self._build(columns, scales or {})
        for key, f in self.filters.items():
            if key in (state or {}):
                f.restore(state[key])

    def state(self) -> dict:
        """The filters the user set, by column."""
        return {key: f.state() for key, f in self.filters.items() if f.is_active()}

    def allowed_statuses(self) -> list[int]:
        return [s for s, box in self.status_boxes.items() if box.isChecked()]
