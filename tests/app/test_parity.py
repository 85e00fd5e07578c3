"""Page by page: the numbers an AppTest run renders equal the numbers ``ov3d report`` writes for the same view
(including the scene inspector's per-box tables, the PR-curves page and the sample grid's matching boxes).

One report of the tiny demo (every table, the prompt tables with the demo's proxy encoder, the per-box tables) is
written once through the CLI and read back from its CSV files; each test opens one page with a view given in the URL
and compares what the page shows with the report's rows. This is the test that would have caught two copies of a
table drifting apart (the domain-transfer tables once disagreed between the Splits page and the report).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from ov3d_core.cli import main
from tests.app.test_pages import app, metric, problems

SPLITS, SUBSET = 2000, 10  # the Splits page's defaults
DS = "demo_indoor"


@pytest.fixture(scope="module")
def report(tiny_demo, tmp_path_factory):
    out = tmp_path_factory.mktemp("parity") / "report"
    assert main(["report", "--config", str(tiny_demo / "benchmark.yaml"), "--out", str(out), "--encoder", "proxy",
                 "--splits", str(SPLITS), "--subset-size", str(SUBSET), "--boxes"]) == 0

    def table(name: str) -> pd.DataFrame:
        return pd.read_csv(out / "csv" / f"{name}.csv")

    return table


def _frame(at, *columns: str) -> pd.DataFrame:
    """The first dataframe the page shows that has all ``columns``."""
    for d in at.dataframe:
        if set(columns) <= set(d.value.columns):
            return d.value
    raise AssertionError(f"no dataframe with {columns}; have {[list(d.value.columns) for d in at.dataframe]}")


def _rows(df: pd.DataFrame, **eq) -> pd.DataFrame:
    m = np.ones(len(df), bool)
    for k, v in eq.items():
        m &= (df[k] == v).to_numpy()
    return df[m].reset_index(drop=True)


def _plotly_array(v) -> np.ndarray:
    """A trace array as plotly serialises it: a list, or ``{"dtype", "bdata"}`` (base64, plotly >= 6)."""
    if isinstance(v, dict):
        import base64

        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"])).astype(np.float64)
    return np.asarray(v, np.float64)


def _close(shown, expected, cols, **kw):
    np.testing.assert_allclose(shown[cols].to_numpy(np.float64), expected[cols].to_numpy(np.float64), rtol=1e-9,
                               atol=1e-12, equal_nan=True, **kw)


def test_overview_leaderboard_per_category_and_three_axes(tiny_demo, report):
    at = app(None, ds=DS)
    at.toggle(key="lb_all").set_value(True).run()
    at.toggle(key="axes_prompts").set_value(True).run()
    assert not problems(at), problems(at)
    keys = ["dataset", "run"]
    board = _frame(at, "AP3D", "recall3D@15", "dataset", "run").sort_values(keys).reset_index(drop=True)
    lb = report("leaderboard").sort_values(keys).reset_index(drop=True)
    assert board[keys].values.tolist() == lb[keys].values.tolist()
    _close(board, lb, ["AP3D", "AP3D@15", "AP3D@25", "AP3D@50", "AP3D-N", "AP3D-M", "AP3D-F", "recall3D@15"])

    pc = _frame(at, "run", "category", "AP3D", "n_gt")
    rep = _rows(report("per_category"), dataset=DS)
    rep = rep[rep["run"].isin(pc["run"].unique())].reset_index(drop=True)
    assert pc[["run", "category"]].values.tolist() == rep[["run", "category"]].values.tolist()
    _close(pc, rep, ["AP3D", "AP3D@25", "n_gt", "n_pred", "recall3D"])

    axes = _frame(at, "run", "geometric", "prompt_robustness").set_index("run")
    rax = report("three_axis").set_index("run").loc[axes.index]
    _close(axes, rax, ["geometric", "semantic", "prompt_robustness", "cross_domain_ratio"])
    assert axes["prompt_robustness"].notna().any()


def test_scene_inspector_box_tables(tiny_demo, report):
    """The inspector's per-box tables (every run shown, one image) equal the report's pred_details / gt_details."""
    at = app("app_pages/scene.py", ds=DS)
    assert not problems(at), problems(at)
    image_id = int(at.session_state["image_id"])
    preds = _frame(at, "run", "row", "status", "yaw_err", "score_rank")
    assert len(preds) and preds["run"].nunique() == 2
    rep = report("pred_details")
    rep = rep[(rep["dataset"] == DS) & (rep["image_id"] == image_id)]
    merged = preds.merge(rep, left_on=["run", "row"], right_on=["run", "pred"], suffixes=("", "_report"))
    assert len(merged) == len(preds)
    assert (merged["status"] == merged["status_report"]).all()
    ps = report("pred_status")
    ps = ps[(ps["dataset"] == DS) & (ps["image_id"] == image_id)]
    st = preds.merge(ps, left_on=["run", "row"], right_on=["run", "pred"], suffixes=("", "_report"))
    assert (st["status"] == st["status_report"]).all()  # the same statuses the box table draws
    num = ["score", "iou3d", "iou2d", "center_dist", "depth_err", "size_err", "yaw_err", "depth", "volume"]
    np.testing.assert_allclose(merged[num].to_numpy(np.float64), merged[[f"{c}_report" for c in num]].to_numpy(
        np.float64), rtol=1e-9, atol=1e-12, equal_nan=True)
    for c in ("score_rank", "image_rank", "ref_gt"):
        np.testing.assert_array_equal(merged[c].astype("Float64").to_numpy(np.float64, na_value=np.nan),
                                      merged[f"{c}_report"].to_numpy(np.float64))
    gts = _frame(at, "run", "row", "status", "ignore_reason")
    rg = report("gt_details")
    rg = rg[(rg["dataset"] == DS) & (rg["image_id"] == image_id)]
    m = gts.merge(rg, left_on=["run", "row"], right_on=["run", "gt"], suffixes=("", "_report"))
    assert len(m) == len(gts) and (m["status"] == m["status_report"]).all()
    assert m["ignore_reason"].fillna("").tolist() == m["ignore_reason_report"].fillna("").tolist()
    np.testing.assert_allclose(m[["truncation", "visibility", "depth", "volume", "iou3d"]].to_numpy(np.float64),
                               m[["truncation_report", "visibility_report", "depth_report", "volume_report",
                                  "iou3d_report"]].to_numpy(np.float64), rtol=1e-9, equal_nan=True)


def test_pr_curves_page(tiny_demo, report):
    at = app("app_pages/curves.py", ds=DS)
    assert not problems(at), problems(at)
    shown = _frame(at, "run", "category", "n_det", "recall", "precision")
    rep = _rows(report("operating_points"), dataset=DS)
    rep = rep[rep["run"].isin(shown["run"].unique())].reset_index(drop=True)
    assert shown[["run", "category"]].values.tolist() == rep[["run", "category"]].values.tolist()
    _close(shown, rep, ["min_score", "n_gt", "n_det", "tp", "fp", "recall", "precision"])
    main = json.loads(at.get("plotly_chart")[0].proto.spec)
    curves = _rows(report("pr_curves"), dataset=DS, category="(all classes)")
    for tr in (t for t in main["data"] if t.get("mode") == "lines"):
        np.testing.assert_allclose(_plotly_array(tr["y"]), curves[curves["run"] == tr["name"]]["precision"],
                                   rtol=1e-9)


def test_sample_grid_matching_boxes(tiny_demo, report):
    at = app("app_pages/grid.py", ds=DS)
    at.multiselect(key="grid_status").set_value(["FP", "mislabelled"]).run()
    assert not problems(at), problems(at)
    run = at.session_state["focus_run"]
    shown = _frame(at, "image_id", "kind", "row", "center_dist", "yaw_err")
    rep = _rows(report("pred_details"), dataset=DS, run=run)
    rep = rep[rep["status"].isin(["FP", "mislabelled"])].reset_index(drop=True)
    assert sorted(shown["row"]) == sorted(rep["pred"]) and (shown["kind"] == "pred").all()
    merged = shown.merge(rep, left_on="row", right_on="pred", suffixes=("", "_report"))
    for c in ("score", "center_dist", "size_err", "yaw_err"):
        np.testing.assert_allclose(merged[c], merged[f"{c}_report"], rtol=1e-9, equal_nan=True)


def test_confusion_page(tiny_demo, report):
    at = app("app_pages/confusion.py", ds=DS)
    assert not problems(at), problems(at)
    run = at.session_state["focus_run"]
    top = _frame(at, "gt_class", "pred_class", "count")
    fine = _rows(report("confusion_fine"), dataset=DS, run=run)
    merged = top.merge(fine, on=["gt_class", "pred_class"], suffixes=("", "_report"))
    assert len(merged) == len(top) and (merged["count"] == merged["count_report"]).all()
    sem = _rows(report("semantic_confusion"), dataset=DS, run=run).iloc[0]
    assert metric(at, "Semantic cost per matched GT") == f"{sem['cost_per_match']:.3f}"
    at.radio(key="w:conf_level").set_value("super").run()
    summ = _rows(report("confusion_super_summary"), dataset=DS, run=run).iloc[0]
    assert metric(at, "Confusions crossing super-categories") == f"{summ['cross_super_share_of_confusions']:.0%}"
    assert metric(at, "Mean off-diagonal") == f"{summ['mean_off_diagonal']:.2f}"


def test_prompt_lab(tiny_demo, report):
    at = app("app_pages/prompt_lab.py", ds=DS)
    assert not problems(at), problems(at)
    run = at.session_state["focus_run"]
    shown = _frame(at, "template", "group", "AP3D", "n_kept")
    rep = _rows(report("prompt_templates"), dataset=DS, run=run)
    assert shown["template"].tolist() == rep["template"].tolist()
    _close(shown, rep, ["AP3D", "AP3D@25", "recall3D@15", "n_kept"])
    sens = _rows(report("prompt_sensitivity"), dataset=DS, run=run).iloc[0]
    assert metric(at, "CV (σ/μ)") == f"{sens['cv']:.3f}"
    at.session_state["pl_section"] = "Consistency and ranking"  # the sections are lazy tabs
    at.run()
    cons = _rows(report("prompt_consistency"), dataset=DS, run=run).iloc[0]
    assert metric(at, "PCR") == f"{cons['PCR']:.3f}"
    # the detail sections (label ranks, vocabulary curve, calibration) follow the selected template: pick the one
    # the report's single-template tables use (the spec's default, S1)
    at.selectbox(key="w:template").set_value("S1").run()
    ranks = _rows(report("label_ranks"), dataset=DS, run=run).iloc[0]
    assert metric(at, "Median rank") == f"{ranks['median']:.1f}"
    at.session_state["pl_section"] = "Vocabulary size and calibrated acceptance"
    at.run()
    cal = _frame(at, "rule", "AP3D", "n_kept")
    rc = _rows(report("calibration"), dataset=DS, run=run)
    assert cal["rule"].tolist() == rc["rule"].tolist()
    _close(cal, rc, ["AP3D", "n_kept"])
    curve = next(c for c in at.get("plotly_chart") if "vocabulary size" in c.proto.spec)
    ys = np.concatenate([_plotly_array(tr["y"]) for tr in json.loads(curve.proto.spec)["data"]])
    np.testing.assert_allclose(ys, _rows(report("vocabulary_curve"), dataset=DS, run=run)["AP3D"], rtol=1e-9)


def test_oracle_page(tiny_demo, report):
    at = app("app_pages/oracle.py", ds=DS)
    assert not problems(at), problems(at)
    run = at.session_state["focus_run"]
    s = _rows(report("protocol_summary"), dataset=DS, run=run).iloc[0]
    assert metric(at, "mAP3D dataset-level") == f"{s['map_dataset_level']:.2f}"
    assert metric(at, "mAP3D target-aware") == f"{s['map_target_aware']:.2f}"
    assert metric(at, "Predictions removed") == f"{int(s['n_removed'])}"
    per_class = _frame(at, "class", "ap_dataset_level", "ap_target_aware")
    rep = _rows(report("protocol_per_class"), dataset=DS, run=run)
    assert per_class["class"].tolist() == rep["class"].tolist()
    _close(per_class, rep, ["ap_dataset_level", "ap_target_aware", "n_removed"])
    if s["n_removed"]:
        removed = _frame(at, "pred_row", "max_iou_other")
        rr = _rows(report("protocol_removed"), dataset=DS, run=run)
        assert removed["pred_row"].tolist() == rr["pred_row"].tolist()


def test_error_breakdown_page(tiny_demo, report):
    at = app("app_pages/errors.py", ds=DS)
    assert not problems(at), problems(at)
    tide = _frame(at, "bin", "delta_ap", "run").sort_values(["run", "bin"]).reset_index(drop=True)
    rep = _rows(report("tide"), dataset=DS)
    rep = rep[rep["run"].isin(tide["run"].unique())].sort_values(["run", "bin"]).reset_index(drop=True)
    assert tide[["run", "bin"]].values.tolist() == rep[["run", "bin"]].values.tolist()
    _close(tide, rep, ["count", "delta_ap", "ap_fixed", "base_ap"])
    oracles = _frame(at, "factor", "gain", "run").sort_values(["run", "factor"]).reset_index(drop=True)
    ro = _rows(report("oracles"), dataset=DS)
    ro = ro[ro["run"].isin(oracles["run"].unique())].sort_values(["run", "factor"]).reset_index(drop=True)
    _close(oracles, ro, ["AP3D", "gain", "n_changed"])
    dist = _frame(at, "run", "ODS", "mATE").set_index("run")
    rd = _rows(report("distance"), dataset=DS, mode="3dmood").set_index("run").loc[dist.index]
    _close(dist, rd, ["AP", "mATE", "mAOE", "mASE", "ODS"])


def test_splits_page(tiny_demo, report):
    at = app("app_pages/splits.py", ds=DS)
    assert not problems(at), problems(at)
    run = at.session_state["focus_run"]
    assert int(at.session_state["split_k"]) == SUBSET and int(at.session_state["split_n"]) == SPLITS
    s = _rows(report("class_splits"), dataset=DS, run=run).iloc[0]
    assert metric(at, "Subset mAP3D") == f"{s['mean']:.1f} ± {s['std']:.1f}"
    assert metric(at, "All classes") == f"{s['full']:.1f}"
    shown = _frame(at, "run", "dataset", "map3d", "in_domain").sort_values(["run", "dataset"]).reset_index(drop=True)
    rt = report("transfer").sort_values(["run", "dataset"]).reset_index(drop=True)
    assert shown[["run", "dataset"]].values.tolist() == rt[["run", "dataset"]].values.tolist()
    _close(shown, rt, ["map3d", "recall"])
    assert shown["environment"].tolist() == rt["environment"].tolist()
