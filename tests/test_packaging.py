"""``pip install .`` gives a package that works from any directory, with an ``ov3d`` console command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_pip_install_gives_a_working_ov3d_command(tmp_path):
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target",
                    str(target), str(REPO)], check=True, cwd=tmp_path, capture_output=True, timeout=300)
    assert (target / "ov3d_core" / "analysis" / "recipe.py").is_file() and (target / "ov3d_app" / "cache.py").is_file()
    script = target / "bin" / "ov3d"
    assert script.is_file()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(target)}
    out = subprocess.run([sys.executable, str(script), "--help"], cwd=elsewhere, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    for cmd in ("evaluate", "report", "embed", "remap", "demo", "init"):
        assert cmd in out.stdout
    # the installed copy is the one that runs (not the repository on the path)
    where = subprocess.run([sys.executable, "-c", "import ov3d_core, json; print(json.dumps(ov3d_core.__file__))"],
                           cwd=elsewhere, env=env, capture_output=True, text=True, timeout=60)
    assert Path(json.loads(where.stdout)).is_relative_to(target)
    bad = subprocess.run([sys.executable, str(script), "evaluate", "--gt", "missing.json", "--pred", "p.json"],
                         cwd=elsewhere, env=env, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "missing.json" in bad.stderr and "Traceback" not in bad.stderr


def _requirements(lines) -> list[str]:
    return [ln.split("#")[0].strip() for ln in lines if ln.split("#")[0].strip()]


def test_every_requirement_is_bounded_above():
    """A new major release of any dependency cannot arrive unannounced: every requirement (requirements.txt, the
    package's dependencies and extras) has an upper bound or an exact pin."""
    import tomllib

    reqs = _requirements((REPO / "requirements.txt").read_text().splitlines())
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    reqs += list(meta["dependencies"]) + [r for extra in meta["optional-dependencies"].values() for r in extra
                                          if not r.startswith("ov3d-explorer")]
    unbounded = [r for r in reqs if "<" not in r and "==" not in r]
    assert len(reqs) > 30 and unbounded == []
