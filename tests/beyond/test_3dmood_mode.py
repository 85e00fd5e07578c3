"""The "3dmood-compat" distance mode: cvg/3D-MOOD's evaluator (``opendet3d/eval/detect3d.py``) on hand-built cases,
one per difference from our "3dmood" mode (docs/distance_modes.md), plus a slow transcription of its matching loop."""

import math

import numpy as np
import pytest

from ov3d_core.diagnostics.distance import (
    DISTANCE_MODES,
    DistanceParams,
    center_distance_eval,
    evaluate_distance_view,
    mood_gt_ignore,
)
from ov3d_core.eval.labels import label_view_from_names
from ov3d_core.geometry.boxes import rotation_y
from ov3d_core.io import load_omni3d_gt

from ..io.factories import make_annotation, make_gt_json, make_image
from .conftest import make_boxset

THR = np.minimum(np.linspace(0.5, 1.0, 11), 1 - 1e-10)  # the loop caps t at 1 − 1e-10
COMPAT = DistanceParams(compat=True)
EYE = np.eye(3)
# pytorch3d's arccos, linearly extrapolated beyond cos = 1 - 1e-2, at cos = 1 (a perfect rotation)
B = 1 - 1e-2
THETA_PERFECT = math.acos(B) + (-1 / math.sqrt(1 - B * B)) * (1 - B)


def run(gc, gd, pc, pd_, ps, *, gl=None, pl=None, gi=None, pi=None, gign=None, gR=None, pR=None, params=None,
        **kw):
    n_gt, n_pred = len(gc), len(pc)
    gl = np.zeros(n_gt, int) if gl is None else np.asarray(gl)
    pl = np.zeros(n_pred, int) if pl is None else np.asarray(pl)
    return center_distance_eval(
        np.zeros(n_gt, int) if gi is None else gi, gl, np.zeros(n_gt, bool) if gign is None else gign,
        np.asarray(gc, float), np.asarray(gd, float), np.repeat(EYE[None], n_gt, 0) if gR is None else gR,
        np.zeros(n_pred, int) if pi is None else pi, pl, np.asarray(ps, float), np.asarray(pc, float),
        np.asarray(pd_, float), np.repeat(EYE[None], n_pred, 0) if pR is None else pR,
        n_categories=kw.pop("n_categories", int(max(gl.max(initial=0), pl.max(initial=0))) + 1), params=params, **kw)


def test_modes_constant():
    assert DISTANCE_MODES == ("3dmood", "3dmood-compat", "nuscenes")


def test_perfect_rotation_orientation_error():
    """3D-MOOD's so3_relative_angle(cos_bound=1e-2) gives a perfect rotation θ = 0.0707 rad, AOE = θ/π = 0.0225."""
    assert THETA_PERFECT == pytest.approx(0.0707, abs=1e-4)
    assert THETA_PERFECT / math.pi == pytest.approx(0.0225, abs=1e-4)
    R = rotation_y([0.3])
    args = ([[0, 0, 10.0]], [[1.0, 1, 1]], [[0, 0, 10.0]], [[1.0, 1, 1]], [0.9])
    ours = run(*args, gR=R, pR=R).summary()
    mood = run(*args, gR=R, pR=R, params=COMPAT).summary()
    assert ours["mAOE"] == pytest.approx(0.0, abs=1e-7)
    assert mood["mAOE"] == pytest.approx(THETA_PERFECT / math.pi, abs=1e-12)
    assert mood["AP"] == ours["AP"] == pytest.approx(100.0)
    # its ODS carries the offset: (3 + 1 + (1 - 0.0225) + 1) / 6
    assert mood["ODS"] == pytest.approx(100 * (6 - THETA_PERFECT / math.pi) / 6)


