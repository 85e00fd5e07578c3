"""Statistics and mining through the front door: ``Analysis.bootstrap / paired / leaderboard_tiers / mine /
object_view`` give the same numbers as the core functions they compose, on one shared set of image resamples."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ov3d_core.analysis import MINING_KINDS, Analysis
from ov3d_core.diagnostics import mining
from ov3d_core.diagnostics.bootstrap import ImageResamples, bootstrap_score, paired_comparison
from ov3d_core.errors import InputError
from ov3d_core.model import Dataset, Run
from tests.eval.factories import random_scene

VOCAB = ("car", "chair", "table", "lamp")
B = 150


def _analysis(proximity: bool = False) -> Analysis:
    rng = np.random.default_rng(5)
    gt, pred_a = random_scene(rng, n_images=30)
    # a second run: the same boxes with other scores and a quarter of the labels changed
    lab = np.asarray(pred_a.category, dtype=object).copy()
    flip = rng.random(len(lab)) < 0.25
    lab[flip] = rng.choice(VOCAB, flip.sum())
    pred_b = pred_a.with_(score=rng.random(len(pred_a)), category=lab)
    ids = np.unique(np.r_[gt.image_id, pred_a.image_id, [9001, 9002]])  # two images without boxes
    images = pd.DataFrame({"image_id": ids, "width": 1280, "height": 720, "file_path": [f"{i}.png" for i in ids],
                           "dataset_id": 0})
    ds = Dataset(name="syn", images=images, K=np.tile(np.eye(3), (len(ids), 1, 1)), vocabulary=VOCAB, gt=gt,
                 proximity=proximity)
    return Analysis.from_objects(ds, [Run(name="a", dataset="syn", pred=pred_a),
                                      Run(name="b", dataset="syn", pred=pred_b)])


@pytest.fixture(scope="module")
def analysis():
    return _analysis()


@pytest.fixture(scope="module")
def analysis_proximity():
    return _analysis(proximity=True)


@pytest.mark.parametrize("which", ["analysis", "analysis_proximity"])
def test_bootstrap_observed_numbers_are_the_views_numbers(which, request):
    analysis = request.getfixturevalue(which)
    v = analysis.view(run="a")
    b = analysis.bootstrap(v, n_resamples=B, seed=3, ods=True)
    f = b.to_frame().set_index("metric")
    for k, val in analysis.summary(v).items():
        np.testing.assert_allclose(f.loc[k, "value"], val, rtol=1e-12, atol=1e-12, equal_nan=True, err_msg=k)
    ods = analysis.distance_table(v)["summary"]  # with the dataset's proximity flag, as the bootstrap
    assert f.loc["ODS", "value"] == pytest.approx(ods["ODS"], rel=1e-12)
    assert f.loc["ODS_canonical", "value"] == pytest.approx(ods["ODS_canonical"], rel=1e-12)
    np.testing.assert_allclose(b.per_category_frame()["value"].to_numpy(),
                               analysis.per_category(v)["AP3D"].to_numpy(), rtol=1e-12, equal_nan=True)
    # every image of the GT file is resampled, the two without boxes too
    assert b.resamples.n_images == len(analysis.benchmark.dataset("syn").images)


def test_bootstrap_equals_the_core_function_on_the_same_resamples(analysis):
    v = analysis.view(run="b")
    ours = analysis.bootstrap(v, n_resamples=B, seed=3)
    ds, run = analysis.benchmark.dataset("syn"), analysis.benchmark.run("b", "syn")
    rs = ImageResamples.draw(ds.images["image_id"].to_numpy(), B, 3)
    ref = bootstrap_score(ds, run, analysis.score(v), rs)
    np.testing.assert_array_equal(ours.samples, ref.samples)
    pd.testing.assert_frame_equal(ours.to_frame(), ref.to_frame())
    # level and method are read at display time: a narrower interval from the same samples
    lo80, hi80 = analysis.bootstrap(v, n_resamples=B, seed=3, level=0.8).interval("AP3D")
    lo95, hi95 = ours.interval("AP3D")
    assert lo95 <= lo80 <= hi80 <= hi95 and (lo80, hi80) != (lo95, hi95)
    assert analysis.bootstrap(v, n_resamples=B, seed=3, method="percentile").to_frame()["method"].eq(
        "percentile").all()


def test_paired_runs_share_resamples_and_match_the_core(analysis):
    va, vb = analysis.view(run="a"), analysis.view(run="b")
    p = analysis.paired(va, vb, n_resamples=B, seed=1)
    assert p.a.resamples is p.b.resamples
    t = p.to_frame().set_index("metric")
    assert list(t.columns[:2]) == ["a", "b"]
    d = analysis.summary(va)["AP3D"] - analysis.summary(vb)["AP3D"]
    assert t.loc["AP3D", "diff"] == pytest.approx(d, abs=1e-12)
    assert t.loc["AP3D", "lo"] <= t.loc["AP3D", "diff"] <= t.loc["AP3D", "hi"]
    ref = paired_comparison(analysis.bootstrap(va, n_resamples=B, seed=1), analysis.bootstrap(vb, n_resamples=B,
                                                                                               seed=1),
                            name_a="a", name_b="b")
    pd.testing.assert_frame_equal(p.to_frame(), ref.to_frame())
    pc = p.per_category_frame()
    assert (pc["correction"] == "holm").all() and (pc["p_adjusted"].dropna() >= pc["p_value"].dropna()).all()


def test_paired_one_run_under_two_protocols_is_named_by_them(analysis):
    v = analysis.view(run="a")
    p = analysis.paired(v, v.with_(protocol="target-aware"), n_resamples=B)
    t = p.to_frame().set_index("metric")
    assert list(t.columns[:2]) == ["dataset-level", "target-aware"]
    d = analysis.summary(v)["AP3D"] - analysis.summary(v.with_(protocol="target-aware"))["AP3D"]
    assert t.loc["AP3D", "diff"] == pytest.approx(d, abs=1e-12)


def test_paired_refuses_a_view_against_itself_and_bad_options(analysis):
    v = analysis.view(run="a")
    with pytest.raises(InputError, match="differ"):
        analysis.paired(v, v.with_(iou=0.5), n_resamples=B)  # the TP/FP IoU does not change AP
    with pytest.raises(InputError, match="correction"):
        analysis.paired(v, v.with_(run="b"), n_resamples=B, correction="bonferroni")
    for bad in (0, -5, 2.5, True):
        with pytest.raises(InputError, match="n_resamples"):
            analysis.bootstrap(v, n_resamples=bad)
    with pytest.raises(InputError, match="level"):
        analysis.bootstrap(v, n_resamples=B, level=1.0)
    with pytest.raises(InputError, match="distance_mode"):
        analysis.bootstrap(v.with_(distance_mode="nuscenes"), n_resamples=B, ods=True)


def test_leaderboard_tiers_rank_the_runs_by_their_scores(analysis):
    v = analysis.view()
    t = analysis.leaderboard_tiers(v, n_resamples=B)
    ap = {r: analysis.summary(v.with_(run=r))["AP3D"] for r in ("a", "b")}
    assert list(t["run"]) == sorted(ap, key=lambda r: -ap[r])
    assert t["value"].tolist() == pytest.approx(sorted(ap.values(), reverse=True), abs=1e-12)
    assert t.loc[0, "gap"] == pytest.approx(abs(ap["a"] - ap["b"]), abs=1e-12)
    assert t.loc[0, "tier"] == 1 and t.loc[1, "tier"] == 1 + int(t.loc[0, "significant"])


@pytest.mark.parametrize("kind", MINING_KINDS)
def test_mining_through_the_front_door_equals_the_core(analysis, kind):
    v = analysis.view(run="a", iou=0.25)
    ds = analysis.benchmark.dataset("syn")
    entries = {r: (analysis.benchmark.run(r, "syn"), analysis.score(v.with_(run=r))) for r in ("a", "b")}
    ref = {"cross-class": lambda: mining.cross_class_false_positives(ds, *entries["a"], iou=0.25),
           "oracle-gain": lambda: mining.oracle_gain(ds, *entries["a"], iou=0.25),
           "depth-error": lambda: mining.depth_errors(ds, *entries["a"], iou=0.25),
           "disagreement": lambda: mining.run_disagreement(ds, entries),
           "missed-by-all": lambda: mining.missed_by_all(ds, entries, iou=0.25)}[kind]()
    got = analysis.mine(v, kind)
    pd.testing.assert_frame_equal(got.images, ref.images)
    pd.testing.assert_frame_equal(got.boxes, ref.boxes)
    assert got.description == ref.description


def test_mining_refusals(analysis):
    v = analysis.view(run="a")
    with pytest.raises(InputError, match="kind"):
        analysis.mine(v, "worst")
    with pytest.raises(InputError, match="dataset-level"):
        analysis.mine(v.with_(protocol="target-aware"), "oracle-gain")
    with pytest.raises(InputError, match="run"):
        analysis.mine(v, "disagreement", runs=["a", "nope"])


def test_object_view_has_every_run(analysis):
    v = analysis.view(run="a")
    ov = analysis.object_view(v, 0)
    assert list(ov.to_frame()["run"]) == ["a", "b"]
    assert ov.gt_row == 0 and ov.image_id == int(analysis.benchmark.dataset("syn").gt.image_id[0])
    assert ov.sentence().startswith(f"{ov.summary['n_localised']} of 2 runs localise this")
    n_gt = len(analysis.benchmark.dataset("syn").gt)
    for bad in (-1, n_gt, 1.5, True):
        with pytest.raises(InputError, match="gt_row"):
            analysis.object_view(v, bad)
