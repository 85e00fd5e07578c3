"""The first-run JIT cost is visible and can be paid ahead: `python -m ov3d_core.geometry.jit` compiles every kernel
an evaluation uses into numba's cache (a notice says so), and a later process loads them without compiling."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(code_or_module, cache_dir, module=False):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache_dir), "PYTHONPATH": str(ROOT)}
    args = [sys.executable, "-m", code_or_module] if module else [sys.executable, "-c", code_or_module]
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=600, cwd=ROOT)


def test_warm_up_compiles_once_with_a_notice_then_loads_silently(tmp_path):
    first = _run("ov3d_core.geometry.jit", tmp_path, module=True)
    assert first.returncode == 0, first.stderr
    assert first.stderr.count("compiling the numeric kernels") == 1
    assert any(tmp_path.rglob("*.nbi"))  # numba's cache index files were written
    evaluate = ("import tempfile\n"
                "from ov3d_core.geometry.jit import _tiny_benchmark\n"
                "from ov3d_core import Analysis, View\n"
                "ds, run = _tiny_benchmark()\n"
                "a = Analysis.from_objects(ds, [run], cache_dir=tempfile.mkdtemp())\n"
                "print(a.summary(View(ds.name, run.name))['AP3D'])\n")
    second = _run(evaluate, tmp_path)
    assert second.returncode == 0, second.stderr
    assert "compiling the numeric kernels" not in second.stderr  # everything came from the cache
    assert float(second.stdout.split()[-1]) > 0
