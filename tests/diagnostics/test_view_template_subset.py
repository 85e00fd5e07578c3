"""A View's ``template`` (a prompt-conditioned run's per-template file) and ``subset`` (a named image subset): scored
as if the benchmark held only that file / only those images, checked against separately built benchmarks and by
hand; bad names are one-line errors naming the config field."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml

from ov3d_core.analysis import Analysis, RemapSpec, View
from ov3d_core.errors import InputError
from tests.io.factories import make_annotation, make_gt_json, make_image, make_pred_from_annotation, make_pred_json


@pytest.fixture
def bench(tmp_path):
    """Three images with one chair each; S1 finds all three at 0.9; PB-negative finds image 1's chair at 0.8 and puts
    a 0.95 false positive on image 3. The subset `probe` is images 1 and 2."""
    anns = [make_annotation(i, i, center=(0.2 * i, 0.0, 4.0 + i)) for i in (1, 2, 3)]
    make_gt_json(tmp_path, images=[make_image(i) for i in (1, 2, 3)], annotations=anns)
    make_pred_json(tmp_path, [make_pred_from_annotation(a, 0.9) for a in anns], name="s1.json")
    fp = make_pred_from_annotation(anns[2], 0.95)
    fp["center_cam"] = [5.0, 0.0, 20.0]
    fp["bbox3D"] = (np.asarray(anns[2]["bbox3D_cam"]) + [5.0 - 0.6, 0.0, 13.0]).tolist()
    moved = make_pred_from_annotation(anns[0], 0.8)
    moved["center_cam"] = (np.asarray(moved["center_cam"]) + [0.3, 0.0, 0.0]).tolist()
    moved["bbox3D"] = (np.asarray(anns[0]["bbox3D_cam"]) + [0.3, 0.0, 0.0]).tolist()
    make_pred_json(tmp_path, [moved, fp], name="neg.json")
    (tmp_path / "probe.txt").write_text("1\n2\n")
    doc = {"datasets": [{"name": "D", "gt": "gt.json", "image_subsets": {"probe": "probe.txt"}}],
           "runs": [{"name": "ov", "dataset": "D", "per_template": {"S1": "s1.json", "PB-negative": "neg.json"}},
                    {"name": "plain", "dataset": "D", "predictions": "s1.json"}]}
    p = tmp_path / "bench.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    return p


def _only(tmp_path, name, gt_images, pred_file):
    """An independent benchmark: a GT file with only ``gt_images`` and one run of ``pred_file``'s records on them."""
    import json

    gt = json.loads((tmp_path / "gt.json").read_text())
    gt["images"] = [im for im in gt["images"] if im["id"] in gt_images]
    gt["annotations"] = [a for a in gt["annotations"] if a["image_id"] in gt_images]
    sub = tmp_path / name
    sub.mkdir()
    (sub / "gt.json").write_text(json.dumps(gt))
    preds = [r for r in json.loads((tmp_path / pred_file).read_text()) if r["image_id"] in gt_images]
    (sub / "p.json").write_text(json.dumps(preds))
    return Analysis.from_files(sub / "gt.json", sub / "p.json", run_names=["ov"], cache_dir=sub / "cache",
                               dataset_name="D")


def _same(a: dict, b: dict) -> None:
    pd.testing.assert_series_equal(pd.Series(a, dtype=float), pd.Series(b, dtype=float), rtol=0, atol=1e-12)


def test_template_scores_that_templates_file(bench):
    a = Analysis.from_yaml(bench)
    s1 = a.summary(View("D", "ov", template="S1"))
    neg = a.summary(View("D", "ov", template="PB-negative"))
    assert s1["AP3D"] == pytest.approx(100.0)  # three exact boxes
    # PB-negative, by hand: the 0.95 FP ranks first, then the TP of image 1; 3 GT. Precision at recall 1/3 is 1/2,
    # interpolated over COCO's 101 recall points: 34 points (0.00 .. 0.33) at 0.5, the rest 0 -> 34 * 0.5 / 101
    assert neg["AP3D"] == pytest.approx(100 * 34 * 0.5 / 101)
    _same(a.summary(View("D", "ov")), s1)  # the default template's file
    independent = _only(bench.parent, "neg_only", {1, 2, 3}, "neg.json")
    _same(neg, independent.summary(independent.view()))


