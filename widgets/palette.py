"""Colours derived from the Qt palette: the one place every widget takes its
greys, backgrounds and data colours from.

Profscope sets no palette of its own: Qt gives the application the desktop's
palette (GNOME/KDE through their platform themes, Windows and macOS in dark
mode, qt6ct, or a `-style`/palette the user chooses), and sends every widget
`QEvent.PaletteChange` / `ApplicationPaletteChange` when it changes at run
time. Widgets that paint themselves read `Scheme.of(widget)` at paint time;
pyqtgraph plots and styled labels are restyled from `follow(widget, apply)`.

- Greys are mixes of Base towards Text (`Scheme.shade`): on the default light
  palette (Base white, Text black) they are the greys Profscope always drew
  (`shade(0.73)` is #454545), on a dark one they invert.
- Data colours (op types, heap/stack, flow categories, chart lines) keep
  their hue: unchanged on a light Base, lighter on a dark one
  (`Scheme.data`). Light tints behind text (table bars, the idle share)
  mirror their lightness instead (`Scheme.tint`).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QWidget

ERROR_COLOR = "#b71c1c"  # messages and invalid input (on a light Base)
# Comparing two profiles: a row's status (text and delta), and the two sides' lines.
DIFF_COLORS = {"added": "#1565c0", "removed": "#6d4c41", "grown": "#c62828", "shrunk": "#2e7d32"}
BASELINE_COLOR = "#546e7a"
CANDIDATE_COLOR = "#ef6c00"
_PALETTE_EVENTS = (QEvent.PaletteChange, QEvent.ApplicationPaletteChange)


def mix(a: QColor, b: QColor, t: float) -> QColor:
    """a blended towards b by t (0: a, 1: b), alpha of a."""
    return QColor(round(a.red() + (b.red() - a.red()) * t), round(a.green() + (b.green() - a.green()) * t),
                  round(a.blue() + (b.blue() - a.blue()) * t), a.alpha())


def is_dark(palette: QPalette | None = None) -> bool:
    """Whether the palette's Base (where plots and lanes are drawn) is dark."""
    palette = palette if palette is not None else QGuiApplication.palette()
    return palette.color(QPalette.Base).lightnessF() < 0.5


class Scheme:
    """The colours of one palette."""

    def __init__(self, palette: QPalette):
        self.palette = QPalette(palette)
        self.dark = is_dark(palette)
        self.base = palette.color(QPalette.Base)
        self.window = palette.color(QPalette.Window)
        self.text = palette.color(QPalette.Text)
        self.window_text = palette.color(QPalette.WindowText)
        self.highlight = palette.color(QPalette.Highlight)
        self.tooltip_base = palette.color(QPalette.ToolTipBase)
        self.tooltip_text = palette.color(QPalette.ToolTipText)

    @classmethod
    def of(cls, widget: QWidget | None = None) -> Scheme:
        """The scheme of a widget's palette (the application's without one)."""
        return cls(widget.palette() if widget is not None else QGuiApplication.palette())

    @property
    def key(self) -> tuple:
        """Equal for palettes that give the same colours (for caches)."""
        return (self.base.rgba(), self.text.rgba(), self.window.rgba(), self.highlight.rgba())

    def shade(self, t: float, alpha: int = 255) -> QColor:
        """Base mixed towards Text by t: 0 is the background, 1 the text.
        Light palette: 0.04 #f5f5f5, 0.13 #ddd, 0.27 #bbb, 0.41 #969696 (pyqtgraph's
        axes), 0.53 #777, 0.67 #555, 0.8 #333, 0.87 #222."""
        c = mix(self.base, self.text, t)
        c.setAlpha(alpha)
        return c

    def secondary(self) -> QColor:
        """Secondary text (hints, units, labels of values): #555 on white."""
        return self.shade(0.67)

    def tooltip_secondary(self) -> str:
        """Secondary text inside a tooltip, as a #rrggbb name."""
        return mix(self.tooltip_base, self.tooltip_text, 0.53).name()

    def data(self, color) -> QColor:
        """A data colour readable on Base: unchanged on a light palette; on a
        dark one the same hue and saturation, lighter (0.5 -> 0.6, dark
        colours lifted to at least 0.55)."""
        c = QColor(color)
        if not self.dark:
            return c
        h, s, light, a = c.getHslF()
        light = max(light + (1.0 - light) * 0.2, 0.55)
        out = QColor.fromHslF(h if h >= 0 else 0.0, s, min(light, 0.92), a)
        return out

    def tint(self, color) -> QColor:
        """A light tint that text is drawn over: unchanged on a light palette;
        on a dark one its lightness mirrored (a dark tint of the same hue,
        a little lighter than Base)."""
        c = QColor(color)
        if not self.dark:
            return c
        h, s, light, a = c.getHslF()
        # Clear of Base and of Window (bars are drawn on either).
        light = max(1.0 - light, max(self.base.lightnessF(), self.window.lightnessF()) + 0.12)
        return QColor.fromHslF(h if h >= 0 else 0.0, s * 0.8, min(light, 0.45), a)

    def text_on(self, fill: QColor) -> QColor:
        """Text readable on a filled area (white on mid and dark fills)."""
        return QColor("#263238") if QColor(fill).lightnessF() > 0.55 else QColor("white")

    def error(self) -> QColor:
        return self.data(ERROR_COLOR)

    def selection_tint(self) -> QColor:
        """A selected row's background behind ordinary text."""
        return self.highlight.lighter(185) if not self.dark else mix(self.base, self.highlight, 0.4)


