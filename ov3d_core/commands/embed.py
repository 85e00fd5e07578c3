"""``python -m ov3d_core embed``: compute (or resume) the crop embeddings of one run, cached on disk.

The encoder's time (reading the crops and encoding them, CUDA-synchronised on a GPU) is kept with the cached
embeddings and printed as ms per image of the dataset: the measured semantic stage of the remapped run (OV3D-Bench
Table 10); ``ov3d report`` reads it back. On a CPU the line says the numbers are CPU numbers.

``--engine local`` (default) encodes in this process; ``--engine ray`` spreads the run's shards over a Ray cluster
(crops in CPU tasks, one encoder actor per GPU or CPU) and writes the same cache. Either engine resumes what the
other left: finished shards are kept, only missing ones are computed.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import ov3d_core.benchmark as bm
from ov3d_core.commands._common import CLI
from ov3d_core.diagnostics.runtime import MeasuredStage
from ov3d_core.errors import InputError
from ov3d_core.remap.cache import EmbeddingStore
from ov3d_core.remap.encoders import ENCODER_SPEC_HINT, check_encoder_spec, make_encoder
from ov3d_core.remap.engines import embed
from ov3d_core.remap.engines.ray_data import check_address
from ov3d_core.remap.pipeline import embed_run, record_timing


def add_encoder_args(p: argparse.ArgumentParser) -> None:
    """Options shared by ``embed`` and ``remap``."""
    p.add_argument("--benchmark", required=True, help="benchmark YAML (e.g. data/demo/benchmark.yaml)")
    p.add_argument("--dataset", required=True, help="dataset name in the benchmark")
    p.add_argument("--run", required=True, help="run (detector) name on that dataset")
    p.add_argument("--encoder", default="proxy",
                   help="`proxy` (demo stand-in: MiniLM on the demo's crop captions) or `hf:<checkpoint or dir>` "
                        "(SigLIP / SigLIP 2 / CLIP, e.g. hf:google/siglip2-base-patch16-224 from the local "
                        "Hugging Face cache, or hf:/path/to/dir)")
    p.add_argument("--batch-size", type=int, default=None, help="crops per encoder forward pass (default 64)")
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:1 ... (default: CUDA when available)")
    p.add_argument("--pad", type=float, default=0.0, help="context added around each crop, fraction per side")
    p.add_argument("--min-size", type=float, default=8, help="smallest crop side in pixels")
    p.add_argument("--chunk-size", type=int, default=256,
                   help="crops per saved shard (resume granularity and the unit of work on Ray)")
    p.add_argument("--cache-dir", default=None, help="embedding cache root (default: <benchmark cache_dir>/embeddings)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def add_engine_args(p: argparse.ArgumentParser) -> None:
    """``embed``'s engine options."""
    p.add_argument("--engine", choices=("local", "ray"), default="local",
                   help="local: this process (default); ray: Ray Data on a Ray cluster (needs the `ray` extra)")
    p.add_argument("--address", default=None,
                   help="ray: `auto` (the cluster this machine is part of), HOST:PORT, or ray://HOST:PORT "
                        "(default: start a Ray instance on this machine)")
    p.add_argument("--gpus-per-worker", type=float, default=None,
                   help="ray: GPUs per encoder worker (default 1 when the cluster has GPUs; 0: CPU workers)")
    p.add_argument("--workers", type=int, default=None,
                   help="ray: number of encoder workers (default: one per GPU share, else one per CPU)")


def _positive_int(value, option: str) -> None:
    if value is not None and value < 1:
        raise InputError(CLI, None, option, "a positive integer", value)


def _finite(value, option: str, lo: float = 0.0) -> None:
    if value is not None and not (math.isfinite(value) and value >= lo):
        raise InputError(CLI, None, option, f"a finite number >= {lo:g}", value)


def check_args(args) -> None:
    """Refuse bad options in one line before anything is loaded (the encoder spec included: a checkpoint that is
    neither a directory nor in the local Hugging Face cache fails here, in well under a second when offline)."""
    _positive_int(args.chunk_size, "--chunk-size")
    _positive_int(args.batch_size, "--batch-size")
    _finite(args.pad, "--pad")
    _finite(args.min_size, "--min-size")
    engine = getattr(args, "engine", "local")
    ray_only = {"--address": getattr(args, "address", None),
                "--gpus-per-worker": getattr(args, "gpus_per_worker", None), "--workers": getattr(args, "workers", None)}
    if engine == "ray":
        check_address(ray_only["--address"])
        _finite(ray_only["--gpus-per-worker"], "--gpus-per-worker")
        _positive_int(ray_only["--workers"], "--workers")
        if args.device is not None:
            raise InputError(CLI, None, "--device", "unset with --engine ray (workers use their GPU, or the CPU "
                             "with --gpus-per-worker 0)", args.device)
    else:
        given = [k for k, v in ray_only.items() if v is not None]
        if given:
            raise InputError(CLI, None, given[0], "used with --engine ray only", ray_only[given[0]])
    try:
        check_encoder_spec(args.encoder)
    except InputError as exc:
        if exc.file is not None:  # a checkpoint that cannot be loaded: its own message names it
            raise
        raise InputError(CLI, None, "--encoder", ENCODER_SPEC_HINT, args.encoder) from None


