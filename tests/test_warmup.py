"""The first-run compile cost is visible and can be paid ahead: ``python -m ov3d_core.analysis.warmup`` compiles
every numba kernel of the package into numba's cache (a notice says so while it compiles), and a later process
running what a user runs (the README's notebook examples, every table) compiles nothing.

One fresh numba cache folder for the whole module (private: other tests must not compile into it, or a kernel the
warm-up misses could be compiled by them first)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

# Every numba dispatcher defined in a module of the package that Python code calls (an entry point: a kernel that
# only other kernels call is compiled into its callers), and those the warm-up left without a compiled signature.
UNCOMPILED = """
import ast, importlib, pkgutil
from pathlib import Path
import ov3d_core
from numba.core.dispatcher import Dispatcher
from ov3d_core.analysis.warmup import warm_up
warm_up(progress=False)
skip = ("ov3d_core.demo.render", "ov3d_core.remap.engines.ray_data")  # open3d rendering, Ray: no numba kernels

def python_names(tree):
    # identifiers used outside @njit function bodies
    names = set()
    def visit(node, in_kernel):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            in_kernel = in_kernel or any("njit" in ast.unparse(d) for d in node.decorator_list)
        if not in_kernel:
            if isinstance(node, ast.Name):
                names.add(node.id)
            elif isinstance(node, ast.Attribute):
                names.add(node.attr)
        for child in ast.iter_child_nodes(node):
            visit(child, in_kernel)
    visit(tree, False)
    return names

kernels, called, own = {}, set(), {}
for m in pkgutil.walk_packages(ov3d_core.__path__, "ov3d_core."):
    if m.name.startswith(skip) or m.name.endswith("__main__"):
        continue
    mod = importlib.import_module(m.name)
    own[m.name] = python_names(ast.parse(Path(mod.__file__).read_text()))
    called |= own[m.name]
    for name, obj in vars(mod).items():
        if isinstance(obj, Dispatcher) and obj.py_func.__module__ == m.name:
            kernels[f"{m.name}.{name}"] = obj
# a private kernel (_name) counts as called from Python only by Python code of its own module
entry = {k: d for k, d in kernels.items()
         if (lambda mod, name: name in (own[mod] if name.startswith("_") else called))(*k.rsplit(".", 1))}
print("FOUND", len(kernels), "ENTRY", len(entry))
print("MISSING", " ".join(k for k, d in entry.items() if not d.signatures))
"""

# A user's process after the warm-up: the README's notebook examples on a demo, with a counter of numba compiles.
USER = """
from numba.core import event
compiles = []
class Count(event.Listener):
    def on_start(self, ev): compiles.append(ev.data["dispatcher"].py_func.__qualname__)
    def on_end(self, ev): pass
event.register("numba:compile", Count())
import re, sys
from pathlib import Path
text = Path(sys.argv[1]).read_text()
for name in ("yaml", "files", "stats"):
    code = re.search(rf"<!-- notebook: {name} -->\\s*```python\\n(.*?)```", text, re.S).group(1)
    exec(compile(code.replace("data/demo", sys.argv[2]).replace("n_resamples=1000", "n_resamples=50"),
                 name, "exec"), {})
from ov3d_core import Analysis, View
a = Analysis.from_yaml(sys.argv[2] + "/benchmark.yaml")
v = View("demo_outdoor", "wild_like")
a.object_view(v, 3); a.tide(v); a.distance(v.with_(distance_mode="nuscenes")); a.confusion(v, level="super")
print("COMPILES", " ".join(compiles))
"""


def _python(code: str, cache: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=900,
                          cwd=ROOT)


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("numba")


def test_warm_up_compiles_once_with_a_notice(cache):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    first = subprocess.run([sys.executable, "-m", "ov3d_core.analysis.warmup"], env=env, capture_output=True,
                           text=True, timeout=900, cwd=ROOT)
    assert first.returncode == 0, first.stderr
    assert first.stderr.count("compiling the numeric kernels") == 1
    assert "kernels compiled and cached" in first.stderr
    assert any(cache.rglob("*.nbi"))  # numba's cache index files were written


def test_every_kernel_of_the_package_is_compiled_by_the_warm_up(cache):
    out = _python(UNCOMPILED, cache)
    assert out.returncode == 0, out.stderr
    found, entry = map(int, re.search(r"FOUND (\d+) ENTRY (\d+)", out.stdout).groups())
    assert found >= 40 and entry >= 20  # the package's kernels were found (JSON scan, IoU, validity, matching, ...)
    assert re.search(r"MISSING (.*)", out.stdout).group(1).strip() == ""
    assert "compiling the numeric kernels" not in out.stderr  # the first test's cache was used


def test_a_user_process_after_the_warm_up_compiles_nothing(cache, tmp_path):
    from ov3d_core.demo import ensure_demo

    demo = ensure_demo(tmp_path / "demo", images=3, seed=0)
    out = _python(USER, cache, str(README), str(demo))
    assert out.returncode == 0, out.stderr
    assert re.search(r"COMPILES(.*)", out.stdout).group(1).strip() == ""
    assert "compiling the numeric kernels" not in out.stderr
