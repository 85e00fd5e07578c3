"""Omni3D-format files at benchmark scale, written from ``bench/workload.py``: a GT JSON and a Cube R-CNN
predictions JSON (``omni_instances_results.json``), optionally a ``.pth`` of the same predictions.

Numbers are written as Cube R-CNN writes them: float32 values of its tensors, printed as Python floats (``json.dump``
of ``tensor.tolist()``), so a prediction record is ~0.9 KB, as in real files. Built in blocks of 2,500 images so
40,000 images (4M predictions, ~3.7 GB) stay within ~1 GiB of memory while writing.

    python bench/loadfiles.py --images 5000 --out /tmp/load5k     # gt.json, preds.json
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
import orjson

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.workload import H, K, W, build_workload  # noqa: E402
from ov3d_core.geometry.boxes import projected_box2d  # noqa: E402
from ov3d_core.taxonomy import OMNI3D_NAME_TO_ID  # noqa: E402

BLOCK = 2500


def _f32(a: np.ndarray) -> list:
    """float32 values as Python floats (what ``tensor.tolist()`` of a float32 tensor gives)."""
    return np.asarray(a, np.float32).astype(np.float64).tolist()


def _write_array(f, chunks) -> None:
    """Write a JSON array whose items arrive as lists of dicts (one orjson call per chunk)."""
    f.write(b"[")
    first = True
    for items in chunks:
        if not items:
            continue
        body = orjson.dumps(items)[1:-1]
        if not first:
            f.write(b",")
        f.write(body)
        first = False
    f.write(b"]")


def _blocks(n_images: int, seed: int):
    """(block index, first image id, Workload) per block of images; ids continue across blocks."""
    for b, start in enumerate(range(0, n_images, BLOCK)):
        n = min(BLOCK, n_images - start)
        w = build_workload(n_images=n, seed=seed + b)
        yield b, start, w


def write_files(n_images: int, out: Path, seed: int = 0, pth: bool = False) -> dict:
    """Write ``gt.json`` and ``preds.json`` (and ``preds.pth`` if asked) under ``out``; returns counts and sizes."""
    out.mkdir(parents=True, exist_ok=True)
    kk = K.tolist()
    n_gt = n_pred = 0
    vocab: tuple[str, ...] = ()
    ann_chunks: list[bytes] = []
    with open(out / "preds.json", "wb") as fp:
        def pred_chunks():
            nonlocal n_pred, vocab, n_gt
            for b, start, w in _blocks(n_images, seed):
                vocab = w.vocabulary
                off = start - 1000  # workload ids start at 1000
                g = w.gt
                _, trunc = projected_box2d(g.corners, K, W, H)
                proj, _ = projected_box2d(g.corners, K)
                gid = g.image_id + off + 1
                # ignored GT by the file's own fields: a truncation above Omni3D's 1/3 threshold
                truncation = np.where(g.ignore, 0.5, 0.0)
                anns = []
                for i, (img, cat, c, d, R, cor, pj, tr, tc) in enumerate(zip(
                        gid.tolist(), g.category.tolist(), g.center.round(6).tolist(), g.dims.round(6).tolist(),
                        g.R.round(6).tolist(), g.corners.round(6).tolist(), proj.round(4).tolist(),
                        trunc.round(4).tolist(), truncation.tolist())):
                    anns.append({"id": n_gt + i + 1, "image_id": img, "dataset_id": 0,
                                 "category_id": OMNI3D_NAME_TO_ID[cat], "category_name": cat, "valid3D": True,
                                 "bbox2D_tight": [-1.0, -1.0, -1.0, -1.0], "bbox2D_proj": pj, "bbox2D_trunc": tr,
                                 "bbox3D_cam": cor, "center_cam": c, "dimensions": d, "R_cam": R,
                                 "behind_camera": False, "visibility": 1.0, "truncation": tc,
                                 "segmentation_pts": -1, "lidar_pts": -1, "depth_error": -1})
                n_gt += len(anns)
                ann_chunks.append(orjson.dumps(anns)[1:-1])
                p = w.pred
                xywh = p.box2d.copy()
                xywh[:, 2:] -= xywh[:, :2]
                uvw = p.center @ K.T
                c2d = uvw[:, :2] / uvw[:, 2:3]
                cols = zip((p.image_id + off + 1).tolist(), [OMNI3D_NAME_TO_ID[c] for c in p.category.tolist()],
                           _f32(xywh), _f32(p.score), _f32(p.depth), _f32(p.corners), _f32(p.center), _f32(c2d),
                           _f32(p.dims), _f32(p.R))
                recs = [{"image_id": img, "category_id": cid, "bbox": bb, "score": s, "depth": dp, "bbox3D": cor,
                         "center_cam": c, "center_2D": c2, "dimensions": d, "pose": R}
                        for img, cid, bb, s, dp, cor, c, c2, d, R in cols]
                n_pred += len(recs)
                for k in range(0, len(recs), 50_000):
                    yield recs[k:k + 50_000]
                if pth:
                    _append_pth_block(out, b, recs, kk)
        _write_array(fp, pred_chunks())
    cats = [{"id": OMNI3D_NAME_TO_ID[c], "name": c, "supercategory": "nan"} for c in vocab]
    images = [{"id": i + 1, "dataset_id": 0, "width": W, "height": H, "file_path": f"images/{i + 1:06d}.jpg",
               "K": kk, "src_90_rotate": 0, "src_flagged": False} for i in range(n_images)]
    with open(out / "gt.json", "wb") as fg:
        head = orjson.dumps({"info": {"id": 0, "name": "LoadBench", "split": "test"}, "images": images,
                             "categories": cats})
        fg.write(head[:-1] + b',"annotations":[')
        fg.write(b",".join(c for c in ann_chunks if c))
        fg.write(b"]}")
    if pth:
        _finish_pth(out)
    return {"images": n_images, "gt": n_gt, "predictions": n_pred,
            "gt_bytes": (out / "gt.json").stat().st_size, "pred_bytes": (out / "preds.json").stat().st_size}


# ------------------------------------------------------------------------------------------------------- .pth

def _append_pth_block(out: Path, b: int, recs: list[dict], kk) -> None:
    import torch

    per_image: dict[int, list] = {}
    for r in recs:
        inst = {k: v for k, v in r.items() if k != "image_id"}
        per_image.setdefault(r["image_id"], []).append(inst)
    block = [{"image_id": img, "K": kk, "width": W, "height": H, "instances": inst}
             for img, inst in per_image.items()]
    torch.save(block, out / f".pth_block_{b:04d}")


def _finish_pth(out: Path) -> None:
    import torch

    blocks = sorted(out.glob(".pth_block_*"))
    allrecs: list = []
    for p in blocks:
        allrecs.extend(torch.load(p, weights_only=True))
        p.unlink()
    torch.save(allrecs, out / "preds.pth")


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
