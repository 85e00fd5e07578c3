"""Centre-distance AP / ODS (3D-MOOD, WildDet3D) and the nuScenes-style variant."""

import numpy as np
import pytest

from ov3d_core.diagnostics.distance import (
    DistanceParams,
    NuScenesParams,
    aligned_scale_iou,
    canonicalize_rotation,
    center_distance_eval,
    geodesic_angle,
    nuscenes_eval,
)
from ov3d_core.geometry.boxes import rotation_y

THR = np.linspace(0.5, 1.0, 11)


def _one(gt_c, gt_d, gt_R, p_c, p_d, p_R, score=0.9, gt_ignore=False):
    return center_distance_eval(
        np.array([0]), np.array([0]), np.array([gt_ignore]), np.array([gt_c]), np.array([gt_d]), np.array([gt_R]),
        np.array([0]), np.array([0]), np.array([score]), np.array([p_c]), np.array([p_d]), np.array([p_R]),
        n_categories=1)


def test_ods_by_hand_single_pair():
    gd = np.array([1.0, 2.0, 2.0])  # r = ||(1,2,2)|| / 2 = 1.5
    r = 1.5
    off = 0.62 * r  # matched for t >= 0.65: 8 of 11 ratios
    ang = 0.3
    pd_ = np.array([1.0, 2.0, 1.0])  # ASE: min dims prod = 2, union = 4 + 2 - 2 = 4 -> 1 - 0.5
    res = _one([0, 0, 10], gd, rotation_y([0.2])[0], [off, 0, 10], pd_, rotation_y([0.2 + ang])[0])
    matched = THR >= 0.65 - 1e-12
    assert matched.sum() == 8
    ap = matched.mean()
    ate = np.where(matched, off / (r * THR), 1.0).mean()
    aoe = np.where(matched, ang / np.pi, 1.0).mean()
    ase = np.where(matched, 0.5, 1.0).mean()
    s = res.summary()
    assert s["AP"] == pytest.approx(100 * ap)
    assert s["mATE"] == pytest.approx(ate)
    assert s["mAOE"] == pytest.approx(aoe)
    assert s["mASE"] == pytest.approx(ase)
    assert s["ODS"] == pytest.approx(100 * (3 * ap + (1 - ate) + (1 - aoe) + (1 - ase)) / 6)
    # per-category row equals the summary with one class
    row = res.per_category().iloc[0]
    assert row["ODS"] == pytest.approx(s["ODS"])


def test_ignored_gt_is_neutral():
    res = _one([0, 0, 10], [1, 1, 1], np.eye(3), [0, 0, 10], [1, 1, 1], np.eye(3), gt_ignore=True)
    assert np.isnan(res.summary()["AP"])  # no non-ignored GT: class absent
    assert res.dt_ignore.all()


def test_canonical_aoe_folds_180_flip():
    Rg = rotation_y([0.4])[0]
    Rd = Rg @ rotation_y([np.pi])[0]
    d = [1.0, 1.0, 2.0]
    res = _one([0, 0, 10], d, Rg, [0, 0, 10], d, Rd)
    s = res.summary()
    assert s["mAOE"] == pytest.approx(1.0)
    assert s["mAOE_canonical"] == pytest.approx(0.0, abs=1e-6)
    assert s["mAOE_sym"] == pytest.approx(0.0, abs=1e-6)
    # w > l swap: the same box described with swapped w/l and a 90 deg turn is canonicalised to the same pose
    R2 = Rg @ rotation_y([np.pi / 2])[0]
    Rc1, d1 = canonicalize_rotation(Rg[None], np.array([d]))
    Rc2, d2 = canonicalize_rotation(R2[None], np.array([[2.0, 1.0, 1.0]]))
    assert np.allclose(d1, d2)
    assert geodesic_angle(Rc1, Rc2)[0] == pytest.approx(0.0, abs=1e-6)


def test_geodesic_and_scale_helpers():
    assert geodesic_angle(np.eye(3)[None], rotation_y([0.7]))[0] == pytest.approx(0.7)
    # pytorch3d cos_bound extrapolation: identical rotations get a small positive angle
    assert geodesic_angle(np.eye(3)[None], np.eye(3)[None], cos_bound=1e-2)[0] == pytest.approx(0.0707, abs=1e-3)
    assert aligned_scale_iou(np.array([[1, 1, 1.0]]), np.array([[2, 1, 1.0]]))[0] == pytest.approx(0.5)


