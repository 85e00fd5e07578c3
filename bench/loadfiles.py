"""Omni3D-format files at benchmark scale, written from ``bench/workload.py``: a GT JSON and a Cube R-CNN
predictions JSON (``omni_instances_results.json``), optionally a ``.pth`` of the same predictions.

Numbers are written as Cube R-CNN writes them: float32 values of its tensors, printed as Python floats (``json.dump``
of ``tensor.tolist()``), so a prediction record is ~0.95 KB, as in real files. Built in blocks of 2,500 images so
40,000 images (4M predictions, ~3.8 GB) stay within ~2.5 GiB of memory while writing.

    python bench/loadfiles.py --images 5000 --out /tmp/load5k     # gt.json, preds.json
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

import msgspec
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.workload import H, K, W, build_workload  # noqa: E402
from ov3d_core.geometry.boxes import projected_box2d  # noqa: E402
from ov3d_core.taxonomy import OMNI3D_NAME_TO_ID  # noqa: E402

BLOCK = 2500
_ENC = msgspec.json.Encoder()


def _f32(a: np.ndarray) -> list:
    """float32 values as Python floats (what ``tensor.tolist()`` of a float32 tensor gives)."""
    return np.asarray(a, np.float32).astype(np.float64).tolist()


def write_json_array(f, chunks: Iterable[list]) -> None:
    """Write a JSON array whose items arrive as lists of dicts (one encoder call per chunk)."""
    f.write(b"[")
    first = True
    for items in chunks:
        if not items:
            continue
        if not first:
            f.write(b",")
        f.write(_ENC.encode(items)[1:-1])
        first = False
    f.write(b"]")


def images_and_categories(n_images: int, vocabulary) -> tuple[list[dict], list[dict]]:
    kk = K.tolist()
    cats = [{"id": OMNI3D_NAME_TO_ID[c], "name": c, "supercategory": "nan"} for c in vocabulary]
    images = [{"id": i + 1, "dataset_id": 0, "width": W, "height": H, "file_path": f"images/{i + 1:06d}.jpg",
               "K": kk, "src_90_rotate": 0, "src_flagged": False} for i in range(n_images)]
    return images, cats


def blocks(n_images: int, seed: int = 0) -> Iterator[tuple[list[dict], list[dict], tuple[str, ...]]]:
    """(annotations, predictions, vocabulary) per block of ``BLOCK`` images; image and annotation ids (from 1)
    continue across blocks."""
    n_ann = 0
    for b, start in enumerate(range(0, n_images, BLOCK)):
        w = build_workload(n_images=min(BLOCK, n_images - start), seed=seed + b)
        off = start - 1000 + 1  # workload image ids start at 1000
        g = w.gt
        _, trunc = projected_box2d(g.corners, K, W, H)
        proj, _ = projected_box2d(g.corners, K)
        truncation = np.where(g.ignore, 0.5, 0.0)  # ignored GT: truncated above Omni3D's 1/3
        anns = [{"id": n_ann + i + 1, "image_id": img, "dataset_id": 0, "category_id": OMNI3D_NAME_TO_ID[cat],
                 "category_name": cat, "valid3D": True, "bbox2D_tight": [-1.0, -1.0, -1.0, -1.0], "bbox2D_proj": pj,
                 "bbox2D_trunc": tr, "bbox3D_cam": cor, "center_cam": c, "dimensions": d, "R_cam": R,
                 "behind_camera": False, "visibility": 1.0, "truncation": tc, "segmentation_pts": -1,
                 "lidar_pts": -1, "depth_error": -1}
                for i, (img, cat, c, d, R, cor, pj, tr, tc) in enumerate(zip(
                    (g.image_id + off).tolist(), g.category.tolist(), g.center.round(6).tolist(),
                    g.dims.round(6).tolist(), g.R.round(6).tolist(), g.corners.round(6).tolist(),
                    proj.round(4).tolist(), trunc.round(4).tolist(), truncation.tolist()))]
        n_ann += len(anns)
        p = w.pred
        xywh = p.box2d.copy()
        xywh[:, 2:] -= xywh[:, :2]
        uvw = p.center @ K.T
        c2d = uvw[:, :2] / uvw[:, 2:3]
        cols = zip((p.image_id + off).tolist(), [OMNI3D_NAME_TO_ID[c] for c in p.category.tolist()], _f32(xywh),
                   _f32(p.score), _f32(p.depth), _f32(p.corners), _f32(p.center), _f32(c2d), _f32(p.dims), _f32(p.R))
        preds = [{"image_id": img, "category_id": cid, "bbox": bb, "score": s, "depth": dp, "bbox3D": cor,
                  "center_cam": c, "center_2D": c2, "dimensions": d, "pose": R}
                 for img, cid, bb, s, dp, cor, c, c2, d, R in cols]
        yield anns, preds, w.vocabulary


def write_files(n_images: int, out: Path, seed: int = 0, pth: bool = False) -> dict:
    """Write ``gt.json`` and ``preds.json`` (and ``preds.pth``, per-image records, if asked) under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    counts = {"gt": 0, "predictions": 0}
    ann_text: list[bytes] = []
    vocab: list = []
    pth_records: list[dict] = []
    with open(out / "preds.json", "wb") as fp:
        def pred_chunks():
            for anns, preds, voc in blocks(n_images, seed):
                vocab[:] = voc
                counts["gt"] += len(anns)
                counts["predictions"] += len(preds)
                if anns:
                    ann_text.append(_ENC.encode(anns)[1:-1])
                if pth:
                    pth_records.extend(per_image(preds))
                for k in range(0, len(preds), 50_000):
                    yield preds[k:k + 50_000]
        write_json_array(fp, pred_chunks())
    images, cats = images_and_categories(n_images, vocab)
    with open(out / "gt.json", "wb") as fg:
        head = _ENC.encode({"info": {"id": 0, "name": "LoadBench", "split": "test"}, "images": images,
                            "categories": cats})
        fg.write(head[:-1] + b',"annotations":[')
        fg.write(b",".join(ann_text))
        fg.write(b"]}")
    if pth:
        import torch

        torch.save(pth_records, out / "preds.pth")
    return {"images": n_images, **counts, "gt_bytes": (out / "gt.json").stat().st_size,
            "pred_bytes": (out / "preds.json").stat().st_size}


def per_image(preds: list[dict]) -> list[dict]:
    """Flat prediction records grouped into Cube R-CNN's per-image ``.pth`` records."""
    by_image: dict[int, list] = {}
    for r in preds:
        by_image.setdefault(r["image_id"], []).append({k: v for k, v in r.items() if k != "image_id"})
    kk = K.tolist()
    return [{"image_id": img, "K": kk, "width": W, "height": H, "instances": inst} for img, inst in by_image.items()]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=1000)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pth", action="store_true", help="also write preds.pth (per-image Cube R-CNN records)")
    args = ap.parse_args(argv)
    print(write_files(args.images, args.out, args.seed, args.pth))


if __name__ == "__main__":
    main()
