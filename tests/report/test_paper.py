"""``ov3d report --paper`` on the demo (issue 23, item 10): every artefact of the four documents is written under the
document's own table / figure name, with the rows and columns the document's layout needs, numbers equal to the
Analysis calls they come from, an index (PAPER.md) of what each file reproduces and what the inputs cannot give; and
the one-line errors of bad input."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import yaml

from ov3d_core.analysis import Analysis, RemapSpec, View
from ov3d_core.cli import main
from ov3d_core.paper import ARTEFACTS, NOT_REPRODUCIBLE

IMAGES = 12  # per dataset: the annotations-only demo (no rendering), every run incl. the prompt-conditioned one


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    from ov3d_core.demo.build import build_demo

    out = tmp_path_factory.mktemp("paper_demo") / "demo"
    build_demo(out, images=IMAGES, seed=0, annotations_only=True)
    return out / "benchmark.yaml"


@pytest.fixture(scope="module")
def paper(demo, tmp_path_factory):
    out = tmp_path_factory.mktemp("paper") / "out"
    rc = main(["report", "--config", str(demo), "--out", str(out), "--paper", "--encoder", "proxy",
               "--splits", "200"])
    assert rc == 0
    return out


def _csv(out, stem) -> pd.DataFrame:
    return pd.read_csv(out / f"{stem}.csv")


#: The columns each table must have (beyond these, more may follow).
COLUMNS = {
    "ov3dbench_table1_methods": ["run", "description", "vocabulary", "prompt", "n_templates", "trained_on"],
    "ov3dbench_table2_recall": ["run", "demo_indoor", "demo_outdoor", "demo_outdoor_av"],
    "ov3dbench_table3_map3d": ["run", "demo_indoor", "demo_outdoor", "demo_outdoor_av"],
    "ov3dbench_table4_transfer": ["run", "dataset", "map3d", "recall", "in_domain"],
    "ov3dbench_table7_protocols": ["run", "dataset", "map_dataset_level", "map_target_aware", "ratio"],
    "ov3dbench_table8_prompt_sensitivity": ["run", "dataset", "subset", "mean_underdetailed", "mean_standard",
                                            "mean_overdetailed", "cv", "drop_standard_to_overdetailed"],
    "ov3dbench_table8_templates": ["run", "dataset", "template", "group", "AP3D"],
    "ov3dbench_table9_class_splits": ["run", "dataset", "mean", "std", "adverse", "favourable"],
    "ov3dbench_table10_runtime": ["run", "semantic_ms", "geometry_ms", "total_ms", "device", "how"],
    "ov3dbench_fig4_super_confusion": ["gt", "n_matched", "missed", "ontology"],
    "ov3dbench_fig5_three_axis": ["run", "geometric", "semantic", "cross_domain_ratio", "prompt_robustness"],
    "fgovd_table2_difficulty_tiers": ["run", "dataset", "tier", "n_negatives", "accuracy", "median_rank", "AP3D"],
    "fgovd_table4_ap_by_size": ["run", "dataset", "AP3D-small", "AP3D-medium", "AP3D-large", "AP2D-small"],
    "fgovd_median_rank": ["run", "dataset", "median", "median_nms", "n_suppressed_by_nms"],
    "wilddet3d_ods": ["run", "dataset", "mode"],
    "probench_table2_summary": ["run", "dataset", "mAP@.5", "mAP@.75", "mAP@.5:.95", "total_ms", "PCR", "PLC",
                                "max_delta"],
    "probench_fig3_ap_vs_iou": ["run", "dataset", "iou", "threshold", "mAP"],
    "probench_fig5_accuracy_latency": ["run", "metric", "total_ms", "plotted"],
    "probench_prompt_types": ["run", "dataset", "type", "categorical", "original", "wrapped", "max_delta"],
}


def test_every_artefact_is_written_with_its_columns(paper):
    for art in ARTEFACTS:
        assert (paper / f"{art.stem}.csv").is_file(), art.stem
        df = _csv(paper, art.stem)
        assert len(df), art.stem
        for col in COLUMNS.get(art.stem, []):
            assert col in df.columns, (art.stem, col, list(df.columns))
        if art.kind == "figure":
            pngs = sorted(paper.glob(f"{art.stem}*.png"))
            assert pngs, art.stem
            assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    # Fig. 2: one matrix per run on the first dataset, X* beside X
    names = {p.stem for p in paper.glob("ov3dbench_fig2_confusion_*.png")}
    assert {"ov3dbench_fig2_confusion_cubercnn_star_demo_indoor",
            "ov3dbench_fig2_confusion_cubercnn_star_remapped_demo_indoor"} <= names


def test_index_maps_every_file_and_says_what_is_missing(paper):
    text = (paper / "PAPER.md").read_text()
    for art in ARTEFACTS:
        assert f"`{art.stem}.csv`" in text and art.reproduces in text
    for _doc, what, why in NOT_REPRODUCIBLE:
        assert what in text and why in text
    assert "Not produced from these inputs" in text


def test_tables_hold_the_analysis_numbers(paper, demo):
    a = Analysis.from_yaml(demo)
    spec = RemapSpec(encoder="proxy")
    t3 = _csv(paper, "ov3dbench_table3_map3d").set_index("run")
    # the paper's central row: the remapped closed-vocabulary run, beside its own labels
    assert list(t3.index[:2]) == ["cubercnn_star", "cubercnn_star*"]
    assert t3.loc["cubercnn_star*", "demo_outdoor"] == pytest.approx(
        a.summary(View("demo_outdoor", "cubercnn_star", remap=spec))["AP3D"], abs=1e-9)
    assert t3.loc["cubercnn_star", "demo_outdoor"] == pytest.approx(
        a.summary(View("demo_outdoor", "cubercnn_star"))["AP3D"], abs=1e-9)
    t2 = _csv(paper, "ov3dbench_table2_recall").set_index("run")
    assert t2.loc["promptable", "demo_indoor"] == pytest.approx(
        a.summary(View("demo_indoor", "promptable"))["recall3D@15"], abs=1e-12)
    # Table 8: the prompted runs (X* and the prompt-conditioned run), each on the prompt-probe subset
    t8 = _csv(paper, "ov3dbench_table8_prompt_sensitivity")
    assert set(t8["run"]) == {"cubercnn_star*", "promptable"} and set(t8["subset"]) == {"prompt_probe"}
    row = t8[(t8["run"] == "promptable") & (t8["dataset"] == "demo_indoor")].iloc[0]
    s = a.prompt_sensitivity(View("demo_indoor", "promptable", subset="prompt_probe"))
    assert row["cv"] == pytest.approx(s.cv, rel=1e-9)
    assert row["drop_standard_to_overdetailed"] == pytest.approx(s.drop_standard_to_overdetailed, rel=1e-9)
    # Pro-Bench: PLC measured from each template's own boxes (below 1), 1 for the remap (boxes shared)
    pb = _csv(paper, "probench_table2_summary").set_index(["run", "dataset"])
    c = a.consistency(View("demo_indoor", "promptable", subset="prompt_probe"))
    assert pb.loc[("promptable", "demo_indoor"), "PCR"] == pytest.approx(c.pcr, rel=1e-12)
    assert 0 < pb.loc[("promptable", "demo_indoor"), "PLC"] < 1
    assert pb.loc[("cubercnn_star*", "demo_indoor"), "PLC"] == pytest.approx(1.0)
    # Table 10: the remapped run is X's geometry plus the measured semantic stage
    rt = _csv(paper, "ov3dbench_table10_runtime").set_index("run")
    assert rt.loc["cubercnn_star*", "geometry_ms"] == pytest.approx(rt.loc["cubercnn_star", "geometry_ms"])
    assert rt.loc["cubercnn_star*", "how"] == "declared + measured"
    # Fig. 4 says which ontology it used: the paper's nine by default
    assert set(_csv(paper, "ov3dbench_fig4_super_confusion")["ontology"]) == {"ov3d-bench"}


def _small(tmp_path, **extra):
    from tests.io.factories import make_annotation, make_gt_json, make_image, make_pred_from_annotation, make_pred_json

    anns = [make_annotation(i, i, center=(0.0, 0.0, 4.0 + i)) for i in (1, 2)]
    make_gt_json(tmp_path, images=[make_image(1), make_image(2)], annotations=anns)
    make_pred_json(tmp_path, [make_pred_from_annotation(x, 0.9) for x in anns], name="p.json")
    doc = {"datasets": [{"name": "D", "gt": "gt.json", "environment": "indoor", **extra}],
           "runs": [{"name": "r", "dataset": "D", "predictions": "p.json"}]}
    p = tmp_path / "bench.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    return p


def test_without_a_prompted_run_the_prompt_artefacts_are_listed_as_missing(tmp_path, capsys):
    cfg = _small(tmp_path)
    out = tmp_path / "out"
    assert main(["report", "--config", str(cfg), "--out", str(out), "--paper", "--figures", "none",
                 "--splits", "20", "--subset-size", "1"]) == 0
    printed = capsys.readouterr().out
    text = (out / "PAPER.md").read_text()
    for art in ARTEFACTS:
        if art.needs:
            assert not (out / f"{art.stem}.csv").exists()
            assert f"not written: {art.stem}: no run with a prompt response" in printed
        else:
            assert (out / f"{art.stem}.csv").exists(), art.stem
    assert "give --encoder" in text
    assert not list(out.glob("*.png"))
    t3 = _csv(out, "ov3dbench_table3_map3d")
    assert t3.loc[0, "D"] == pytest.approx(100.0)


def test_an_unknown_subset_is_one_line_naming_the_field(tmp_path, capsys):
    (tmp_path / "ids.txt").write_text("1\n")
    cfg = _small(tmp_path, image_subsets={"probe": "ids.txt"})
    assert main(["report", "--config", str(cfg), "--out", str(tmp_path / "o"), "--paper", "--subset", "nosuch"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "image_subsets" in err[0] and "probe" in err[0]
    assert not (tmp_path / "o").exists()


def test_report_with_a_subset_scores_only_its_images(tmp_path):
    (tmp_path / "ids.txt").write_text("1\n")
    cfg = _small(tmp_path, image_subsets={"probe": "ids.txt"})
    out = tmp_path / "rep"
    assert main(["report", "--config", str(cfg), "--out", str(out), "--subset", "probe", "--splits", "20",
                 "--subset-size", "1"]) == 0
    lb = pd.read_csv(out / "csv" / "leaderboard.csv")
    assert lb.loc[0, "n_images"] == 1 and lb.loc[0, "n_gt"] == 1
    assert "image subset **probe**" in (out / "index.md").read_text()
    assert json.loads((out / "summary.json").read_text())["options"]["subset"] == "probe"
    assert np.isclose(lb.loc[0, "AP3D"], 100.0)
    # a report of every image says nothing of subsets (it reads as it did before they existed)
    whole = tmp_path / "whole"
    assert main(["report", "--config", str(cfg), "--out", str(whole), "--splits", "20", "--subset-size", "1"]) == 0
    assert "Images:" not in (whole / "index.md").read_text()
    assert "subset" not in json.loads((whole / "summary.json").read_text())["options"]