def test_matching_loop_reuses_previous_distance_as_limit():
    """det1 (score 0.9) has GT1 at 1.7 m and GT2 at 2.4 m, both of radius 3; det2 (0.8) sits 0.3 m from GT1.

    3D-MOOD: for t >= 0.6 GT1 is admissible (1.7 <= 3t), the limit becomes 1.7 (metres), and GT2 then passes
    2.4 <= 3 * 1.7, so det1 takes GT2 although 2.4 > 3t for t < 0.8; ATE = 2.4 / (3 * 1.7). det2 takes GT1: AP 1.
    Ours: det1 takes the nearest (GT1); det2 finds GT1 taken and GT2 4.4 m away (> 3t): FP, AP 51/101.
    At t = 0.5 and 0.55 both: det1 unmatched (FP), det2 takes GT1: precision 1/2 up to recall 1/2."""
    dims = [2.0, 4.0, 4.0]  # |(2, 4, 4)| / 2 = 3
    gc = [[1.7, 0, 10.0], [-2.4, 0, 10.0]]
    pc = [[0, 0, 10.0], [2.0, 0, 10.0]]
    args = (gc, [dims, dims], pc, [dims, dims], [0.9, 0.8])
    mood, ours = run(*args, params=COMPAT), run(*args)
    assert mood.dt_match[:, 0].tolist() == [-1] * 2 + [1] * 9 and mood.dt_match[:, 1].tolist() == [0] * 11
    assert ours.dt_match[:, 0].tolist() == [-1] * 2 + [0] * 9 and ours.dt_match[:, 1].tolist() == [0] * 2 + [-1] * 9
    ap_lo = 0.5 * 51 / 101
    assert mood.summary()["AP"] == pytest.approx(100 * (2 * ap_lo + 9 * 1.0) / 11)
    assert ours.summary()["AP"] == pytest.approx(100 * (2 * ap_lo + 9 * 51 / 101) / 11)
    # ATE sampled per recall point. t < 0.6: det1 (FP, 1) at r = 0, det2 (0.3 / 3t) up to r = 0.5, unreached 1
    # after; t >= 0.6, 3D-MOOD: det1 (2.4 / 5.1) up to r = 0.5, det2 (0.3 / 3t) after; ours: det1 (1.7 / 3t), then 1.
    t_lo, t_hi = THR[:2], THR[2:]
    lo = np.sum(1 + 50 * 0.1 / t_lo + 50 * 1)
    ate_mood = (lo + np.sum(51 * (2.4 / 5.1) + 50 * 0.1 / t_hi)) / (11 * 101)
    ate_ours = (lo + np.sum(51 * 1.7 / (3 * t_hi) + 50 * 1.0)) / (11 * 101)
    assert mood.summary()["mATE"] == pytest.approx(ate_mood, abs=1e-12)
    assert ours.summary()["mATE"] == pytest.approx(ate_ours, abs=1e-12)
    # the limit overwrite is what lets GT2 in for t = 0.6 ... 0.75 (outside its own radius 3t)
    assert (np.linalg.norm(np.subtract(pc[0], gc[1])) > 3 * THR[2:6]).all()


def test_stops_at_ignored_gt_once_a_regular_gt_is_held():
    """GT order: regular first, ignored last; with a regular match held the scan stops, so a nearer ignored GT
    never replaces it (both modes prefer the regular GT)."""
    dims = [2.0, 4.0, 4.0]
    args = ([[1.0, 0, 10.0], [0.1, 0, 10.0]], [dims, dims], [[0, 0, 10.0]], [dims], [0.9])
    for p in (COMPAT, None):
        r = run(*args, gign=[False, True], params=p)
        assert (r.dt_match[:, 0] == 0).all() and not r.dt_ignore.any()


def test_mood_gt_ignore_from_the_loader(tmp_path):
    """trunc and proj both −1, a tall tight box: Omni3D (our loader) takes the height from bbox2D_proj (0 px) and
    ignores the GT (min_height); 3D-MOOD's COCO3D takes the tight box (200 px) and keeps it."""
    a = make_annotation(1, center=(0.0, 0.0, 6.0), bbox2D_trunc=[-1.0] * 4, bbox2D_proj=[-1.0] * 4,
                        bbox2D_tight=[100.0, 100.0, 200.0, 300.0])
    b = make_annotation(2, center=(1.0, 0.0, 6.0), truncation=0.5)  # ignored by both (truncation)
    ds = load_omni3d_gt(make_gt_json(tmp_path, images=[make_image(1)], annotations=[a, b]))
    gt = ds.gt
    assert gt.ignore.tolist() == [True, True] and gt.data["ignore_reason"].tolist() == ["min_height", "truncation"]
    heights = np.full(len(gt), 480.0)
    assert mood_gt_ignore(gt, heights).tolist() == [False, True]
    pred = make_boxset([1], ["chair"], [[0.0, 0.0, 6.0]], [[1.0, 1.0, 1.0]], score=[0.9])
    view = label_view_from_names(pred.category, pred.score, ds.vocabulary)
    ours = evaluate_distance_view(gt, pred, view, mode="3dmood")
    mood = evaluate_distance_view(gt, pred, view, mode="3dmood-compat", image_height=heights)
    assert np.isnan(ours.summary()["AP"])  # no non-ignored chair GT: absent
    assert mood.summary()["AP"] == pytest.approx(100.0)
    # without image heights the compat mode falls back to the loader's flag
    assert np.isnan(evaluate_distance_view(gt, pred, view, mode="3dmood-compat").summary()["AP"])