def test_subset_scores_only_its_images(bench):
    a = Analysis.from_yaml(bench)
    v = View("D", "ov", template="PB-negative", subset="probe")
    got = a.summary(v)
    # images 1 and 2 only: the false positive of image 3 is gone, one of two chairs found at full precision
    assert got["AP3D"] == pytest.approx(100 * 51 / 101)  # recall points 0.00 .. 0.50 at precision 1
    assert got["recall3D@15"] == pytest.approx(0.5)
    independent = _only(bench.parent, "probe_only", {1, 2}, "neg.json")
    _same(got, independent.summary(independent.view()))
    pc = a.per_category(v)
    assert pc.set_index("category").loc["chair", "n_gt"] == 2
    assert a.leaderboard_row(v)["n_images"] == 2
    # the subset's pairs are the full pairs filtered and re-indexed
    full, sub = a.view_pairs(View("D", "ov", template="PB-negative")), a.view_pairs(v)
    assert sub.n_gt == 2 and sub.n_pred == 1 and full.n_gt == 3 and full.n_pred == 2
    np.testing.assert_array_equal(sub.iou3d, full.iou3d[(full.gt < 2) & (full.pred == 0)])


def test_subset_and_template_errors_name_the_field(bench):
    a = Analysis.from_yaml(bench)
    with pytest.raises(InputError) as e:
        a.summary(View("D", "ov", subset="runtime"))
    assert e.value.field == "image_subsets" and "probe" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(InputError) as e:
        a.summary(View("D", "ov", template="S3"))
    assert e.value.field == "per_template" and "PB-negative" in str(e.value)
    with pytest.raises(InputError) as e:
        View("D", "ov", template="S1", remap=RemapSpec())
    assert e.value.field == "template"
    with pytest.raises(InputError):
        View("D", "ov", subset="")


def test_label_names_template_and_subset():
    assert View("D", "ov", template="S1", subset="probe").label == "ov [S1] on D · images: probe · dataset-level"


def test_prompt_tables_of_a_prompt_conditioned_run_use_its_files(bench):
    """Template table, sensitivity and PCR / PLC from the per-template files (no encoder): S1 finds the three chairs
    exactly, PB-negative one of them 0.3 m off; a template without a file (S2) is not scored."""
    a = Analysis.from_yaml(bench)
    v = View("D", "ov")
    assert a.prompted(v) == "per_template"
    assert a.prompt_templates(v, ("S2", "PB-negative", "S1")) == ("PB-negative", "S1")
    t = a.template_scores(v, ("S1", "S2", "PB-negative")).set_index("template")
    assert list(t.index) == ["S1", "PB-negative"]
    assert t.loc["S1", "AP3D"] == pytest.approx(100.0)
    assert t.loc["PB-negative", "AP3D"] == pytest.approx(a.summary(View("D", "ov", template="PB-negative"))["AP3D"])
    assert t.loc["S1", "group"] == "standard" and t.loc["S1", "n_kept"] == 3 and t.loc["PB-negative", "n_kept"] == 2
    c = a.consistency(v, ("S1", "PB-negative"))
    assert c.pcr == pytest.approx(1 / 3)  # only image 1's chair is recovered under both
    assert c.plc == pytest.approx(0.7 / 1.3, abs=1e-9)  # the two boxes on it: 0.3 m apart on a 1 m cube
    assert c.recall_any == pytest.approx(1.0)
    with pytest.raises(InputError) as e:  # a plain run has no prompt response without a remap spec
        a.prompted(View("D", "plain"))
    assert e.value.field == "remap"
