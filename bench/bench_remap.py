"""Benchmark of SigLIPv2 remapping (run by hand; prints markdown).

(a) Live path: re-scoring a template or threshold change with cached crop embeddings, on the evaluator's synthetic
    workload (bench/workload.py; default 5,000 images, ~10 GT and ~20 predictions per image, 38 classes, real 3D IoU
    pairs; plain synthetic arrays if that module is absent) with d = 768 crop embeddings like SigLIP 2 base: the
    matrix product, top-1 remap, LabelView and Omni3D AP3D (``evaluate_view``). Text embeddings are cached (as in
    the app); the proxy text encoder on 50 uncached prompts is timed separately.
(b) Crop-encoding throughput of a randomly initialised SigLIP 2 base-sized image tower built from a config (no
    download): FixRes ``SiglipModel`` 224/16 (the layout of google/siglip2-base-patch16-224) or, with ``--naflex``,
    ``Siglip2Model`` with 256 patches. Reports crops/s and ms per crop end to end (PIL crops -> processor ->
    forward) and forward only, then ms per image for several crops-per-image counts (the paper's semantic stage:
    190.6 ms per image on one H100 NVL).

    python bench/bench_remap.py                                  # both parts, CPU, batch sizes 8,16,32,64
    python bench/bench_remap.py --part live --preds-per-image 100     # Omni3D-max 100 crops per image
    python bench/bench_remap.py --part encode --device cuda --batch-sizes 64,128,256,512
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ov3d_core.remap.cache import CropEmbeddings, TextEmbeddingCache  # noqa: E402
from ov3d_core.remap.pipeline import LiveRemapper  # noqa: E402


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            names = [ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")]
        if names:
            cpu = names[0]
    except OSError:
        pass
    out = f"{cpu}, {os.cpu_count()} logical CPUs, Python {platform.python_version()}, numpy {np.__version__}"
    try:
        import torch

        out += f", torch {torch.__version__} ({torch.get_num_threads()} threads)"
        if torch.cuda.is_available():
            out += f", GPU {torch.cuda.get_device_name(0)}"
    except ImportError:
        pass
    return out


# ---------------------------------------------------------------------------------------------------------------
# (a) live re-scoring

class CachedTextEncoder:
    """Text side with fixed random class embeddings per prompt (what a warm text cache returns)."""

    has_calibrated_bias = True
    logit_scale, logit_bias = 4.7245, -16.7717  # siglip2-base-patch16-224 (reference §1.4)

    def __init__(self, dim: int, seed: int = 0):
        self.dim, self.seed = dim, seed
        self.cache_key = "bench:cached-text"
        self.name = "bench"

    def _vec(self, key: str) -> np.ndarray:
        rng = np.random.default_rng(int(hashlib.sha1(f"{self.seed}|{key}".encode()).hexdigest()[:8], 16))
        v = rng.normal(size=self.dim).astype(np.float32)
        return v / np.linalg.norm(v)

    def encode_text(self, texts):
        """A class direction (the longest class name found in the prompt) plus a prompt-specific perturbation, so
        templates agree roughly, as real text encoders do."""
        names = sorted(getattr(self, "classes", ()), key=len, reverse=True)
        out = []
        for t in texts:
            hit = next((c for c in names if c in t), None)
            v = (self._vec(hit) if hit else 0) + 0.5 * self._vec(t)
            out.append(v / np.linalg.norm(v))
        return np.stack(out).astype(np.float32)

    def probability(self, cos):
        return 1 / (1 + np.exp(-(np.asarray(cos, np.float64) * np.exp(self.logit_scale) + self.logit_bias)))


def synthetic_workload(n_images: int, preds_per_image: float, gt_per_image: float, n_classes: int, dim: int,
                       rng: np.random.Generator):
    gt_n = rng.poisson(gt_per_image, n_images)
    pr_n = rng.poisson(preds_per_image, n_images)
    gt_image = np.repeat(np.arange(n_images), gt_n)
    pred_image = np.repeat(np.arange(n_images), pr_n)
    n_gt, n_pred = len(gt_image), len(pred_image)
    gt_label = rng.integers(0, n_classes, n_gt)
    gt_start = np.concatenate([[0], np.cumsum(gt_n)[:-1]])
    # each prediction overlaps up to 3 GT of its image
    pg, pp, pi = [], [], []
    has = gt_n[pred_image] > 0
    for k in range(3):
        sel = np.flatnonzero(has & (rng.random(n_pred) < (0.9, 0.5, 0.2)[k]))
        g = gt_start[pred_image[sel]] + rng.integers(0, 1 << 30, len(sel)) % gt_n[pred_image[sel]]
        pg.append(g)
        pp.append(sel)
        pi.append(rng.beta(2, 2, len(sel)) if k else rng.beta(5, 2, len(sel)))
    pg, pp, pi = map(np.concatenate, (pg, pp, pi))
    key = pg * (n_pred + 1) + pp
    _, first = np.unique(key, return_index=True)
    order = np.lexsort((pp[first], pg[first]))
    pg, pp, pi = pg[first][order], pp[first][order], pi[first][order]
    # crop embeddings: the best-overlapping GT class's direction plus noise (so remapping is neither trivial nor random)
    classes = [f"class {i}" for i in range(n_classes)]
    best_gt = np.full(n_pred, -1)
    best_gt[pp[::-1]] = pg[::-1]  # any overlapping GT
    target = np.where(best_gt >= 0, gt_label[np.maximum(best_gt, 0)], rng.integers(0, n_classes, n_pred))
    return dict(gt_image=gt_image, gt_label=gt_label, gt_depth=rng.uniform(1, 60, n_gt), pred_image=pred_image,
                pred_depth=rng.uniform(1, 60, n_pred), pred_score=rng.random(n_pred), pair_gt=pg, pair_pred=pp,
                pair_iou=pi, classes=classes, target=target)


def _workload_inputs(args, rng):
    """GT/pred arrays and pairs: bench/workload.py (the evaluator's Omni3D-like workload, real 3D IoU pairs) when
    present, else the arrays of :func:`synthetic_workload`. Returns (description, evaluate(view) -> AP3D,
    visual class per prediction, detector scores, class names)."""
    try:
        from bench.workload import build_workload
    except ImportError:
        build_workload = None
    if build_workload is not None:
        from ov3d_core.eval.ap import APParams, evaluate_view
        from ov3d_core.eval.labels import gt_codes
        from ov3d_core.eval.pairs import compute_pairs

        copies = min(4.0, 0.6 * args.preds_per_image / args.gt_per_image)
        w = build_workload(args.images, gt_per_image=args.gt_per_image, pred_per_image=int(args.preds_per_image),
                           n_categories=args.classes, copies_per_gt=copies, seed=0)
        pairs = compute_pairs(w.gt, w.pred)
        classes = list(w.vocabulary)
        g_codes = gt_codes(w.gt.category, classes)
        # what each crop "shows": the category of its best-overlapping GT, else a random one (background)
        visual = rng.integers(0, len(classes), len(w.pred))
        order = np.argsort(pairs.iou3d, kind="stable")
        visual[pairs.pred[order]] = g_codes[pairs.gt[order]]  # the last write is the best IoU
        params = APParams()

        def evaluate(view):
            return evaluate_view(w.gt, w.pred, pairs, view, params, gt_label=g_codes).ap()

        desc = (f"bench/workload.py: {w.describe()}, {len(pairs):,} GT x prediction pairs (real 3D IoU), "
                f"d = {args.dim}")
        return desc, evaluate, visual, w.pred.score, classes
    from ov3d_core.eval.ap import APParams, evaluate_ap

    w = synthetic_workload(args.images, args.preds_per_image, args.gt_per_image, args.classes, args.dim, rng)
    params = APParams()

    def evaluate(view):
        return evaluate_ap(w["gt_image"], w["gt_label"], np.zeros(len(w["gt_label"]), bool), w["gt_depth"],
                           w["pred_image"], view.codes, view.score, w["pred_depth"], w["pair_gt"], w["pair_pred"],
                           w["pair_iou"], n_categories=len(w["classes"]), params=params).ap()

    desc = (f"synthetic arrays: {args.images:,} images, {len(w['pred_image']):,} predictions, "
            f"{len(w['gt_label']):,} GT, {len(w['pair_gt']):,} pairs, {args.classes} classes, d = {args.dim}")
    return desc, evaluate, w["target"], w["pred_score"], w["classes"]


def bench_live(args) -> list[str]:
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    desc, evaluate, visual, det_scores, classes = _workload_inputs(args, rng)
    n_pred = len(visual)
    enc = CachedTextEncoder(args.dim)
    # image-text cosines around 0.10-0.17, higher for the class the crop shows (SigLIP-like)
    enc.classes = list(classes)
    class_dir = np.stack([enc._vec(c) for c in classes])
    emb = rng.standard_normal((n_pred, args.dim), dtype=np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    emb = 0.98 * emb + 0.18 * class_dir[visual]
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    records = np.arange(n_pred, dtype=np.int64)
    ce = CropEmbeddings(records, emb.astype(np.float16), np.ones(n_pred, bool), enc.cache_key, "bench")
    del emb
    setup = time.perf_counter() - t0
    live = LiveRemapper(ce, records, det_scores, enc, classes, text_cache=TextEmbeddingCache())

    def rescore(template, theta, mode="product"):
        t = time.perf_counter()
        view = live.label_view(template, theta, mode)
        t_remap = time.perf_counter() - t
        ap = evaluate(view)
        return t_remap, time.perf_counter() - t, ap

    for tpl in ("S1", "S2", "standard", "O4"):  # warm: text cache, numba compilation
        live.text_embeddings(tpl)
    rescore("S1", 0.5)
    live.clear()
    rows = []

    def timed(label, template, theta, clear=False, repeat=5):
        ts_r, ts_t, ap = [], [], float("nan")
        for _ in range(repeat):
            if clear:
                live.clear()
            r, t, ap = rescore(template, theta)
            ts_r.append(r)
            ts_t.append(t)
        rows.append(f"| {label} | {1e3 * np.median(ts_r):.0f} | {1e3 * np.median(ts_t):.0f} | {ap:.1f} |")

    timed("template change (S1, text cached): matmul + top-1 + LabelView + AP", "S1", 0.5, clear=True)
    timed("threshold change (p 0.5 -> 0.3, ranking cached)", "S1", 0.3)
    timed("template group ensemble (standard, 5 templates, text cached)", "standard", 0.5, clear=True)
    timed("template change to O4 (text cached)", "O4", 0.5, clear=True)
    t = time.perf_counter()
    live.warm()
    t_warm = time.perf_counter() - t
    timed(f"template switch after warm() (15 templates + 3 groups, {t_warm:.1f} s once)", "O2", 0.5)
    out = [f"### (a) Live re-scoring with cached crop embeddings ({desc})",
           "", f"Workload build {setup:.1f} s (not part of the live path). Median of 5. Probabilities use "
               "siglip2-base-patch16-224's logit scale/bias; score mode product.", "",
           "| change | remap + LabelView (ms) | total incl. AP3D (ms) | AP3D (sanity) |", "|---|---|---|---|", *rows]
    if not args.no_proxy:
        try:
            from ov3d_core.remap.encoders import ProxyEncoder

            t = time.perf_counter()
            proxy = ProxyEncoder()
            load = time.perf_counter() - t
            prompts = [f"a photo of a {c}." for c in ("chair", "table", "car", "sofa", "lamp") * 10]
            proxy.encode_text(prompts[:5])
            ts = []
            for i in range(5):
                t = time.perf_counter()
                proxy.encode_text([p + f" v{i}" for p in prompts])
                ts.append(time.perf_counter() - t)
            out += ["", f"Proxy text encoder (MiniLM), 50 uncached prompts: {1e3 * np.median(ts):.0f} ms "
                        f"(model load once: {load:.1f} s)."]
        except Exception as exc:  # noqa: BLE001
            out += ["", f"(proxy text encoder not timed: {exc})"]
    return out


# ---------------------------------------------------------------------------------------------------------------
# (b) crop-encoding throughput

def base_model(naflex: bool, vocab: int):
    """A randomly initialised SigLIP 2 base-sized model and its image processor (no download)."""
    text = dict(vocab_size=vocab, hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12,
                max_position_embeddings=64, pad_token_id=0, eos_token_id=1, bos_token_id=2)
    vision = dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12,
                  num_channels=3, patch_size=16)
    if naflex:
        from transformers import Siglip2Config, Siglip2ImageProcessorPil, Siglip2Model

        model = Siglip2Model(Siglip2Config(text_config=text, vision_config={**vision, "num_patches": 256}))
        proc = Siglip2ImageProcessorPil(patch_size=16, max_num_patches=256)
    else:
        from transformers import SiglipConfig, SiglipImageProcessorPil, SiglipModel

        model = SiglipModel(SiglipConfig(text_config=text, vision_config={**vision, "image_size": 224}))
        proc = SiglipImageProcessorPil(size={"height": 224, "width": 224})
    return model, proc


def random_crops(n: int, rng: np.random.Generator):
    from PIL import Image

    out = []
    for _ in range(n):
        w, h = (int(v) for v in rng.integers(24, 400, 2))
        out.append(Image.fromarray(rng.integers(0, 255, (h, w, 3), dtype=np.uint8)))
    return out


def bench_encode(args) -> list[str]:
    import torch

    from ov3d_core.remap.encoders import HFEncoder

    rng = np.random.default_rng(0)
    t = time.perf_counter()
    model, proc = base_model(args.naflex, args.vocab)
    n_vision = sum(p.numel() for p in model.vision_model.parameters())
    build = time.perf_counter() - t
    dtype = None if args.dtype == "auto" else args.dtype
    enc = HFEncoder.from_model(model, proc, name="random-siglip2-base", device=args.device, dtype=dtype,
                               batch_size=max(args.batch_sizes))
    kind = "Siglip2Model NaFlex, 256 patches" if args.naflex else "SiglipModel FixRes 224/16"
    rows = []
    per_crop_best = None
    for bs in args.batch_sizes:
        enc.batch_size = bs
        crops = random_crops(bs, rng)
        enc.encode_images(crops)  # warm-up (and cuDNN autotune)
        if enc.device.type == "cuda":
            torch.cuda.synchronize()
        e2e, fwd = [], []
        for _ in range(args.repeats):
            t = time.perf_counter()
            inputs = enc.preprocess(crops)
            t_pre = time.perf_counter() - t
            kw = {"pixel_values": inputs["pixel_values"].to(enc.device, enc.dtype)}
            if enc.is_naflex:
                kw["pixel_attention_mask"] = inputs["pixel_attention_mask"].to(enc.device)
                kw["spatial_shapes"] = inputs["spatial_shapes"].to(enc.device)
            t = time.perf_counter()
            with torch.inference_mode():
                out = enc.model.get_image_features(**kw)
                out = out.pooler_output if hasattr(out, "pooler_output") else out
                out.float().cpu()
            t_fwd = time.perf_counter() - t
            e2e.append(t_pre + t_fwd)
            fwd.append(t_fwd)
        e, f = float(np.median(e2e)), float(np.median(fwd))
        ms = 1e3 * e / bs
        per_crop_best = ms if per_crop_best is None else min(per_crop_best, ms)
        rows.append(f"| {bs} | {bs / e:.1f} | {ms:.1f} | {bs / f:.1f} | {1e3 * f / bs:.1f} |")
    text_row = []
    if not args.no_text:
        prompts = [f"a photo of a class number {i}." for i in range(50)]
        tok = {"input_ids": torch.randint(5, args.vocab, (50, 64))}  # random ids: the tokenizer is not the point
        with torch.inference_mode():
            enc.model.get_text_features(input_ids=tok["input_ids"][:2].to(enc.device))
            t = time.perf_counter()
            out = enc.model.get_text_features(input_ids=tok["input_ids"].to(enc.device))
            (out.pooler_output if hasattr(out, "pooler_output") else out).float().cpu()
            tt = time.perf_counter() - t
        text_row = ["", f"Text tower, {len(prompts)} prompts x 64 tokens in one batch: {tt:.2f} s "
                        f"({len(prompts) / tt:.1f} prompts/s): why text embeddings are cached per template."]
    per_image = " / ".join(f"{n} crops: {n * per_crop_best:.0f} ms" for n in args.crops_per_image)
    return [f"### (b) Crop encoding: random-init {kind} ({n_vision / 1e6:.1f} M vision params), device "
            f"{enc.device}, dtype {str(enc.dtype).replace('torch.', '')}",
            "", f"Model build {build:.1f} s. Crops: random sizes 24-400 px, PIL processor included in end-to-end. "
            f"Median of {args.repeats} after one warm-up batch.", "",
            "| batch | crops/s (end to end) | ms/crop | crops/s (forward only) | ms/crop (forward) |",
            "|---|---|---|---|---|", *rows, "",
            f"Per image at the best batch size (end to end): {per_image}. Paper, SigLIPv2 semantic stage on one "
            "H100 NVL: 190.6 ms/image.", *text_row]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("all", "live", "encode"), default="all")
    ap.add_argument("--images", type=int, default=5000)
    ap.add_argument("--preds-per-image", type=float, default=20)
    ap.add_argument("--gt-per-image", type=float, default=10)
    ap.add_argument("--classes", type=int, default=38, help="vocabulary size (default 38, SUN RGB-D)")
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--no-proxy", action="store_true", help="skip timing the MiniLM proxy text encoder")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="auto", help="auto (bf16/fp16 on CUDA, fp32 on CPU), fp32, fp16, bf16")
    ap.add_argument("--batch-sizes", type=lambda s: [int(x) for x in s.split(",")], default=[8, 16, 32, 64])
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--crops-per-image", type=lambda s: [int(x) for x in s.split(",")], default=[10, 20, 50])
    ap.add_argument("--naflex", action="store_true", help="Siglip2Model (NaFlex) instead of the FixRes SiglipModel")
    ap.add_argument("--vocab", type=int, default=32000,
                    help="text vocabulary of the random model (256000 is the real one; it only costs memory)")
    ap.add_argument("--no-text", action="store_true", help="skip the text-tower timing")
    args = ap.parse_args(argv)
    lines = ["## bench_remap", "", f"Machine: {machine()}", ""]
    if args.part in ("all", "live"):
        lines += bench_live(args) + [""]
    if args.part in ("all", "encode"):
        lines += bench_encode(args) + [""]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
