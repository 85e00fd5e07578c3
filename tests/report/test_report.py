"""``python -m ov3d_core report`` and ``ov3d_core.report`` on a tiny benchmark written as real files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ov3d_core.analysis import Analysis, View
from ov3d_core.cli import main
from ov3d_core.report import (BOX_TABLES, CI_TABLES, MINING_TABLES, PAIRED_TABLES, PROMPT_TABLES, TABLES, ReportOptions,
                              build_report, transfer_tables)
from ov3d_core.tables import to_latex, to_markdown
from tests.report.conftest import DATASETS, RUNS, SPLITS, SUBSET, build_tiny_benchmark

SUMMARY_KEYS = ["AP3D", "AP3D@15", "AP3D@25", "AP3D@50", "AP3D-N", "AP3D-M", "AP3D-F", "recall3D@15"]


@pytest.fixture(scope="module")
def report_dir(cli_report) -> Path:
    rc, out = cli_report
    assert rc == 0
    return out


@pytest.fixture(scope="module")
def bench(tiny_config) -> Analysis:
    return Analysis.from_yaml(tiny_config)


def _summary(a: Analysis, run: str, dataset: str, protocol: str = "dataset-level") -> dict:
    return a.summary(View(dataset, run, protocol=protocol))


def _csv(out: Path, name: str) -> pd.DataFrame:
    return pd.read_csv(out / "csv" / f"{name}.csv")

#: Tables a default report leaves out (they need --encoder, --boxes, --ci, --paired or --mine).
OPT_IN = PROMPT_TABLES + BOX_TABLES + CI_TABLES + PAIRED_TABLES + MINING_TABLES


# ------------------------------------------------------------------------------------------------ files
def test_every_expected_file_is_written(report_dir):
    expected = {"index.md", "README.md", "summary.json"}
    for name, spec in TABLES.items():
        if name in OPT_IN:  # no --encoder, --boxes, --ci, --paired, --mine: left out
            assert not (report_dir / "csv" / f"{name}.csv").exists()
            continue
        expected.add(f"csv/{name}.csv")
        if spec.markdown:
            expected.add(f"md/{name}.md")
        if spec.latex:
            expected.add(f"tex/{name}.tex")
    written = {str(p.relative_to(report_dir)) for p in report_dir.rglob("*") if p.is_file()}
    assert expected <= written, sorted(expected - written)
    for rel in expected:
        assert (report_dir / rel).stat().st_size > 0, rel
    # CSV-only tables really are CSV only
    for name in ("protocol_removed", "confusion_fine"):
        assert not (report_dir / "md" / f"{name}.md").exists()
    # summary.json lists exactly what was written
    summary = json.loads((report_dir / "summary.json").read_text())
    assert set(summary["files"]) == written


def test_index_links_every_table_and_resolves(report_dir):
    index = (report_dir / "index.md").read_text()
    links = re.findall(r"\]\(([^)]+)\)", index)
    assert links
    for link in links:
        assert (report_dir / link).is_file(), link
    for name in TABLES:
        assert (f"csv/{name}.csv" in links) == (name not in OPT_IN)


def test_latex_files_are_tabulars_without_raw_nan(report_dir):
    tex = sorted((report_dir / "tex").glob("*.tex"))
    assert {p.stem for p in tex} == {n for n, s in TABLES.items() if s.latex and n not in OPT_IN}
    for p in tex:
        text = p.read_text()
        assert "\\begin{tabular}" in text and "\\end{tabular}" in text, p.name
        assert "\\toprule" in text and "\\bottomrule" in text
        assert not re.search(r"\bnan\b|\bNaN\b|<NA>", text), p.name
        if "\\_" not in p.stem and p.stem != "confusion_super_pooled":  # tables with run names in their cells
            assert "run\\_in" in text, p.name  # underscores escaped in cells
    # 2 decimals, NaN as "--": the leaderboard has AP3D-F NaN on this benchmark
    lb = (report_dir / "tex" / "leaderboard.tex").read_text()
    assert "--" in lb
    assert re.search(r"& \d+\.\d\d \\\\", lb)
    assert not re.search(r"\d\.\d{3,}", lb)


# ------------------------------------------------------------------------------------------------ numbers
def test_leaderboard_equals_analysis_summary(report_dir, bench):
    lb = _csv(report_dir, "leaderboard")
    assert len(lb) == sum(len(DATASETS) for _ in RUNS)
    assert list(lb.columns[-len(SUMMARY_KEYS):]) == SUMMARY_KEYS
    for row in lb.to_dict(orient="records"):
        expected = _summary(bench, row["run"], row["dataset"])
        assert list(expected) == SUMMARY_KEYS
        np.testing.assert_allclose([row[k] for k in expected], list(expected.values()), rtol=1e-12,
                                   equal_nan=True, err_msg=f"{row['run']} on {row['dataset']}")
    # the pivot tables carry the same numbers
    m = _csv(report_dir, "map3d").set_index("run")
    r = _csv(report_dir, "recall").set_index("run")
    assert list(m.columns) == list(DATASETS)
    for row in lb.to_dict(orient="records"):
        assert m.loc[row["run"], row["dataset"]] == pytest.approx(row["AP3D"], rel=1e-12)
        assert r.loc[row["run"], row["dataset"]] == pytest.approx(row["recall3D@15"], rel=1e-12)


def test_report_and_evaluate_cli_agree(report_dir, tiny_config, tmp_path):
    js = tmp_path / "eval.json"
    assert main(["evaluate", "--benchmark", str(tiny_config), "--json", str(js)]) == 0
    ev = json.loads(js.read_text())["runs"]
    lb = _csv(report_dir, "leaderboard")
    for row in lb.to_dict(orient="records"):
        block = ev[row["run"]][row["dataset"]]
        for k in SUMMARY_KEYS:
            if block[k] is None:
                assert np.isnan(row[k]), (row["run"], row["dataset"], k)
            else:
                assert row[k] == pytest.approx(block[k], rel=1e-12), (row["run"], row["dataset"], k)
        pc = _csv(report_dir, "per_category")
        pc = pc[(pc["run"] == row["run"]) & (pc["dataset"] == row["dataset"])].set_index("category")
        for cat, c in block["per_category"].items():
            assert pc.loc[cat, "n_gt"] == c["n_gt"]
            if c["AP3D"] is None:
                assert np.isnan(pc.loc[cat, "AP3D"])
            else:
                assert pc.loc[cat, "AP3D"] == pytest.approx(c["AP3D"], rel=1e-12)


def test_summary_json_main_numbers(report_dir):
    s = json.loads((report_dir / "summary.json").read_text())
    lb = _csv(report_dir, "leaderboard")
    for row in lb.to_dict(orient="records"):
        entry = s["runs"][row["run"]][row["dataset"]]
        assert entry["AP3D"] == pytest.approx(row["AP3D"], rel=1e-12)
        assert entry["in_domain"] == (row["dataset"] in RUNS[row["run"]])
        assert entry["protocol_comparison"]["map_dataset_level"] == pytest.approx(row["AP3D"], rel=1e-9)
        assert entry["class_split"]["n_classes"] > 0
    assert s["options"]["n_subsets"] == SPLITS and s["options"]["subset_size"] == SUBSET
    assert set(s["datasets"]) == set(DATASETS)
    assert all(r["prompt_robustness"] is None for r in s["three_axis"])
    assert s["super_category_pooled"]["run"] == "(all)"


def test_prompt_robustness_is_nan_and_explained(report_dir):
    axes = _csv(report_dir, "three_axis")
    assert set(axes["run"]) == set(RUNS)
    assert axes["prompt_robustness"].isna().all()
    assert axes["geometric"].notna().all() and axes["semantic"].notna().all()
    readme = (report_dir / "README.md").read_text()
    assert "Prompt robustness" in readme and "NaN" in readme
    assert "external_set" in readme  # a training dataset outside the config is named


def test_protocol_tables(report_dir, bench):
    summ = _csv(report_dir, "protocol_summary")
    per_class = _csv(report_dir, "protocol_per_class")
    removed = _csv(report_dir, "protocol_removed")
    for row in summ.to_dict(orient="records"):
        ta = _summary(bench, row["run"], row["dataset"], "target-aware")["AP3D"]
        assert row["map_target_aware"] == pytest.approx(ta, rel=1e-9)
        assert row["ratio"] == pytest.approx(row["map_target_aware"] / row["map_dataset_level"])
        assert row["map_target_aware"] >= row["map_dataset_level"]  # the oracle only removes false positives here
        rm = removed[(removed["run"] == row["run"]) & (removed["dataset"] == row["dataset"])]
        assert len(rm) == row["n_removed"] and int(rm["cross_class"].sum()) == row["n_removed_cross_class"]
        pc = per_class[(per_class["run"] == row["run"]) & (per_class["dataset"] == row["dataset"])]
        assert pc["n_removed"].sum() == row["n_removed"]
    assert summ["n_removed"].sum() > 0


def test_confusion_tables_are_consistent(report_dir):
    fine = _csv(report_dir, "confusion_fine")
    sup = _csv(report_dir, "confusion_super")
    summ = _csv(report_dir, "confusion_super_summary")
    pooled = _csv(report_dir, "confusion_super_pooled").set_index("gt")
    assert (fine["count"] > 0).all()
    for (run, ds), g in fine.groupby(["run", "dataset"]):
        s = sup[(sup["run"] == run) & (sup["dataset"] == ds)]
        row = summ[(summ["run"] == run) & (summ["dataset"] == ds)].iloc[0]
        assert g["count"].sum() == s["count"].sum() == row["n_matched"]
        assert (g["gt_class"] != g["pred_class"]).mul(g["count"]).sum() == row["n_fine_confusions"]
    total = summ[summ["run"] == "(all)"].iloc[0]
    assert total["n_matched"] == sup["count"].sum() == pooled["n_matched"].sum()
    same = fine[fine["gt_class"] == fine["pred_class"]]["count"].sum()
    assert total["accuracy"] == pytest.approx(same / total["n_matched"])
    fracs = pooled.drop(columns=["n_matched", "missed"])
    sums = fracs[pooled["n_matched"] > 0].sum(axis=1)
    np.testing.assert_allclose(sums, 1.0)
    cross = sup[sup["gt_super"] != sup["pred_super"]]["count"].sum()
    assert total["cross_super_share_of_matches"] == pytest.approx(cross / total["n_matched"])


def test_class_splits_and_transfer(report_dir, bench):
    splits = _csv(report_dir, "class_splits")
    assert (splits["n_subsets"] == SPLITS).all() and (splits["subset_size"] == SUBSET).all()
    ok = splits["n_classes"] >= SUBSET
    assert ok.all()
    assert (splits["adverse"] <= splits["mean"] + 1e-9).all() and (splits["mean"] <= splits["favourable"] + 1e-9).all()
    assert splits["std"].notna().all()
    tr = _csv(report_dir, "transfer")
    for row in tr.to_dict(orient="records"):
        assert row["in_domain"] == (row["dataset"] in RUNS[row["run"]])
        assert row["environment"] == DATASETS[row["dataset"]][0]
    per_run = _csv(report_dir, "transfer_per_run")
    indoor = per_run[(per_run["run"] == "run_in") & (per_run["environment"] == "indoor")].iloc[0]
    assert indoor["map3d_ratio"] == pytest.approx(indoor["map3d_out"] / indoor["map3d_in"])
    pairs = _csv(report_dir, "transfer_pairs")
    assert set(pairs["dataset"]) == {"indoor_a", "indoor_c"}  # run_out was trained on indoor_c: a fair pair


def test_target_aware_report_uses_the_protocol(bench):
    rep = build_report(bench, ReportOptions(protocol="target-aware", n_subsets=20, subset_size=SUBSET))
    lb = rep.tables["leaderboard"]
    assert set(lb["protocol"]) == {"target-aware"}
    for row in lb.to_dict(orient="records"):
        expected = _summary(bench, row["run"], row["dataset"], "target-aware")
        for k, v in expected.items():
            assert row[k] == pytest.approx(v, rel=1e-12, nan_ok=True)
    # the protocol comparison is protocol-independent
    assert rep.tables["protocol_summary"]["map_dataset_level"].tolist() == pytest.approx(
        [_summary(bench, r, d)["AP3D"] for r, d in zip(lb["run"], lb["dataset"])], rel=1e-9)


def test_class_splits_are_reproducible_and_prompt_cv_fills_the_axis(bench):
    opts = ReportOptions(n_subsets=50, subset_size=SUBSET, seed=3)
    a = build_report(bench, opts)
    b = build_report(Analysis(bench.benchmark), opts)
    pd.testing.assert_frame_equal(a.tables["class_splits"], b.tables["class_splits"])
    axes = transfer_tables(bench, opts, {"run_in": 0.2})["three_axis"].set_index("run")
    assert axes.loc["run_in", "prompt_robustness"] == pytest.approx(0.8)
    assert np.isnan(axes.loc["run_out", "prompt_robustness"])
    assert any("no encoder" in n for n in a.notes)


# ------------------------------------------------------------------------------------------------ errors
def test_bad_config_exits_2_naming_the_file(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("datasets: not-a-list\n")
    assert main(["report", "--config", str(bad), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "datasets" in err
    assert not (tmp_path / "out").exists()
    missing = tmp_path / "nope.yaml"
    assert main(["report", "--config", str(missing), "--out", str(tmp_path / "out")]) == 2
    assert str(missing) in capsys.readouterr().err


def test_missing_prediction_file_exits_2(tmp_path, capsys):
    cfg = build_tiny_benchmark(tmp_path / "b")
    pred = tmp_path / "b" / "run_in_indoor_a.json"
    pred.unlink()
    assert main(["report", "--config", str(cfg), "--out", str(tmp_path / "out"), "--splits", "5"]) == 2
    assert "run_in_indoor_a.json" in capsys.readouterr().err


def test_out_is_a_file_exits_2(tiny_config, tmp_path, capsys):
    f = tmp_path / "taken"
    f.write_text("x")
    assert main(["report", "--config", str(tiny_config), "--out", str(f)]) == 2
    assert str(f) in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------ renderers
def test_renderers_format_numbers_and_nan():
    df = pd.DataFrame({"run_name": ["a_b", "c|d"], "AP3D": [12.3456, np.nan], "recall": [0.12345, 1.0],
                       "n": [3, 4], "flag": [True, False], "env": ["indoor", None]})
    md = to_markdown(df)
    assert "| a_b | 12.35 | 0.123 | 3 | yes | indoor |" in md
    assert "| c\\|d | -- | 1.000 | 4 | no | -- |" in md
    tex = to_latex(df, caption="My_table")
    assert "\\begin{tabular}" in tex and "My\\_table" in tex
    assert "a\\_b & 12.35 & 0.12 & 3 & yes & indoor" in tex
    assert "c|d & -- & 1.00 & 4 & no & --" in tex
    assert "_(no rows)_" in to_markdown(df.iloc[0:0])


def test_demo_benchmark_report(tmp_path):
    """End to end on the synthetic demo benchmark."""
    demo = tmp_path / "demo"
    assert main(["demo", "build", "--out", str(demo), "--images", "3", "--no-progress"]) == 0
    out = tmp_path / "report"
    assert main(["report", "--config", str(demo / "benchmark.yaml"), "--out", str(out), "--splits", "20"]) == 0
    bench = Analysis.from_yaml(demo / "benchmark.yaml")
    lb = _csv(out, "leaderboard")
    assert len(lb) == len(bench.benchmark.config.runs)
    row = lb.iloc[0]
    expected = _summary(bench, row["run"], row["dataset"])
    for k, v in expected.items():
        assert row[k] == pytest.approx(v, rel=1e-12, nan_ok=True)
