"""The "nuscenes" distance mode against nuscenes-devkit itself (test-only dependency, installed with --no-deps).

The devkit's own ``EvalBoxes`` / ``DetectionBox`` are built from the same rows (camera (x, y, z) -> devkit (x, z, -y),
sizes (w, l, h), yaw about the devkit z axis) and its ``accumulate`` / ``calc_ap`` / ``calc_tp`` and
``DetectionEval.evaluate`` are called unchanged.
"""

import numpy as np
import pytest
from nuscenes.eval.common.config import config_factory
from nuscenes.eval.common.data_classes import EvalBoxes
from nuscenes.eval.common.utils import center_distance
from nuscenes.eval.detection.algo import accumulate, calc_ap, calc_tp
from nuscenes.eval.detection.data_classes import DetectionBox
from nuscenes.eval.detection.evaluate import DetectionEval
from pyquaternion import Quaternion

from ov3d_core.diagnostics.distance import NuScenesParams, devkit_order, nuscenes_eval
from ov3d_core.geometry.boxes import rotation_y, yaw_of

CLASSES = ["car", "pedestrian", "barrier", "traffic_cone"]
TP_NAMES = {"ATE": "trans_err", "ASE": "scale_err", "AOE": "orient_err"}


def _boxes(image, label, center, dims, R, score=None) -> EvalBoxes:
    """Devkit boxes added row by row (so ``EvalBoxes.all`` groups rows by image in first-appearance order)."""
    eb = EvalBoxes()
    for i in range(len(label)):
        c, d = center[i], dims[i]
        q = Quaternion(axis=[0.0, 0.0, 1.0], angle=float(-yaw_of(R[i])[0]))
        box = DetectionBox(sample_token=f"img{image[i]}", translation=(float(c[0]), float(c[2]), float(-c[1])),
                           size=(float(d[0]), float(d[2]), float(d[1])), rotation=tuple(float(v) for v in q.elements),
                           detection_name=CLASSES[label[i]],
                           detection_score=-1.0 if score is None else float(score[i]))
        eb.add_boxes(box.sample_token, [box])
    return eb


def _random_set(seed: int, ties: bool):
    rng = np.random.default_rng(seed)
    n_gt, n_pred = 45, 110
    gi = rng.integers(0, 6, n_gt)
    gl = rng.integers(0, len(CLASSES), n_gt)
    gc = np.c_[rng.uniform(-15, 15, n_gt), rng.uniform(-1, 2, n_gt), rng.uniform(5, 40, n_gt)]
    gd = rng.uniform(0.3, 4.0, (n_gt, 3))
    gR = rotation_y(rng.uniform(-np.pi, np.pi, n_gt))
    src = rng.integers(0, n_gt, n_pred)  # most predictions near a GT, some of another class, rows interleaved
    pi = np.where(rng.random(n_pred) < 0.85, gi[src], rng.integers(0, 6, n_pred))
    pl = np.where(rng.random(n_pred) < 0.8, gl[src], rng.integers(0, len(CLASSES), n_pred))
    pc = gc[src] + rng.normal(0, 1.5, (n_pred, 3))
    pdims = np.clip(gd[src] + rng.normal(0, 0.4, (n_pred, 3)), 0.1, None)
    pR = rotation_y(yaw_of(gR[src]) + rng.normal(0, 0.8, n_pred))
    ps = np.round(rng.random(n_pred), 1) if ties else rng.random(n_pred)
    return dict(gi=gi, gl=gl, gc=gc, gd=gd, gR=gR, pi=pi, pl=pl, pc=pc, pd=pdims, pR=pR, ps=ps)


def _ours(s, vocabulary=CLASSES, params=None):
    return nuscenes_eval(s["gi"], s["gl"], np.zeros(len(s["gl"]), bool), s["gc"], s["gd"], s["gR"], s["pi"], s["pl"],
                         s["ps"], s["pc"], s["pd"], s["pR"], n_categories=len(vocabulary), vocabulary=vocabulary,
                         params=params)


def _devkit(s):
    return (_boxes(s["gi"], s["gl"], s["gc"], s["gd"], s["gR"]),
            _boxes(s["pi"], s["pl"], s["pc"], s["pd"], s["pR"], s["ps"]))


