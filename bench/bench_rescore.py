"""Warm re-score after a label change, for side-by-side runs of two checkouts (run by hand).

``TREE=/path/to/checkout python bench/bench_rescore.py 20000``: the synthetic workload of ``bench/workload.py``
(N images, ~10 GT and ~100 predictions each), its pairs computed once, one first score (kernel loads), then five
re-scores of a label view with 10 % of the labels changed (AP3D table + summary + class-agnostic recall, as
``bench/bench_cold.py --parts geometry``); prints the minimum and every run. ``TREE`` (default: this checkout) is
put first on ``sys.path``, so two trees alternate in one shell loop with the same workload seed.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, os.environ.get("TREE", str(Path(__file__).resolve().parents[1])))

import numpy as np  # noqa: E402

import ov3d_core  # noqa: E402
from bench.bench_eval import rescore  # noqa: E402
from bench.workload import build_workload  # noqa: E402
from ov3d_core.eval.ap import APParams  # noqa: E402
from ov3d_core.eval.labels import gt_codes, label_view_from_names  # noqa: E402
from ov3d_core.eval.pairs import compute_pairs  # noqa: E402


def main(n_images: int) -> None:
    print("tree", Path(ov3d_core.__file__).parent.parent, flush=True)
    w = build_workload(n_images=n_images, seed=0)
    pairs = compute_pairs(w.gt, w.pred)
    params = APParams.omni3d_3d()
    view = label_view_from_names(w.pred.category, w.pred.score, w.vocabulary)
    g = gt_codes(w.gt.category, w.vocabulary)
    rescore(w, pairs, view, params, g)  # first score: kernel loads, the label-independent memos
    rng = np.random.default_rng(1)
    new = view.label.copy()
    flip = rng.random(len(new)) < 0.10
    new[flip] = rng.integers(0, len(w.vocabulary), int(flip.sum()))
    times = []
    for _ in range(5):
        v2 = view.relabel(new)
        t = time.perf_counter()
        rescore(w, pairs, v2, params, g)
        times.append(time.perf_counter() - t)
    print(f"{len(w.pred):,} predictions, {len(pairs):,} pairs: re-score min {min(times):.3f} s "
          f"({', '.join(f'{t:.3f}' for t in times)})")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20000)
