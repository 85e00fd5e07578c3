"""The semantic stage of a remapped run (OV3D-Bench Runtime Analysis, Table 10: SigLIPv2 crop encoding, 190.6
ms/image on one H100 NVL over 200 images), timed through ``ov3d embed`` itself on a synthetic benchmark.

The same command on a CUDA machine and on a CPU (``--device auto`` takes CUDA when torch sees one): it writes a
benchmark of ``--images`` images with ``--crops-per-image`` predicted 3D boxes each under ``--out``, then runs
``ov3d embed`` (the real CLI, in this process, pixel crops of the projected boxes) ``--warmup`` + ``--runs`` times
into fresh caches, and reads back the timing the embedding cache keeps (crop reading + encoding per chunk,
``torch.cuda.synchronize`` around each encode on a GPU; ``ov3d_core.remap.cache.timing_summary``). Warm-up runs
are not counted (the first CUDA run pays for cuDNN / kernel loading).

The encoder: ``--checkpoint DIR`` (a SigLIP / SigLIP 2 / CLIP checkpoint on disk), else one built from a config,
randomly initialised, saved under ``--out`` (no download): ``--model tiny`` (the test suite's 2-layer SigLIP 2,
seconds; a smoke test of the path) or ``--model base`` (SigLIP FixRes 224/16 with the ViT-B/16 image tower of
google/siglip2-base-patch16-224: the same compute per crop, random weights; the number to compare with the paper).

Prints ONE JSON line on stdout (everything else goes to stderr) and writes nothing outside ``--out`` (the Hugging
Face, numba and CUDA caches are pointed there). On a CPU the JSON says ``"cpu_numbers": true`` and its ``note`` says
the numbers are CPU numbers, not comparable with the paper's GPU timing.

    python bench/bench_encode_gpu.py --out /tmp/enc --model tiny --images 20          # smoke test, any machine
    python bench/bench_encode_gpu.py --out /tmp/enc --model base                      # 200 images x 20 crops
    python bench/bench_encode_gpu.py --out /tmp/enc --checkpoint /models/siglip2-base-patch16-224
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAPER_MS_PER_IMAGE = 190.6  # seeds/000, Runtime Analysis: SigLIPv2 semantic stage, one H100 NVL, 200 images
W, H, FOCAL = 640, 480, 520.0
CLASSES = ("chair", "table", "sofa", "bed", "cabinet", "lamp", "sink", "television", "box", "door")


def confine(out: Path) -> None:
    """Every cache a library may write goes under ``out`` (set before those libraries are imported)."""
    for var, sub in (("HF_HOME", "hf_home"), ("NUMBA_CACHE_DIR", "numba_cache"), ("CUDA_CACHE_PATH", "cuda_cache"),
                     ("MPLCONFIGDIR", "mpl"), ("TORCHINDUCTOR_CACHE_DIR", "inductor"), ("TRITON_CACHE_DIR", "triton")):
        os.environ[var] = str(out / "caches" / sub)
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    sys.dont_write_bytecode = True
    sys.path.insert(0, str(REPO))


def write_benchmark(root: Path, n_images: int, per_image: int, seed: int) -> Path:
    """A benchmark of smooth random images with ``per_image`` boxes each (predictions = the GT boxes, so every
    prediction has a crop); returns its YAML."""
    import numpy as np
    import yaml
    from PIL import Image

    from ov3d_core.geometry.boxes import corners_from_pose, projected_box2d, rotation_y
    from ov3d_core.taxonomy import OMNI3D_NAME_TO_ID

    rng = np.random.default_rng(seed)
    K = np.array([[FOCAL, 0, W / 2], [0, FOCAL, H / 2], [0, 0, 1.0]])
    (root / "img").mkdir(parents=True, exist_ok=True)
    images, anns, preds = [], [], []
    for i in range(n_images):
        image_id = 1000 + i
        small = rng.integers(0, 255, (15, 20, 3), dtype=np.uint8)
        Image.fromarray(small).resize((W, H), Image.BILINEAR).save(root / "img" / f"{image_id}.png")
        images.append({"id": image_id, "dataset_id": 0, "width": W, "height": H, "file_path": f"img/{image_id}.png",
                       "K": K.tolist()})
        for _ in range(per_image):
            cat = CLASSES[int(rng.integers(len(CLASSES)))]
            z = float(rng.uniform(3.0, 12.0))
            center = [float(rng.uniform(-0.35, 0.35) * z), float(rng.uniform(-0.2, 0.25) * z), z]
            dims = [float(v) for v in rng.uniform(0.4, 1.8, 3)]
            R = rotation_y([float(rng.uniform(-np.pi, np.pi))])[0]
            corners = corners_from_pose(np.array([center]), np.array([dims]), R[None])
            proj, trunc = projected_box2d(corners, K, W, H)
            x1, y1, x2, y2 = proj[0].tolist()
            anns.append({"id": len(anns) + 1, "image_id": image_id, "dataset_id": 0,
                         "category_id": OMNI3D_NAME_TO_ID[cat], "category_name": cat, "valid3D": True,
                         "bbox2D_tight": [-1.0] * 4, "bbox2D_proj": proj[0].tolist(),
                         "bbox2D_trunc": trunc[0].tolist(), "bbox3D_cam": corners[0].tolist(), "center_cam": center,
                         "dimensions": dims, "R_cam": R.tolist(), "behind_camera": False, "visibility": 1.0,
                         "truncation": 0.0, "segmentation_pts": -1, "lidar_pts": -1, "depth_error": -1})
            preds.append({"image_id": image_id, "category_id": OMNI3D_NAME_TO_ID[cat], "category_name": cat,
                          "bbox": [x1, y1, x2 - x1, y2 - y1], "score": float(rng.uniform(0.3, 1.0)), "depth": z,
                          "bbox3D": corners[0].tolist(), "center_cam": center, "dimensions": dims,
                          "pose": R.tolist()})
    gt = {"info": {"id": 0, "name": "EncodeBench", "source": "synthetic", "split": "test", "version": "0",
                   "url": ""}, "images": images, "annotations": anns,
          "categories": [{"id": OMNI3D_NAME_TO_ID[c], "name": c, "supercategory": ""} for c in CLASSES]}
    (root / "gt.json").write_text(json.dumps(gt))
    (root / "preds.json").write_text(json.dumps(preds))
    cfg = {"name": "encode-bench", "cache_dir": "cache",
           "datasets": [{"name": "EncodeBench", "gt": "gt.json", "images": ".", "environment": "indoor"}],
           "runs": [{"name": "det", "dataset": "EncodeBench", "predictions": "preds.json", "format": "cubercnn-json",
                     "closed_vocabulary": list(CLASSES)}]}
    path = root / "benchmark.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def build_model(kind: str, dest: Path) -> Path:
    """A randomly initialised checkpoint saved to ``dest``: the tests' tiny SigLIP 2, or the base image tower."""
    import torch

    if kind == "tiny":
        from tests.remap.tiny_models import make_siglip2

        return make_siglip2(dest)
    from transformers import SiglipConfig, SiglipImageProcessorPil, SiglipModel, SiglipProcessor

    from tests.remap.tiny_models import wordlevel_tokenizer

    tok = wordlevel_tokenizer(lowercase=False)  # the text side is not timed: a small vocabulary keeps it light
    text = dict(vocab_size=len(tok), hidden_size=768, intermediate_size=3072, num_hidden_layers=12,
                num_attention_heads=12, max_position_embeddings=64, pad_token_id=0, eos_token_id=1, bos_token_id=2)
    vision = dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12,
                  num_channels=3, patch_size=16, image_size=224)
    torch.manual_seed(0)
    model = SiglipModel(SiglipConfig(text_config=text, vision_config=vision)).eval()
    proc = SiglipProcessor(image_processor=SiglipImageProcessorPil(size={"height": 224, "width": 224}), tokenizer=tok)
    model.save_pretrained(dest)
    proc.save_pretrained(dest)
    return dest


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder for everything this writes (created)")
    ap.add_argument("--checkpoint", default=None, help="a checkpoint directory (default: build one, see --model)")
    ap.add_argument("--model", choices=("tiny", "base"), default="tiny", help="random-init model without a checkpoint")
    ap.add_argument("--device", default="auto", help="auto (CUDA when available), cuda, cuda:1, cpu")
    ap.add_argument("--images", type=int, default=200, help="images (the paper's runtime subset: 200)")
    ap.add_argument("--crops-per-image", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--chunk-size", type=int, default=512, help="crops per cache shard")
    ap.add_argument("--warmup", type=int, default=1, help="untimed runs first")
    ap.add_argument("--runs", type=int, default=3, help="timed runs (median reported)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    for name in ("images", "crops_per_image", "batch_size", "chunk_size", "runs"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be a positive integer")
    if args.warmup < 0:
        ap.error("--warmup must be >= 0")
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    confine(out)
    t_start = time.perf_counter()

    import torch

    from ov3d_core.cli import main as ov3d
    from ov3d_core.diagnostics.runtime import MeasuredStage
    from ov3d_core.remap.cache import EmbeddingStore

    device = ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    bench = write_benchmark(out / "bench", args.images, args.crops_per_image, args.seed)
    if args.checkpoint:
        ckpt, model_kind = Path(args.checkpoint).resolve(), "checkpoint"
    else:
        ckpt, model_kind = build_model(args.model, out / f"model_{args.model}"), f"random-init {args.model}"
    runs, last = [], None
    for i in range(args.warmup + args.runs):
        cache = out / "cache" / f"run{i}"
        argv_i = ["embed", "--benchmark", str(bench), "--dataset", "EncodeBench", "--run", "det", "--encoder",
                  f"hf:{ckpt}", "--device", device, "--batch-size", str(args.batch_size), "--chunk-size",
                  str(args.chunk_size), "--cache-dir", str(cache), "--no-progress"]
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            code = ov3d(argv_i)
        if code != 0:
            sys.stderr.write(printed.getvalue())
            print(json.dumps({"script": "bench_encode_gpu", "error": f"ov3d embed exited {code}"}))
            return code
        [state] = cache.rglob("state.json")
        key = json.loads(state.read_text())["encoder_key"]
        timing = EmbeddingStore(cache).timing("EncodeBench", "det", key)
        m = MeasuredStage.from_timing(timing)
        if m is None:
            print(json.dumps({"script": "bench_encode_gpu", "error": "the embedding cache kept no timing"}))
            return 1
        if i >= args.warmup:
            runs.append(timing)
        last = m
    med = lambda k: statistics.median(float(t[k]) for t in runs)  # noqa: E731
    cpu = last.on_cpu
    vision = None
    try:
        from transformers import AutoConfig

        vision = AutoConfig.from_pretrained(str(ckpt)).vision_config.to_dict()
        vision = {k: vision.get(k) for k in ("hidden_size", "num_hidden_layers", "patch_size", "image_size",
                                             "num_patches") if vision.get(k) is not None}
    except Exception:  # noqa: BLE001 - a description only
        pass
    result = {
        "script": "bench_encode_gpu", "device": last.device, "device_name": last.device_name, "cpu_numbers": cpu,
        "note": ("CPU numbers: not comparable with the paper's GPU timing (190.6 ms/image on one H100 NVL)" if cpu
                 else "GPU numbers, CUDA-synchronised around every encode"),
        "cuda_synchronized": last.cuda_synchronized, "model": model_kind, "checkpoint": str(ckpt),
        "vision_config": vision, "encoder": last.encoder, "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(), "images": last.images, "crops_per_image": args.crops_per_image,
        "crops": last.crops, "batch_size": last.batch_size, "warmup_runs": args.warmup, "timed_runs": args.runs,
        "ms_per_image_runs": [round(float(t["ms_per_image"]), 3) for t in runs],
        "ms_per_image": round(med("ms_per_image"), 3), "ms_per_crop": round(med("ms_per_crop"), 4),
        "encode_seconds": round(med("encode_seconds"), 4), "load_seconds": round(med("load_seconds"), 4),
        "paper_ms_per_image": PAPER_MS_PER_IMAGE, "wall_seconds": round(time.perf_counter() - t_start, 1),
        "out": str(out)}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
