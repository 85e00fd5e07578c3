"""PCR / PLC of a prompt-conditioned detector: each template has its own prediction set (rows, order and count)."""

import numpy as np
import pytest

from ov3d_core.diagnostics.consistency import prompt_consistency_from_inputs, prompt_consistency_per_template
from ov3d_core.eval.ap import APInputs
from ov3d_core.eval.labels import label_view_from_names
from ov3d_core.eval.pairs import compute_pairs
from tests.beyond.conftest import make_boxset

GT_X = [0.0, 4.0, 8.0]


def _gt():
    return make_boxset([0] * 3, ["chair"] * 3, [[x, 0, 10.0] for x in GT_X], [[1, 1, 1.0]] * 3)


def _bundle(gt, xs, scores):
    p = make_boxset([0] * len(xs), ["chair"] * len(xs), [[x, 0, 10.0] for x in xs], [[1, 1, 1.0]] * len(xs),
                    score=scores)
    lv = label_view_from_names(p.category, p.score, ("chair",))
    return APInputs.from_view(gt, p, compute_pairs(gt, p), lv), p.corners


def _two_templates():
    gt = _gt()
    # "a": exact boxes on all three GT, rows in the order g2, g0, g1
    a = _bundle(gt, [8.0, 0.0, 4.0], [0.9, 0.8, 0.7])
    # "b": four rows: a stray box, g2 shifted 0.2 m, g0 shifted 0.1 m, another stray; g1 is not found
    b = _bundle(gt, [20.0, 8.2, 0.1, -6.0], [0.95, 0.85, 0.6, 0.5])
    return gt, a, b


def test_plc_is_the_mean_of_the_moved_boxes_ious():
    _, a, b = _two_templates()
    res = prompt_consistency_per_template({"a": a, "b": b}, n_categories=1, vocabulary=("chair",))
    iou_01, iou_02 = 0.9 / 1.1, 0.8 / 1.2  # unit cubes shifted by d along x: (1 - d) / (1 + d)
    assert res.plc == pytest.approx((iou_01 + iou_02) / 2, abs=1e-12)
    assert res.plc < 1
    assert res.pcr == pytest.approx(2 / 3)  # g0 and g2 are recovered under both templates, g1 only under "a"
    assert res.recall_any == pytest.approx(1.0)
    assert list(res.per_template["template"]) == ["a", "b"]
    assert list(res.per_template["recall"]) == pytest.approx([1.0, 2 / 3])
    assert list(res.per_template["n_recovered"]) == [3, 2]
    per_gt = res.per_gt.set_index("gt")
    assert per_gt.loc[0, "plc"] == pytest.approx(iou_01) and per_gt.loc[2, "plc"] == pytest.approx(iou_02)
    assert np.isnan(per_gt.loc[1, "plc"]) and not per_gt.loc[1, "all"]
    assert res.per_class.iloc[0]["pcr"] == pytest.approx(2 / 3)
    # the same through the sequence form
    res2 = prompt_consistency_from_inputs([a[0], b[0]], [a[1], b[1]], n_categories=1)
    assert res2.plc == pytest.approx(res.plc) and res2.pcr == pytest.approx(res.pcr)


def test_identical_boxes_in_two_files_give_plc_one():
    gt = _gt()
    a = _bundle(gt, [0.0, 4.0, 8.0], [0.9, 0.8, 0.7])
    b = _bundle(gt, [8.0, 4.0, 0.0, 30.0], [0.5, 0.6, 0.7, 0.9])  # same boxes, other rows and an extra
    res = prompt_consistency_per_template({"a": a, "b": b}, n_categories=1)
    assert res.plc == pytest.approx(1.0) and res.pcr == pytest.approx(1.0)


def test_corners_must_be_each_templates_own():
    _, a, b = _two_templates()
    with pytest.raises(ValueError, match=r"template 1: expected corners of shape \(4, 8, 3\)"):
        prompt_consistency_from_inputs([a[0], b[0]], a[1], n_categories=1)  # one shared array for two sets
    with pytest.raises(ValueError, match="2 corner arrays"):
        prompt_consistency_from_inputs([a[0], b[0]], [a[1]], n_categories=1)
    other_gt = make_boxset([1] * 3, ["chair"] * 3, [[x, 0, 10.0] for x in GT_X], [[1, 1, 1.0]] * 3)
    c = _bundle(other_gt, [0.0], [0.9])
    with pytest.raises(ValueError, match="different GT rows"):
        prompt_consistency_per_template({"a": a, "c": c}, n_categories=1)
    with pytest.raises(ValueError, match="at least one"):
        prompt_consistency_per_template({}, n_categories=1)
