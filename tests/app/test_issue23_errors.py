"""Issue 23 (app): the Error-breakdown page's recall under greedy and Hungarian assignment
(``Analysis.recall_methods``) and FG-OVD's class-agnostic NMS (``Analysis.nms_summary``) equal Analysis's."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ov3d_core.analysis import Analysis, View
from ov3d_core.eval.constants import SUMMARY_KEYS
from tests.app.test_pages import app, problems

DS = "demo_indoor"
PAGE = "app_pages/errors.py"


def _frame(at, columns: set) -> pd.DataFrame:
    found = [d.value for d in at.dataframe if columns <= set(d.value.columns)]
    assert len(found) == 1, [list(d.value.columns) for d in at.dataframe]
    return found[0].reset_index(drop=True)


def test_recall_methods_and_nms_equal_analysis(tiny_demo):
    A = Analysis.from_yaml(tiny_demo / "benchmark.yaml")
    runs = A.runs(DS)
    at = app(PAGE, ds=DS, thr="0.2")
    assert not problems(at), problems(at)

    rec = _frame(at, {"run", "method", "recall", "n_matched", "n_gt", "mean_iou"})
    want = pd.concat([A.recall_methods(View(DS, r, min_score=0.2)).assign(run=r) for r in runs], ignore_index=True)
    assert rec[["run", "method", "n_matched", "n_gt"]].values.tolist() == \
        want[["run", "method", "n_matched", "n_gt"]].values.tolist()
    assert set(rec["method"]) == {"greedy", "hungarian"}
    cols = ["recall", "mean_iou"]
    np.testing.assert_allclose(rec[cols].to_numpy(float), want[cols].to_numpy(float),
                               rtol=1e-12, equal_nan=True)

    def check_nms(mode: str, thr: float):
        nms = _frame(at, {"run", "NMS", "n_suppressed", "AP3D"})
        assert nms["run"].tolist() == [r for r in runs for _ in range(2)]
        for r in runs:
            v = View(DS, r, min_score=0.2)
            none, after = nms[(nms["run"] == r)].iloc[0], nms[(nms["run"] == r)].iloc[1]
            assert none["NMS"] == "none" and none["n_suppressed"] == 0
            s = A.summary(v)
            np.testing.assert_allclose([none[k] for k in SUMMARY_KEYS], [s[k] for k in SUMMARY_KEYS], rtol=1e-12,
                                       equal_nan=True)
            n = A.nms_summary(v, iou_threshold=thr, mode=mode)
            assert after["NMS"] == f"class-agnostic, {mode.upper()} IoU > {thr:g}"
            assert after["n_suppressed"] == n["n_suppressed"]
            np.testing.assert_allclose([after[k] for k in SUMMARY_KEYS], [n[k] for k in SUMMARY_KEYS], rtol=1e-12,
                                       equal_nan=True)
        return nms

    first = check_nms("3d", 0.5)
    assert first["n_suppressed"].sum() > 0  # the demo has duplicates across labels: the NMS does something
    at.radio(key="nms_mode").set_value("2d").run()
    at.select_slider(key="nms_iou").set_value(0.3).run()
    assert not problems(at), problems(at)
    check_nms("2d", 0.3)
