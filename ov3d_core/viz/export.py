"""Export figures (PNG / SVG through kaleido, HTML without a browser) and tables (CSV / LaTeX) as bytes, under safe
file names.

Kaleido 1.x renders with a system Chrome/Chromium. It finds one on the usual paths; ``BROWSER_PATH`` points it at
another, and ``ensure_browser()`` sets that variable to a Chromium it can see when none is configured.

PNG and SVG come from one headless Chromium that stays open for the whole process (``warm_up`` starts it ahead, in
the background): starting a browser for every image is what made an export take seconds. Its page has no MathJax
(the figures use none; kaleido's default loads it from a CDN, on every render). A render that fails (a browser that
crashed) is tried once more in a fresh browser. When the browser closes, its last read may hold the browser's
sign-off (``{bye}``) after another message, which kaleido's driver (choreographer 1.4) then logs as a JSON error with
a traceback: that one record is dropped (``SignOffFilter``); every other record of the driver is kept.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import re
import shutil
import threading

import plotly.graph_objects as go

FIGURE_FORMATS = ("png", "svg", "html")
TABLE_FORMATS = ("csv", "tex")
MIME = {"png": "image/png", "svg": "image/svg+xml", "html": "text/html", "csv": "text/csv",
        "tex": "application/x-tex"}
#: Seconds one PNG/SVG render may take, and the browser's start.
RENDER_TIMEOUT = 60.0
OPEN_TIMEOUT = 60.0

_BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")


def ensure_browser() -> str | None:
    """The Chrome/Chromium kaleido will use: ``BROWSER_PATH`` if set, else the first one on PATH (then exported as
    ``BROWSER_PATH``). None when there is none (PNG/SVG export is then unavailable; HTML still works)."""
    path = os.environ.get("BROWSER_PATH")
    if path and os.path.exists(path):
        return path
    for name in _BROWSERS:
        found = shutil.which(name)
        if found:
            os.environ["BROWSER_PATH"] = found
            return found
    return None


_UNSAFE = re.compile(r"[^\w.-]+")
MAX_NAME = 120


def safe_file_name(stem: str, ext: str | None = None) -> str:
    """A file name that needs no quoting in a shell or a LaTeX ``\\includegraphics``: every run of characters other
    than letters, digits, ``_``, ``.`` and ``-`` becomes one ``_``, runs of ``_`` one ``_`` (``pr_demo_indoor_(all classes)`` ->
    ``pr_demo_indoor_all_classes``), no leading ``.``, ``_`` or ``-`` (no hidden file, no option), at most
    ``MAX_NAME`` characters before ``.ext``; ``"figure"`` when nothing is left."""
    name = re.sub(r"_{2,}", "_", _UNSAFE.sub("_", str(stem))).strip("._-")[:MAX_NAME].rstrip("._-") or "figure"
    if ext:
        name += "." + _UNSAFE.sub("", str(ext)).strip(".")
    return name


class SignOffFilter(logging.Filter):
    """Drops the record choreographer's pipe logs when the browser's sign-off ``{bye}`` arrives in one read with
    another message and is parsed as JSON (a shutdown race, nothing lost); keeps every other record."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        cause = getattr(exc, "__cause__", None)  # the JSON decoder's error, holding the text it could not parse
        # by the class name: choreographer is kaleido's dependency, not imported until a browser opens
        return not (type(exc).__name__ == "JSONError" and str(getattr(cause, "doc", "")).strip() == "{bye}")


_SIGN_OFF_FILTER = SignOffFilter()


