"""Benchmark of the centre-distance modes on the Omni3D-scale workload (run by hand: ``python bench/bench_distance.py``).

Times, in one fresh process, ``evaluate_distance_view`` in each of ``DISTANCE_MODES`` (and "3dmood" with proximity):
the first call (numba kernels loaded from their on-disk cache or compiled) and the best of ``--repeat`` warm calls,
with the peak traced numpy memory of one call. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.workload import build_workload  # noqa: E402
from ov3d_core.diagnostics.distance import DISTANCE_MODES, evaluate_distance_view  # noqa: E402
from ov3d_core.eval.labels import label_view_from_names  # noqa: E402


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    w = build_workload(n_images=args.images, seed=0)
    view = label_view_from_names(w.pred.category, w.pred.score, w.vocabulary)
    print(f"workload: {w.describe()}\n")
    print(f"| mode | first call (s) | warm, best of {args.repeat} (s) | traced peak (MiB) | headline |")
    print("|---|---:|---:|---:|---|")
    cases = [(m, None) for m in DISTANCE_MODES] + [("3dmood", True)]
    for mode, prox in cases:
        def call(mode=mode, prox=prox):
            return evaluate_distance_view(w.gt, w.pred, view, mode=mode, proximity=prox)

        t = time.perf_counter()
        res = call()
        first = time.perf_counter() - t
        best = float("inf")
        for _ in range(args.repeat):
            t = time.perf_counter()
            call()
            best = min(best, time.perf_counter() - t)
        tracemalloc.start()
        call()
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        s = res.summary()
        head = f"ODS {s['ODS']:.2f}, AP {s['AP']:.2f}" if "ODS" in s else f"mAP {s['mAP']:.2f}, NDS {s['NDS']:.2f}"
        name = mode + (" + proximity" if prox else "")
        print(f"| {name} | {first:.2f} | {best:.2f} | {peak / 2 ** 20:.0f} | {head} |")


if __name__ == "__main__":
    main()
