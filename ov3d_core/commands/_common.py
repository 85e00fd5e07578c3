"""Small argument helpers shared by the commands (errors are one-line ``InputError``s, exit 2)."""

from __future__ import annotations

from pathlib import Path

from ov3d_core.errors import InputError

#: The "file" an argument error names (never ``<input>``).
CLI = "command line"


def check_finite(value, option: str) -> None:
    """``InputError`` unless ``value`` (a float option, None when not given) is finite: NaN and inf mean nothing."""
    import math

    if value is not None and not math.isfinite(value):
        raise InputError(CLI, None, option, "a finite number", value)


def check_output_file(path: str | Path, option: str, *, folder_must_exist: bool = True) -> Path:
    """Refuse an output file that cannot be written, before any work (else the error comes after the whole run):
    a folder, a folder that is missing (created when ``folder_must_exist`` is False: then its nearest existing
    parent must be a writable folder), a folder this user may not enter or write to."""
    try:
        return _writable_target(Path(path).expanduser(), str(path), option, folder_must_exist)
    except PermissionError:  # a folder on the way that this user may not enter
        raise InputError(str(path), None, option, "a file this user may write", "permission denied") from None


def _writable_target(target: Path, shown: str, option: str, folder_must_exist: bool) -> Path:
    import os

    parent = target.resolve().parent
    if target.is_dir():
        raise InputError(shown, None, option, "a file to write (not a folder)", "a folder")
    if not parent.is_dir():
        if folder_must_exist:
            raise InputError(shown, None, option, "a file in an existing folder", f"no folder {parent}")
        parent = next(a for a in parent.parents if a.exists())
        if not parent.is_dir():
            raise InputError(shown, None, option, "a path whose folders can be created", f"{parent} is a file")
    eff = os.access in os.supports_effective_ids  # the user this process runs as (seteuid included)
    if not os.access(parent, os.W_OK, effective_ids=eff) or (
            target.exists() and not os.access(target, os.W_OK, effective_ids=eff)):
        raise InputError(shown, None, option, "a file this user may write", "permission denied")
    return target


def read_name_list(path: str | Path) -> list[str]:
    """The non-empty lines of a UTF-8 text file (e.g. a ``--category-list``), stripped."""
    p = Path(path).expanduser()
    try:
        text = p.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise InputError(str(p), None, None, "an existing text file", "no such file") from None
    except PermissionError:
        raise InputError(str(p), None, None, "a readable file", "permission denied") from None
    except IsADirectoryError:
        raise InputError(str(p), None, None, "a text file", "a folder") from None
    except UnicodeDecodeError as exc:
        raise InputError(str(p), f"byte {exc.start}", None, "UTF-8 text", "invalid UTF-8") from None
    return [line.strip() for line in text.splitlines() if line.strip()]
