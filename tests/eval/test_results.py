"""Result containers: tables, lookups by value, presets wired through evaluate_view."""

from __future__ import annotations

import numpy as np
import pytest

from ov3d_core.eval.ap import APParams, evaluate_ap, evaluate_view
from ov3d_core.eval.labels import gt_codes, label_view_from_names
from ov3d_core.eval.pairs import compute_pairs
from tests.eval.factories import random_scene


def small():
    # category 0: TP; category 1: GT, no det; category 2: nothing
    return evaluate_ap([1, 1], [0, 1], [False, False], [5.0, 50.0], [1], [0], [0.9], [5.0], [0], [0], [0.9],
                       n_categories=3, return_matches=True, vocabulary=("car", "chair", "lamp"))


def test_tables_have_no_sentinels():
    r = small()
    df = r.to_frame()
    assert df["category"].tolist() == ["car", "chair", "lamp"]
    assert df["n_gt"].tolist() == [1, 1, 0] and df["n_pred"].tolist() == [1, 0, 0]
    assert df["AP3D"].iloc[0] == pytest.approx(100, abs=1e-9) and df["AP3D"].iloc[1] == 0.0
    assert np.isnan(df["AP3D"].iloc[2]) and np.isnan(df["AR"].iloc[2])
    assert not (df.select_dtypes("number") == -1).any().any()
    long = r.to_long_frame()
    assert len(long) == 10 * 3 * 4 and set(long["range"]) == {"all", "near", "medium", "far"}
    assert long.query("category == 'lamp'")["ap"].isna().all()
    f = r.matches.to_frame(0.5)
    assert f["status"].tolist() == ["TP"] and f["gt"].tolist() == [0]


def test_lookups_by_value_and_name():
    r = small()
    assert r.per_category_ap(iou=0.15)[0] == pytest.approx(100, abs=1e-9)
    with pytest.raises(ValueError, match="iou"):
        r.per_category_ap(iou=0.33)
    with pytest.raises(ValueError, match="range"):
        r.per_category_ap("huge")
    assert r.mean_ap(["car", "chair"]) == pytest.approx(50, abs=1e-9)
    assert np.isnan(r.mean_ap(["car", "lamp"]))
    assert r.nanmean_ap(["car", "lamp"]) == pytest.approx(100, abs=1e-9)
    rec, prec = r.pr_curve("car", 0.25)
    assert len(rec) == 101 and prec[0] == pytest.approx(1.0)
    assert r.ap("far") == 0.0 and np.isnan(r.ap("medium"))


def test_2d_preset_through_view():
    gt, pred = random_scene(np.random.default_rng(5), n_images=5)
    pairs = compute_pairs(gt, pred)
    vocab = ("car", "chair", "table", "lamp")
    view = label_view_from_names(pred.category, pred.score, vocab)
    p = APParams.omni3d_2d()
    a = evaluate_view(gt, pred, pairs, view, p)
    b = evaluate_ap(gt.image_id, gt_codes(gt.category, vocab), gt.ignore, gt.box2d_area, pred.image_id, view.codes,
                    view.score, pred.box2d_area, pairs.gt, pairs.pred, pairs.iou2d, n_categories=4, params=p)
    np.testing.assert_array_equal(a.precision, b.precision)
    assert set(a.summary()) == {"AP2D", "AP2D@50", "AP2D@75", "AP2D@95", "AP2D-S", "AP2D-M", "AP2D-L"}
    # proximity switch from the dataset overrides the params
    c = evaluate_view(gt, pred, pairs, view, APParams(), proximity=True)
    assert c.params.proximity
