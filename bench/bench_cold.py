"""The cold path a user meets, each measurement in a fresh process (run by hand: ``python bench/bench_cold.py``).

Parts (``--parts``, comma-separated):

- ``cli``: ``python -m ov3d_core evaluate --gt ... --pred ...`` on files written from ``bench/workload.py`` (~10 GT and
  ~100 predictions per image), wall time and peak RSS from ``/usr/bin/time -v``: cold (empty cache folder), then warm
  (load and pair caches filled). ``--jit-cold`` adds a first run with an empty ``NUMBA_CACHE_DIR`` (a fresh install).
- ``standin``: the stand-in for the official Omni3D evaluator (not installable here): stdlib ``json.load`` of both
  files, dense 3D IoU per (image, category) with our kernel (already compiled: a lower bound of pytorch3d's cost)
  and the literal COCO-style loops of ``tests/eval/reference_omni3d.py``.
- ``geometry``: in a fresh process on in-memory BoxSets (no JSON; the loaders are measured apart): geometry key,
  pair computation, pair cache write and read (uncompressed + memory-mapped vs compressed), warm re-score after a label
  change, and the RSS each step adds.
- ``loadcache``: encode + write and read + decode of the Dataset and Run of that size (fresh process each), and the
  content hash of the prediction file.
- ``stages``: a cold ``evaluate``'s steps in one fresh process (imports, GT, predictions, geometry, scoring): wall,
  CPU and RSS of each.
- ``dense``: one image with G GT x P predictions piled on each other (``--dense 3000x3000``): time, peak RSS, number
  of progress updates.

Prints markdown tables; append them to bench/RESULTS.md with the command and the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def rss_mib() -> float:
    """Current resident set size (Linux ``/proc/self/statm``)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


def max_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class PeakRSS:
    """Highest RSS (MiB) while the block runs, sampled every 5 ms by a thread (the process high-water mark would
    include what came before the block)."""

    def __enter__(self):
        import threading

        self.peak, self._stop = rss_mib(), False

        def sample():
            while not self._stop:
                self.peak = max(self.peak, rss_mib())
                time.sleep(0.005)

        self._t = threading.Thread(target=sample, daemon=True)
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop = True
        self._t.join()
        self.peak = max(self.peak, rss_mib())


def timed(fn):
    """``(wall s, CPU s of this process, result)``: on a shared machine the CPU time is the steadier number."""
    t, c = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - t, time.process_time() - c, out


# ---------------------------------------------------------------------------------------------------- files
def write_files(n_images: int, folder: Path, seed: int = 0) -> tuple[Path, Path]:
    """Omni3D GT JSON and Cube R-CNN prediction JSON of ``n_images`` images, written by ``bench/loadfiles.py``
    (float32 values as Cube R-CNN prints them, ~0.95 KB per prediction, as in real files; written once, then
    reused)."""
    from bench.loadfiles import write_files as write_load_files

    gt_path, pred_path = folder / "gt.json", folder / "preds.json"
    if not (gt_path.exists() and pred_path.exists()):
        write_load_files(n_images, folder, seed)
    return gt_path, pred_path


# ---------------------------------------------------------------------------------------------------- cli
def timed_command(cmd: list[str], env: dict | None = None) -> dict:
    """Wall seconds and peak RSS (MiB) of a command in a fresh process (``/usr/bin/time -v``)."""
    t = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True, env=env, cwd=ROOT)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr).group(1)) / 1024
    cpu = sum(float(re.search(rf"{k} time \(seconds\): ([\d.]+)", proc.stderr).group(1)) for k in ("User", "System"))
    return {"wall": wall, "rss": rss, "cpu": cpu, "stdout": proc.stdout}


def part_cli(n: int, gt: Path, pred: Path, jit_cold: bool) -> list[tuple]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        base = [sys.executable, "-m", "ov3d_core", "evaluate", "--gt", str(gt), "--pred", str(pred),
                "--cache-dir", f"{tmp}/cache", "--json", f"{tmp}/out.json"]
        env = dict(os.environ)
        if jit_cold:
            env["NUMBA_CACHE_DIR"] = f"{tmp}/numba"
            r = timed_command(base, env)
            rows.append((n, "evaluate, first run on a fresh install (no JIT cache, no caches)", r))
            subprocess.run(["rm", "-rf", f"{tmp}/cache"], check=True)
        r = timed_command(base, env)
        ap = json.loads(Path(f"{tmp}/out.json").read_text())["datasets"]
        ap = next(iter(ap.values()))["AP3D"]
        rows.append((n, f"evaluate cold (JIT cached, empty cache folder); AP3D {ap:.4f}", r))
        r = timed_command(base, env)
        rows.append((n, "evaluate warm (load + pair caches hit)", r))
    return rows


