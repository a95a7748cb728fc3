"""Per-column scales of the HParams views (linear, logarithmic, quantile, as
TensorBoard's scale controls offer) and the axes built on them; the
parallel coordinates, the scatter matrix and the range sliders share them.

A scale maps a column's numbers to positions in [0, 1] and a range of
positions back to the closed interval of values it covers (what a brush or
a slider handle turns into as a filter). Domains span every group of the
table, not only the filtered ones, so brushing does not move the axes.
No Qt here: numpy only."""

from __future__ import annotations

import math

import numpy as np

from profscope.models.hparams.experiment import BOOL, MISSING, NUMBER, OTHER, STRING, Column, format_value

LINEAR, LOG, QUANTILE = "linear", "log", "quantile"
SCALES = ((LINEAR, "Linear"), (LOG, "Logarithmic"), (QUANTILE, "Quantile"))
QUANTILE_LEVELS = 20  # TensorBoard's number of quantiles
LOG_DEFAULT_DECADES = 2  # a positive hparam spanning this many decades gets a log axis


def default_scale(values: np.ndarray, is_hparam: bool) -> str:
    """Log for a numeric hparam whose values are all positive and span at
    least two decades (learning rates, weight decays); linear otherwise."""
    values = values[np.isfinite(values)]
    if is_hparam and len(values) and values.min() > 0 and values.max() >= values.min() * 10 ** LOG_DEFAULT_DECADES:
        return LOG
    return LINEAR


def make_scale(kind: str, values: np.ndarray) -> Scale:
    """The scale of a column's numbers (NaN ignored). A log scale over values
    at or below zero falls back to linear, with a note saying so."""
    values = np.sort(values[np.isfinite(values)])
    if kind == LOG:
        if len(values) and values[0] > 0:
            return LogScale(values)
        return LinearScale(values, requested=LOG, note="log scale needs values above 0; shown linear")
    if kind == QUANTILE:
        return QuantileScale(values)
    return LinearScale(values)


def _extent(values: np.ndarray) -> tuple[float, float]:
    """[min, max] widened when it is a single point, as TensorBoard does
    (never across 0, so that a log scale stays possible)."""
    if not len(values):
        return 1.0, 2.0
    lo, hi = float(values[0]), float(values[-1])
    if lo < hi:
        return lo, hi
    if lo > 0:
        return lo * 0.5, lo * 1.5
    if lo < 0:
        return lo * 1.5, lo * 0.5
    return -1.0, 1.0


class Scale:
    kind = LINEAR

    def __init__(self, values: np.ndarray, requested: str | None = None, note: str = ""):
        self.lo, self.hi = _extent(values)
        self.requested = requested or self.kind
        self.note = note

    def unit(self, x) -> np.ndarray:
        """Positions in [0, 1] (NaN stays NaN)."""
        raise NotImplementedError

    def interval(self, t0: float, t1: float) -> tuple[float, float]:
        """The closed interval of values whose positions lie in [t0, t1]."""
        raise NotImplementedError

    def ticks(self, count: int) -> list[tuple[float, str]]:
        """About `count` labelled positions."""
        raise NotImplementedError


class LinearScale(Scale):
    kind = LINEAR

    def unit(self, x) -> np.ndarray:
        return np.clip((np.asarray(x, np.float64) - self.lo) / (self.hi - self.lo), 0.0, 1.0)

    def interval(self, t0: float, t1: float) -> tuple[float, float]:
        span = self.hi - self.lo
        return self.lo + t0 * span, self.hi if t1 >= 1 else self.lo + t1 * span

    def ticks(self, count: int) -> list[tuple[float, str]]:
        step = _nice_step((self.hi - self.lo) / max(count, 1))
        first = math.ceil(self.lo / step - 1e-9)
        values = [(first + i) * step for i in range(int((self.hi - self.lo) / step + 1e-9) + 2)]
        return [(float(self.unit(v)), format_value(_round(v, step))) for v in values if v <= self.hi + step * 1e-9]


class LogScale(Scale):
    kind = LOG

    def __init__(self, values: np.ndarray):
        super().__init__(values)
        self._a, self._b = math.log10(self.lo), math.log10(self.hi)

    def unit(self, x) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            logs = np.log10(np.asarray(x, np.float64))
        return np.clip((logs - self._a) / (self._b - self._a), 0.0, 1.0)

    def interval(self, t0: float, t1: float) -> tuple[float, float]:
        span = self._b - self._a
        # The ends exactly: 10 ** log10(x) may miss x by a rounding.
        lo = self.lo if t0 <= 0 else 10 ** (self._a + t0 * span)
        hi = self.hi if t1 >= 1 else 10 ** (self._a + t1 * span)
        return lo, hi

    def ticks(self, count: int) -> list[tuple[float, str]]:
        decades = range(math.ceil(self._a - 1e-9), math.floor(self._b + 1e-9) + 1)
        multiples = (1,) if len(decades) >= 2 else (1, 2, 5)
        values = [m * 10.0 ** d for d in range(math.floor(self._a), math.ceil(self._b) + 1) for m in multiples]
        values = [v for v in values if self.lo * (1 - 1e-9) <= v <= self.hi * (1 + 1e-9)]
        if len(values) < 2:
            values = [self.lo, self.hi]
        step = max(1, math.ceil(len(values) / max(count, 1)))
        return [(float(self.unit(v)), f"{v:.3g}") for v in values[::step]]


