"""The first-run compile cost is visible and can be paid ahead: ``python -m ov3d_core.analysis.warmup`` compiles
every numba kernel of the package into numba's cache (a notice says so while it compiles), and a later process
running what a user runs (the README's notebook examples, every table) compiles nothing.

The warm-up runs on numba's own cache, as a user's does (beside the package; after ``.ci/run``'s warm-up step it is
filled, so the warm-up loads rather than compiles). Other tests compile into that cache too, so "the user process
compiles nothing" alone could pass because another test compiled a kernel the warm-up misses: the user process must
also hold no (kernel, signature) pair beyond those of the warm-up process. The notice is checked on kernels of its own.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

# Every numba dispatcher defined in a module of the package, by qualified name, the signatures this process holds
# (compiled or loaded from the cache), and a counter of numba compiles.
KERNELS = """
import importlib, pkgutil, sys
import ov3d_core
from numba.core.dispatcher import Dispatcher
SKIP = ("ov3d_core.demo.render", "ov3d_core.remap.engines.ray_data")  # open3d rendering, Ray: no numba kernels

def kernels(imported_only=False):
    # every module of the package, or (a user process) only those it imported: a kernel elsewhere did not run
    names = ([n for n in sys.modules if n.startswith("ov3d_core.")] if imported_only else
             [m.name for m in pkgutil.walk_packages(ov3d_core.__path__, "ov3d_core.")])
    out = {}
    for modname in names:
        if modname.startswith(SKIP) or modname.endswith("__main__"):
            continue
        mod = importlib.import_module(modname)
        for attr, obj in vars(mod).items():
            if isinstance(obj, Dispatcher) and obj.py_func.__module__ == modname:
                out[f"{modname}.{attr}"] = obj
    return out

def signatures(ks):
    return {k: sorted(str(s) for s in d.signatures) for k, d in ks.items()}

from numba.core import event
compiles = []  # numba compiles in this process
class Count(event.Listener):
    def on_start(self, ev): compiles.append(ev.data["dispatcher"].py_func.__qualname__)
    def on_end(self, ev): pass
event.register("numba:compile", Count())
"""

# The README's warm-up command (its module run as __main__); then every kernel of
# the package, those Python code calls (entry points: a kernel only other kernels call is compiled into its
# callers) that the warm-up left without a signature, and those not cached on disk.
WARM_UP = KERNELS + """
import ast, json, runpy
from pathlib import Path
runpy.run_module("ov3d_core.analysis.warmup", run_name="__main__")

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

ks = kernels()
own = {m: python_names(ast.parse(Path(importlib.import_module(m).__file__).read_text()))
       for m in {k.rsplit(".", 1)[0] for k in ks}}
called = set().union(*own.values())
# a private kernel (_name) counts as called from Python only by Python code of its own module
entry = {k: d for k, d in ks.items()
         if (lambda mod, name: name in (own[mod] if name.startswith("_") else called))(*k.rsplit(".", 1))}
print("FOUND", len(ks), "ENTRY", len(entry))
print("MISSING", " ".join(k for k, d in entry.items() if not d.signatures))
print("UNCACHED", " ".join(k for k, d in ks.items() if type(d._cache).__name__ == "NullCache"))
print("COMPILES", len(compiles))
print("SIGNATURES", json.dumps(signatures(ks)))
"""

# A user's process after the warm-up: the README's notebook examples on a demo.
USER = KERNELS + """
import json
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
print("SIGNATURES", json.dumps(signatures(kernels(imported_only=True))))
"""

# Two kernels of its own (not cached): the notice is printed at the first compile of the process, once.
NOTICE = """
import sys
from numba import njit
from ov3d_core.compile_notice import announce_compiles
announce_compiles()
announce_compiles()  # idempotent: one listener
print("before", file=sys.stderr, flush=True)
if sys.argv[1] == "compile":
    njit(lambda x: x + 1)(1)
    njit(lambda x: x * 2.0)(1.5)
print("after", file=sys.stderr, flush=True)
"""


def _python(code: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=900,
                          cwd=ROOT)


def _signatures(stdout: str) -> dict[str, list[str]]:
    return json.loads(re.search(r"^SIGNATURES (.*)$", stdout, re.M).group(1))


@pytest.fixture(scope="module")
def warm() -> subprocess.CompletedProcess:
    return _python(WARM_UP)


def test_the_notice_is_printed_once_at_the_first_compile_and_never_without_one():
    out = _python(NOTICE, "compile")
    assert out.returncode == 0, out.stderr
    assert out.stderr.count("compiling the numeric kernels") == 1
    assert out.stderr.index("before") < out.stderr.index("compiling the numeric kernels") < out.stderr.index("after")
    quiet = _python(NOTICE, "none")
    assert quiet.returncode == 0, quiet.stderr
    assert "compiling the numeric kernels" not in quiet.stderr


def test_the_warm_up_command_finishes_with_one_notice_at_most(warm):
    assert warm.returncode == 0, warm.stderr
    assert "kernels compiled and cached" in warm.stderr
    compiles = int(re.search(r"^COMPILES (\d+)$", warm.stdout, re.M).group(1))
    # a notice while it compiles (a cold cache), none when every kernel loads from the cache
    assert warm.stderr.count("compiling the numeric kernels") == min(compiles, 1)


def test_every_kernel_of_the_package_is_cached_and_compiled_by_the_warm_up(warm):
    assert warm.returncode == 0, warm.stderr
    found, entry = map(int, re.search(r"FOUND (\d+) ENTRY (\d+)", warm.stdout).groups())
    assert found >= 40 and entry >= 20  # the package's kernels were found (JSON scan, IoU, validity, matching, ...)
    assert re.search(r"^MISSING(.*)$", warm.stdout, re.M).group(1).strip() == ""
    assert re.search(r"^UNCACHED(.*)$", warm.stdout, re.M).group(1).strip() == ""  # each one is @njit(cache=True)


def test_a_user_process_after_the_warm_up_compiles_nothing(warm, tmp_path, copied_demo):
    assert warm.returncode == 0, warm.stderr
    demo = copied_demo(tmp_path / "demo", images=3, seed=0)
    out = _python(USER, str(README), str(demo))
    assert out.returncode == 0, out.stderr
    assert re.search(r"COMPILES(.*)", out.stdout).group(1).strip() == ""
    assert "compiling the numeric kernels" not in out.stderr
    # and needs nothing the warm-up did not make (another test could have compiled it into the shared cache)
    made, used = _signatures(warm.stdout), _signatures(out.stdout)
    beyond = {k: sorted(set(sigs) - set(made.get(k, ()))) for k, sigs in used.items()}
    assert {k: s for k, s in beyond.items() if s} == {}