# ---------------------------------------------------------------------------------------------------- stand-in
def standin(gt_path: Path, pred_path: Path) -> dict:
    """The official evaluator's work, as literally as we can run it here (see the module docstring)."""
    from ov3d_core.eval.ap import APParams
    from ov3d_core.geometry.iou3d import box_iou_3d
    from tests.eval.reference_omni3d import accumulate, ReferenceOmni3DEval

    box_iou_3d(np.zeros((1, 8, 3)), np.zeros((1, 8, 3)))  # JIT load/compile, not measured
    t = time.perf_counter()
    gt_doc = json.loads(gt_path.read_text())
    dets = json.loads(pred_path.read_text())
    t_load = time.perf_counter() - t
    cats = sorted({c["id"] for c in gt_doc["categories"]})
    cidx = {c: i for i, c in enumerate(cats)}
    gts = [{"row": k, "image_id": a["image_id"], "category_id": cidx[a["category_id"]],
            "ignore": a["visibility"] <= 0.33, "range_value": a["center_cam"][2], "corners": a["bbox3D_cam"]}
           for k, a in enumerate(gt_doc["annotations"])]
    dts = [{"row": k, "image_id": d["image_id"], "category_id": cidx[d["category_id"]], "score": d["score"],
            "range_value": d["depth"], "corners": d["bbox3D"]} for k, d in enumerate(dets)]
    by = {}
    for g in gts:
        by.setdefault((g["image_id"], g["category_id"]), ([], []))[0].append(g)
    for d in dts:
        by.setdefault((d["image_id"], d["category_id"]), ([], []))[1].append(d)
    table = {}
    t = time.perf_counter()
    for gl, dl in by.values():  # computeIoU: one dense IoU per (image, category), as Omni3D's evaluator
        if gl and dl:
            iou = box_iou_3d(np.array([g["corners"] for g in gl]), np.array([d["corners"] for d in dl]))
            for i, g in enumerate(gl):
                for j, d in enumerate(dl):
                    table[g["row"], d["row"]] = iou[i, j]
    t_iou = time.perf_counter() - t
    params = APParams.omni3d_3d()
    t = time.perf_counter()
    ev = ReferenceOmni3DEval(gts, dts, table, {}, n_categories=len(cats), iou_thresholds=params.iou_thresholds,
                             recall_thresholds=params.recall_thresholds, ranges=list(params.ranges.values()),
                             max_det=params.max_dets)
    p, _ = accumulate([ev.evaluate()], n_categories=len(cats), n_ranges=len(params.ranges),
                      iou_thresholds=params.iou_thresholds, recall_thresholds=params.recall_thresholds,
                      max_det=params.max_dets)
    t_eval = time.perf_counter() - t
    return {"load": t_load, "iou": t_iou, "eval": t_eval, "n_cells": int((p > -1).sum())}