class QuantileScale(Scale):
    """TensorBoard's quantile axis: the distinct values cut at 19 quantiles
    (linear interpolation between order statistics) into 20 evenly spaced
    levels; a value goes to the level of the last cut at or below it."""

    kind = QUANTILE

    def __init__(self, values: np.ndarray):
        super().__init__(values)
        distinct = np.unique(values) if len(values) else np.array([1.0])
        self.cuts = np.quantile(distinct, np.arange(1, QUANTILE_LEVELS) / QUANTILE_LEVELS)
        self.min, self.max = float(distinct[0]), float(distinct[-1])

    def level(self, x) -> np.ndarray:
        return np.searchsorted(self.cuts, np.asarray(x, np.float64), side="right")

    def unit(self, x) -> np.ndarray:
        x = np.asarray(x, np.float64)
        return np.where(np.isnan(x), np.nan, self.level(x) / (QUANTILE_LEVELS - 1))

    def interval(self, t0: float, t1: float) -> tuple[float, float]:
        top = QUANTILE_LEVELS - 1
        first, last = math.ceil(t0 * top - 1e-9), math.floor(t1 * top + 1e-9)
        if first > last:  # a range between two levels: the nearer one
            first = last = min(max(round((t0 + t1) / 2 * top), 0), top)
        first, last = max(first, 0), min(last, top)
        lo = self.min if first == 0 else float(self.cuts[first - 1])
        # A level holds [cut, next cut): the closed interval ends just below the next cut.
        hi = self.max if last == top else float(np.nextafter(self.cuts[last], -math.inf))
        return lo, hi

    def ticks(self, count: int) -> list[tuple[float, str]]:
        step = max(1, math.ceil(len(self.cuts) / max(count, 1)))
        return [((i + 1) / (QUANTILE_LEVELS - 1), f"{c:.2g}") for i, c in enumerate(self.cuts.tolist())][::step]


def _nice_step(raw: float) -> float:
    if not raw > 0:
        return 1.0
    magnitude = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if raw <= m * magnitude:
            return m * magnitude
    return 10 * magnitude


def _round(v: float, step: float) -> float:
    """A tick without the float noise of first * step (0.30000000000000004)."""
    digits = max(0, -math.floor(math.log10(step))) + 1
    return round(v, digits)


def _categories(column: Column) -> tuple[np.ndarray, list[str]]:
    """Each group's category (its value as the table shows it) as an index
    into the sorted category names, -1 when missing; numpy per kind, Python
    only per distinct value (and for list or dict values)."""
    n = len(column.kind)
    texts = np.full(n, "", dtype=object)
    strings = column.kind == STRING
    texts[strings] = column.text[strings]
    numbers = (column.kind == NUMBER) | (column.kind == BOOL)
    if numbers.any():
        bools = column.kind == BOOL
        texts[bools] = np.where(column.number[bools] != 0, "true", "false")
        plain = numbers & ~bools
        distinct, inverse = np.unique(column.number[plain], return_inverse=True)
        texts[plain] = np.array([format_value(float(v)) for v in distinct], dtype=object)[inverse]
    for g in np.flatnonzero(column.kind == OTHER).tolist():
        texts[g] = format_value(column.values[g])
    present = column.kind != MISSING
    categories, inverse = np.unique(texts[present].astype(str), return_inverse=True)
    codes = np.full(n, -1, np.int64)
    codes[present] = inverse
    return codes, categories.tolist()


class Axis:
    """One column over some groups: positions in [0, 1] (NaN when missing),
    tick labels, and what a range of positions selects. Numbers use the
    column's scale over every group; strings and booleans are categories."""

    def __init__(self, title: str, column: Column, groups: np.ndarray, scale: str = LINEAR, ticks: int = 6):
        self.title = title
        present = column.kind != MISSING
        kinds = set(column.kind[present].tolist())
        self.categorical = STRING in kinds or NUMBER not in kinds
        self.scale: Scale | None = None
        if self.categorical:
            codes, self.categories = _categories(column)
            span = max(len(self.categories) - 1, 1)
            codes = codes[groups]
            self.pos = np.where(codes >= 0, codes / span, np.nan)
            self.labels = [(i / span, c) for i, c in enumerate(self.categories)]
        else:
            numeric = (column.kind == NUMBER) | (column.kind == BOOL)
            self.scale = make_scale(scale, column.number[numeric])
            x = np.where(numeric[groups], column.number[groups], np.nan)
            self.pos = self.scale.unit(x)
            self.labels = self.scale.ticks(ticks)

    @property
    def note(self) -> str:
        return self.scale.note if self.scale is not None else ""

    def interval(self, t0: float, t1: float) -> tuple[float, float]:
        return self.scale.interval(t0, t1)

    def position(self, value) -> float:
        """Where a value sits on the axis (NaN when it has no place)."""
        if self.categorical:
            text = format_value(value)
            span = max(len(self.categories) - 1, 1)
            return self.categories.index(text) / span if text in self.categories else math.nan
        if isinstance(value, (bool, float, int)):
            return float(self.scale.unit(float(value)))
        return math.nan

    def selects(self, value, t0: float, t1: float) -> bool:
        """Whether a value lies in a brushed range of positions."""
        if not self.categorical:
            if not isinstance(value, (bool, float, int)):
                return False
            lo, hi = self.interval(t0, t1)
            return lo <= float(value) <= hi
        t = self.position(value)
        return t0 - 1e-9 <= t <= t1 + 1e-9
