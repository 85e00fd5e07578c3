"""Parity with pycocotools COCOeval (bbox) on random 2D detection sets: the AP engine with APParams.coco_2d() and 2D IoU
pairs must reproduce the maxDets=100 slice of precision / recall and stats[0:6] to 1e-12.

The pair IoUs are pycocotools' own ``maskUtils.iou`` (so the comparison isolates matching and accumulation), and once
more ``ov3d_core.geometry.iou2d.paired_iou_2d``. No crowd GT (pycocotools' iscrowd semantics are not Omni3D's)."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

from pycocotools import mask as mask_utils  # noqa: E402
from pycocotools.coco import COCO  # noqa: E402
from pycocotools.cocoeval import COCOeval  # noqa: E402

from ov3d_core.eval.ap import APParams, evaluate_ap  # noqa: E402

CAT_IDS = [3, 7, 11]  # sorted: code k <-> CAT_IDS[k]


def random_coco(rng, n_images=12):
    images, anns, dets = [], [], []
    for img in range(1, n_images + 1):
        images.append({"id": img, "width": 640, "height": 480})
        n_gt = rng.integers(0, 8)
        for _ in range(n_gt):
            w, h = rng.choice([rng.uniform(5, 40), rng.uniform(40, 200)]), rng.uniform(5, 150)
            box = [rng.uniform(0, 500), rng.uniform(0, 350), w, h]
            anns.append({"id": len(anns) + 1, "image_id": img, "category_id": int(rng.choice(CAT_IDS)),
                         "bbox": box, "area": box[2] * box[3], "iscrowd": 0})
        gts_here = [a for a in anns if a["image_id"] == img]
        n_dt = rng.integers(0, 25) if img != 3 else 130
        for _ in range(n_dt):
            if gts_here and rng.random() < 0.7:
                g = gts_here[rng.integers(len(gts_here))]
                box = list(np.asarray(g["bbox"]) + rng.normal(0, 4, 4))
                box[2], box[3] = max(box[2], 1.0), max(box[3], 1.0)
                cat = g["category_id"] if rng.random() < 0.8 else int(rng.choice(CAT_IDS))
            else:
                box = [rng.uniform(0, 500), rng.uniform(0, 350), rng.uniform(5, 120), rng.uniform(5, 120)]
                cat = int(rng.choice(CAT_IDS))
            if img == 3:
                cat = CAT_IDS[0]  # > 100 dets of one (image, category): truncation
            dets.append({"image_id": img, "category_id": cat, "bbox": [float(v) for v in box],
                         "score": float(rng.integers(1, 20) / 20.0)})  # coarse scores: ties
    return {"images": images, "annotations": anns, "categories": [{"id": c, "name": str(c)} for c in CAT_IDS]}, dets


def run_cocoeval(gt_json, dets):
    with contextlib.redirect_stdout(io.StringIO()):
        coco = COCO()
        coco.dataset = gt_json
        coco.createIndex()
        res = coco.loadRes(dets)
        E = COCOeval(coco, res, "bbox")
        E.evaluate()
        E.accumulate()
        E.summarize()
    return E


def xyxy(b):
    b = np.asarray(b, float).reshape(-1, 4)
    return np.c_[b[:, :2], b[:, :2] + b[:, 2:]]


def pairs_from(gt_json, dets, use_ours: bool):
    anns = gt_json["annotations"]
    pg, pd_, piou = [], [], []
    for img in {a["image_id"] for a in anns} | {d["image_id"] for d in dets}:
        gi = [i for i, a in enumerate(anns) if a["image_id"] == img]
        di = [i for i, d in enumerate(dets) if d["image_id"] == img]
        if not gi or not di:
            continue
        if use_ours:
            from ov3d_core.geometry.iou2d import box_iou_2d

            m = box_iou_2d(xyxy([anns[i]["bbox"] for i in gi]), xyxy([dets[i]["bbox"] for i in di]))
        else:  # (D, G) from maskUtils
            m = mask_utils.iou([dets[i]["bbox"] for i in di], [anns[i]["bbox"] for i in gi], [0] * len(gi)).T
        g_idx, d_idx = np.nonzero(m > 0)
        pg += [gi[k] for k in g_idx]
        pd_ += [di[k] for k in d_idx]
        piou += list(m[g_idx, d_idx])
    return np.array(pg, np.int64), np.array(pd_, np.int64), np.array(piou, float)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("use_ours", [False, True])
def test_matches_pycocotools(seed, use_ours):
    rng = np.random.default_rng(seed)
    gt_json, dets = random_coco(rng)
    E = run_cocoeval(gt_json, dets)
    anns = gt_json["annotations"]
    code = {c: k for k, c in enumerate(CAT_IDS)}
    pg, pd_, piou = pairs_from(gt_json, dets, use_ours)
    res = evaluate_ap(
        gt_image=np.array([a["image_id"] for a in anns]), gt_label=np.array([code[a["category_id"]] for a in anns]),
        gt_ignore=np.zeros(len(anns), bool), gt_range_value=np.array([a["area"] for a in anns]),
        pred_image=np.array([d["image_id"] for d in dets]), pred_label=np.array([code[d["category_id"]] for d in dets]),
        pred_score=np.array([d["score"] for d in dets]),
        pred_range_value=np.array([d["bbox"][2] * d["bbox"][3] for d in dets]),
        pair_gt=pg, pair_pred=pd_, pair_iou=piou, n_categories=len(CAT_IDS), params=APParams.coco_2d())
    coco_p = E.eval["precision"][..., 2]  # maxDets = 100
    coco_r = E.eval["recall"][..., 2]
    ours_p = np.where(np.isnan(res.precision), -1, res.precision)
    ours_r = np.where(np.isnan(res.recall), -1, res.recall)
    np.testing.assert_allclose(ours_p, coco_p, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ours_r, coco_r, rtol=0, atol=1e-12)
    stats = res.summary()
    for i, key in enumerate(["AP", "AP50", "AP75", "APs", "APm", "APl"]):
        if E.stats[i] == -1:
            assert np.isnan(stats[key])
        else:
            assert stats[key] / 100 == pytest.approx(E.stats[i], abs=1e-12)
