"""Benchmark of the image bootstrap (run by hand: ``python bench/bench_bootstrap.py``).

On the 5,000-image workload of ``bench/workload.py`` (about 500k predictions), in one fresh process:
- numba kernels load/compile (first call, tiny input);
- drawing 1,000 resamples of the images (+ 100 jackknife groups);
- the AP bootstrap: fixed matching + streams + 1,000 resamples + jackknife, every summary key and per-category AP;
- the recall bootstrap and, with ``--ods``, the ODS bootstrap (centre-distance evaluation included);
- a paired comparison of two label views of the run (10 % of the labels changed: "two templates"), both
  bootstraps included, and the leaderboard of the two;
- the same AP bootstrap on 1 kernel thread (OV3D_GEOMETRY_THREADS=1), side by side, for the parallel speed-up;
- through the front door (``Analysis.from_objects``, what ``evaluate --ci``, ``compare`` and ``report --ci`` call):
  two runs (the second: 10 % of the labels changed and new scores), their bootstraps, the paired test of the two
  runs, the paired test of one run under both protocols, and the significance tiers;
- with ``--cli``: the commands as a user meets them, each a fresh process on files of the same size
  (``bench/loadfiles.py``) with the geometry cache warm: ``evaluate``, ``evaluate --ci`` and
  ``compare --protocols dataset-level,target-aware``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.bench_eval import max_rss_mib, print_report, timed  # noqa: E402
from bench.workload import build_workload  # noqa: E402


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=5000)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--ods", action="store_true", help="also bootstrap ODS (runs the centre-distance evaluation)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cli", action="store_true", help="also time the commands end to end in fresh processes")
    args = ap.parse_args(argv)

    import numba

    from ov3d_core.diagnostics.bootstrap import (ImageResamples, bootstrap_matching, bootstrap_ods,
                                                 bootstrap_recall, leaderboard, paired_comparison)
    from ov3d_core.eval.ap import APInputs, APParams, fixed_matching
    from ov3d_core.eval.labels import gt_codes, label_view_from_names
    from ov3d_core.eval.pairs import compute_pairs
    from ov3d_core.eval.recall import recall_for_view
    from ov3d_core.eval.threads import kernel_threads

    rows = []
    params = APParams.omni3d_3d()

    def boot(w, pairs, view, g_codes, rs):
        inp = APInputs.from_view(w.gt, w.pred, pairs, view, params, gt_label=g_codes)
        fm = fixed_matching(inp, n_categories=view.n_categories, params=params)
        return bootstrap_matching(fm, rs, vocabulary=view.vocabulary)

    tiny = build_workload(n_images=20, seed=1)
    tv = label_view_from_names(tiny.pred.category, tiny.pred.score, tiny.vocabulary)
    tp = compute_pairs(tiny.gt, tiny.pred)
    t, _ = timed(lambda: boot(tiny, tp, tv, gt_codes(tiny.gt.category, tiny.vocabulary),
                              ImageResamples.draw(np.unique(tiny.gt.image_id), 20, 0)))
    rows.append(("numba kernels load/compile (first call, tiny input)", t, ""))

    w = build_workload(n_images=args.images, seed=args.seed)
    pairs = compute_pairs(w.gt, w.pred)
    view = label_view_from_names(w.pred.category, w.pred.score, w.vocabulary)
    g_codes = gt_codes(w.gt.category, w.vocabulary)
    images = np.arange(1000, 1000 + args.images)  # every image of the workload, with or without boxes
    rows.append(("workload (not timed)", None, w.describe()))

    t, rs = timed(lambda: ImageResamples.draw(images, args.resamples, args.seed))
    rows.append((f"draw {args.resamples} resamples + 100 jackknife groups", t, ""))

    c0 = time.process_time()
    t, b1 = timed(lambda: boot(w, pairs, view, g_codes, rs))
    cpu = time.process_time() - c0
    f = b1.to_frame()
    r0 = f.iloc[0]
    rows.append((f"**AP bootstrap: {args.resamples} resamples** (7 summary keys + per-category AP3D, BCa)", t,
                 f"{kernel_threads()} threads, {cpu:.1f} s CPU; AP3D {r0['value']:.2f} "
                 f"[{r0['lo']:.2f}, {r0['hi']:.2f}], se {r0['se']:.3f}"))

    forced = os.environ.get("OV3D_GEOMETRY_THREADS")
    os.environ["OV3D_GEOMETRY_THREADS"] = "1"
    c0 = time.process_time()
    t1, _ = timed(lambda: boot(w, pairs, view, g_codes, rs))
    cpu1 = time.process_time() - c0
    if forced is None:
        os.environ.pop("OV3D_GEOMETRY_THREADS")
    else:
        os.environ["OV3D_GEOMETRY_THREADS"] = forced
    rows.append(("  the same with 1 thread (side by side)", t1,
                 f"{cpu1:.1f} s CPU ({1000 * cpu1 / (args.resamples + 101):.1f} ms per resample); wall ratio "
                 f"x{t1 / t:.2f}"))

    rec = recall_for_view(w.gt, pairs, view, gt_mask=g_codes >= 0)
    t, br = timed(lambda: bootstrap_recall(rec, w.gt.image_id, rs))
    rr = br.to_frame().iloc[0]
    rows.append(("recall3D@15 bootstrap", t, f"{rr['value']:.4f} [{rr['lo']:.4f}, {rr['hi']:.4f}]"))
    if args.ods:
        t, bo = timed(lambda: bootstrap_ods(w.gt, w.pred, view, rs, gt_label=g_codes))
        ro = bo.to_frame().iloc[0]
        rows.append(("ODS bootstrap (centre-distance evaluation included)", t,
                     f"ODS {ro['value']:.2f} [{ro['lo']:.2f}, {ro['hi']:.2f}]"))

    rng = np.random.default_rng(1)
    new_label = view.label.copy()
    flip = rng.random(len(new_label)) < 0.10
    new_label[flip] = rng.integers(0, len(w.vocabulary), int(flip.sum()))
    view_b = view.relabel(new_label)

    def paired():
        a, b = boot(w, pairs, view, g_codes, rs), boot(w, pairs, view_b, g_codes, rs)
        cmp = paired_comparison(a, b, name_a="A", name_b="B")
        return cmp.to_frame(), cmp.per_category_frame(), leaderboard({"A": a, "B": b})

    t, (tab, cat, lb) = timed(paired)
    d = tab.set_index("metric").loc["AP3D"]
    rows.append(("**paired test of two views** (2 bootstraps + differences + per-category Holm + leaderboard)", t,
                 f"AP3D diff {d['diff']:.2f} [{d['lo']:.2f}, {d['hi']:.2f}], p = {d['p_value']:.4f}; "
                 f"{int(cat['significant'].sum())}/{len(cat)} categories significant after Holm"))
    del pairs, rec, b1, tab, cat, lb
    rows += through_analysis(w, images, new_label, args.resamples, args.seed)
    rows.append(("peak process memory (max RSS, whole benchmark in this process)", None, f"{max_rss_mib():.0f} MiB"))
    if args.cli:
        rows += through_cli(args.images, args.resamples, args.seed)

    print_report(rows, f", numba {numba.__version__}, {kernel_threads()} kernel threads, load average "
                       f"{os.getloadavg()[0]:.1f} at the end")


def through_analysis(w, images, new_label, n_resamples: int, seed: int) -> list[tuple]:
    """The Analysis methods the CLI and the report call, on two in-memory runs of the workload."""
    import pandas as pd

    from ov3d_core.analysis import Analysis, View
    from ov3d_core.model import Dataset, Run

    rows = []
    rng = np.random.default_rng(2)
    names = np.asarray(w.vocabulary, dtype=object)
    pred_b = w.pred.with_(category=names[new_label], score=np.clip(w.pred.score + rng.normal(0, 0.05, len(w.pred)),
                                                                    0, 1))
    ds = Dataset(name="bench", images=pd.DataFrame({"image_id": images, "width": 640, "height": 480,
                                                    "file_path": [f"{i}.jpg" for i in images], "dataset_id": 0}),
                 K=np.tile(np.eye(3), (len(images), 1, 1)), vocabulary=w.vocabulary, gt=w.gt)
    a = Analysis.from_objects(ds, [Run("A", "bench", w.pred), Run("B", "bench", pred_b)])
    va, vb = View("bench", "A"), View("bench", "B")
    kw = {"n_resamples": n_resamples, "seed": seed}

    def timed(fn):  # (wall s, result), with the process CPU seconds in cpu[0] (the comparable figure under load)
        c0, t0 = time.process_time(), time.perf_counter()
        out = fn()
        cpu[0] = time.process_time() - c0
        return time.perf_counter() - t0, out

    cpu = [0.0]
    t, _ = timed(lambda: (a.score(va), a.score(vb)))
    rows.append(("Analysis: geometry + score of runs A and B (not part of the statistics; for scale)", t, f"{cpu[0]:.1f} s CPU"))
    t, ba = timed(lambda: a.bootstrap(va, **kw))
    r0 = ba.to_frame().iloc[0]
    rows.append((f"**Analysis.bootstrap(A)**: {n_resamples} resamples drawn + every headline number and category",
                 t, f"{cpu[0]:.1f} s CPU; AP3D {r0['value']:.2f} [{r0['lo']:.2f}, {r0['hi']:.2f}] (BCa)"))
    t, _ = timed(lambda: a.bootstrap(vb, **kw))
    rows.append(("Analysis.bootstrap(B) (resamples shared with A)", t, f"{cpu[0]:.1f} s CPU"))
    t, pc = timed(lambda: a.paired(va, vb, **kw))
    d = pc.to_frame().set_index("metric").loc["AP3D"]
    rows.append(("**Analysis.paired(A, B)**, both bootstraps memoised (what compare adds)", t,
                 f"{cpu[0]:.1f} s CPU; AP3D diff {d['diff']:.2f} [{d['lo']:.2f}, {d['hi']:.2f}], p = {d['p_value']:.4f}"))
    a.clear()
    t, _ = timed(lambda: a.paired(va, vb, **kw))
    rows.append(("**Analysis.paired(A, B) from a cleared memo** (2 bootstraps + differences + Holm; geometry "
                 "kept)", t, f"{cpu[0]:.1f} s CPU"))
    t, pp = timed(lambda: a.paired(va, va.with_(protocol="target-aware"), **kw))
    d = pp.to_frame().set_index("metric").loc["AP3D"]
    rows.append(("Analysis.paired(A dataset-level, A target-aware) (1 new bootstrap: the target-aware view)", t,
                 f"{cpu[0]:.1f} s CPU; AP3D diff {d['diff']:.2f} [{d['lo']:.2f}, {d['hi']:.2f}], p = {d['p_value']:.4f}"))
    t, tiers = timed(lambda: a.leaderboard_tiers(View("bench"), **kw))
    rows.append(("Analysis.leaderboard_tiers (bootstraps memoised)", t,
                 f"{cpu[0]:.1f} s CPU; tiers {dict(zip(tiers['run'], tiers['tier']))}"))
    return rows


def through_cli(n_images: int, n_resamples: int, seed: int) -> list[tuple]:
    """``evaluate``, ``evaluate --ci`` and ``compare --protocols`` in fresh processes, geometry cache warm."""
    import subprocess
    import tempfile
    from pathlib import Path

    from bench.bench_cold import timed_command
    from bench.loadfiles import write_files

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        info = write_files(n_images, Path(tmp))
        files = ["--gt", f"{tmp}/gt.json", "--pred", f"{tmp}/preds.json", "--cache-dir", f"{tmp}/cache"]
        base = [sys.executable, "-m", "ov3d_core"]
        boot = ["--resamples", str(n_resamples), "--seed", str(seed)]
        subprocess.run([*base, "evaluate", *files], check=True, capture_output=True)  # warms the geometry cache
        rows.append((f"CLI files (not timed): {info['predictions']} predictions, "
                     f"{info['pred_bytes'] / 2 ** 20:.0f} MiB predictions JSON", None, ""))
        for label, cmd in (("`ov3d evaluate` (warm cache)", [*base, "evaluate", *files]),
                           (f"**`ov3d evaluate --ci`** ({n_resamples} resamples, warm cache)",
                            [*base, "evaluate", *files, "--ci", *boot]),
                           ("**`ov3d compare --protocols dataset-level,target-aware`** (warm cache)",
                            [*base, "compare", *files, "--protocols", "dataset-level,target-aware", *boot])):
            r = timed_command(cmd)
            rows.append((label + ", fresh process", r["wall"], f"{r['cpu']:.1f} s CPU, peak {r['rss']:.0f} MiB"))
    return rows


if __name__ == "__main__":
    main()
