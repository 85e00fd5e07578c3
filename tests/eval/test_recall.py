"""Class-agnostic recall: greedy vs Hungarian on hand cases where they differ, ignored GT, thresholds, keep mask."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ov3d_core.eval.recall import class_agnostic_recall


def rec(n_gt, pairs, scores, *, ignore=None, keep=None, **kw):
    """pairs: {(gt, pred): iou}."""
    ignore = np.zeros(n_gt, bool) if ignore is None else np.asarray(ignore)
    keep = np.ones(len(scores), bool) if keep is None else np.asarray(keep)
    k = list(pairs)
    return class_agnostic_recall(n_gt, ignore, [a for a, _ in k], [b for _, b in k], list(pairs.values()),
                                 np.asarray(scores, float), keep, **kw)


# G0, G1; P0 (score 0.9): IoU 0.5 with G0, 0.4 with G1; P1 (0.8): IoU 0.3 with G0.
CASE = {(0, 0): 0.5, (1, 0): 0.4, (0, 1): 0.3}


def test_greedy_takes_best_iou_in_score_order():
    # P0 first takes G0 (0.5 > 0.4); P1 only overlaps G0, already taken -> 1 of 2 matched
    r = rec(2, CASE, [0.9, 0.8])
    assert r.recall == 0.5 and r.n_matched == 1 and r.n_gt == 2
    assert r.matched_pred.tolist() == [0, -1]
    assert r.matched_iou[0] == 0.5 and np.isnan(r.matched_iou[1])


def test_hungarian_maximises_total_iou():
    # {P0-G1 0.4, P1-G0 0.3} = 0.7 beats {P0-G0} = 0.5 -> both GT matched
    r = rec(2, CASE, [0.9, 0.8], method="hungarian")
    assert r.recall == 1.0
    assert r.matched_pred.tolist() == [1, 0]


def test_greedy_depends_on_score_order():
    # P1 scored higher: P1 takes G0 first, then P0 takes G1 -> 2 of 2
    r = rec(2, CASE, [0.5, 0.8])
    assert r.recall == 1.0 and r.matched_pred.tolist() == [1, 0]


def test_ignored_gt_neither_counts_nor_absorbs():
    # G1 ignored; P0 overlaps G1 at 0.9 and G0 at 0.2: it must take G0, and G1 is not counted
    r = rec(2, {(1, 0): 0.9, (0, 0): 0.2}, [0.9], ignore=[False, True])
    assert r.n_gt == 1 and r.recall == 1.0 and r.matched_pred.tolist() == [0, -1]
    r = rec(2, {(1, 0): 0.9, (0, 0): 0.2}, [0.9], ignore=[False, True], method="hungarian")
    assert r.n_gt == 1 and r.recall == 1.0 and r.matched_pred.tolist() == [0, -1]
    # all GT ignored -> recall NaN
    r = rec(1, {(0, 0): 0.9}, [0.9], ignore=[True])
    assert np.isnan(r.recall) and r.n_gt == 0


def test_threshold_is_inclusive_and_keep_mask_applies():
    for method in ("greedy", "hungarian"):
        assert rec(1, {(0, 0): 0.15}, [0.9], method=method).recall == 1.0
        assert rec(1, {(0, 0): np.nextafter(0.15, 0)}, [0.9], method=method).recall == 0.0
        assert rec(1, {(0, 0): 0.9}, [0.9], keep=[False], method=method).recall == 0.0
        assert rec(1, {(0, 0): 0.3}, [0.9], iou_threshold=0.25, method=method).recall == 1.0


def test_greedy_ties_by_row_or_pred_order():
    # P0 and P1 equal score, both overlap only G0: P0 (earlier row) takes it; pred_order can reverse that
    r = rec(1, {(0, 0): 0.3, (0, 1): 0.6}, [0.5, 0.5])
    assert r.matched_pred.tolist() == [0]
    r = rec(1, {(0, 0): 0.3, (0, 1): 0.6}, [0.5, 0.5], pred_order=np.array([1, 0]))
    assert r.matched_pred.tolist() == [1]


@pytest.mark.parametrize("seed", range(5))
def test_hungarian_is_optimal_on_random_blocks(seed):
    # several images (disconnected blocks) of a few boxes; total IoU equals a brute force per block
    rng = np.random.default_rng(seed)
    pairs, blocks = {}, []
    g0 = p0 = 0
    for _ in range(6):
        ng, npred = rng.integers(1, 4), rng.integers(1, 4)
        m = np.where(rng.random((ng, npred)) < 0.6, rng.uniform(0, 1, (ng, npred)), 0.0)
        blocks.append(m)
        for i, j in zip(*np.nonzero(m)):
            pairs[g0 + i, p0 + j] = m[i, j]
        g0 += ng
        p0 += npred
    r = rec(g0, pairs, rng.random(p0), method="hungarian", iou_threshold=0.15)
    best_total = 0.0
    for m in blocks:
        w = np.where(m >= 0.15, m, 0.0)
        ng, npred = w.shape
        best = 0.0
        for perm in itertools.permutations(range(max(ng, npred)), ng):
            best = max(best, sum(w[i, j] for i, j in enumerate(perm) if j < npred))
        best_total += best
    assert np.nansum(r.matched_iou) == pytest.approx(best_total, abs=1e-12)
    assert np.all(r.matched_iou[r.matched_pred >= 0] >= 0.15)
    used = r.matched_pred[r.matched_pred >= 0]
    assert len(np.unique(used)) == len(used)  # one-to-one


def test_by_group_and_frame():
    r = rec(3, {(0, 0): 0.5, (2, 1): 0.5}, [0.9, 0.8])
    df = r.by_group(np.array([0, 0, 1]), names=["car", "chair"])
    assert df["recall"].tolist() == [0.5, 1.0]
    f = r.to_frame()
    assert f["pred"].isna().tolist() == [False, True, False]
