"""Benchmark of the evaluator on an Omni3D-scale workload (run by hand: ``python bench/bench_eval.py``).

Reports, as a markdown table:
- pair computation (broad phase + exact 3D IoU + 2D IoU + centre distance over all candidate pairs);
- pair cache write (compressed npz) and read;
- cold evaluation: pairs + AP3D (all thresholds and ranges) + class-agnostic recall;
- warm re-score after a label change (a new LabelView with 10 % of labels changed): AP3D table + summary + recall,
  the path every protocol / remap / subset toggle takes (target < 0.3 s);
- warm AP only, Hungarian recall, proximity AP and a pooled 2-dataset AP for reference;
- peak memory (process max RSS, and tracemalloc peak of the warm re-score).
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import tempfile
import time
import tracemalloc

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.workload import build_workload  # noqa: E402
from ov3d_core.eval.ap import APInputs, APParams, evaluate_ap_pooled, evaluate_view  # noqa: E402
from ov3d_core.eval.labels import gt_codes, label_view_from_names  # noqa: E402
from ov3d_core.eval.pairs import PairCache, compute_pairs  # noqa: E402
from ov3d_core.eval.recall import recall_for_view  # noqa: E402


def timed(fn, repeat: int = 1):
    """(best seconds, last result) over ``repeat`` runs."""
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def max_rss_mib() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r / 1024.0 if sys.platform != "darwin" else r / 2 ** 20


def print_report(rows, extra: str = "") -> None:
    """The machine line (with ``extra``) and the rows ``(step, seconds or None, notes)`` as a markdown table."""
    print(f"Machine: {platform.platform()}, {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs visible, Python {platform.python_version()}, numpy {np.__version__}{extra}\n")
    print("| step | time (s) | notes |")
    print("|---|---:|---|")
    for name, t, note in rows:
        print(f"| {name} | {'' if t is None else f'{t:.3f}'} | {note} |")


def rescore(w, pairs, view, params, g_codes):
    res = evaluate_view(w.gt, w.pred, pairs, view, params, gt_label=g_codes)
    table = res.to_frame()
    summary = res.summary()
    rec = recall_for_view(w.gt, pairs, view, gt_mask=g_codes >= 0)
    return res, table, summary, rec


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=5000)
    ap.add_argument("--preds", type=int, default=100, help="predictions per image")
    ap.add_argument("--gts", type=float, default=10.0, help="GT per image (mean)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rows = []

    # JIT: load / compile the numba kernels on a tiny workload so the timings below are steady-state
    t, tiny = timed(lambda: build_workload(n_images=5, seed=1))
    t_jit, _ = timed(lambda: rescore(tiny, compute_pairs(tiny.gt, tiny.pred),
                                     label_view_from_names(tiny.pred.category, tiny.pred.score, tiny.vocabulary),
                                     APParams(), gt_codes(tiny.gt.category, tiny.vocabulary)))
    rows.append(("numba kernels load/compile (first call, tiny input)", t_jit, ""))

    t, w = timed(lambda: build_workload(n_images=args.images, gt_per_image=args.gts, pred_per_image=args.preds,
                                        seed=args.seed))
    rows.append(("build workload (not part of evaluation)", t, w.describe()))
    params = APParams.omni3d_3d()

    t_pairs, pairs = timed(lambda: compute_pairs(w.gt, w.pred))
    rows.append(("pair computation (broad phase + 3D/2D IoU + distance)", t_pairs,
                 f"{len(pairs):,} pairs, {pairs.nbytes / 2 ** 20:.0f} MiB, "
                 f"{int((pairs.iou3d > 0).sum()):,} with IoU3D > 0"))

    with tempfile.TemporaryDirectory() as tmp:
        cache = PairCache(tmp)
        path = cache.path_for(w.gt, w.pred)
        t_key, _ = timed(lambda: cache.path_for(w.gt, w.pred))
        rows.append(("geometry hash (cache key)", t_key, "sha1 of ids, corners, 2D boxes, centres"))
        t_w, _ = timed(lambda: cache._store(path, pairs, ("bench", "run")))
        rows.append(("pair cache write (compressed npz)", t_w, f"{os.path.getsize(path) / 2 ** 20:.0f} MiB on disk"))
        t_r, _ = timed(lambda: PairCache(tmp).get_or_compute(w.gt, w.pred))
        rows.append(("pair cache read (new process: hash + load + checks)", t_r, ""))

    view = label_view_from_names(w.pred.category, w.pred.score, w.vocabulary)
    g_codes = gt_codes(w.gt.category, w.vocabulary)
    t_ap, res = timed(lambda: evaluate_view(w.gt, w.pred, pairs, view, params, gt_label=g_codes))
    t_rec, rec = timed(lambda: recall_for_view(w.gt, pairs, view, gt_mask=g_codes >= 0))
    rows.append(("cold evaluation: pairs + AP3D + recall", t_pairs + t_ap + t_rec,
                 f"AP3D {res.summary()['AP3D']:.2f}, recall@0.15 {rec.recall:.3f}"))

    # a label change: 10 % of the predictions get another label (a remap / template toggle)
    rng = np.random.default_rng(1)
    new_label = view.label.copy()
    flip = rng.random(len(new_label)) < 0.10
    new_label[flip] = rng.integers(0, len(w.vocabulary), int(flip.sum()))

    def warm():
        v2 = view.relabel(new_label)
        return rescore(w, pairs, v2, params, g_codes)

    t_warm, (res2, table, summary, rec2) = timed(warm, args.repeat)
    rows.append(("**warm re-score after a label change (AP3D table + summary + recall)**", t_warm,
                 f"best of {args.repeat}; AP3D {summary['AP3D']:.2f}; target < 0.3 s"))
    t, _ = timed(lambda: evaluate_view(w.gt, w.pred, pairs, view.relabel(new_label), params, gt_label=g_codes),
                 args.repeat)
    rows.append(("  of which AP3D (10 thresholds x 4 depth ranges)", t, ""))
    t, _ = timed(lambda: recall_for_view(w.gt, pairs, view, gt_mask=g_codes >= 0), args.repeat)
    rows.append(("  of which class-agnostic recall (greedy)", t, ""))
    t, _ = timed(lambda: evaluate_view(w.gt, w.pred, pairs, view, params, gt_label=g_codes, return_matches=True),
                 args.repeat)
    rows.append(("AP3D with per-detection match records", t, ""))
    t, hr = timed(lambda: recall_for_view(w.gt, pairs, view, gt_mask=g_codes >= 0, method="hungarian"))
    rows.append(("class-agnostic recall (Hungarian)", t, f"recall {hr.recall:.3f} vs greedy {rec.recall:.3f}"))
    t, _ = timed(lambda: evaluate_view(w.gt, w.pred, pairs, view, params.with_(proximity=True), gt_label=g_codes),
                 args.repeat)
    rows.append(("AP3D with proximity evaluation", t, ""))
    t, _ = timed(lambda: evaluate_view(w.gt, w.pred, pairs, view, APParams.omni3d_2d(), gt_label=g_codes),
                 args.repeat)
    rows.append(("AP2D (COCO thresholds, area ranges)", t, ""))
    part = APInputs.from_view(w.gt, w.pred, pairs, view, params, gt_label=g_codes)
    t, _ = timed(lambda: evaluate_ap_pooled([part, part], n_categories=len(w.vocabulary), params=params),
                 args.repeat)
    rows.append(("pooled AP3D of 2 datasets (2 x this workload)", t, ""))

    tracemalloc.start()
    warm()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rows.append(("peak traced memory of one warm re-score", None, f"{peak / 2 ** 20:.0f} MiB (numpy allocations)"))
    rows.append(("peak process memory (max RSS, whole benchmark)", None, f"{max_rss_mib():.0f} MiB"))

    print_report(rows)


if __name__ == "__main__":
    main()
