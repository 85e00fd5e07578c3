"""Allowed data roots: the folders a shared server (or any caller that asks) may read configs and data from.

A path is allowed when, after ``~`` expansion and resolving every symlink, it lies inside one of the roots (each
root resolved the same way). The refusal names only the path's basename and says the same whether the path exists
or not, so an error page reveals neither the server's layout nor which files exist.

Default roots (``default_roots``): the demo folder, plus the roots given with ``--data-root`` or the
``OV3D_DATA_ROOT`` environment variable (``os.pathsep``-separated); when neither gives any, the working directory.
Giving data roots therefore *replaces* the working directory: a server started from a home folder with
``--data-root /data/lab`` exposes ``/data/lab`` and the demo, not the home folder.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from ov3d_core.errors import InputError
from ov3d_core.io.yaml_safe import Kind

DATA_ROOT_ENV = "OV3D_DATA_ROOT"
DEMO_DIR_ENV = "OV3D_DEMO_DIR"
REPO = Path(__file__).resolve().parents[2]


def demo_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where the demo benchmark lives: ``$OV3D_DEMO_DIR`` or ``data/demo`` in the repository."""
    env = os.environ if environ is None else environ
    value = env.get(DEMO_DIR_ENV)
    return Path(value).expanduser().resolve() if value else REPO / "data" / "demo"


def split_roots(value: str | os.PathLike | Iterable[str | os.PathLike] | None) -> list[Path]:
    """Roots from an ``os.pathsep``-separated string (as ``OV3D_DATA_ROOT`` holds them), a path, or a list of
    either; empty entries are skipped."""
    if value is None:
        return []
    items = [value] if isinstance(value, (str, os.PathLike)) else list(value)
    out: list[Path] = []
    for item in items:
        parts = os.fspath(item).split(os.pathsep) if isinstance(item, str) else [os.fspath(item)]
        out.extend(Path(p).expanduser() for p in parts if p.strip())
    return out


def default_roots(data_root=None, *, environ: Mapping[str, str] | None = None,
                  cwd: str | os.PathLike | None = None) -> tuple[Path, ...]:
    """The demo folder plus ``data_root`` (``--data-root``: a path, an ``os.pathsep``-separated string or a list)
    and ``$OV3D_DATA_ROOT``; the working directory when those two give no root. Resolved, without duplicates."""
    env = os.environ if environ is None else environ
    given = split_roots(data_root) + split_roots(env.get(DATA_ROOT_ENV))
    roots = [demo_dir(env), *(given or [Path.cwd() if cwd is None else Path(cwd)])]
    return tuple(dict.fromkeys(_resolve(r) for r in roots))


def _resolve(path: str | os.PathLike) -> Path:
    return Path(path).expanduser().resolve(strict=False)


def is_under_roots(path: str | os.PathLike, roots: Iterable[str | os.PathLike]) -> bool:
    """Whether ``path``, resolved after symlinks, is one of ``roots`` or inside one (roots resolved too)."""
    p = _resolve(path)
    return any(p.is_relative_to(_resolve(r)) for r in roots)


def check_under_roots(path: str | os.PathLike, roots: Iterable[str | os.PathLike], *,
                      what: str = "a file") -> Path:
    """``path`` resolved after symlinks, or ``InputError`` naming only its basename when it lies outside every root.

    The check is the same for existing and missing paths (a missing one resolves as far as it exists), so the
    message does not tell whether the path exists."""
    p = _resolve(path)
    if not any(p.is_relative_to(_resolve(r)) for r in roots):
        name = Path(os.fspath(path)).name or "the path"
        raise InputError(name, None, None, f"{what} inside the allowed data roots (the server's --data-root or "
                         f"${DATA_ROOT_ENV}, the demo folder)", Kind("a path outside them"))
    return p


__all__ = ["DATA_ROOT_ENV", "DEMO_DIR_ENV", "check_under_roots", "default_roots", "demo_dir", "is_under_roots",
           "split_roots"]
