"""PCR / PLC over three templates, by hand."""

import numpy as np
import pytest

from ov3d_core.eval.ap import APInputs
from ov3d_core.diagnostics.consistency import prompt_consistency, prompt_consistency_from_inputs
from ov3d_core.eval.labels import label_view_from_names
from ov3d_core.eval.pairs import compute_pairs
from tests.beyond.conftest import make_boxset

GT_X = [0.0, 4.0, 8.0, 12.0]


def _gt():
    return make_boxset([0] * 4, ["chair"] * 4, [[x, 0, 10.0] for x in GT_X], [[1, 1, 1.0]] * 4)


def _template(xs):
    """Predictions at the given x positions (None = no prediction for that GT)."""
    xs = [x for x in xs if x is not None]
    return make_boxset([0] * len(xs), ["chair"] * len(xs), [[x, 0, 10.0] for x in xs], [[1, 1, 1.0]] * len(xs),
                       score=np.linspace(0.9, 0.5, len(xs)))


def test_pcr_plc_three_templates_by_hand():
    gt = _gt()
    # g0: all three (T1 shifted 0.1 m); g1: all three, identical boxes; g2: T0 and T1 only; g3: never
    tpl = [_template([0.0, 4.0, 8.0, None]), _template([0.1, 4.0, 8.0, None]), _template([0.0, 4.0, None, None])]
    inputs, corners = [], []
    for p in tpl:
        pairs = compute_pairs(gt, p)
        view = label_view_from_names(p.category, p.score, ("chair",))
        inputs.append(APInputs.from_view(gt, p, pairs, view))
        corners.append(p.corners)
    res = prompt_consistency_from_inputs(inputs, corners, n_categories=1, template_names=["a", "b", "c"],
                                         vocabulary=("chair",))
    a = 0.9 / 1.1  # unit cubes 0.1 m apart
    assert res.pcr == pytest.approx(2 / 4)
    assert res.plc == pytest.approx(((2 * a + 1) / 3 + 1) / 2)
    assert res.recall_any == pytest.approx(3 / 4)
    assert list(res.per_template["recall"]) == pytest.approx([0.75, 0.75, 0.5])
    assert res.recall_mean == pytest.approx((0.75 + 0.75 + 0.5) / 3)
    assert list(res.per_gt["n_templates"]) == [3, 3, 2, 0]
    assert res.per_class.iloc[0]["pcr"] == pytest.approx(0.5)


def test_shared_boxes_give_plc_one_and_iou_threshold_matters():
    gt = _gt()
    p = _template([0.0, 4.3, 8.0, 12.0])  # g1's box is 0.3 m off: IoU 0.7/1.3 < 0.6
    pairs = compute_pairs(gt, p)
    # remap-like: the same boxes, labels differ per template (template 2 calls g3's box a sofa)
    vocab = ("chair", "sofa")
    views = [label_view_from_names(p.category, p.score, vocab),
             label_view_from_names(np.array(["chair", "chair", "chair", "sofa"], dtype=object), p.score, vocab)]
    inputs = [APInputs.from_view(gt, p, pairs, v) for v in views]
    res = prompt_consistency_from_inputs(inputs, p.corners, n_categories=2)
    assert res.pcr == pytest.approx(3 / 4) and res.plc == pytest.approx(1.0)
    res6 = prompt_consistency_from_inputs(inputs, p.corners, n_categories=2, iou=0.6)
    assert res6.pcr == pytest.approx(2 / 4)


def test_direct_matches_and_single_template():
    c = np.zeros((2, 8, 3))
    res = prompt_consistency(np.array([[0, -1]]), [c], gt_mask=[True, True])
    assert res.pcr == 0.5 and np.isnan(res.plc)