# ---------------------------------------------------------------------------------------------------- geometry
def child_geometry(n: int) -> dict:
    from bench.bench_eval import rescore
    from bench.workload import build_workload
    from ov3d_core.eval.ap import APParams
    from ov3d_core.eval.labels import gt_codes, label_view_from_names
    from ov3d_core.eval.pairs import PairCache, compute_pairs, geometry_key
    from ov3d_core.io import npzstore

    out = {}
    w = build_workload(n_images=n, seed=0)
    out["workload"] = w.describe()
    compute_pairs(w.gt[:50], w.pred[:500])  # JIT load, not measured
    base = rss_mib()
    out["key"], out["key_cpu"], key = timed(lambda: geometry_key(w.gt, w.pred))
    calls = []
    with PeakRSS() as peak:
        out["pairs"], out["pairs_cpu"], pairs = timed(lambda: compute_pairs(w.gt, w.pred,
                                                                            progress=lambda d, t: calls.append(d)))
    out["n_pairs"] = len(pairs)
    out["progress_updates"] = len(calls)
    out["peak_over_base"] = peak.peak - base
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{key}.npz"
        out["write"], out["write_cpu"], _ = timed(lambda: PairCache(tmp)._store(path, pairs, ("bench", "run"), key))
        out["size"] = path.stat().st_size / 2 ** 20
        for mmap in (True, False):
            wall, cpu, got = timed(lambda: PairCache(tmp, mmap=mmap).get_or_compute(w.gt, w.pred))
            out[f"read_mmap{int(mmap)}"], out[f"read_mmap{int(mmap)}_cpu"] = wall, cpu
            assert len(got) == len(pairs)
        out["verify"], out["verify_cpu"], _ = timed(lambda: npzstore.read(path, mmap=True))
        cpath = Path(tmp) / "compressed.npz"
        cols = {f: getattr(pairs, f) for f in ("gt", "pred", "iou3d", "iou2d", "dist")}
        out["write_z"], out["write_z_cpu"], _ = timed(lambda: np.savez_compressed(cpath, **cols))
        out["size_z"] = cpath.stat().st_size / 2 ** 20

        def read_z():
            with np.load(cpath) as z:
                return [z[f] for f in z.files]

        out["read_z"], out["read_z_cpu"], _ = timed(read_z)
    params = APParams.omni3d_3d()
    view = label_view_from_names(w.pred.category, w.pred.score, w.vocabulary)
    g_codes = gt_codes(w.gt.category, w.vocabulary)
    rescore(w, pairs, view, params, g_codes)  # first score (JIT load of the matching kernels)
    rng = np.random.default_rng(1)
    new_label = view.label.copy()
    flip = rng.random(len(new_label)) < 0.10
    new_label[flip] = rng.integers(0, len(w.vocabulary), int(flip.sum()))
    runs = [timed(lambda: rescore(w, pairs, view.relabel(new_label), params, g_codes)) for _ in range(5)]
    out["rescore"] = min(r[0] for r in runs)
    out["rescore_cpu"] = min(r[1] for r in runs)
    return out


def child_stages(gt: str, pred: str, cache: str) -> dict:
    """What ``evaluate`` does on a cold run, step by step in one fresh process (wall / CPU s, RSS after each step):
    imports, GT load (parse + filter + load-cache write), predictions load, geometry, scoring and the summary."""
    out: dict = {}
    t0, c0 = time.perf_counter(), time.process_time()

    def step(name, fn):
        w, c, res = timed(fn)
        out[name] = (w, c, rss_mib())
        return res

    def imports():
        from ov3d_core.analysis import Analysis, View  # noqa: F401  (what the CLI imports before reading)
        from ov3d_core.commands import evaluate  # noqa: F401

    step("imports", imports)
    from ov3d_core.analysis import Analysis, View

    a = Analysis.from_files([gt], [pred], cache_dir=cache)
    b = a.benchmark
    spec = next(iter(b.config.runs.values()))
    step("gt", lambda: b.dataset(spec.dataset))
    step("pred", lambda: b.run(spec.name, spec.dataset))
    step("pairs", lambda: b.pairs(spec.name, spec.dataset))
    v = View(dataset=spec.dataset, run=spec.name)
    step("score", lambda: (a.score(v), a.summary(v), a.out_of_vocabulary(v)))
    out["total"] = (time.perf_counter() - t0, time.process_time() - c0, max_rss_mib())
    out["n_pred"] = len(b.run(spec.name, spec.dataset).pred)
    return out


