"""On the tiny demo, the facts the PR-curves page rests on (``Analysis.pr_points`` / ``pr_curves`` /
``operating_points``): the raw curve's envelope sampled at the 101 recall points is the engine's interpolated
precision, and the operating point at a threshold is the final recall of the view thresholded on its own."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ov3d_core.eval.curves import ALL_CLASSES


@pytest.fixture(scope="module")
def demo_analysis(tiny_demo):
    from ov3d_core.analysis import Analysis

    return Analysis.from_yaml(tiny_demo / "benchmark.yaml")


def _envelope_samples(recall: np.ndarray, precision: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """COCO's interpolation written out: the running maximum from the right, sampled at the first recall >= r."""
    if not len(recall):
        return np.zeros(len(thresholds))
    env = np.maximum.accumulate(precision[::-1])[::-1]
    idx = np.searchsorted(recall, thresholds, side="left")
    return np.where(idx < len(env), env[np.minimum(idx, len(env) - 1)], 0.0)


@pytest.mark.parametrize("iou", [0.15, 0.25, 0.5])
@pytest.mark.parametrize("protocol", ["dataset-level", "target-aware"])
def test_raw_curve_envelope_is_the_engine_precision(demo_analysis, iou, protocol):
    a = demo_analysis
    checked = 0
    for ds in a.datasets:
        for run in a.runs(ds):
            v = a.view(ds, run, protocol=protocol, iou=iou)
            sc = a.score(v)
            t = int(sc.ap.iou_index(iou)[0])
            pts = a.pr_points(v)
            curves = a.pr_curves(v)
            for k, name in enumerate(sc.view.vocabulary):
                engine = sc.ap.precision[t, :, k, 0]
                if np.isnan(engine).all():
                    assert name not in set(curves["category"])
                    continue
                sub = pts[pts["category"] == name]
                got = _envelope_samples(sub["recall"].to_numpy(), sub["precision"].to_numpy(),
                                        sc.ap.params.recall_thresholds)
                np.testing.assert_allclose(got, engine, atol=1e-12)
                np.testing.assert_allclose(curves[curves["category"] == name]["precision"], engine, atol=0)
                checked += 1
    assert checked > 20


@pytest.mark.parametrize("thr", [0.2, 0.5, 0.8])
def test_operating_point_recall_is_the_thresholded_final_recall(demo_analysis, thr):
    a = demo_analysis
    for ds in a.datasets:
        for run in a.runs(ds)[:3]:
            v = a.view(ds, run, iou=0.25, min_score=thr)
            ops = a.operating_points(v).set_index("category")
            sc = a.score(v)  # the thresholded view, scored on its own
            t = int(sc.ap.iou_index(0.25)[0])
            for k, name in enumerate(sc.view.vocabulary):
                final = sc.ap.recall[t, k, 0]
                if np.isnan(final):
                    assert name not in ops.index
                    continue
                assert ops.loc[name, "recall"] == pytest.approx(final, abs=1e-12), (ds, run, name)
                kept = int(np.count_nonzero(sc.ap.matches.dt_evaluated[sc.view.label == k]
                                            & ~sc.ap.matches.dt_ignore[t][sc.view.label == k]))
                assert ops.loc[name, "n_det"] == kept
            mean = ops.loc[ALL_CLASSES]
            assert mean["recall"] == pytest.approx(ops.drop(ALL_CLASSES)["recall"].mean())
            curve = a.pr_curves(v)
            on = curve[curve["category"] == ALL_CLASSES]
            i = int(np.searchsorted(on["recall"].to_numpy(), mean["recall"] - 1e-12))
            assert mean["precision"] == pytest.approx(on["precision"].to_numpy()[i])


def test_the_curve_ignores_the_threshold(demo_analysis):
    a = demo_analysis
    v = a.view("demo_indoor", iou=0.25)
    pd.testing.assert_frame_equal(a.pr_curves(v), a.pr_curves(v.with_(min_score=0.6)))
    assert len(a.operating_points(v.with_(min_score=0.6))) == len(a.operating_points(v))
