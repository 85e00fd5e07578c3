"""Confusion matrices on planted matches: Hungarian vs greedy, counts, normalisation, drill-down, super-categories.

Vocabulary: chair table "sofa chair" armchair cabinet shelves wardrobe (codes 0..6). GT / prediction rows::

    img1: GT0 chair, GT1 table; P0 chair, P1 table
          IoU GT0-P0 .90, GT0-P1 .60, GT1-P0 .60, GT1-P1 .30 (below 0.5)
          greedy by IoU takes GT0-P0 and leaves GT1 unmatched; the Hungarian optimum is GT0-P1 + GT1-P0 (1.2 > 0.9),
          i.e. two planted swaps chair->table and table->chair.
    img2: GT2 chair    <- P2 chair      .70   correct
          GT3 armchair <- P3 sofa chair .80   armchair->sofa chair (same super-category: seating)
          GT4 shelves  <- P4 cabinet    .65   shelves->cabinet (storage)
          GT5 cabinet  <- P5 cabinet    .90   correct
          GT6 cabinet  <- P6 table      .55   storage->table (crosses super-categories)
    img3: GT7 chair (ignored) <- P7 chair .95   excluded
          GT8 table  <- P8 table keep=False .90 -> GT8 missed
          GT9 sofa chair <- P9 sofa chair .49 (below threshold) -> missed
          GT10 out of vocabulary <- P10 chair .90 -> excluded
          GT11 chair <- P11 label -1 .90 -> missed
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ov3d_core.diagnostics.confusion import (
    ConfusionMatrix,
    confusion_matrix,
    hungarian_matches,
    super_category_confusion,
)
from tests.diagnostics.scenes import make_pairs, make_view

VOCAB = ("chair", "table", "sofa chair", "armchair", "cabinet", "shelves", "wardrobe")
C, T, SC, AC, CAB, SH, WR = range(7)
GT_LABEL = np.array([C, T, C, AC, SH, CAB, CAB, C, T, SC, -1, C])
GT_IGNORE = np.zeros(12, bool)
GT_IGNORE[7] = True
GT_IMAGE = np.array([1, 1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3])
PRED_LABEL = np.array([C, T, C, SC, CAB, CAB, T, C, T, SC, C, -1])
PRED_KEEP = np.ones(12, bool)
PRED_KEEP[8] = False
PAIRS = [(0, 0, .90), (0, 1, .60), (1, 0, .60), (1, 1, .30), (2, 2, .70), (3, 3, .80), (4, 4, .65), (5, 5, .90),
         (6, 6, .55), (7, 7, .95), (8, 8, .90), (9, 9, .49), (10, 10, .90), (11, 11, .90)]


@pytest.fixture()
def cm() -> ConfusionMatrix:
    pairs = make_pairs(PAIRS, 12, 12)
    view = make_view(PRED_LABEL, np.linspace(0.9, 0.5, 12), VOCAB, PRED_KEEP)
    return confusion_matrix(pairs, view, GT_LABEL, GT_IGNORE, GT_IMAGE)


def test_counts_by_hand(cm):
    expected = np.zeros((7, 7), int)
    expected[C, T] = 1   # GT0 -> P1 (Hungarian swap)
    expected[T, C] = 1   # GT1 -> P0
    expected[C, C] = 1   # GT2
    expected[AC, SC] = 1
    expected[SH, CAB] = 1
    expected[CAB, CAB] = 1
    expected[CAB, T] = 1
    np.testing.assert_array_equal(cm.counts, expected)
    assert cm.n_matched == 7
    np.testing.assert_array_equal(cm.missed, [1, 1, 1, 0, 0, 0, 0])  # GT11 chair; GT8 table; GT9 sofa chair
    assert cm.accuracy == pytest.approx(2 / 7)


def test_normalised_rows_by_matched_count(cm):
    n = cm.normalized()
    assert n[C, C] == pytest.approx(0.5) and n[C, T] == pytest.approx(0.5)
    assert n[T, C] == pytest.approx(1.0)
    assert n[AC, SC] == pytest.approx(1.0)
    assert n[CAB, CAB] == pytest.approx(0.5) and n[CAB, T] == pytest.approx(0.5)
    assert n[SH, CAB] == pytest.approx(1.0)
    assert np.isnan(n[SC]).all() and np.isnan(n[WR]).all()  # nothing matched: NaN, not 0
    rows = np.nansum(n, axis=1)
    np.testing.assert_allclose(rows[cm.matched_per_class > 0], 1.0)
    d = cm.diagonal()
    assert d["chair"] == pytest.approx(0.5) and d["table"] == 0.0 and np.isnan(d["sofa chair"])


def test_hungarian_beats_greedy_on_the_swap():
    pairs = make_pairs(PAIRS[:4], 2, 2)
    # threshold 0.5 leaves three candidate edges; greedy-by-IoU would pick only (0, 0)
    gt, pred, iou = pairs.gt[pairs.iou3d >= .5], pairs.pred[pairs.iou3d >= .5], pairs.iou3d[pairs.iou3d >= .5]
    chosen = hungarian_matches(gt, pred, iou)
    assert sorted(zip(gt[chosen].tolist(), pred[chosen].tolist())) == [(0, 1), (1, 0)]


def test_cell_pairs_returns_the_planted_pairs(cm):
    ct = cm.cell_pairs("chair", "table")
    assert ct[["gt_row", "pred_row", "image_id"]].values.tolist() == [[0, 1, 1]]
    assert ct["iou"].tolist() == [pytest.approx(.60)]
    tc = cm.cell_pairs(T, C)
    assert tc[["gt_row", "pred_row", "image_id"]].values.tolist() == [[1, 0, 1]]
    assert cm.cell_pairs("armchair", "sofa chair")["gt_row"].tolist() == [3]
    assert cm.cell_pairs("cabinet", "cabinet")["pred_row"].tolist() == [5]
    assert cm.cell_pairs("sofa chair", "sofa chair").empty
    with pytest.raises(KeyError):
        cm.cell_pairs("lamp", "chair")


def test_ignored_unkept_out_of_vocab_and_threshold(cm):
    assert 7 not in cm.match_gt and 7 not in cm.match_pred  # ignored GT never matches
    assert 8 not in cm.match_pred and 11 not in cm.match_pred and 10 not in cm.match_gt
    assert 9 not in cm.match_gt  # 0.49 < 0.5
    lower = confusion_matrix(make_pairs(PAIRS, 12, 12), make_view(PRED_LABEL, np.ones(12), VOCAB, PRED_KEEP),
                             GT_LABEL, GT_IGNORE, GT_IMAGE, iou_threshold=0.45)
    assert lower.counts[SC, SC] == 1 and lower.missed[SC] == 0


def test_frames_and_top_confusions(cm):
    wide = cm.to_frame()
    assert list(wide.columns) == list(VOCAB) + ["missed"]
    assert wide.loc["chair", "table"] == 1 and wide.loc["chair", "missed"] == 1
    long = cm.to_long_frame()
    assert len(long) == 49 and long["count"].sum() == 7
    top = cm.top_confusions(k=None)
    assert len(top) == 5 and set(zip(top["gt_class"], top["pred_class"])) == {
        ("chair", "table"), ("table", "chair"), ("armchair", "sofa chair"), ("shelves", "cabinet"),
        ("cabinet", "table")}
    compact = cm.compact()
    assert "wardrobe" not in compact.class_names and "sofa chair" in compact.class_names  # sofa chair has a miss
    assert compact.n_matched == 7
    assert cm.to_dict()["n_matched"] == 7


def test_super_category_projection_of_paper_examples(cm):
    sup = super_category_confusion(cm)
    mapping = dict(zip(sup.fine_class_names, sup.fine_to_super))
    assert mapping["cabinet"] == mapping["shelves"] == mapping["wardrobe"] == "storage"
    assert mapping["armchair"] == mapping["sofa chair"] == mapping["chair"] == "seating"
    assert mapping["table"] == "table"
    m = sup.matrix
    s = {n: i for i, n in enumerate(m.class_names)}
    assert m.counts[s["seating"], s["seating"]] == 2 and m.counts[s["seating"], s["table"]] == 1
    assert m.counts[s["table"], s["seating"]] == 1
    assert m.counts[s["storage"], s["storage"]] == 2 and m.counts[s["storage"], s["table"]] == 1
    assert m.n_matched == 7
    assert m.missed[s["seating"]] == 2 and m.missed[s["table"]] == 1
    diag = sup.diagonal()
    assert diag["seating"] == pytest.approx(2 / 3) and diag["table"] == 0.0 and diag["storage"] == pytest.approx(2 / 3)
    assert np.isnan(diag["vehicle"])
    # 5 fine confusions (GT0, GT1, GT3, GT4, GT6), 3 of them cross super-categories (GT0, GT1, GT6)
    assert sup.cross_super_share_of_confusions == pytest.approx(3 / 5) == sup.cross_super_share
    assert sup.cross_super_share_of_matches == pytest.approx(3 / 7)
    assert sup.mean_off_diagonal == pytest.approx(1 - (2 / 3 + 0 + 2 / 3) / 3)
    # drill-down still works at the coarse level
    assert m.cell_pairs("storage", "table")["gt_row"].tolist() == [6]
    assert sup.to_dict()["fine_to_super"]["wardrobe"] == "storage"


def test_super_category_custom_rules_and_other(cm):
    rules = (("furniture", ("chair", "table", "armchair")),)
    sup = super_category_confusion(cm, rules)
    assert sup.matrix.class_names == ("furniture", "other")
    assert dict(zip(sup.fine_class_names, sup.fine_to_super))["cabinet"] == "other"
    s = sup.matrix.counts
    assert s.tolist() == [[4, 0], [1, 2]]  # cabinet->table leaves "other" for "furniture"
    dropped = super_category_confusion(cm, rules, drop_other=True)
    assert dropped.matrix.class_names == ("furniture",) and dropped.matrix.counts.tolist() == [[4]]
    assert dropped.cross_super_share_of_matches == 0.0
    assert dropped.cross_super_share_of_confusions == 0.0  # 3 fine confusions, none leaves furniture


def _brute_force_best(gt, pred, iou):
    best = 0.0
    edges = list(range(len(gt)))
    for r in range(len(edges) + 1):
        for sub in itertools.combinations(edges, r):
            g = [gt[e] for e in sub]
            p = [pred[e] for e in sub]
            if len(set(g)) == len(g) and len(set(p)) == len(p):
                best = max(best, sum(iou[e] for e in sub))
    return best


def test_hungarian_is_optimal_on_random_graphs():
    rng = np.random.default_rng(7)
    for _ in range(25):
        n_edges = rng.integers(1, 9)
        gt = rng.integers(0, 4, n_edges)
        pred = rng.integers(0, 4, n_edges)
        key = np.unique(gt * 10 + pred)
        gt, pred = key // 10, key % 10
        iou = rng.uniform(0.5, 1.0, len(gt))
        chosen = hungarian_matches(gt, pred, iou)
        assert len(set(gt[chosen])) == chosen.sum() and len(set(pred[chosen])) == chosen.sum()
        assert iou[chosen].sum() == pytest.approx(_brute_force_best(gt, pred, iou))


def test_empty_inputs():
    pairs = make_pairs([], 0, 0)
    view = make_view(np.zeros(0, np.int64), np.zeros(0), ("a", "b"))
    cm = confusion_matrix(pairs, view, np.zeros(0, np.int64), np.zeros(0, bool), np.zeros(0, np.int64))
    assert cm.counts.tolist() == [[0, 0], [0, 0]] and cm.missed.tolist() == [0, 0]
    assert np.isnan(cm.accuracy) and np.isnan(cm.normalized()).all()
    sup = super_category_confusion(cm, "ov3d-explorer-10")  # "a" and "b" are no classes: the 10-bucket maps them
    assert np.isnan(sup.cross_super_share_of_confusions) and np.isnan(sup.mean_off_diagonal)
    with pytest.raises(ValueError):
        confusion_matrix(pairs, view, np.zeros(0, np.int64), np.zeros(0, bool), np.zeros(0, np.int64),
                         iou_threshold=0.0)
