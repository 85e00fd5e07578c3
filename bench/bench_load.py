"""Cold load of GT + predictions at Omni3D scale: the columnar loaders against the pre-rewrite ones, side by side.

Each measurement is a fresh Python process (imports, numba runtime start and its cached kernels included) that loads
``gt.json`` then ``preds.json`` (~10 GT and ~100 predictions per image, files from ``bench/loadfiles.py``, written
once under ``--data``) and reports wall time, CPU time and peak RSS. The files sit in the OS page cache (they were
just written or read); nothing of the loaders is cached between processes except numba's compiled kernels. The old
loader (``tests/io/legacy``, frozen at the rewrite) is run up to ``--old-max`` images (it needs ~0.55 GiB per 100k
predictions). The kernel's one-time compilation is measured apart, with an empty numba cache.

    python bench/bench_load.py --sizes 1000,5000,20000,40000 --data /tmp/ov3d_loadbench --append
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHILD = r"""
import json, os, sys, time
t0, c0 = time.perf_counter(), time.process_time()
which, gt, preds = sys.argv[1:4]
if which == "old":
    from tests.io.legacy.omni3d import load_omni3d_gt
    from tests.io.legacy.predictions import load_predictions
else:
    from ov3d_core.io import load_omni3d_gt, load_predictions
t1 = time.perf_counter()
ds = load_omni3d_gt(gt)
t2 = time.perf_counter()
kw = {"category_list": json.loads(sys.argv[4])} if len(sys.argv) > 4 else {}
run = load_predictions(preds, ds, **kw)
t3 = time.perf_counter()
# VmHWM: peak RSS of this process image (ru_maxrss would carry the forking parent's over exec)
hwm = next(int(ln.split()[1]) for ln in open("/proc/self/status") if ln.startswith("VmHWM"))
print(json.dumps({"import_s": t1 - t0, "gt_s": t2 - t1, "pred_s": t3 - t2, "total_s": t3 - t0,
                  "cpu_s": time.process_time() - c0, "rss_mib": hwm / 1024,
                  "n_gt": len(ds.gt), "n_pred": len(run.pred)}))
