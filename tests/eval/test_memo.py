"""The content-keyed memos of the warm re-score path: the score order of all detections (re-used across label
changes) and the class-agnostic recall (re-used while the kept set is the same). A hit must give exactly what a cold
computation gives: checked against the literal Omni3D reference after relabelling, with and without a tie-break
order, and against the recall with the memo cleared."""

from __future__ import annotations

import numpy as np
import pytest

from ov3d_core.eval import ap as ap_mod
from ov3d_core.eval import recall as recall_mod
from ov3d_core.eval.ap import APParams, evaluate_ap
from ov3d_core.digest import content_key
from ov3d_core.memo import Memo
from tests.eval.reference_omni3d import reference_ap
from tests.eval.test_ap_reference import nan_to_minus1, random_case, to_arrays


def test_content_key_follows_content_not_identity():
    a = np.arange(10.0)
    assert content_key(a, 3) == content_key(a.copy(), 3)
    b = a.copy()
    b[4] = -0.0 + 4.000000000000001
    assert content_key(a, 3) != content_key(b, 3)
    assert content_key(a, 3) != content_key(a, 4)
    assert content_key(a.astype(np.float32)) != content_key(a)  # dtype counts
    assert content_key(a.reshape(2, 5)) != content_key(a)  # shape counts
    assert content_key(None) != content_key(np.zeros(0))


def test_memo_counts_evicts_and_freezes():
    m = Memo(2, read_only=True)
    calls = []
    for key in ("a", "b", "a", "c", "b"):
        m.get(key, lambda k=key: calls.append(k) or np.zeros(3))
    assert calls == ["a", "b", "c", "b"]  # "b" was evicted by "c" (a was used more recently)
    assert (m.hits, m.misses) == (1, 4)
    v = m.get("b", lambda: np.ones(3))
    with pytest.raises(ValueError):
        v[0] = 1.0


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("with_rank", [False, True])
def test_relabelled_rescore_hits_the_order_memo_and_matches_the_reference(seed, with_rank):
    rng = np.random.default_rng(500 + seed)
    K = 3
    params = APParams(max_dets=[100, 3][seed % 2])
    gts, dts, iou, iou2d = random_case(rng, K=K)
    arrays, pair_iou2d = to_arrays(gts, dts, iou, iou2d)
    rank = rng.permutation(len(dts)) if with_rank else None
    evaluate_ap(**arrays, n_categories=K, params=params, pred_order=rank)
    # relabel: some detections change class, some leave the vocabulary, some come back
    new = arrays["pred_label"].copy()
    flip = rng.random(len(new)) < 0.4
    new[flip] = rng.integers(-1, K, int(flip.sum()))
    hits = ap_mod._SCORE_ORDER.hits
    res = evaluate_ap(**{**arrays, "pred_label": new}, n_categories=K, params=params, pred_order=rank)
    assert ap_mod._SCORE_ORDER.hits == hits + 1
    # the reference sorts by score with the tie-break order as its input order
    order = np.argsort(rank, kind="stable") if with_rank else np.arange(len(dts))
    relabelled = [dict(dts[i], category_id=int(new[i])) for i in order]  # pairs are keyed by each record's "row"
    p_ref, r_ref, _ = reference_ap(gts, relabelled, iou, iou2d, n_categories=K, params=params)
    np.testing.assert_array_equal(nan_to_minus1(res.precision), p_ref)
    np.testing.assert_array_equal(nan_to_minus1(res.recall), r_ref)


def test_recall_memo_hit_equals_a_cold_computation():
    from types import SimpleNamespace

    from ov3d_core.eval.labels import LabelView
    from ov3d_core.eval.recall import recall_for_view

    rng = np.random.default_rng(9)
    n_gt, n_pred, n_pairs = 50, 200, 600
    pairs = SimpleNamespace(gt=rng.integers(0, n_gt, n_pairs), pred=rng.integers(0, n_pred, n_pairs),
                            iou3d=rng.choice([0.0, 0.1, 0.25, 0.5, 0.9], n_pairs))
    class GT:
        ignore = rng.random(n_gt) < 0.2

        def __len__(self):
            return n_gt

    gt = GT()
    view = LabelView(rng.integers(-1, 3, n_pred), rng.choice([0.2, 0.5, 0.9], n_pred), rng.random(n_pred) < 0.8,
                     ("a", "b", "c"))
    first = recall_for_view(gt, pairs, view)
    hits = recall_mod._RECALL.hits
    again = recall_for_view(gt, pairs, view.relabel(rng.integers(0, 3, n_pred)))  # labels do not enter
    assert recall_mod._RECALL.hits == hits + 1
    recall_mod._RECALL.clear()
    cold = recall_for_view(gt, pairs, view)
    for r in (first, again):
        assert (r.n_matched, r.n_gt) == (cold.n_matched, cold.n_gt)
        np.testing.assert_array_equal(r.matched_pred, cold.matched_pred)
    fewer = view.filtered(rng.random(n_pred) < 0.5)  # another kept set: a miss, another result
    misses = recall_mod._RECALL.misses
    recall_for_view(gt, pairs, fewer)
    assert recall_mod._RECALL.misses == misses + 1
