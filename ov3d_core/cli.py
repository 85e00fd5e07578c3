"""``ov3d <command>`` (or ``python -m ov3d_core <command>``): each command lives in ``ov3d_core/commands/<name>.py`` with a
``register(subparsers)`` function that adds its parser and sets ``func(args) -> int``.

User-input errors (``InputError``) print one line on stderr and exit with status 2, never a traceback.

``entry`` is the process entry point (the ``ov3d`` script and ``python -m ov3d_core``); ``main`` is the same without
the process exit (tests and notebooks call it).
"""

from __future__ import annotations

import argparse
import atexit
import importlib
import os
import sys
import threading

from ov3d_core.compile_notice import announce_compiles
from ov3d_core.errors import InputError
from ov3d_core.io import npzstore

COMMANDS = ("evaluate", "compare", "demo", "embed", "remap", "report", "init", "export_rerun")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ov3d", description="OV3D Explorer: evaluate and diagnose open-vocabulary "
                                     "monocular 3D detectors.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        importlib.import_module(f"ov3d_core.commands.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    announce_compiles()  # a first run compiles the numeric kernels: say so rather than look hung
    try:
        with npzstore.deferred_writes():  # caches are written while the command goes on; waited for at its end
            return int(args.func(args) or 0)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


#: Threads that may still be alive, idle, when a command has returned: the cache writer's pool thread (``main`` has
#: waited for every write it was given).
_IDLE_THREAD_PREFIXES = ("ov3d-cache-writer",)


def skips_teardown(threads) -> bool:
    """Whether the process may end without the interpreter's teardown: only when no thread but the main one and the
    idle ones of ``_IDLE_THREAD_PREFIXES`` is alive (daemon threads die with the process either way), and CPython's
    atexit runner is there to run the exit handlers first."""
    main_thread = threading.main_thread()
    busy = [t for t in threads if t is not main_thread and not t.daemon and t.is_alive()
            and not t.name.startswith(_IDLE_THREAD_PREFIXES)]
    return not busy and hasattr(atexit, "_run_exitfuncs")


def entry(argv: list[str] | None = None) -> None:
    """Run ``main`` and end the process with its status.

    After the numeric kernels are loaded, the interpreter's own teardown takes 0.4-0.8 s on 2 cores (numba's
    compiled code is released piece by piece): more than a whole warm ``evaluate`` of a small set. So once the command
    has returned, every atexit handler has run and the output is flushed, the process ends with ``os._exit``. When
    another thread is still at work (``skips_teardown``) it exits the normal way."""
    code = main(argv)
    if not skips_teardown(threading.enumerate()):
        raise SystemExit(code)
    atexit._run_exitfuncs()  # logging's flush, Ray's shutdown, temporary folders, ...
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (``ov3d ... | head``) or stream: nothing left to deliver
            pass
    os._exit(code)
