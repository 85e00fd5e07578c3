"""Scoring on several threads (categories split into spans): the literal Omni3D reference's numbers and the one-thread
match records, whatever the thread count, and the span helpers themselves."""

from __future__ import annotations

import numpy as np
import pytest

from ov3d_core.eval import threads
from ov3d_core.eval.ap import APParams, evaluate_ap
from ov3d_core.eval.ordering import bucket_rows, stable_bucket
from tests.eval.reference_omni3d import reference_ap
from tests.eval.test_ap_reference import nan_to_minus1, random_case, to_arrays


@pytest.fixture
def split_everything(monkeypatch):
    """Spans from the first item on, and a record of how many spans each threaded call ran."""
    monkeypatch.setattr(threads, "MIN_SPAN_WORK", 1)
    seen: list[int] = []
    real = threads.run_spans

    def spy(fn, spans):
        seen.append(len(spans))
        return real(fn, spans)

    monkeypatch.setattr(threads, "run_spans", spy)
    return seen


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n_threads", [2, 3, 7])
def test_threaded_scoring_is_the_reference(seed, n_threads, split_everything, monkeypatch):
    rng = np.random.default_rng(40 + seed)
    K = 7
    params = APParams(proximity=bool(seed % 2), max_dets=[100, 4][seed % 2])
    gts, dts, iou, iou2d = random_case(rng, K=K, n_images=14, max_dt=20)
    arrays, pair_iou2d = to_arrays(gts, dts, iou, iou2d)
    monkeypatch.setenv("OV3D_GEOMETRY_THREADS", "1")
    one = evaluate_ap(**arrays, n_categories=K, params=params, pair_iou2d=pair_iou2d, return_matches=True)
    assert max(split_everything) == 1
    split_everything.clear()
    monkeypatch.setenv("OV3D_GEOMETRY_THREADS", str(n_threads))
    many = evaluate_ap(**arrays, n_categories=K, params=params, pair_iou2d=pair_iou2d, return_matches=True)
    assert max(split_everything) > 1  # the matching, accumulation and bucket really ran in spans
    p_ref, r_ref, _ = reference_ap(gts, dts, iou, iou2d, n_categories=K, params=params)
    np.testing.assert_array_equal(nan_to_minus1(many.precision), p_ref)
    np.testing.assert_array_equal(nan_to_minus1(many.recall), r_ref)
    for f in ("dt_match", "dt_ignore", "dt_evaluated", "gt_match"):
        np.testing.assert_array_equal(getattr(many.matches, f), getattr(one.matches, f), err_msg=f)


def test_weighted_spans_cover_whole_segments(monkeypatch):
    monkeypatch.setattr(threads, "MIN_SPAN_WORK", 1)
    ptr = np.array([0, 10, 10, 50, 55, 100, 100])
    spans = threads.weighted_spans(ptr, 3)
    assert spans[0][0] == 0 and spans[-1][1] == 6
    assert all(a[1] == b[0] for a, b in zip(spans[:-1], spans[1:]))
    assert len(spans) == 3 and all(k1 > k0 for k0, k1 in spans)
    # each span's share of the 100 items is near a third, within the largest segment (40)
    assert all(abs(int(ptr[k1] - ptr[k0]) - 100 / 3) <= 40 for k0, k1 in spans)


def test_spans_stay_whole_below_the_work_floor():
    assert threads.weighted_spans(np.array([0, 10, 20]), 4) == [(0, 2)]
    assert threads.even_spans(threads.MIN_SPAN_WORK * 2 - 1, 4) == [(0, threads.MIN_SPAN_WORK * 2 - 1)]
    assert threads.even_spans(10, 3) == [(0, 10)]
    assert threads.weighted_spans(np.array([0]), 4) == [(0, 0)]


@pytest.mark.parametrize("n_threads", [1, 2, 5])
def test_bucket_rows_is_the_stable_bucket_of_the_selected_rows(n_threads, split_everything, monkeypatch):
    monkeypatch.setenv("OV3D_GEOMETRY_THREADS", str(n_threads))
    rng = np.random.default_rng(9)
    n, K = 1000, 6
    order = rng.permutation(n).astype(np.int64)
    keys = rng.integers(0, K, n).astype(np.int64)
    select = rng.random(n) < 0.7
    got, ptr = bucket_rows(order, np.where(select, keys, -1), K)
    want, want_ptr = stable_bucket(order[select[order]], keys, K)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(ptr, want_ptr)
    carry = rng.random(n)  # one value per position of order, carried to the new order
    got2, ptr2, carried = bucket_rows(order, np.where(select, keys, -1), K, carry=carry)
    np.testing.assert_array_equal(got2, want)
    position = np.empty(n, np.int64)
    position[order] = np.arange(n)
    np.testing.assert_array_equal(carried, carry[position[want]])
    assert max(split_everything) == n_threads


@pytest.mark.parametrize("prox", [False, True])
def test_pairs_in_any_order_score_the_same(prox):
    # candidate_csr needs pairs sorted by GT row; evaluate_ap sorts user-given pairs first (stable)
    rng = np.random.default_rng(77)
    K = 4
    params = APParams(proximity=prox)
    gts, dts, iou, iou2d = random_case(rng, K=K, n_images=12, max_dt=16)
    arrays, pair_iou2d = to_arrays(gts, dts, iou, iou2d)
    ref = evaluate_ap(**arrays, n_categories=K, params=params, pair_iou2d=pair_iou2d, return_matches=True)
    perm = rng.permutation(len(arrays["pair_gt"]))
    assert np.any(np.diff(arrays["pair_gt"][perm]) < 0)
    shuffled = dict(arrays, **{k: arrays[k][perm] for k in ("pair_gt", "pair_pred", "pair_iou")})
    got = evaluate_ap(**shuffled, n_categories=K, params=params, pair_iou2d=pair_iou2d[perm], return_matches=True)
    np.testing.assert_array_equal(got.precision, ref.precision)
    np.testing.assert_array_equal(got.matches.dt_match, ref.matches.dt_match)
    p_ref, _, _ = reference_ap(gts, dts, iou, iou2d, n_categories=K, params=params)
    np.testing.assert_array_equal(nan_to_minus1(got.precision), p_ref)
