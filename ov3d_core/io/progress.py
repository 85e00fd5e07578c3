"""Progress of the long loading steps (parse, convert, cache write), reported to whoever asked for it.

The loaders call ``report(step, done, total)`` as they go; it does nothing unless a caller wrapped the work in
``reporting(callback)`` (the CLI does, and draws tqdm bars). The callback is held in a context variable, so two app
sessions loading in two threads each see only their own; worker threads a loader starts get it passed explicitly
(``reporter()``) and must serialise their calls (``Counter``).

``step`` names the step and the file (``"parse preds.json"``), ``done`` / ``total`` are cumulative in the step's own
unit (bytes for parsing, 0/1 for a step that has no natural count); ``done == total`` ends the step.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable

__all__ = ["reporting", "reporter", "report", "Counter"]

Callback = Callable[[str, int, int], None]
_current: ContextVar[Callback | None] = ContextVar("ov3d_progress", default=None)


@contextmanager
def reporting(callback: Callback):
    """Send the progress of every load inside the block to ``callback(step, done, total)``."""
    token = _current.set(callback)
    try:
        yield
    finally:
        _current.reset(token)


def reporter() -> Callback | None:
    """The callback of the enclosing ``reporting`` block, or None."""
    return _current.get()


def report(step: str, done: int, total: int) -> None:
    cb = _current.get()
    if cb is not None:
        cb(step, int(done), int(total))


class Counter:
    """Cumulative progress of one step fed by several threads: ``add(n)`` reports ``done += n``."""

    def __init__(self, callback: Callback | None, step: str, total: int):
        self.callback, self.step, self.total, self.done = callback, step, int(total), 0
        self._lock = threading.Lock()
        if callback is not None:
            callback(step, 0, self.total)

    def add(self, n: int) -> None:
        if self.callback is None:
            return
        with self._lock:
            self.done = min(self.total, self.done + int(n))
            self.callback(self.step, self.done, self.total)

    def finish(self) -> None:
        if self.callback is not None and self.done < self.total:
            with self._lock:
                self.done = self.total
                self.callback(self.step, self.done, self.total)
