"""No arrow runs back up: engine below diagnostics below analysis below surfaces.

Every module of the package, the app's modules and pages and ``app.py`` is parsed (``ast``); every import it makes,
at module level or inside a function (TYPE_CHECKING blocks too), is an arrow from its layer to the imported
module's layer. An arrow into a higher layer fails, naming the file and line. Every top-level part of the package
has a layer here, so a new one has to be placed before its first import is checked."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Bottom to top. A name is a top-level module or package of ``ov3d_core`` (``"ov3d_core"`` itself is the package's
#: ``__init__``, whose lazy ``from ov3d_core import Analysis`` is the front door's), or a top-level part of the
#: repository (``ov3d_app``, ``app_pages``, ``app``).
LAYERS: tuple[frozenset[str], ...] = (
    # the engine and the core utilities: loading, geometry, scoring, caches, remapping, the demo, figures, exports
    frozenset({"geometry", "io", "eval", "heap", "digest", "memo", "errors", "model", "taxonomy", "ontology", "tags",
               "tables", "scorecache", "compile_notice", "open3d_import", "benchmark", "remap", "demo", "viz",
               "export"}),
    frozenset({"diagnostics"}),
    frozenset({"analysis", "ov3d_core"}),
    frozenset({"report", "paper", "commands", "cli", "__main__"}),  # paper: the papers' tables, laid out like report
    frozenset({"ov3d_app", "app_pages", "app"}),
)
NAMES = ("ENGINE", "diagnostics", "analysis", "report/commands/cli", "app")


def layer_of(module: str) -> int | None:
    """The layer of a dotted module name (``ov3d_core.eval.ap`` -> 0), None outside the project."""
    parts = module.split(".")
    if parts[0] == "ov3d_core":
        key = parts[1] if len(parts) > 1 else "ov3d_core"
    elif parts[0] in ("ov3d_app", "app_pages", "app"):
        key = parts[0]
    else:
        return None
    for i, names in enumerate(LAYERS):
        if key in names:
            return i
    raise AssertionError(f"{module}: its top-level part {key!r} has no layer in tests/test_layering.py")


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(source: str, module: str, is_package: bool) -> list[tuple[int, str]]:
    """``(line, dotted name)`` of every import in ``source`` (module level and inside functions); ``from a import
    b`` counts as ``a.b`` (a submodule or a name of ``a``: both sit in ``a``'s top-level part, or in ``a.b``'s)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolved against this module's package
                package = module.split(".") if is_package else module.split(".")[:-1]
                package = package[:len(package) - (node.level - 1)]
                base = ".".join(package + ([base] if base else []))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def violations(root: Path) -> list[str]:
    """Every import of a higher layer by a lower one, as ``file:line: module (layer) imports name (layer)``."""
    files = sorted([*root.glob("ov3d_core/**/*.py"), *root.glob("ov3d_app/**/*.py"), *root.glob("app_pages/**/*.py"),
                    *root.glob("app.py")])
    out = []
    for path in files:
        module = module_name(path, root)
        low = layer_of(module)
        for line, name in imported_modules(path.read_text(encoding="utf-8"), module, path.name == "__init__.py"):
            high = layer_of(name)
            if low is not None and high is not None and high > low:
                out.append(f"{path.relative_to(root)}:{line}: {module} ({NAMES[low]}) imports {name} "
                           f"({NAMES[high]})")
    return out


def test_no_module_imports_a_higher_layer():
    found = violations(ROOT)
    assert not found, "imports that run back up:\n" + "\n".join(found)


def test_the_check_sees_every_kind_of_import(tmp_path):
    """The checker itself: upward arrows at module level, inside a function, relative and ``from ov3d_core import``
    are found; downward and same-layer ones are not."""
    pkg = tmp_path / "ov3d_core"
    for sub in ("eval", "diagnostics", "analysis"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("def __getattr__(name):\n    from ov3d_core import analysis\n")
    (pkg / "eval" / "ap.py").write_text(
        "from ov3d_core.eval import labels\n"  # same layer
        "import ov3d_core.diagnostics.tide\n"  # up, module level
        "def f():\n    from ov3d_core.analysis import Analysis\n"  # up, inside a function
        "def g():\n    from ..report import write\n"  # up, relative
        "def h():\n    from ov3d_core import cli\n")  # up, from the package
    (pkg / "diagnostics" / "tide.py").write_text("from ov3d_core.eval.ap import evaluate_ap\n")  # down
    (pkg / "analysis" / "core.py").write_text("from ov3d_core.diagnostics import tide\n")  # down
    (tmp_path / "app_pages").mkdir()
    (tmp_path / "app_pages" / "scene.py").write_text("from ov3d_core.analysis import Analysis\n")  # down
    found = violations(tmp_path)
    assert [f.split(":")[1] for f in found] == ["2", "4", "6", "8"], found
    assert all(f.startswith(str(Path("ov3d_core/eval/ap.py"))) for f in found)
    assert "imports ov3d_core.report.write (report/commands/cli)" in found[2]


def test_an_unplaced_part_of_the_package_fails():
    with pytest.raises(AssertionError, match="'newpart' has no layer"):
        layer_of("ov3d_core.newpart.thing")