def _slow_match(gi, gl, gign, gc, gd, pi, pl, ps, pc, t, strict=False, scale=True):
    """Direct per (image, class) loop: nearest admissible GT, non-ignored first."""
    n_pred = len(pl)
    out = np.full(n_pred, -1)
    for img in np.unique(np.r_[gi, pi]):
        for k in np.unique(np.r_[gl, pl]):
            if k < 0:
                continue
            G = [g for g in range(len(gl)) if gi[g] == img and gl[g] == k]
            D = [d for d in range(n_pred) if pi[d] == img and pl[d] == k]
            D = sorted(D, key=lambda d: (-ps[d], d))[:100]
            taken = set()
            for d in D:
                best = None
                for g in G:
                    if g in taken:
                        continue
                    dist = np.linalg.norm(pc[d] - gc[g])
                    lim = min(t, 1 - 1e-10) * (np.linalg.norm(gd[g]) / 2)
                    ok = dist < lim if strict else dist <= lim
                    if ok:
                        key = (gign[g], dist, g)
                        if best is None or key < best[0]:
                            best = (key, g)
                if best is not None:
                    taken.add(best[1])
                    out[d] = best[1]
    return out


def test_matching_against_slow_direct_implementation():
    rng = np.random.default_rng(0)
    for trial in range(4):
        n_gt, n_pred = 40, 70
        gi = rng.integers(0, 4, n_gt)
        pi = rng.integers(0, 4, n_pred)
        gl = rng.integers(-1, 3, n_gt)
        pl = rng.integers(-1, 3, n_pred)
        gign = rng.random(n_gt) < 0.2
        gc = rng.uniform(-3, 3, (n_gt, 3)) + [0, 0, 10]
        pc = rng.uniform(-3, 3, (n_pred, 3)) + [0, 0, 10]
        gd = rng.uniform(0.5, 3, (n_gt, 3))
        pdims = rng.uniform(0.5, 3, (n_pred, 3))
        ps = np.round(rng.random(n_pred), 1)  # ties on purpose
        R = rotation_y(rng.uniform(-3, 3, n_gt))
        Rp = rotation_y(rng.uniform(-3, 3, n_pred))
        res = center_distance_eval(gi, gl, gign, gc, gd, R, pi, pl, ps, pc, pdims, Rp, n_categories=3)
        for ti, t in enumerate(THR):
            slow = _slow_match(gi, gl, gign, gc, gd, pi, pl, ps, pc, t)
            assert np.array_equal(res.dt_match[ti], slow), (trial, t)
        # neutral detections: exactly those matched to ignored GT
        m = res.dt_match
        assert np.array_equal(res.dt_ignore & (m >= 0), (m >= 0) & gign[np.maximum(m, 0)])


def test_accumulation_two_dets_precision_and_error_sampling():
    # one GT, a FP with higher score then a TP: precision at all recall points = 1/2, errors sampled at the TP
    gc = np.array([[0, 0, 10.0]])
    gd = np.array([[1.0, 1, 1]])
    pc = np.array([[5, 0, 10.0], [0.1, 0, 10.0]])
    res = center_distance_eval([0], [0], [False], gc, gd, np.eye(3)[None], [0, 0], [0, 0], [0.9, 0.8], pc,
                               np.ones((2, 3)), np.stack([np.eye(3)] * 2), n_categories=1)
    assert np.allclose(res.precision, 0.5)
    r = np.sqrt(3) / 2
    assert np.allclose(res.errors["ATE"][:, 5, 0], 0.1 / (r * THR))
    # recall point 0 samples the first detection (the FP, error 1), as the reference's searchsorted does
    assert np.allclose(res.errors["ASE"][:, 1:], 0.0) and np.allclose(res.errors["ASE"][:, 0], 1.0)


def test_nuscenes_variant_by_hand():
    # one GT, one det 0.7 m away in BEV (y offset ignored): TP at 1, 2, 4 m, not at 0.5 m
    gc = np.array([[0, 0, 20.0]])
    pc = np.array([[0.7, 3.0, 20.0]])
    Rg, Rp = rotation_y([0.1]), rotation_y([0.1 + 0.25])
    res = nuscenes_eval([0], [0], [False], gc, [[1, 1, 1]], Rg, [0], [0], [0.5], pc, [[1, 1, 2]], Rp,
                        n_categories=1, vocabulary=["car"])
    assert np.allclose(res.ap[:, 0], [0.0, 1.0, 1.0, 1.0])
    row = res.tp_errors.iloc[0]
    assert row["ATE"] == pytest.approx(0.7)
    assert row["ASE"] == pytest.approx(0.5)
    assert row["AOE"] == pytest.approx(0.25)
    s = res.summary()
    assert s["mAP"] == pytest.approx(75.0)
    assert s["NDS"] == pytest.approx(100 * (5 * 0.75 + 0.3 + 0.5 + 0.75) / 8)
    # barrier: period pi, a 180 deg flip costs nothing
    res_b = nuscenes_eval([0], [0], [False], gc, [[1, 1, 1]], Rg, [0], [0], [0.5], gc, [[1, 1, 1]],
                          Rg @ rotation_y([np.pi]), n_categories=1, vocabulary=["barrier"])
    assert res_b.tp_errors.iloc[0]["AOE"] == pytest.approx(0.0, abs=1e-9)
    # strict threshold: exactly 1 m away does not match at 1 m
    res_s = nuscenes_eval([0], [0], [False], gc, [[1, 1, 1]], Rg, [0], [0], [0.5], [[1.0, 0, 20.0]], [[1, 1, 1]],
                          Rg, n_categories=1, params=NuScenesParams())
    assert res_s.ap[1, 0] == 0.0 and res_s.ap[2, 0] == pytest.approx(1.0)


