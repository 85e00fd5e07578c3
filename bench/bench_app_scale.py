"""The app on a full-scale benchmark through AppTest (run by hand: ``python bench/bench_app_scale.py``).

A benchmark folder of the cold-path files (``bench/loadfiles.py``: N images, ~10 GT and ~100 predictions per image),
its ``benchmark.yaml`` written by ``ov3d init``, then in one process: the Overview's first run (load, geometry and
scores, with the load and pair caches of ``--cache`` warm or cold), a rerun, the Scene inspector's first visit and
three "Next image" clicks; wall seconds and the process's peak RSS. ``--root`` runs another checkout of the app (a
before/after pair: run this script twice, once per tree, side by side).
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
    args = ap.parse_args(argv)
    src = Path(args.data) / str(args.images)
    folder = args.folder or Path(f"/tmp/ov3d_app_scale_{args.images}")
    folder.mkdir(parents=True, exist_ok=True)
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
    at.switch_page("app_pages/scene.py")
    step("Scene inspector, first visit", at.run)
    for k in range(3):
        step(f"Scene inspector, next image ({k + 1})",
             lambda: next(b for b in at.button if "Next" in str(b.label)).click().run())


if __name__ == "__main__":
    main()
