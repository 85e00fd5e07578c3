"""Issue 23 (app): the PR-curves page's "AP against the IoU threshold" (Pro-Bench Fig. 3) and "AP by object size"
(FG-OVD) sections show Analysis's numbers (``ap_vs_iou``, ``iou_summary``, ``ap_by_size``), and the figure builder
draws the curves it is given."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from ov3d_core.analysis import Analysis, View
from ov3d_core.viz.curves import ap_vs_iou_figure
from tests.app.test_pages import app, problems
from tests.app.test_parity import _plotly_array

DS = "demo_indoor"
PAGE = "app_pages/curves.py"


@pytest.fixture(scope="module")
def A(tiny_demo):
    return Analysis.from_yaml(tiny_demo / "benchmark.yaml")


#: The columns that tell the page's tables apart (AppTest does not give a dataframe's key).
COLUMNS = {"iou_summary": {"run", "iou", "mAP@.5", "retained"}, "size_table": {"run", "AP3D-small", "n_gt-small"},
           "size_per_category": {"run", "iou", "category", "AP-all"}}


def _frame(at, key):
    found = [d.value for d in at.dataframe if COLUMNS[key] <= set(d.value.columns)]
    assert len(found) == 1, (key, [list(d.value.columns) for d in at.dataframe])
    return found[0]


def _chart(at, title_part: str) -> dict:
    for c in at.get("plotly_chart"):
        spec = json.loads(c.proto.spec)
        if title_part in ((spec.get("layout", {}).get("title") or {}).get("text") or ""):
            return spec
    raise AssertionError(f"no chart titled {title_part!r}")


def _close(a, b, **kw):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=1e-9, atol=1e-12,
                               equal_nan=True, **kw)


def test_ap_vs_iou_section_equals_analysis(A):
    runs = A.runs(DS)
    at = app(PAGE, ds=DS, run=runs[1])
    assert not problems(at), problems(at)
    # the focus run (from the URL) by default
    table = _frame(at, "iou_summary")
    want = A.iou_summary([View(DS, runs[1])])
    assert table[["run", "iou"]].values.tolist() == want[["run", "iou"]].values.tolist() == [[runs[1], "3d"],
                                                                                            [runs[1], "2d"]]
    cols = ["mAP@.5", "mAP@.75", "mAP@.5:.95", "mAP@.05:.5", "retained"]
    _close(table[cols], want[cols])
    spec = _chart(at, "AP against the IoU threshold")
    assert [tr["name"] for tr in spec["data"]] == [f"{runs[1]} · 3D IoU", f"{runs[1]} · 2D IoU"]
    for tr, kind in zip(spec["data"], ("3d", "2d")):
        c = A.ap_vs_iou(View(DS, runs[1]), iou=kind)
        ok = np.isfinite(c.map)
        _close(_plotly_array(tr["x"]), c.thresholds[ok])
        _close(_plotly_array(tr["y"]), c.map[ok])

    at.radio(key="iou_runs").set_value("all").run()
    assert not problems(at), problems(at)
    table = _frame(at, "iou_summary")
    want = A.iou_summary([View(DS, r) for r in runs])
    assert table[["run", "iou"]].values.tolist() == want[["run", "iou"]].values.tolist()
    _close(table[cols], want[cols])
    assert len(_chart(at, "AP against the IoU threshold")["data"]) == 2 * len(runs)


def test_ap_by_size_section_equals_analysis(A):
    runs = A.runs(DS)
    at = app(PAGE, ds=DS, thr="0.3")
    assert not problems(at), problems(at)
    at.radio(key="size_runs").set_value("all").run()
    assert not problems(at), problems(at)
    table = _frame(at, "size_table")
    assert table["run"].tolist() == runs
    for rec in table.to_dict(orient="records"):
        v = View(DS, rec["run"], min_score=0.3)
        s3, s2 = A.ap_by_size(v, iou="3d"), A.ap_by_size(v, iou="2d")
        for k, val in {**s3.summary(), **s2.summary()}.items():
            _close(rec[k], val, err_msg=f"{rec['run']} {k}")
        for b, n in zip(s3.table["size"], s3.table["n_gt"]):
            assert rec[f"n_gt-{b}"] == n
    assert {"AP3D-small", "AP3D-medium", "AP3D-large", "AP2D-small", "AP2D-medium", "AP2D-large"} <= set(table)
    pc = _frame(at, "size_per_category")
    r0 = pc[(pc["run"] == runs[0]) & (pc["iou"] == "2D")].drop(columns=["run", "iou"]).reset_index(drop=True)
    want = A.ap_by_size(View(DS, runs[0], min_score=0.3), iou="2d").per_category
    assert list(r0.columns) == list(want.columns)
    _close(r0.drop(columns=["category"]), want.drop(columns=["category"]))


def test_ap_vs_iou_figure_builder():
    df = pd.DataFrame({"run": ["a"] * 3 + ["a"] * 3 + ["b"] * 3, "iou": ["3d"] * 3 + ["2d"] * 3 + ["3d"] * 3,
                       "iou_thr": [0.1, 0.5, 0.9] * 3, "mAP": [50.0, 20.0, np.nan, 60.0, 40.0, 10.0, 5.0, 4.0, 3.0]})
    fig = ap_vs_iou_figure(df, title="t")
    assert [t.name for t in fig.data] == ["a · 3D IoU", "a · 2D IoU", "b · 3D IoU"]
    assert list(fig.data[0].x) == [0.1, 0.5] and list(fig.data[0].y) == [50.0, 20.0]  # NaN left out
    assert list(fig.data[1].y) == [60.0, 40.0, 10.0]
    assert fig.data[0].line.dash == "solid" and fig.data[1].line.dash == "dash"
    assert fig.data[0].line.color == fig.data[1].line.color != fig.data[2].line.color
    assert [list(c) for c in fig.data[2].customdata] == [["b", "3d", 0.1], ["b", "3d", 0.5], ["b", "3d", 0.9]]
    assert fig.layout.title.text == "t"