class _Renderer:
    """One kaleido browser for the process: an asyncio loop in a daemon thread owns it; any thread renders through
    it (kaleido queues the renders for its tab). Opened on first use or by ``warm_up``."""

    def __init__(self):
        self._lock = threading.Lock()  # guards opening and replacing the browser
        self._loop: asyncio.AbstractEventLoop | None = None
        self._kaleido = None
        self._generation = 0  # browsers opened so far

    def _open(self):
        """The open browser (opened now when there is none); call with the lock held."""
        if self._loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="ov3d-export", daemon=True).start()
            self._loop = loop
            atexit.register(self.close)
        if self._kaleido is None:
            from kaleido import Kaleido

            pipe_log = logging.getLogger("choreographer.channels.pipe")
            if _SIGN_OFF_FILTER not in pipe_log.filters:
                pipe_log.addFilter(_SIGN_OFF_FILTER)
            k = Kaleido(mathjax=False, timeout=RENDER_TIMEOUT)
            asyncio.run_coroutine_threadsafe(k.open(), self._loop).result(OPEN_TIMEOUT)
            self._kaleido = k
            self._generation += 1
        return self._kaleido

    def _drop(self, k) -> None:
        """Close browser ``k`` and forget it (unless another thread already replaced it)."""
        with self._lock:
            if self._kaleido is not k:
                return
            self._kaleido = None
        try:
            asyncio.run_coroutine_threadsafe(k.close(), self._loop).result(10)
        except Exception:  # noqa: BLE001 - a crashed browser may not close cleanly; it is gone either way
            pass

    def render(self, fig_dict: dict, opts: dict) -> bytes:
        for attempt in (0, 1):
            with self._lock:
                k = self._open()
            fut = asyncio.run_coroutine_threadsafe(k.calc_fig(fig_dict, opts=opts), self._loop)
            try:
                return fut.result(RENDER_TIMEOUT + 10)
            except Exception:
                fut.cancel()
                self._drop(k)
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def warm(self) -> None:
        with self._lock:
            self._open()

    @property
    def generation(self) -> int:
        """How many browsers this process opened (tests: a kept session does not open another)."""
        return self._generation

    def close(self) -> None:
        k = self._kaleido
        if k is not None:
            self._drop(k)


_renderer = _Renderer()
_warm_started = threading.Event()


def warm_up() -> None:
    """Start the export browser in a background thread, once per process (the page that shows export buttons calls
    it, so that the first PNG/SVG does not wait for a browser to start). Does nothing without a Chromium."""
    if _warm_started.is_set() or ensure_browser() is None:
        return
    _warm_started.set()

    def work():
        import logging

        try:
            _renderer.warm()
        except Exception:  # noqa: BLE001 - the export itself reports it, with its message
            logging.getLogger(__name__).debug("starting the export browser failed", exc_info=True)

    threading.Thread(target=work, name="ov3d-export-warm-up", daemon=True).start()


def renderer_generation() -> int:
    """How many export browsers this process has opened."""
    return _renderer.generation


def figure_bytes(fig: go.Figure, fmt: str, *, width: int | None = None, height: int | None = None,
                 scale: float = 2.0, offline: bool = True) -> bytes:
    """The figure as ``fmt`` ("png", "svg" or "html") bytes. HTML embeds plotly.js (about 4.8 MB), so it opens
    offline; ``offline=False`` makes it load plotly.js from the plotly CDN instead (a few kB plus the data, but
    viewing it needs the network).

    Raises:
        ValueError: unknown format.
        RuntimeError: PNG/SVG requested but no Chrome/Chromium is installed.
    """
    fmt = fmt.lower()
    if fmt not in FIGURE_FORMATS:
        raise ValueError(f"Expected `fmt` to be one of {FIGURE_FORMATS}, got {fmt!r}")
    if fmt == "html":
        return fig.to_html(include_plotlyjs=True if offline else "cdn", full_html=True,
                           config={"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}
                           ).encode("utf-8")
    if ensure_browser() is None:
        raise RuntimeError("PNG/SVG export needs Chrome or Chromium (apt-get install chromium); HTML export works "
                           "without it")
    w = width or fig.layout.width or 1100
    h = height or fig.layout.height or 600
    opts = {"format": fmt, "width": int(w), "height": int(h), "scale": scale if fmt == "png" else 1}
    return _renderer.render(fig.to_dict(), opts)
