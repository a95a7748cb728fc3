"""Axes of the memory plots (the Memory tab, the Compare tab's memory curves,
the report's PNGs, which render those widgets): bytes in binary units with
ticks at round values of the unit shown, time in picoseconds labelled in the
unit that suits the tick spacing. Every label is its tick's value."""

from __future__ import annotations

import math

import pyqtgraph as pg

from profscope.models.core.units import byte_unit, time_unit

NICE_STEPS = (1.0, 2.0, 2.5, 5.0, 10.0)  # x 10^k of the unit shown
TICK_PX = 35  # the least room between two labelled ticks


def nice_step(span: float) -> float:
    """1, 2 or 5 times a power of ten, at least `span`."""
    if span <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(span))
    for m in (1, 2, 5, 10):
        if m * power >= span:
            return m * power
    return 10 * power


def _digits(step: float) -> int:
    """Decimals that write every multiple of `step` (1, 2, 2.5 or 5 x 10^k) exactly."""
    for d in range(7):
        if abs(round(step, d) - step) <= step * 1e-9:
            return d
    return 6


def byte_ticks(lo: float, hi: float, length_px: float) -> tuple[tuple[int, str], int, list[tuple[float, list[float]]]]:
    """Ticks of a byte axis showing lo..hi over length_px pixels: the unit
    (bytes, name), the labels' decimals, and pyqtgraph's tick levels (major
    spacing and values in bytes, then the minor ones). Major ticks are 1, 2,
    2.5 or 5 x 10^k of the unit (whole bytes at least), at least TICK_PX apart."""
    size, name = byte_unit(max(abs(lo), abs(hi)))
    span = (hi - lo) / size
    if not (span > 0 and math.isfinite(span)):
        return (size, name), 0, []
    raw = span / max(2.0, length_px / TICK_PX)
    exp = math.floor(math.log10(raw))
    step = next(m * 10.0**exp for m in NICE_STEPS if m * 10.0**exp >= raw * (1 - 1e-9))
    if size == 1:
        step = max(step, 1.0)
    per = 4 if round(step / 10.0 ** math.floor(math.log10(step)), 6) == 2 else 5  # minor ticks per major
    levels = []
    for spacing, every in ((step, 1), (step / per, per)):
        first, last = math.ceil(lo / size / spacing - 1e-9), math.floor(hi / size / spacing + 1e-9)
        # The minor level leaves out the major ticks.
        levels.append((spacing * size, [k * spacing * size for k in range(first, last + 1) if every == 1 or k % every]))
    return (size, name), _digits(step), levels


def whole_number_ticks(levels: list, low: float, high: float) -> list:
    """pyqtgraph's tick levels kept to whole numbers (steps, epochs): levels finer than 1 dropped, and every
    whole number when only a few are in view."""
    whole = [(spacing, [v for v in values if float(v).is_integer()]) for spacing, values in levels if spacing >= 1]
    if not whole and high - low < 100:
        whole = [(1.0, [float(v) for v in range(math.ceil(low), math.floor(high) + 1)])]
    return whole


class StepAxis(pg.AxisItem):
    """An axis of whole numbers (training steps): no tick at 0.2 of a step."""

    def tickValues(self, minVal, maxVal, size):  # noqa: N802 (pyqtgraph's name)
        return whole_number_ticks(super().tickValues(minVal, maxVal, size), minVal, maxVal)


class _TickAxis(pg.AxisItem):
    """An axis whose labels use one unit for every tick level (and for its
    title, set only when the unit changes). `title` names what it shows."""

    def __init__(self, orientation, title: str = ""):
        super().__init__(orientation)
        self.enableAutoSIPrefix(False)
        self.name = title or self.NAME
        self._ticks_key = self._ticks = None
        self._unit = self.unit_for(1.0, [1.0])
        self._digits = 0
        self.setLabel(self.title(self._unit[1]))  # its room is kept from the start: a unit change moves nothing

    def tickValues(self, minVal, maxVal, size):
        # Asked twice a frame, by the axis and by the plot's grid: computed once.
        key = (minVal, maxVal, size)
        if key != self._ticks_key:
            self._ticks_key = key
            unit, self._ticks = self.levels(minVal, maxVal, size)
            if unit is not None and unit != self._unit:
                self._unit = unit
                self.setLabel(self.title(unit[1]))
        return self._ticks

    def grid_ticks(self) -> list[tuple[float, list[float]]]:
        """The tick levels the axis draws at its current range and length."""
        length = (self.width() if self.orientation in ("bottom", "top") else self.height()) + 2
        return self.tickValues(self.range[0], self.range[1], length) if length > 2 else []

    def title(self, unit: str) -> str:
        return f"{self.name} ({unit})"


class TimeAxis(_TickAxis):
    """Picosecond values shown in the unit that suits the tick spacing
    (pyqtgraph's 1, 2, 5 x 10^k ps: round in every time unit)."""

    NAME = "time"

    @staticmethod
    def unit_for(spacing, values):
        return time_unit(spacing * 10)

    def levels(self, lo, hi, size):
        ticks = pg.AxisItem.tickValues(self, lo, hi, size)
        return (self.unit_for(*ticks[0]) if ticks and ticks[0][1] else None), ticks

    def tickStrings(self, values, scale, spacing):
        size = self._unit[0]
        digits = max(0, min(6, math.ceil(-math.log10(spacing / size)))) if spacing > 0 else 0
        return [f"{v / size:.{digits}f}" for v in values]


class BytesAxis(_TickAxis):
    """Byte values in B / KiB / MiB / GiB, ticks at round values of that unit
    (byte_ticks); only the major ticks are labelled."""

    NAME = "memory"

    def __init__(self, orientation, title: str = ""):
        super().__init__(orientation, title)
        self.setStyle(maxTextLevel=0)

    @staticmethod
    def unit_for(spacing, values):
        return byte_unit(max(abs(v) for v in values))

    def levels(self, lo, hi, size):
        unit, self._digits, ticks = byte_ticks(lo, hi, size)
        return unit, ticks

    def tickStrings(self, values, scale, spacing):
        size = self._unit[0]
        return [f"{v / size:.{self._digits}f}" for v in values]
