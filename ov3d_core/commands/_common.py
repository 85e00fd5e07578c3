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