def argb(color: QColor) -> int:
    return color.rgba() | 0xFF000000


class _Follower(QObject):
    def __init__(self, widget: QWidget, apply: Callable[[Scheme], None]):
        super().__init__(widget)
        self.widget, self.apply, self._busy, self._key = widget, apply, False, None
        widget.installEventFilter(self)
        self.refresh()

    def refresh(self) -> None:
        scheme = Scheme.of(self.widget)
        if scheme.key == self._key or self._busy:
            return
        self._busy, self._key = True, scheme.key
        try:
            self.apply(scheme)
        finally:
            self._busy = False

    def eventFilter(self, obj, event) -> bool:
        # While Qt tears a widget down its children's Python side may already be
        # gone: events then reach a filter without attributes.
        if event.type() in _PALETTE_EVENTS and obj is getattr(self, "widget", None):
            self.refresh()
        return False


def follow(widget: QWidget, apply: Callable[[Scheme], None]) -> None:
    """Calls apply(Scheme of widget) now and whenever the widget's palette
    changes (the desktop's theme, or the application's palette, at run time)."""
    _Follower(widget, apply)


def style_plot(plot, scheme: Scheme) -> None:
    """A pyqtgraph PlotItem's axes, grid, title and legend in the palette's
    colours (axes and grid in shade 0.41: pyqtgraph's grey on white)."""
    line, text = scheme.shade(0.41), scheme.shade(0.41 if not scheme.dark else 0.72)
    for name in ("left", "bottom", "right", "top"):
        axis = plot.getAxis(name)
        axis.setPen(line)
        axis.setTextPen(text)
    title = plot.titleLabel
    if title.text:
        title.setText(title.text, color=scheme.shade(0.41 if not scheme.dark else 0.8))
    legend = plot.legend
    if legend is not None:
        legend.setLabelTextColor(scheme.shade(0.41 if not scheme.dark else 0.8))
        for _sample, label in legend.items:
            label.setText(label.text, color=scheme.shade(0.41 if not scheme.dark else 0.8))


def dark_palette() -> QPalette:
    """A dark palette like a desktop's dark theme (Window #2b2b2b, Base #1e1e1e,
    Text #e6e6e6). Profscope never sets it: tests and screenshots do."""
    p = QPalette()
    colors = {QPalette.Window: "#2b2b2b", QPalette.WindowText: "#e6e6e6", QPalette.Base: "#1e1e1e",
              QPalette.AlternateBase: "#262626", QPalette.Text: "#e6e6e6", QPalette.Button: "#353535",
              QPalette.ButtonText: "#e6e6e6", QPalette.BrightText: "#ffffff", QPalette.Light: "#505050",
              QPalette.Midlight: "#404040", QPalette.Mid: "#4a4a4a", QPalette.Dark: "#1a1a1a",
              QPalette.Shadow: "#000000", QPalette.Highlight: "#3d8ec9", QPalette.HighlightedText: "#ffffff",
              QPalette.ToolTipBase: "#3a3a3a", QPalette.ToolTipText: "#e6e6e6", QPalette.Link: "#6cb4ff",
              QPalette.LinkVisited: "#b89cff", QPalette.PlaceholderText: "#8c8c8c"}
    for role, name in colors.items():
        p.setColor(role, QColor(name))
    for role in (QPalette.WindowText, QPalette.Text, QPalette.ButtonText):
        p.setColor(QPalette.Disabled, role, QColor("#7a7a7a"))
    return p