def test_proximity_argoverse2():
    """eval_prox: pairs need 2D IoU > 0.3; a detection near no GT of its class is ignored, but only in an image that
    has GT of that class. Scores: det3 (image 1, no GT) 0.95, det1 (3D-far, 2D-far) 0.9, det2 (hit) 0.8."""
    d = [[1.0, 1.0, 1.0]]
    gc, pc = [[0, 0, 10.0]], [[5.0, 0, 10.0], [0.1, 0, 10.0], [0, 0, 10.0]]
    kw = dict(gi=[0], pi=[0, 0, 1], gt_box2d=[[100, 100, 200, 200]],
              pred_box2d=[[300, 300, 400, 400], [110, 100, 200, 200], [100, 100, 200, 200]])
    args = (gc, d, pc, d * 3, [0.9, 0.8, 0.95])
    plain = run(*args, **kw, params=COMPAT)
    prox = run(*args, **kw, params=DistanceParams(compat=True, proximity=True))
    assert plain.summary()["AP"] == pytest.approx(100 / 3)  # FP, FP, TP
    assert prox.summary()["AP"] == pytest.approx(100 / 2)  # FP, (ignored), TP
    assert prox.dt_ignore[:, 0].all() and not prox.dt_ignore[:, 2].any()
    # the clean mode honours the same switch
    assert run(*args, **kw, params=DistanceParams(proximity=True)).summary()["AP"] == pytest.approx(50.0)
    with pytest.raises(ValueError, match="gt_box2d"):
        run(*args, params=DistanceParams(proximity=True))


def test_base_novel_aggregates_and_fractions():
    """car (base): a perfect match; pedestrian (novel): a match 0.5 m off (radius 1.5: matched for t >= 1/3 -> all);
    bus (novel): no GT. 3D-MOOD: ODS_Novel = np.mean over (pedestrian, bus) = NaN; ours skips the absent bus."""
    d = [1.0, 2.0, 2.0]  # radius 1.5
    res = {}
    for name, p in (("ours", None), ("mood", COMPAT)):
        res[name] = run([[0, 0, 10.0], [5, 0, 10.0]], [d, d], [[0, 0, 10.0], [5.5, 0, 10.0]], [d, d], [0.9, 0.8],
                        gl=[0, 1], pl=[0, 1], params=p, vocabulary=["car", "pedestrian", "bus"], n_categories=3,
                        base_classes=["car"])
    ate_ped = np.mean(0.5 / (1.5 * THR))
    for name, aoe in (("ours", 0.0), ("mood", THETA_PERFECT / math.pi)):
        ods_car = (3 + 1 + (1 - aoe) + 1) / 6
        ods_ped = (3 + (1 - ate_ped) + (1 - aoe) + 1) / 6
        s = res[name].summary()
        assert s["ODS_Base"] == pytest.approx(100 * ods_car)
        assert s["ODS"] == pytest.approx(100 * (ods_car + ods_ped) / 2)
    assert res["ours"].summary()["ODS_Novel"] == pytest.approx(100 * (3 + (1 - ate_ped) + 2) / 6)
    assert np.isnan(res["mood"].summary()["ODS_Novel"])
    m = res["mood"].mood_summary()
    assert list(m) == ["AP", "ATE", "ASE", "AOE", "ODS", "ODS_Base", "ODS_Novel"]
    assert m["AP"] == pytest.approx(1.0) and m["ATE"] == pytest.approx(ate_ped / 2)
    assert m["AOE"] == pytest.approx(THETA_PERFECT / math.pi)
    assert m["ODS"] == pytest.approx(res["mood"].summary()["ODS"] / 100) and np.isnan(m["ODS_Novel"])
    w = res["mood"].mood_summary("wilddet3d")
    assert list(w)[-2:] == ["ODS_Canonical_Base", "ODS_Canonical_Novel"] and "AOE_Sym" in w