def test_params_thresholds_default():
    assert len(DistanceParams().thresholds) == 11


def _nuscenes_reference(gi, gl, gc, gd, gyaw, pi, pl, ps, pc, pdims, pyaw, k, th, th_tp=2.0):
    """Direct transcription of nuScenes accumulate / calc_ap / calc_tp for one class (no ignore, BEV x-z)."""
    npos = int(np.sum(gl == k))
    order = [d for d in np.argsort(-ps, kind="stable") if pl[d] == k]

    def acc(dist_th):
        taken, tp, fp, conf, md = set(), [], [], [], {"t": [], "s": [], "o": [], "c": []}
        for d in order:
            best, bg = np.inf, None
            for g in range(len(gl)):
                if gl[g] == k and gi[g] == pi[d] and g not in taken:
                    dist = np.hypot(pc[d, 0] - gc[g, 0], pc[d, 2] - gc[g, 2])
                    if dist < best:
                        best, bg = dist, g
            if best < dist_th:
                taken.add(bg)
                tp.append(1), fp.append(0), conf.append(ps[d])
                md["t"].append(best)
                inter = np.prod(np.minimum(pdims[d], gd[bg]))
                md["s"].append(1 - inter / (np.prod(pdims[d]) + np.prod(gd[bg]) - inter))
                e = np.mod(pyaw[d] - gyaw[bg], 2 * np.pi)
                md["o"].append(2 * np.pi - e if e > np.pi else e)
                md["c"].append(ps[d])
            else:
                tp.append(0), fp.append(1), conf.append(ps[d])
        if len(md["t"]) == 0:
            return None
        tp, fp = np.cumsum(tp).astype(float), np.cumsum(fp).astype(float)
        prec, rec = tp / (fp + tp), tp / npos
        ri = np.linspace(0, 1, 101)
        prec = np.interp(ri, rec, prec, right=0)
        conf = np.interp(ri, rec, np.array(conf), right=0)
        out = {"prec": prec, "conf": conf}
        for key in ("t", "s", "o"):
            x = np.array(md[key])
            cm = np.cumsum(x) / np.arange(1, len(x) + 1)
            out[key] = np.interp(conf[::-1], np.array(md["c"])[::-1], cm[::-1])[::-1]
        return out

    r = acc(th)
    ap = 0.0 if r is None else float(np.mean(np.clip(r["prec"][11:] - 0.1, 0, None))) / 0.9
    r = acc(th_tp)
    if r is None:
        errs = {"t": 1.0, "s": 1.0, "o": 1.0}
    else:
        nz = np.nonzero(r["conf"])[0]
        last = nz[-1] if len(nz) else 0
        errs = {key: (1.0 if last < 11 else float(np.mean(r[key][11:last + 1]))) for key in ("t", "s", "o")}
    return ap, errs


def test_nuscenes_against_direct_transcription():
    from ov3d_core.geometry.boxes import yaw_of

    rng = np.random.default_rng(5)
    n_gt, n_pred = 30, 60
    gi, pi = rng.integers(0, 3, n_gt), rng.integers(0, 3, n_pred)
    gl, pl = rng.integers(0, 2, n_gt), rng.integers(0, 2, n_pred)
    gc = rng.uniform(-4, 4, (n_gt, 3)) + [0, 0, 20]
    pc = gc[rng.integers(0, n_gt, n_pred)] + rng.normal(0, 1.2, (n_pred, 3))
    gd, pdims = rng.uniform(0.5, 3, (n_gt, 3)), rng.uniform(0.5, 3, (n_pred, 3))
    gR, pR = rotation_y(rng.uniform(-3, 3, n_gt)), rotation_y(rng.uniform(-3, 3, n_pred))
    ps = rng.random(n_pred)
    res = nuscenes_eval(gi, gl, np.zeros(n_gt, bool), gc, gd, gR, pi, pl, ps, pc, pdims, pR, n_categories=2,
                        vocabulary=["car", "truck"])
    for k in range(2):
        for i, th in enumerate((0.5, 1.0, 2.0, 4.0)):
            ap, errs = _nuscenes_reference(gi, gl, gc, gd, yaw_of(gR), pi, pl, ps, pc, pdims, yaw_of(pR), k, th)
            assert res.ap[i, k] == pytest.approx(ap, abs=1e-12), (k, th)
        row = res.tp_errors.iloc[k]
        assert row["ATE"] == pytest.approx(errs["t"]) and row["ASE"] == pytest.approx(errs["s"])
        assert row["AOE"] == pytest.approx(errs["o"])
    assert 0 < res.summary()["mAP"] < 100


def test_analysis_offers_every_distance_mode():
    from ov3d_core.analysis import DISTANCE_MODES as FRONT
    from ov3d_core.diagnostics.distance import DISTANCE_MODES

    assert FRONT == DISTANCE_MODES
