"""``ov3d <command>`` (or ``python -m ov3d_core <command>``): each command lives in ``ov3d_core/commands/<name>.py`` with a
``register(subparsers)`` function that adds its parser and sets ``func(args) -> int``.

User-input errors (``InputError``) print one line on stderr and exit with status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from ov3d_core.errors import InputError

COMMANDS = ("evaluate", "compare", "demo", "embed", "remap", "report", "init")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ov3d", description="OV3D Explorer: evaluate and diagnose open-vocabulary "
                                     "monocular 3D detectors.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        importlib.import_module(f"ov3d_core.commands.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from ov3d_core.io import npzstore

    try:
        with npzstore.deferred_writes():  # caches are written while the command goes on; waited for at its end
            return int(args.func(args) or 0)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
