"""The README's notebook examples run as written (paths pointed at a tiny demo) and give the CLI's numbers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ov3d_core.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"


def snippet(name: str) -> str:
    text = README.read_text(encoding="utf-8")
    m = re.search(rf"<!-- notebook: {name} -->\s*```python\n(.*?)```", text, re.S)
    assert m, f"README has no notebook example {name!r}"
    code = m.group(1)
    assert len([ln for ln in code.splitlines() if ln.strip() and not ln.startswith(("from ", "import ", "print("))]) <= 5
    return code


@pytest.fixture(scope="module")
def demo(tmp_path_factory, copied_demo):
    return Path(copied_demo(tmp_path_factory.mktemp("nb") / "demo", images=3, seed=0))


def _run(code: str, demo: Path, **env) -> dict:
    ns = dict(env)
    exec(compile(code.replace("data/demo", str(demo)), "README", "exec"), ns)
    return ns


def _cli_block(tmp_path, *args) -> dict:
    out = tmp_path / "out.json"
    assert main(["evaluate", *args, "--json", str(out), "--cache-dir", str(tmp_path / "c")]) == 0
    return json.loads(out.read_text())


def test_yaml_example(demo, tmp_path):
    ns = _run(snippet("yaml"), demo)
    pc = ns["per_cat"]
    assert isinstance(pc, pd.DataFrame) and {"category", "AP3D", "n_gt", "n_pred"} <= set(pc.columns)
    res = _cli_block(tmp_path, "--benchmark", str(demo / "benchmark.yaml"))
    cli = res["runs"]["cubercnn_star"]["demo_indoor"]["per_category"]
    for r in pc.itertuples():
        if np.isnan(r.AP3D):
            assert cli[r.category]["AP3D"] is None
        else:
            assert cli[r.category]["AP3D"] == pytest.approx(r.AP3D, rel=1e-12)
        assert cli[r.category]["n_gt"] == r.n_gt


def test_files_example(demo, tmp_path):
    ns = _run(snippet("files"), demo)
    a, pc = ns["a"], ns["per_cat"]
    res = _cli_block(tmp_path, "--gt", str(demo / "indoor" / "gt.json"), "--pred",
                     str(demo / "runs" / "ovmono_like__demo_indoor.json"))
    block = next(iter(res["datasets"].values()))
    assert block["AP3D"] == pytest.approx(a.summary(a.view())["AP3D"], rel=1e-12)
    assert pc.set_index("category")["n_pred"].to_dict() == {k: v["n_pred"] for k, v in block["per_category"].items()}


def test_arrays_example(demo):
    """Arrays in memory: a perfect car and a van predicted as a car give car AP 100 at IoU 0.05-0.5 for the first
    and a car FP for the second; the van has no prediction."""
    R = np.broadcast_to(np.eye(3), (2, 3, 3))
    env = dict(image_id=np.array([1, 1]), category=np.array(["car", "van"]), center=np.array([[0, 1, 10], [4, 1, 15]]),
               dims=np.array([[1.8, 1.5, 4.2], [2.0, 2.0, 5.0]]), R=R)
    env.update(p_image_id=env["image_id"], p_category=np.array(["car", "car"]), p_center=env["center"],
               p_dims=env["dims"], p_R=R, p_score=np.array([0.9, 0.8]))
    pc = _run(snippet("arrays"), demo, **env)["per_cat"].set_index("category")
    assert pc.loc["car", "AP3D"] == pytest.approx(100.0 * (1 - 1e-12), rel=1e-9)  # the first det is the best
    assert pc.loc["van", "AP3D"] == 0.0 and pc.loc["car", "n_pred"] == 2


def test_stats_example(demo):
    ns = _run(snippet("stats"), demo)
    a, v, ci, diff = ns["a"], ns["v"], ns["ci"], ns["diff"]
    ci = ci.set_index("metric")
    summary = a.summary(v)
    assert ci.loc["AP3D", "value"] == pytest.approx(summary["AP3D"], rel=1e-12)
    ok = ci["n_valid"] > 0
    assert (ci.loc[ok, "lo"] <= ci.loc[ok, "hi"]).all()
    d = diff.set_index("metric").loc["AP3D", "diff"]
    assert d == pytest.approx(summary["AP3D"] - a.summary(v.with_(run="detany_like"))["AP3D"], abs=1e-12)
    pd.testing.assert_frame_equal(ns["fps"], a.mine(v, "cross-class").images.head(5))