"""

COMPILE = r"""
import time
t0, c0 = time.perf_counter(), time.process_time()
from ov3d_core.io.columnar import warm
warm()
print(time.perf_counter() - t0, time.process_time() - c0)
"""


def ensure_files(data: Path, n: int, pth: bool) -> dict:
    from bench.loadfiles import write_files

    folder = data / str(n)
    meta = folder / "sizes.json"
    if meta.is_file() and (not pth or (folder / "preds.pth").is_file()):
        return json.loads(meta.read_text())
    info = write_files(n, folder, seed=0, pth=pth)
    meta.write_text(json.dumps(info))
    return info


def child(which: str, gt: Path, preds: Path, env: dict | None = None, extra: list[str] | None = None) -> dict:
    load0 = os.getloadavg()[0]
    out = subprocess.run([sys.executable, "-c", CHILD, which, str(gt), str(preds), *(extra or [])],
                         capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit {out.returncode}"}
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["load_avg"] = (load0 + os.getloadavg()[0]) / 2
    return res


def compile_cost() -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as cache:
        out = subprocess.run([sys.executable, "-c", COMPILE], capture_output=True, text=True, cwd=ROOT,
                             env={**os.environ, "PYTHONPATH": str(ROOT), "NUMBA_CACHE_DIR": cache}, check=True)
    wall, cpu = map(float, out.stdout.split())
    return wall, cpu


def machine() -> str:
    cpu = "?"
    try:
        cpu = next(ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30
    return f"{os.cpu_count()} cores ({cpu}), {mem:.0f} GiB, Python {platform.python_version()}"


def fmt(r: dict | None, key: str, spec: str) -> str:
    if not r or key not in r:
        return "—" if not r else r.get("error", "—")[:40]
    return format(r[key], spec)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,5000,20000,40000", help="images per set (comma-separated)")
    ap.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "ov3d_loadbench")
    ap.add_argument("--old-max", type=int, default=5000, help="largest set the old loader is run on")
    ap.add_argument("--pth-max", type=int, default=0, help="also load preds.pth up to this many images")
    ap.add_argument("--single-thread", action="store_true", help="also run the new loader with one scan thread")
    ap.add_argument("--append", action="store_true", help="append the table to bench/RESULTS.md")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    started = dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    files = {n: ensure_files(args.data, n, pth=n <= args.pth_max) for n in sizes}
    # warm numba's cache once (its compile is measured apart below)
    child("new", args.data / str(sizes[0]) / "gt.json", args.data / str(sizes[0]) / "preds.json",
          env={"OV3D_JSON_READER": "scan"})
    comp_wall, comp_cpu = compile_cost()
    rows = []
    for n in sizes:
        d = args.data / str(n)
        new = child("new", d / "gt.json", d / "preds.json")
        one = child("new", d / "gt.json", d / "preds.json", env={"OV3D_JSON_THREADS": "1"}) \
            if args.single_thread else None
        old = child("old", d / "gt.json", d / "preds.json") if n <= args.old_max else None
        rows.append((n, "json", new, one, old))
        if n <= args.pth_max:
            cl = [json.dumps(_pth_list())]
            rows.append((n, "pth", child("new", d / "gt.json", d / "preds.pth", extra=cl), None,
                         child("old", d / "gt.json", d / "preds.pth", extra=cl) if n <= args.old_max else None))
        print(n, "done", file=sys.stderr)
    lines = [f"### Cold load, GT + predictions (`bench/bench_load.py`, {started})", "",
             f"Command: `python bench/bench_load.py --sizes {args.sizes} --old-max {args.old_max}"
             + (f" --pth-max {args.pth_max}" if args.pth_max else "")
             + (" --single-thread" if args.single_thread else "") + "`. Machine: " + machine()
             + ", shared with other sessions (load average during each run in the last column). One run each, "
               "old and new side by side, fresh process each; files in the page cache; numba kernels cached.", "",
             "| images | file | GT / predictions | preds MB | new: GT + preds s (CPU s) | new peak RSS"
             + (" | new, 1 thread s" if args.single_thread else "") + " | old: s (CPU s) | old peak RSS | old/new | load |",
             "|---:|---|---:|---:|---:|---:|" + ("---:|" if args.single_thread else "") + "---:|---:|---:|---:|"]
    for n, kind, new, one, old in rows:
        f = files[n]
        ratio = f"{old['total_s'] / new['total_s']:.1f}x" if old and new and "total_s" in old and "total_s" in new \
            else "—"
        size_mb = f["pred_bytes"] / 1e6 if kind == "json" else (args.data / str(n) / "preds.pth").stat().st_size / 1e6
        cells = [f"{n:,}", kind, f"{f['gt']:,} / {f['predictions']:,}", f"{size_mb:,.0f}",
                 f"{fmt(new, 'gt_s', '.1f')} + {fmt(new, 'pred_s', '.1f')} = **{fmt(new, 'total_s', '.1f')}** "
                 f"({fmt(new, 'cpu_s', '.1f')})", f"{fmt(new, 'rss_mib', ',.0f')} MiB"]
        if args.single_thread:
            cells.append(fmt(one, "total_s", ".1f"))
        cells += [f"{fmt(old, 'total_s', '.1f')} ({fmt(old, 'cpu_s', '.1f')})" if old else "not run",
                  f"{fmt(old, 'rss_mib', ',.0f')} MiB" if old else "—", ratio,
                  f"{new.get('load_avg', 0):.1f}" + (f" / {old.get('load_avg', 0):.1f}" if old else "")]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"First use on a fresh install compiles the JSON kernel once: {comp_wall:.1f} s wall, "
              f"{comp_cpu:.1f} s CPU (empty numba cache, same machine); later processes load it from the cache.", ""]
    text = "\n".join(lines)
    print(text)
    if args.append:
        with open(ROOT / "bench" / "RESULTS.md", "a") as fh:
            fh.write("\n" + text)


def _pth_list() -> list[str]:
    """The .pth of ``bench/loadfiles.py`` keeps Omni3D global ids: its "category list" is the Omni3D table."""
    from ov3d_core.taxonomy import OMNI3D_CATEGORIES

    return [OMNI3D_CATEGORIES[i] for i in range(max(OMNI3D_CATEGORIES) + 1)]


if __name__ == "__main__":
    main()
