"""``python -m ov3d_core embed``: compute (or resume) the crop embeddings of one run, cached on disk."""

from __future__ import annotations

import argparse
import sys
import time


def add_encoder_args(p: argparse.ArgumentParser) -> None:
    """Options shared by ``embed`` and ``remap``."""
    p.add_argument("--benchmark", required=True, help="benchmark YAML (e.g. data/demo/benchmark.yaml)")
    p.add_argument("--dataset", required=True, help="dataset name in the benchmark")
    p.add_argument("--run", required=True, help="run (detector) name on that dataset")
    p.add_argument("--encoder", default="proxy",
                   help="`proxy` (demo stand-in: MiniLM on the demo's crop captions) or `hf:<checkpoint or dir>` "
                        "(SigLIP / SigLIP 2 / CLIP, e.g. hf:google/siglip2-base-patch16-224)")
    p.add_argument("--batch-size", type=int, default=None, help="crops per encoder forward pass (default 64)")
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:1 ... (default: CUDA when available)")
    p.add_argument("--pad", type=float, default=0.0, help="context added around each crop, fraction per side")
    p.add_argument("--min-size", type=float, default=8, help="smallest crop side in pixels")
    p.add_argument("--chunk-size", type=int, default=256, help="crops per saved chunk (resume granularity)")
    p.add_argument("--cache-dir", default=None, help="embedding cache root (default: <benchmark cache_dir>/embeddings)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def load_bench(path):
    import ov3d_core.benchmark as bm

    if hasattr(bm, "load_benchmark"):
        return bm.load_benchmark(path)
    return bm.Benchmark.from_yaml(path)


def embedding_store(bench, cache_dir):
    from pathlib import Path

    from ov3d_core.remap.cache import EmbeddingStore

    if cache_dir is None:
        cache_dir = Path(bench.config.cache_dir) / "embeddings"
    return EmbeddingStore(cache_dir)


def prepare(args):
    """Benchmark, dataset, run, encoder, store and the run's crop embeddings (computed if missing)."""
    from ov3d_core.remap.encoders import make_encoder
    from ov3d_core.remap.pipeline import embed_run

    bench = load_bench(args.benchmark)
    ds = bench.dataset(args.dataset)
    run = bench.run(args.run, args.dataset)
    spec = bench.run_spec(args.run, args.dataset)
    encoder = make_encoder(args.encoder, device=args.device, batch_size=args.batch_size)
    store = embedding_store(bench, args.cache_dir)
    emb = embed_run(store, ds, run, encoder, crops_json=getattr(spec, "crops", None), pad=args.pad,
                    min_size=args.min_size, chunk_size=args.chunk_size, progress=not args.no_progress)
    return bench, ds, run, spec, encoder, store, emb


def run_embed(args) -> int:
    t = time.perf_counter()
    _, ds, run, _, encoder, _, emb = prepare(args)
    n_valid = int(emb.valid.sum())
    print(f"encoder: {encoder.name}")
    print(f"{ds.name} / {run.name}: {len(emb)} predictions, {n_valid} crops embedded "
          f"({len(emb) - n_valid} without a crop: behind the camera, off the image or no caption), d = {emb.dim}")
    print(f"cache: {emb.path}  ({time.perf_counter() - t:.1f} s)")
    if "stand-in" in encoder.name:
        print("note: the proxy encoder is a demo stand-in (sentence embeddings of the demo's crop captions), "
              "not an image encoder", file=sys.stderr)
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("embed", help="compute crop embeddings of a run (cached, resumable)",
                              description=__doc__)
    add_encoder_args(p)
    p.set_defaults(func=run_embed)