def test_no_prediction_at_all_scores_zero():
    res = run([[0, 0, 10.0]], [[1.0, 1, 1]], np.zeros((0, 3)), np.zeros((0, 3)), [], params=COMPAT)
    assert res.mood_summary() == {"AP": 0.0, "ATE": 0.0, "ASE": 0.0, "AOE": 0.0, "ODS": 0.0}
    assert res.summary()["AP"] == 0.0 and res.summary()["mATE"] == 1.0  # ours: AP 0 and errors 1


def test_gt_with_annotation_id_zero_never_counts():
    """3D-MOOD stores the matched GT's id in dtm and tests it for truth: a GT with id 0 is consumed but the
    detection counts as a false positive."""
    args = ([[0, 0, 10.0]], [[1.0, 1, 1]], [[0, 0, 10.0]], [[1.0, 1, 1]], [0.9])
    assert run(*args, params=COMPAT, gt_id=[0]).summary()["AP"] == 0.0
    assert run(*args, params=COMPAT, gt_id=[7]).summary()["AP"] == pytest.approx(100.0)
    assert run(*args, gt_id=[0]).summary()["AP"] == pytest.approx(100.0)


# ---------------------------------------------------------------------------------------------------- slow loop
def _slow_mood(gi, gl, gign, gc, gd, pi, pl, ps, pc, depth=(0.0, 1e5)):
    """A direct per (image, class) transcription of 3D-MOOD's evaluateImg dist loop: dtm (T, n_pred) as GT rows."""
    n_pred = len(pl)
    out = np.full((len(THR), n_pred), -1)
    for img in np.unique(np.r_[gi, pi]):
        for k in np.unique(np.r_[gl, pl]):
            G = [g for g in range(len(gl)) if gi[g] == img and gl[g] == k]
            ig = {g: bool(gign[g] or not depth[0] <= gc[g][2] <= depth[1]) for g in G}
            G = sorted(G, key=lambda g: ig[g])  # stable: ignored last
            D = sorted([d for d in range(n_pred) if pi[d] == img and pl[d] == k], key=lambda d: -ps[d])[:100]
            for ti, t in enumerate(THR):
                taken = set()
                for d in D:
                    lim, m = min(t, 1 - 1e-10), None
                    for g in G:
                        if g in taken:
                            continue
                        if m is not None and not ig[m] and ig[g]:
                            break
                        dist = float(np.linalg.norm(np.subtract(pc[d], gc[g])))
                        if dist > np.linalg.norm(gd[g]) / 2 * lim:
                            continue
                        lim, m = dist, g
                    if m is not None:
                        taken.add(m)
                        out[ti, d] = m
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_compat_matching_against_slow_transcription(seed):
    rng = np.random.default_rng(seed)
    n_gt, n_pred = 50, 90
    gi, pi = rng.integers(0, 4, n_gt), rng.integers(0, 4, n_pred)
    gl, pl = rng.integers(0, 3, n_gt), rng.integers(0, 3, n_pred)
    gign = rng.random(n_gt) < 0.2
    gc = rng.uniform(-2, 2, (n_gt, 3)) + [0, 0, 10]
    gc[:3, 2] = -1.0  # behind the camera: out of the depth range
    pc = rng.uniform(-2, 2, (n_pred, 3)) + [0, 0, 10]
    gd, pdims = rng.uniform(0.5, 3, (n_gt, 3)), rng.uniform(0.5, 3, (n_pred, 3))
    ps = np.round(rng.random(n_pred), 1)
    res = run(gc, gd, pc, pdims, ps, gl=gl, pl=pl, gi=gi, pi=pi, gign=gign, params=COMPAT)
    np.testing.assert_array_equal(res.dt_match, _slow_mood(gi, gl, gign, gc, gd, pi, pl, ps, pc))
    # the quirk is exercised: some matches are beyond the matched GT's own t * radius
    m = res.dt_match
    tt, dd = np.nonzero(m >= 0)
    beyond = np.linalg.norm(pc[dd] - gc[m[tt, dd]], axis=1) > THR[tt] * np.linalg.norm(gd[m[tt, dd]], axis=1) / 2
    assert beyond.any()