def child_loadcache(n: int, phase: str, folder: str) -> dict:
    import pandas as pd

    from bench.workload import K, build_workload
    from ov3d_core.io.loadcache import cached_load, file_digest
    from ov3d_core.model import Dataset, Run

    out = {}
    src = Path(folder) / "input.bin"  # the cache key needs an input file; its content is irrelevant here
    if not src.exists():
        src.write_bytes(b"x")

    def build():
        w = build_workload(n_images=n, seed=0)
        ids = np.unique(w.gt.image_id)
        images = pd.DataFrame({"image_id": ids, "width": 640, "height": 480,
                               "file_path": [f"images/{i}.jpg" for i in ids], "dataset_id": 0})
        ds = Dataset(name="bench", images=images, K=np.repeat(K[None], len(ids), 0), vocabulary=w.vocabulary,
                     gt=w.gt, sources=(str(src),))
        return ds, Run(name="r", dataset="bench", pred=w.pred.with_(data={"in_vocab": np.ones(len(w.pred), bool)}))

    if phase == "write":
        ds, run = build()
        base = rss_mib()
        for kind, obj in (("dataset", ds), ("run", run)):
            t = time.perf_counter()
            cached_load(folder, kind, [src], {}, lambda: obj)
            out[f"write_{kind}"] = time.perf_counter() - t
        out["size"] = sum(p.stat().st_size for p in (Path(folder) / "loads").glob("*.npz")) / 2 ** 20
        out["rss_over_objects"] = max_rss_mib() - base
    else:
        base = rss_mib()
        for kind in ("dataset", "run"):
            t = time.perf_counter()
            obj = cached_load(folder, kind, [src], {}, lambda: (_ for _ in ()).throw(RuntimeError("cache missed")))
            out[f"read_{kind}"] = time.perf_counter() - t
        out["rss_read"] = rss_mib() - base
        out["n_pred"] = len(obj.pred)
        pred_file = Path(folder).parent / "pred.json"
        if pred_file.exists():
            file_digest(pred_file)  # page cache warm
            t = time.perf_counter()
            file_digest(pred_file, recheck=True)
            out["hash"] = time.perf_counter() - t
            out["hash_mb"] = pred_file.stat().st_size / 2 ** 20
    return out


def child_dense(g: int, p: int) -> dict:
    from ov3d_core.eval.pairs import compute_pairs
    from ov3d_core.geometry.boxes import corners_from_pose, rotation_y
    from ov3d_core.model import BoxSet

    def pile(n, seed):
        rng = np.random.default_rng(seed)
        c = rng.uniform(-0.3, 0.3, (n, 3)) + [0, 0, 8]
        d = np.exp(rng.normal(0, 0.1, (n, 3)))
        R = rotation_y(rng.uniform(-np.pi, np.pi, n))
        corners = corners_from_pose(c, d, R)
        return BoxSet(image_id=np.full(n, 7, np.int64), category=np.full(n, "car", object), center=c, dims=d, R=R,
                      corners=corners, box2d=np.tile([100.0, 100, 200, 200], (n, 1)), depth=c[:, 2].copy(),
                      score=rng.random(n), ignore=np.zeros(n, bool), record=np.arange(n, dtype=np.int64))

    gt, pred = pile(g, 1), pile(p, 2)
    compute_pairs(gt[:5], pred[:5])
    base = rss_mib()
    calls = []
    t = time.perf_counter()
    pairs = compute_pairs(gt, pred, progress=lambda d, tot: calls.append((time.perf_counter() - t, d)))
    wall = time.perf_counter() - t
    return {"wall": wall, "n_pairs": len(pairs), "table_mib": pairs.nbytes / 2 ** 20,
            "peak_over_base": max_rss_mib() - base, "updates": len(calls),
            "first_update": calls[0][0] if calls else None, "max_gap": float(np.max(np.diff([0] + [c[0] for c in calls])))}


def in_child(args: list[str]) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--child", json.dumps(args)], capture_output=True, text=True,
                          cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-3000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------------------- main
