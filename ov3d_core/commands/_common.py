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


def add_input_arguments(p) -> None:
    """The inputs of ``evaluate`` and ``compare``: a benchmark YAML, or GT and prediction files."""
    p.add_argument("--gt", action="append", default=[], help="Omni3D GT JSON (repeat for several files)")
    p.add_argument("--pred", action="append", default=[], help="predictions (.json or .pth; repeat for several runs)")
    p.add_argument("--benchmark", help="a benchmark YAML instead of --gt/--pred: every run on every dataset")
    p.add_argument("--run-name", action="append", default=[], help="name of each --pred run (in order)")
    p.add_argument("--format", default="auto",
                   choices=["auto", "cubercnn-json", "cubercnn-pth", "detany3d-json"])
    p.add_argument("--category-list", help="file with one category name per line: contiguous id -> name (.pth)")
    p.add_argument("--categories", help="comma-separated evaluated vocabulary (default: the GT file's categories)")


def add_bootstrap_arguments(p, *, method: str | None = "bca", seed: bool = True) -> None:
    """``--resamples --level`` (``--seed``; ``--ci-method`` unless ``method`` is None) of the image bootstrap.
    Their defaults are None so that a command can tell whether they were given; :func:`check_bootstrap_args`
    fills them in (``method``: the default of ``--ci-method``)."""
    p.add_argument("--resamples", type=int, default=None, help="image bootstrap resamples (default: 1000)")
    p.add_argument("--level", type=float, default=None, help="confidence level of the intervals (default: 0.95)")
    if seed:
        p.add_argument("--seed", type=int, default=None, help="seed of the image resamples (default: 0)")
    if method is not None:
        p.add_argument("--ci-method", default=None, choices=["bca", "percentile"],
                       help=f"interval method (default: {method})")
    p.set_defaults(_bootstrap_defaults={"resamples": 1000, "level": 0.95, **({"seed": 0} if seed else {}),
                                        **({"ci_method": method} if method else {})})


def check_bootstrap_args(args, *, enabled: bool = True, needs: str = "--ci") -> None:
    """Check the options of :func:`add_bootstrap_arguments` (InputError: one line, exit 2) and fill in their
    defaults. ``enabled=False``: the command will not bootstrap, so an option given is refused as needing
    ``needs`` as well."""
    import math

    defaults = args._bootstrap_defaults
    if not enabled:
        given = [k for k in defaults if getattr(args, k) is not None]
        if given:
            raise InputError(CLI, None, "--" + given[0].replace("_", "-"),
                             f"given with {needs} (it sets the bootstrap only)", getattr(args, given[0]))
        return
    for k, v in defaults.items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    if args.resamples < 1:
        raise InputError(CLI, None, "--resamples", "a positive number of resamples", args.resamples)
    if not (math.isfinite(args.level) and 0.0 < args.level < 1.0):
        raise InputError(CLI, None, "--level", "a confidence level in (0, 1), e.g. 0.95", args.level)
    if "seed" in defaults and args.seed < 0:
        raise InputError(CLI, None, "--seed", "a non-negative integer", args.seed)


def names_list(text: str | None, option: str) -> list[str]:
    """A comma-separated option as a list of non-empty, stripped names (InputError when it names nothing)."""
    if text is None:
        return []
    names = [s.strip() for s in text.split(",") if s.strip()]
    if not names:
        raise InputError(CLI, None, option, "comma-separated names", text)
    return names
