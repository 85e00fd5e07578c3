"""Compile every numba kernel a user can reach, ahead: ``python -m ov3d_core.analysis.warmup`` (the README's install
step), so that no later process compiles (each kernel is ``@njit(cache=True)``: compiled once per machine and
argument types, then loaded from numba's cache in milliseconds; ``ov3d_core.compile_notice``).

The warm-up builds a tiny benchmark with the demo's own generator (annotations only: Omni3D GT JSON, Cube R-CNN JSON
and .pth runs, written to a temporary folder and read back through the real loaders, so the kernels compile for
the argument types real files give), and asks an ``Analysis`` for every table of the product: scoring (with the
per-(image, category) ``max_dets`` cut), curves,
statuses and per-box details, confusion, the protocol comparison, class splits, TIDE, oracles, the three
centre-distance modes, image-bootstrap intervals (with ODS), paired tests, tiers, every failure-mining list and the
object view, plus the JSON scanner's, the dense 3D IoU's, the image-weighted AP's and FG-OVD's class-agnostic NMS
kernels. ``tests/test_warmup.py`` checks that
afterwards every kernel of the package has been compiled and that a fresh process compiles nothing.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from tqdm import tqdm

from ov3d_core.analysis.core import Analysis
from ov3d_core.analysis.view import DISTANCE_MODES, MINING_KINDS
import numpy as np

from ov3d_core.demo.build import build_demo
from ov3d_core.diagnostics.bootstrap import weighted_ap
from ov3d_core.diagnostics.fgovd import class_agnostic_nms
from ov3d_core.eval.ap import APParams, evaluate_inputs, fixed_matching
from ov3d_core.geometry.iou3d import box_iou_3d
from ov3d_core.io.columnar import warm as warm_json_kernels

__all__ = ["warm_up", "STEPS"]

#: The warm-up's steps, in order (the progress bar's labels).
STEPS = ("loading kernels", "tiny benchmark", "scoring and tables", "diagnostics", "statistics and mining")


def _tables(a: Analysis, views) -> None:
    c = a.context(views[0])
    box_iou_3d(c.gt.corners, c.pred.corners)  # the dense IoU of the public geometry API
    params = APParams.omni3d_3d()
    evaluate_inputs(c.ap_inputs(), n_categories=len(c.labels.vocabulary), params=params.with_(max_dets=1))
    fm = fixed_matching(c.ap_inputs(), n_categories=len(c.labels.vocabulary), params=params)
    weighted_ap(fm, np.ones(fm.n_images, np.int64))  # the bootstrap's one-weight-vector accumulation
    for v in views:
        a.summary(v)
        a.per_category(v)
        a.leaderboard_row(v)
        a.pr_curves(v)
        a.operating_points(v)
        a.status_tables(v)
        a.pred_details(v)
        a.gt_details(v)
        a.omni3d_subsets(v)
        a.pooled(v)
        a.pooled(v, datasets=a.datasets)


def _diagnostics(a: Analysis, views) -> None:
    a.confusion_summary(views)
    for v in views:
        a.confusion_classes(v)
        a.protocol_comparison(v)
        a.class_splits(v, n_subsets=20)
        a.tide_examples(v)
        for association in ("greedy", "best3d", "best2d"):
            a.oracles(v, association=association)
        a.semantic_confusion(v)
        for mode in DISTANCE_MODES:
            a.distance_table(v.with_(distance_mode=mode))
        c = a.context(v)
        class_agnostic_nms(c.pred.image_id, c.pred.score, corners=c.pred.corners)
        class_agnostic_nms(c.pred.image_id, c.pred.score, box2d=c.pred.box2d, mode="2d")
    a.transfer(views[0])


def _statistics(a: Analysis, views) -> None:
    for method in ("bca", "percentile"):
        a.bootstrap(views[0], n_resamples=20, method=method, ods=True)
    a.paired(views[0], views[1], n_resamples=20)
    a.leaderboard_tiers(views[0], n_resamples=20)
    for kind in MINING_KINDS:
        a.mine(views[0], kind)
    a.object_view(views[0], 0)


def warm_up(progress: bool = True) -> float:
    """Compile (or load from numba's cache) every kernel a user can reach; returns the seconds it took."""
    t = time.perf_counter()
    bar = tqdm(STEPS, desc="compiling kernels", unit="step", file=sys.stderr, disable=not progress, leave=False)
    with tempfile.TemporaryDirectory(prefix="ov3d-warmup-") as tmp:
        a = views = None
        for step in bar:
            bar.set_postfix_str(step)
            if step == "loading kernels":
                warm_json_kernels()
            elif step == "tiny benchmark":
                root = Path(tmp) / "demo"
                build_demo(root, images=4, seed=0, annotations_only=True, workers=1)
                a = Analysis.from_yaml(root / "benchmark.yaml")  # its caches inside the temporary folder
                d = a.datasets[0]
                views = [a.view(d, run) for run in a.runs(d)]
                views += [v.with_(protocol="target-aware") for v in views[:1]]
            elif step == "scoring and tables":
                _tables(a, views)
            elif step == "diagnostics":
                _diagnostics(a, views)
            else:
                _statistics(a, views)
    return time.perf_counter() - t


if __name__ == "__main__":
    seconds = warm_up()
    print(f"ov3d: kernels compiled and cached in {seconds:.1f} s", file=sys.stderr)
