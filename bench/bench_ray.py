"""Crop encoding in-process vs on Ray (issue 15): the same ``ov3d embed`` workload, encoder and cache, each engine
run side by side in one invocation, each in a fresh process with a cold embedding cache.

Encoder: a randomly initialised SigLIP (FixRes 224/16) with the base image tower (92.9 M vision parameters, the
layout of google/siglip2-base-patch16-224; a 1-layer text tower since ``embed`` never runs text), saved to a
directory and given as ``hf:<dir>`` exactly like a real checkpoint (no download). Workload: pixel crops of one demo
run (``ov3d_core.demo``, synthetic renders) with ``--images`` images per dataset.

Reported per engine: end-to-end wall time of the command (process start, model loads, Ray start-up, encoding,
cache merge) and steady-state crops/s (crops of the shards after the first one, over the time from the first
shard's write to the last one's: start-up excluded).

    python bench/bench_ray.py                                   # this machine: local vs Ray with 2 CPU workers
    python bench/bench_ray.py --images 40 --gpus-per-worker 1   # a GPU machine: local (CUDA) vs Ray, 1 GPU each
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "bench")]


def make_base_checkpoint(path: Path) -> Path:
    """Random-init SigLIP with the base image tower and a 1-layer text tower, saved with its processor."""
    import torch
    from transformers import SiglipConfig, SiglipImageProcessorPil, SiglipModel, SiglipProcessor

    from tests.remap.tiny_models import wordlevel_tokenizer

    if (path / "config.json").is_file():
        return path
    tok = wordlevel_tokenizer(lowercase=False)
    text = dict(vocab_size=len(tok), hidden_size=768, intermediate_size=3072, num_hidden_layers=1,
                num_attention_heads=12, max_position_embeddings=64, pad_token_id=0, eos_token_id=1, bos_token_id=2)
    vision = dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12,
                  num_channels=3, patch_size=16, image_size=224)
    torch.manual_seed(0)
    model = SiglipModel(SiglipConfig(text_config=text, vision_config=vision)).eval()
    proc = SiglipProcessor(image_processor=SiglipImageProcessorPil(size={"height": 224, "width": 224}), tokenizer=tok)
    model.save_pretrained(path)
    proc.save_pretrained(path)
    return path


CHILD = """
import json, sys, time
t0 = time.perf_counter()
sys.path.insert(0, {repo!r})
from ov3d_core.benchmark import Benchmark
from ov3d_core.remap.cache import EmbeddingStore
from ov3d_core.remap.engines import embed
b = Benchmark.from_yaml({config!r})
ds, run = b.dataset({dataset!r}), b.run({run!r}, {dataset!r})
kw = json.loads({kw!r})
t_embed = time.perf_counter()
rep = embed(EmbeddingStore({cache!r}), ds, run, {spec!r}, engine={engine!r}, chunk_size={chunk}, progress=False,
            batch_size={batch}, **kw)
wall = time.perf_counter() - t0
assert rep.complete, [f.message() for f in rep.failures]
rows = [len(rep.embeddings.valid[c * {chunk}:(c + 1) * {chunk}].nonzero()[0]) for c in rep.written]
steady = sum(rows[1:]) / (rep.written_at[-1] - rep.written_at[0]) if len(rows) > 1 else float("nan")
print(json.dumps({{"wall": wall, "crops": int(rep.embeddings.valid.sum()), "shards": len(rep.written),
                  "workers": rep.workers, "steady": steady, "first_shard": t_embed - t0 + rep.written_at[0]}}))
"""


def run_child(engine: str, args, config: Path, spec: str, cache: Path) -> dict:
    kw = {"device": args.device} if engine == "local" else {"workers": args.workers,
                                                             "gpus_per_worker": args.gpus_per_worker}
    code = CHILD.format(repo=str(REPO), config=str(config), dataset=args.dataset, run=args.run, kw=json.dumps(kw),
                        cache=str(cache), spec=spec, engine=engine, chunk=args.chunk_size, batch=args.batch_size)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    if p.returncode != 0:
        raise RuntimeError(f"{engine} run failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def machine() -> str:
    import ray

    from bench_remap import machine as base  # CPU, Python, numpy, torch, GPU

    return f"{base()}, ray {ray.__version__}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=12, help="demo images per dataset")
    ap.add_argument("--dataset", default="demo_outdoor_av")
    ap.add_argument("--run", default="detany_like")
    ap.add_argument("--chunk-size", type=int, default=16)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--workers", type=int, default=None, help="Ray encoder workers (default: the engine's plan)")
    ap.add_argument("--gpus-per-worker", type=float, default=None)
    ap.add_argument("--device", default=None, help="local engine device (default: CUDA when available)")
    ap.add_argument("--work", default=None, help="folder for the demo, the checkpoint and the caches")
    ap.add_argument("--rounds", type=int, default=2, help="rounds of both engines (order alternates)")
    ap.add_argument("--out", default=None, help="append the markdown section to this file")
    args = ap.parse_args(argv)

    from ov3d_core.demo import ensure_demo

    work = Path(args.work or tempfile.mkdtemp(prefix="bench_ray_"))
    demo = ensure_demo(work / "demo", images=args.images, seed=0)
    ckpt = make_base_checkpoint(work / "siglip_base_random")
    spec = f"hf:{ckpt}"
    rows, ratios = [], []
    for r in range(args.rounds):
        order = ("local", "ray") if r % 2 == 0 else ("ray", "local")  # alternate: load drifts on a shared box
        got = {}
        for engine in order:
            load = os.getloadavg()[0]
            cache = work / f"cache_{engine}_{r}_{time.time():.0f}"
            got[engine] = run_child(engine, args, demo / "benchmark.yaml", spec, cache)
            got[engine]["load"] = load
            print(engine, got[engine], flush=True)
        for engine in order:
            g = got[engine]
            who = "local (in-process)" if engine == "local" else "ray (Ray Data, actor pool)"
            rows.append(f"| {r + 1} | {who} | {g['workers'] or '1 process'} | {g['load']:.1f} | {g['wall']:.1f} s | "
                        f"{g['first_shard']:.1f} s | {g['steady']:.2f} |")
        ratios.append((got["ray"]["steady"] / got["local"]["steady"], got["ray"]["wall"] / got["local"]["wall"]))
    crops = got["local"]["crops"]
    cmd = "python bench/bench_ray.py " + " ".join(argv if argv is not None else sys.argv[1:])
    lines = [
        f"### Crop encoding in-process vs Ray (issue 15), {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        "",
        f"`{cmd.strip()}` on {machine()}. Shared machine: each row is a single run; the engines alternate within "
        "each round, and the load average is taken as each run starts. Random-init SigLIP FixRes 224/16 with the "
        f"base image tower, fp32; {crops} pixel crops of `{args.run}` on `{args.dataset}` ({args.images} demo "
        f"images per dataset), shards of {args.chunk_size}, encoder batches of {args.batch_size}; a fresh process "
        "and a cold cache per run.", "",
        "| round | engine | workers | load | end-to-end wall | first shard written after | steady-state crops/s |",
        "|---:|---|---:|---:|---:|---:|---:|", *rows, "",
        "Ray / local per round (steady-state throughput, wall time): "
        + ", ".join(f"{a:.2f}x / {b:.2f}x" for a, b in ratios) + ".", ""]
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "a") as f:
            f.write("\n" + text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
