"""The app on a full-scale benchmark through AppTest (run by hand: ``python bench/bench_app_scale.py``).

A benchmark folder of the cold-path files (``bench/loadfiles.py``: N images, ~10 GT and ~100 predictions per image),
its ``benchmark.yaml`` written by ``ov3d init``, then in one process: the Overview's first run (load, geometry and
scores, with the load and pair caches of ``--cache`` warm or cold), a rerun, the Scene inspector's first visit and
three "Next image" clicks; wall seconds and the process's peak RSS. ``--root`` runs another checkout of the app (a
before/after pair: run this script twice, once per tree, side by side).

``--runs N`` (N > 1) writes a benchmark of N runs instead (hard links of the one prediction file, so every run has
its own path and is hashed on its own) and measures only the Overview: run it twice, and the second process is a new
server that finds the first one's caches (load, pair and score caches) on disk.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--images", type=int, default=20000)
    ap.add_argument("--data", default="/tmp/ov3d_bench_cold", help="where bench_cold.py keeps its files")
    ap.add_argument("--root", type=Path, default=ROOT, help="the checkout whose app.py runs")
    ap.add_argument("--folder", type=Path, default=None, help="benchmark folder (default /tmp/ov3d_app_scale_N)")
    ap.add_argument("--runs", type=int, default=1, help="runs in the benchmark (>1: the Overview only)")
    args = ap.parse_args(argv)
    src = Path(args.data) / str(args.images)
    folder = args.folder or Path(f"/tmp/ov3d_app_scale_{args.images}" + (f"x{args.runs}" if args.runs > 1 else ""))
    folder.mkdir(parents=True, exist_ok=True)
    if args.runs > 1:
        _many_runs(folder, src, args.runs)
    for name in ("gt.json", "preds.json"):
        if not (folder / name).exists():
            (folder / name).symlink_to(src / name)
    if not (folder / "benchmark.yaml").exists():
        subprocess.run([sys.executable, "-m", "ov3d_core", "init", str(folder)], check=True, cwd=args.root)
    os.environ["OV3D_DATA_ROOT"] = os.pathsep.join([str(folder), str(src)])
    os.environ.setdefault("OV3D_APP_CACHE", str(folder / "app_cache"))
    sys.path.insert(0, str(args.root))
    from streamlit.testing.v1 import AppTest

    def peak() -> float:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    def step(name, fn):
        t = time.perf_counter()
        fn()
        errors = [e.value for e in [*at.exception, *at.error]]
        print(f"| {name} | {time.perf_counter() - t:.2f} | {peak():.0f} | {'; '.join(map(str, errors))[:80]} |",
              flush=True)

    import yaml

    dataset = yaml.safe_load((folder / "benchmark.yaml").read_text())["datasets"][0]["name"]
    at = AppTest.from_file(str(args.root / "app.py"), default_timeout=1800)
    at.query_params["src"] = "config"
    at.query_params["cfg"] = str(folder / "benchmark.yaml")
    at.query_params["ds"] = dataset
    print(f"{args.images:,} images, app of {args.root}\n\n| step | wall (s) | peak RSS (MiB) | errors |\n|---|---:|---:|---|")
    step("Overview, first run", at.run)
    step("Overview, rerun", at.run)
    if args.runs > 1:
        board = next((df.value for df in at.dataframe if "AP3D" in getattr(df.value, "columns", [])), None)
        print(f"\nleaderboard rows: {0 if board is None else len(board)}")
        return
    at.switch_page("app_pages/scene.py")
    step("Scene inspector, first visit", at.run)
    for k in range(3):
        step(f"Scene inspector, next image ({k + 1})",
             lambda: next(b for b in at.button if "Next" in str(b.label)).click().run())


def _many_runs(folder: Path, src: Path, n: int) -> None:
    """``gt.json`` (a symlink) and ``preds_1.json`` ... ``preds_<n>.json`` (hard links of one file, on one device),
    with a ``benchmark.yaml`` naming them."""
    if not (folder / "gt.json").exists():
        (folder / "gt.json").symlink_to(src / "gt.json")
    for k in range(1, n + 1):
        if not (folder / f"preds_{k}.json").exists():
            os.link(src / "preds.json", folder / f"preds_{k}.json")
    if not (folder / "benchmark.yaml").exists():
        runs = "".join(f"  - {{name: run{k}, dataset: LoadBench, predictions: preds_{k}.json, format: cubercnn-json}}\n"
                       for k in range(1, n + 1))
        (folder / "benchmark.yaml").write_text(f"name: many_runs\ncache_dir: .ov3d_cache\ndatasets:\n"
                                               f"  - {{name: LoadBench, gt: gt.json}}\nruns:\n{runs}")


if __name__ == "__main__":
    main()