@pytest.mark.parametrize("seed, ties", [(0, False), (1, False), (2, True), (3, True), (4, True)])
def test_ap_precision_and_tp_errors_equal_devkit(seed, ties):
    s = _random_set(seed, ties)
    if ties:
        assert len(np.unique(s["ps"])) <= 11  # many equal scores
    gt_boxes, pred_boxes = _devkit(s)
    res = _ours(s)
    for k, name in enumerate(CLASSES):
        for i, th in enumerate((0.5, 1.0, 2.0, 4.0)):
            md = accumulate(gt_boxes, pred_boxes, name, center_distance, th)
            np.testing.assert_allclose(res.precision[i, :, k], md.precision, rtol=0, atol=1e-9)
            assert res.ap[i, k] == pytest.approx(calc_ap(md, 0.1, 0.1), abs=1e-9), (name, th)
        md = accumulate(gt_boxes, pred_boxes, name, center_distance, 2.0)
        row = res.tp_errors.iloc[k]
        for ours, theirs in TP_NAMES.items():
            if name == "traffic_cone" and ours == "AOE":
                assert np.isnan(row[ours])  # the devkit's evaluate() sets it NaN
                continue
            assert row[ours] == pytest.approx(calc_tp(md, 0.1, theirs), abs=1e-9), (name, ours)
    assert np.isfinite(res.ap).all() and (res.ap > 0).any()


@pytest.mark.parametrize("ties", [False, True])
def test_summary_equals_devkit_evaluate(ties):
    """The devkit's own DetectionEval.evaluate (its __init__, which reads files, bypassed) on all 10 classes."""
    s = _random_set(11, ties)
    gt_boxes, pred_boxes = _devkit(s)
    ev = DetectionEval.__new__(DetectionEval)
    ev.cfg, ev.gt_boxes, ev.pred_boxes, ev.verbose = config_factory("detection_cvpr_2019"), gt_boxes, pred_boxes, False
    metrics, _ = ev.evaluate()
    names = list(ev.cfg.class_names)
    remap = np.array([names.index(c) for c in CLASSES])
    s10 = dict(s, gl=remap[s["gl"]], pl=remap[s["pl"]])
    res = _ours(s10, vocabulary=names, params=NuScenesParams(score_absent_classes=True))
    summ = res.summary()
    assert summ["mAP"] / 100 == pytest.approx(metrics.mean_ap, abs=1e-9)
    for ours, theirs in TP_NAMES.items():
        assert summ[f"m{ours}"] == pytest.approx(metrics.tp_errors[theirs], abs=1e-9)
    for k, name in enumerate(names):
        for i, th in enumerate(ev.cfg.dist_ths):
            assert res.ap[i, k] == pytest.approx(metrics.get_label_ap(name, th), abs=1e-9)
    # Without score_absent_classes, the six classes without GT are left out instead of scoring 0.
    assert _ours(s10, vocabulary=names).summary()["mAP"] > summ["mAP"]


def test_tie_order_issue_example():
    """One car GT and two detections at score 0.5, a far FP first, then a hit 0.2 m away (issue 11).

    The devkit walks equal scores backwards, so the hit comes first: precision 1 up to recall 1, where np.interp
    takes the last of the two points at recall 1 (precision 1/2). AP = (89 · 0.9 + 0.4) / 90 / 0.9 = 80.5 / 81."""
    R = rotation_y([0.0])
    s = dict(gi=np.array([0]), gl=np.array([0]), gc=np.array([[0.0, 0.0, 20.0]]), gd=np.array([[1.8, 1.5, 4.0]]),
             gR=R, pi=np.array([0, 0]), pl=np.array([0, 0]), pc=np.array([[10.0, 0.0, 30.0], [0.2, 0.0, 20.0]]),
             pd=np.array([[1.8, 1.5, 4.0]] * 2), pR=np.repeat(R, 2, 0), ps=np.array([0.5, 0.5]))
    res = _ours(s)
    expected = 80.5 / 81
    np.testing.assert_allclose(res.ap[:, 0], expected, rtol=0, atol=1e-12)
    gt_boxes, pred_boxes = _devkit(s)
    for th in (0.5, 1.0, 2.0, 4.0):
        assert calc_ap(accumulate(gt_boxes, pred_boxes, "car", center_distance, th), 0.1, 0.1) == pytest.approx(
            expected, abs=1e-12)
    assert res.tp_errors.iloc[0]["ATE"] == pytest.approx(0.2)


def test_devkit_order_groups_images_by_first_appearance():
    # rows: image 7, image 3, image 7, image 3, all at 0.5, and one 0.9 -> devkit record order is 0, 2, 1, 3, 4
    icode = np.array([1, 0, 1, 0, 0])
    score = np.array([0.5, 0.5, 0.5, 0.5, 0.9])
    assert devkit_order(icode, score, np.ones(5, bool)).tolist() == [4, 3, 1, 2, 0]
    assert devkit_order(icode, score, np.array([True, True, False, True, False])).tolist() == [3, 1, 0]
