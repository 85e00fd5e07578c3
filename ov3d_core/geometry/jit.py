"""The numba kernels' first-run cost: a visible notice while they compile, and a warm-up that compiles them ahead.

Every kernel is ``@njit(cache=True)``: numba compiles it on its first call for the argument types and writes the
machine code to its cache (``__pycache__`` beside the module, or ``NUMBA_CACHE_DIR``); later processes load it in
milliseconds. On a new install, or after the kernels' source changes, the first ``evaluate`` therefore compiles
(about 30-40 s of CPU for the JSON scan, geometry and matching kernels). ``announce_compiles()`` prints one line on stderr when
that happens, so a first run never looks hung; ``python -m ov3d_core.geometry.jit`` runs a tiny evaluation through
the same code paths to compile and cache everything ahead, e.g. right after installing.
"""

from __future__ import annotations

import sys
import threading
import time

__all__ = ["announce_compiles", "warm_up"]

_installed = False
_lock = threading.Lock()
_MESSAGE = ("ov3d: compiling the numeric kernels for this machine (first run only, ~30-40 s of CPU; "
            "`python -m ov3d_core.geometry.jit` does it ahead) ...")


def announce_compiles(stream=None) -> None:
    """Print one notice on ``stream`` (stderr) the first time numba compiles anything in this process; idempotent.
    Cache hits compile nothing and print nothing."""
    global _installed
    from numba.core import event

    with _lock:
        if _installed:
            return
        _installed = True

    class _Notice(event.Listener):
        said = False

        def on_start(self, ev):
            if not self.said:
                self.said = True
                print(_MESSAGE, file=stream or sys.stderr, flush=True)

        def on_end(self, ev):
            pass

    event.register("numba:compile", _Notice())


def _tiny_benchmark():
    """Two images with a few overlapping, separated and invalid boxes: every branch type the kernels compile for."""
    import numpy as np
    import pandas as pd

    from ov3d_core.geometry.boxes import corners_from_pose, rotation_y
    from ov3d_core.model import BoxSet, Dataset, Run

    def boxes(image_id, category, centre, score):
        n = len(image_id)
        centre = np.asarray(centre, float)
        dims = np.ones((n, 3))
        R = rotation_y(np.linspace(0, 1, n))
        corners = corners_from_pose(centre, dims, R)
        box2d = np.c_[centre[:, :2] * 50 + 100, centre[:, :2] * 50 + 140]
        return BoxSet(image_id=np.asarray(image_id, np.int64), category=np.asarray(category, object), center=centre,
                      dims=dims, R=R, corners=corners, box2d=box2d, depth=centre[:, 2].copy(),
                      score=np.asarray(score, float), ignore=np.zeros(n, bool), record=np.arange(n, dtype=np.int64),
                      data={"in_vocab": np.ones(n, bool)})

    gt = boxes([1, 1, 2], ["car", "chair", "car"], [[0, 0, 5], [3, 0, 9], [0, 0, 30]], [1, 1, 1])
    pred = boxes([1, 1, 2, 2], ["car", "car", "chair", "car"], [[0.1, 0, 5], [3, 0, 9.2], [9, 0, 40], [0, 0, 30.5]],
                 [0.9, 0.5, 0.7, 0.5])
    images = pd.DataFrame({"image_id": np.array([1, 2]), "width": 640, "height": 480, "file_path": ["a", "b"]})
    ds = Dataset(name="warm-up", images=images, K=np.repeat(np.eye(3)[None], 2, 0), vocabulary=("car", "chair"),
                 gt=gt)
    return ds, Run(name="warm-up", dataset="warm-up", pred=pred)


def warm_up(progress: bool = True) -> float:
    """Compile (or load from numba's cache) the kernels an evaluation uses; returns the seconds it took."""
    from tqdm import tqdm

    t = time.perf_counter()
    steps = ["loading", "geometry", "dense IoU", "scoring"]
    bar = tqdm(steps, desc="compiling kernels", unit="step", file=sys.stderr, disable=not progress, leave=False)
    ds = run = pairs = None
    for step in bar:
        bar.set_postfix_str(step)
        if step == "loading":
            from ov3d_core.io.columnar import warm

            warm()
        elif step == "geometry":
            from ov3d_core.eval.pairs import compute_pairs

            ds, run = _tiny_benchmark()
            pairs = compute_pairs(ds.gt, run.pred)
        elif step == "dense IoU":
            from ov3d_core.geometry.iou3d import box_iou_3d

            box_iou_3d(ds.gt.corners, run.pred.corners)
        else:
            from ov3d_core.eval.labels import label_view_from_names
            from ov3d_core.eval.scoring import score_view

            score_view(ds, run, pairs, label_view_from_names(run.pred.category, run.pred.score, ds.vocabulary))
    return time.perf_counter() - t


if __name__ == "__main__":
    seconds = warm_up()
    print(f"ov3d: kernels compiled and cached in {seconds:.1f} s", file=sys.stderr)