def load_bench(path):
    if hasattr(bm, "load_benchmark"):
        return bm.load_benchmark(path)
    return bm.Benchmark.from_yaml(path)


def embedding_store(bench, cache_dir):
    from pathlib import Path

    if cache_dir is None:
        cache_dir = Path(bench.config.cache_dir) / "embeddings"
    return EmbeddingStore(cache_dir)


def prepare(args):
    """Benchmark, dataset, run, encoder, store and the run's crop embeddings (computed in this process if
    missing)."""
    check_args(args)
    bench = load_bench(args.benchmark)
    ds = bench.dataset(args.dataset)
    run = bench.run(args.run, args.dataset)
    spec = bench.run_spec(args.run, args.dataset)
    encoder = make_encoder(args.encoder, device=args.device, batch_size=args.batch_size)
    store = embedding_store(bench, args.cache_dir)
    emb = embed_run(store, ds, run, encoder, crops_json=getattr(spec, "crops", None), pad=args.pad,
                    min_size=args.min_size, chunk_size=args.chunk_size, progress=not args.no_progress)
    return bench, ds, run, spec, encoder, store, emb


def compute(args):
    """The :class:`~ov3d_core.remap.engines.EmbedReport` of ``embed`` with the chosen engine, and the cache entry's
    encoder timing completed with the dataset's image count (None when the engine did not time it)."""
    check_args(args)
    kw: dict = {}
    if args.engine == "ray":
        try:
            import ray.data  # noqa: F401
        except ImportError:
            raise InputError(CLI, None, "--engine", "ray with Ray Data installed (pip install 'ray[data]', or "
                             "the project's `ray` extra)", "ray") from None
        kw.update(address=args.address, gpus_per_worker=args.gpus_per_worker, workers=args.workers)
    else:
        kw.update(device=args.device)
    bench = load_bench(args.benchmark)
    ds = bench.dataset(args.dataset)
    run = bench.run(args.run, args.dataset)
    spec = bench.run_spec(args.run, args.dataset)
    store = embedding_store(bench, args.cache_dir)
    rep = embed(store, ds, run, args.encoder, engine=args.engine, crops_json=getattr(spec, "crops", None),
                pad=args.pad, min_size=args.min_size, chunk_size=args.chunk_size, batch_size=args.batch_size,
                progress=not args.no_progress, **kw)
    timing = record_timing(store, ds, run, rep.encoder_key, engine=rep.engine) if rep.complete else None
    return rep, timing


def timing_line(rep, timing: dict | None) -> str:
    """The ``timing:`` line of ``embed``: the measured semantic stage, or why there is none."""
    m = MeasuredStage.from_timing(timing)
    if m is None:
        return ("timing:  not measured (the ray engine does not time its shards; the local engine does)"
                if rep.engine == "ray" else "timing:  not measured (some shards were computed without timing)")
    when = " (measured when the entry was computed)" if rep.cached else ""
    return f"timing:  semantic stage {m.describe()}{when}"


def run_embed(args) -> int:
    t = time.perf_counter()
    rep, timing = compute(args)
    print(f"encoder: {rep.encoder_name}")
    where = f"ray, {rep.workers} workers" if rep.engine == "ray" else rep.engine
    shards = ("shards:  already complete" if rep.cached else
              f"shards:  {len(rep.written)} of {rep.n_shards} computed now ({where})")
    if "stand-in" in rep.encoder_name:
        print("note: the proxy encoder is a demo stand-in (sentence embeddings of the demo's crop captions), "
              "not an image encoder", file=sys.stderr)
    if rep.failures:
        print(shards)
        for f in rep.failures:
            print(f"error: {f.message()}", file=sys.stderr)
        print(f"error: {len(rep.failures)} of {rep.n_shards} shards failed; the others are saved, and the cache "
              "entry stays incomplete: fix the inputs and run the same command again to compute only the failed "
              f"shards ({time.perf_counter() - t:.1f} s)", file=sys.stderr)
        return 2 if all(f.kind == "input" for f in rep.failures) else 1
    emb = rep.embeddings
    n_valid = int(emb.valid.sum())
    print(f"{rep.dataset} / {rep.run}: {len(emb)} predictions, {n_valid} crops embedded ({len(emb) - n_valid} "
          f"without a crop: behind the camera, off the image or no caption), d = {emb.dim}")
    print(shards)
    print(timing_line(rep, timing))
    print(f"cache:   {emb.path}  ({time.perf_counter() - t:.1f} s)")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("embed", help="compute crop embeddings of a run (cached, resumable; local or Ray)",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_encoder_args(p)
    add_engine_args(p)
    p.set_defaults(func=run_embed)