def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="150,1000,5000,20000,40000", help="images per set")
    ap.add_argument("--parts", default="cli,standin,geometry,loadcache,dense")
    ap.add_argument("--cli-max", type=int, default=5000, help="largest set run end to end through the CLI")
    ap.add_argument("--standin-max", type=int, default=1000, help="largest set run through the stand-in")
    ap.add_argument("--jit-cold", action="store_true", help="also a first run with an empty NUMBA_CACHE_DIR")
    ap.add_argument("--dense", default="3000x3000", help="GxP of the dense image")
    ap.add_argument("--data", default="/tmp/ov3d_bench_cold", help="where the generated files are kept")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        what = json.loads(args.child)
        fn = {"geometry": child_geometry, "stages": child_stages, "loadcache": child_loadcache, "dense": child_dense,
              "standin": lambda g, p: standin(Path(g), Path(p))}[what[0]]
        res = fn(*what[1:])
        res["_cpu"] = time.process_time()
        print(json.dumps(res))
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    parts = set(args.parts.split(","))
    print(f"Machine: {platform.platform()}, {os.cpu_count()} CPUs visible, Python {platform.python_version()}; "
          f"{time.strftime('%Y-%m-%d')}\n")
    if "cli" in parts or "standin" in parts:
        print("| images | run | wall (s) | CPU (s) | peak RSS (MiB) |\n|---:|---|---:|---:|---:|")
        for n in sizes:
            if n > max(args.cli_max, args.standin_max):
                continue
            gt, pred = write_files(n, Path(args.data) / str(n))
            if "cli" in parts and n <= args.cli_max:
                for n_, what, r in part_cli(n, gt, pred, args.jit_cold and n == min(sizes)):
                    print(f"| {n_:,} | {what} | {r['wall']:.2f} | {r['cpu']:.2f} | {r['rss']:.0f} |", flush=True)
            if "standin" in parts and n <= args.standin_max:
                t = time.perf_counter()
                s = in_child(["standin", str(gt), str(pred)])
                print(f"| {n:,} | stand-in official evaluator (json.load {s['load']:.2f} s + per-(image, category) "
                      f"IoU {s['iou']:.2f} s + COCO-style loops {s['eval']:.2f} s; timing only: simplified GT filter) | "
                      f"{time.perf_counter() - t:.2f} | {s['_cpu']:.2f} | |", flush=True)
    if "stages" in parts:
        names = ("imports", "gt", "pred", "pairs", "score", "total")
        print("\nA cold evaluate step by step (fresh process, empty cache folder; wall / CPU s, RSS MiB after the "
              "step; total RSS is the peak):\n")
        print("| images (predictions) | " + " | ".join(names) + " |\n|---:|" + "---:|" * len(names))
        for n in sizes:
            gt, pred = write_files(n, Path(args.data) / str(n))
            with tempfile.TemporaryDirectory() as tmp:
                r = in_child(["stages", str(gt), str(pred), tmp])
            print(f"| {n:,} ({r['n_pred']:,}) | " + " | ".join(f"{r[k][0]:.2f} / {r[k][1]:.2f} ({r[k][2]:.0f})"
                                                           for k in names) + " |", flush=True)
    if "geometry" in parts:
        print("\nSeconds as wall / CPU of the process (numba runs on one core; the machine is shared).\n")
        print("| images | pairs | geometry key (s) | compute pairs (s) | peak RSS added (MiB) | progress updates "
              "| cache write (s) / MiB | read + verify, mmap / copy (s) | compressed npz write / read (s) / MiB "
              "| warm re-score after a label change (s) |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for n in sizes:
            r = in_child(["geometry", n])

            def wc(k):
                return f"{r[k]:.2f} / {r[k + '_cpu']:.2f}"

            print(f"| {n:,} | {r['n_pairs']:,} | {wc('key')} | {wc('pairs')} | {r['peak_over_base']:.0f} | "
                  f"{r['progress_updates']} | {wc('write')} / {r['size']:.0f} | {wc('read_mmap1')} ; "
                  f"{wc('read_mmap0')} | {wc('write_z')} ; {wc('read_z')} / {r['size_z']:.0f} | {wc('rescore')} |",
                  flush=True)
    if "loadcache" in parts:
        print("\n| images | entry write dataset / run (s) | size (MiB) | read dataset / run, new process (s) | "
              "RSS of the read (MiB) | content hash of pred.json |")
        print("|---:|---:|---:|---:|---:|---:|")
        for n in sizes:
            folder = Path(args.data) / str(n) / "loadcache"
            subprocess.run(["rm", "-rf", str(folder)], check=True)
            folder.mkdir(parents=True)
            w = in_child(["loadcache", n, "write", str(folder)])
            r = in_child(["loadcache", n, "read", str(folder)])
            hashed = (f"{r['hash']:.2f} s for {r['hash_mb']:.0f} MB" if "hash" in r else "")
            print(f"| {n:,} | {w['write_dataset']:.2f} / {w['write_run']:.2f} | {w['size']:.0f} | "
                  f"{r['read_dataset']:.2f} / {r['read_run']:.2f} | {r['rss_read']:.0f} | {hashed} |", flush=True)
            subprocess.run(["rm", "-rf", str(folder)], check=True)
    if "dense" in parts:
        g, p = (int(x) for x in args.dense.split("x"))
        r = in_child(["dense", g, p])
        print(f"\nDense image {g:,} GT x {p:,} predictions piled on each other: {r['n_pairs']:,} pairs in "
              f"{r['wall']:.1f} s; pair table {r['table_mib']:.0f} MiB, peak RSS above the boxes "
              f"{r['peak_over_base']:.0f} MiB; {r['updates']} progress updates (first after {r['first_update']:.1f} s, "
              f"longest gap {r['max_gap']:.1f} s)")


if __name__ == "__main__":
    main()
