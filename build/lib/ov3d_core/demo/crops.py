"""Crop descriptors: what the image crop of each predicted box shows, as data and as a short caption.

For every prediction record of every run, ``crop_box`` is the predicted 3D box projected into the image and clipped
to it (the crop a remapping encoder such as SigLIPv2 would see; the 2D box when the projection misses the image),
``overlaps`` lists the annotated objects in the crop with the fraction of the crop's pixels each covers (from the
rendered instance mask; from clipped GT boxes in ``--annotations-only`` builds), and ``caption`` says in a few
words what dominates the crop: "a grey fabric sofa, partly occluded", "a white van next to a sedan", or, for a
hallucination on empty ground, "a patch of wooden floor". A text encoder over captions can therefore stand in for an
image encoder over crops: co-located objects (a chair at a table) and look-alikes (an armchair) make the captions,
and hence the remapped labels, ambiguous in the same way real crops are.
"""

from __future__ import annotations

import numpy as np

from ov3d_core.demo import jsonfast as J
from ov3d_core.demo.annotate import GTObject, projected_box2d_fast
from ov3d_core.demo.detectors import Pred
from ov3d_core.demo.scenes import Scene
from ov3d_core.demo.shapes import article

MAX_SAMPLES = 2500  # pixels sampled per crop


def crop_boxes(preds: list[Pred], K, width: int, height: int) -> np.ndarray:
    """(n, 4) XYXY crops: the projected predicted boxes clipped to the image (the 2D box if the projection misses)."""
    if not preds:
        return np.zeros((0, 4))
    _, trunc = projected_box2d_fast(np.array([p.corners for p in preds]), K, width, height)
    fallback = np.array([p.box2d for p in preds], float)
    return np.where((trunc[:, 0] >= 0)[:, None], trunc, fallback)


def _qualifiers(g: GTObject, env: str) -> list[str]:
    q = []
    if 0 <= g.visibility < 0.25:
        q.append("mostly hidden behind other things")
    elif 0 <= g.visibility < 0.6:
        q.append("partly occluded")
    if g.truncation > 0.3:
        q.append("cut off by the image border")
    if g.center[2] > (40.0 if env == "outdoor" else 5.5):
        q.append("far away" if env == "outdoor" else "at the far end of the room")
    return q


def _caption(overlaps, bg_caption, clutter_caption, env) -> str:
    if overlaps and overlaps[0][0] >= 0.2:
        g = overlaps[0][1]
        caption = g.caption
        quals = _qualifiers(g, env)
        if quals:
            caption += ", " + " and ".join(quals)
        if len(overlaps) > 1 and overlaps[1][0] >= 0.15:
            noun = overlaps[1][1].noun
            caption += f", next to {article(noun)} {noun}"
        return caption
    if overlaps and overlaps[0][0] >= 0.08:
        return f"part of {overlaps[0][1].caption} over {bg_caption}"
    if clutter_caption is not None:
        return clutter_caption
    return bg_caption


def describe(scene: Scene, preds: list[Pred], gts: list[GTObject], render=None, boxes: np.ndarray | None = None,
             json_records: bool = False) -> list:
    """Crop descriptors aligned with ``preds`` (the caller adds the record index). ``boxes``: their
    :func:`crop_boxes` when already computed (one projection for all runs of an image). ``json_records``: the
    descriptors as ``jsonfast.crop_json`` texts (a ``"record"`` placeholder last) instead of dicts."""
    spec = scene.spec
    K, W, H = scene.K, spec.width, spec.height
    env = spec.environment
    if boxes is None:
        boxes = crop_boxes(preds, K, W, H)
    default_bg = "a patch of floor" if env == "indoor" else "an empty stretch of road"
    fractions = None
    if render is None and len(gts) and len(preds):  # box overlaps (no masks): fraction of the crop, x visibility
        T = np.array([g.trunc for g in gts])
        vis = np.array([g.visibility if g.visibility >= 0 else 1.0 for g in gts])
        b = boxes[:, None, :]
        # np.maximum(x, 0) is what np.clip(x, 0, None) computes
        iw = np.maximum(np.minimum(b[..., 2], T[None, :, 2]) - np.maximum(b[..., 0], T[None, :, 0]), 0)
        ih = np.maximum(np.minimum(b[..., 3], T[None, :, 3]) - np.maximum(b[..., 1], T[None, :, 1]), 0)
        area = np.maximum((boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1]), 1e-6)
        fractions = (np.minimum(1.0, iw * ih / area[:, None]) * vis[None, :]).tolist()
    by_obj = {g.obj_index: g for g in gts}
    image_id = int(scene.image_id)
    out = []
    for k, (x0, y0, x1, y1) in enumerate(boxes.tolist()):
        overlaps: list[tuple[float, GTObject]] = []
        bg_caption, clutter_caption = default_bg, None
        if render is not None:
            xi0, yi0 = int(np.floor(x0)), int(np.floor(y0))
            xi1, yi1 = int(np.ceil(x1)), int(np.ceil(y1))
            st = max(1, int(np.ceil(np.sqrt((xi1 - xi0 + 1) * (yi1 - yi0 + 1) / MAX_SAMPLES))))
            inst = render.instance[yi0:yi1 + 1:st, xi0:xi1 + 1:st].ravel()
            n = max(len(inst), 1)
            ids, counts = np.unique(inst, return_counts=True)
            for i, cnt in zip(ids.tolist(), counts.tolist()):
                if i >= 0 and i in by_obj:
                    overlaps.append((cnt / n, by_obj[i]))
            clutter = [(cnt / n, i) for i, cnt in zip(ids.tolist(), counts.tolist()) if i >= 0 and i not in by_obj]
            if clutter and max(clutter)[0] > 0.3:
                clutter_caption = scene.objects[max(clutter)[1]].shape.caption
            bg = render.bg[yi0:yi1 + 1:st, xi0:xi1 + 1:st].ravel()
            bg = bg[bg >= 0]
            if len(bg):
                vals, cnts = np.unique(bg, return_counts=True)
                bg_caption = scene.background[int(vals[np.argmax(cnts)])].description
            elif (inst < 0).any():
                bg_caption = "a patch of sky"
        elif fractions is not None:
            overlaps = [(f, g) for f, g in zip(fractions[k], gts) if f > 0]
        overlaps.sort(key=_overlap_order)
        crop_box = [round(x0, 2), round(y0, 2), round(x1, 2), round(y1, 2)]
        caption = _caption(overlaps, bg_caption, clutter_caption, env)
        if json_records:
            out.append(J.crop_text(caption, crop_box, image_id,
                                   [(int(g.ann_id), g.category, round(f, 4)) for f, g in overlaps if f >= 0.01][:5]))
            continue
        out.append({
            "image_id": image_id,
            "crop_box": crop_box,
            "overlaps": [{"ann_id": int(g.ann_id), "category": g.category, "fraction": round(f, 4)}
                         for f, g in overlaps if f >= 0.01][:5],
            "caption": caption,
        })
    return out


def _overlap_order(fg: tuple[float, GTObject]):
    return -fg[0], fg[1].ann_id


__all__ = ["describe", "crop_boxes"]
