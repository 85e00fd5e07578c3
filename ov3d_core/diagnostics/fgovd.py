"""FG-OVD-style analyses (seeds/001, reference §6.1): class-agnostic NMS, median rank of the correct label, and
mAP as a function of the number of hard negatives in the vocabulary. Pure functions over arrays and score matrices.

- :func:`class_agnostic_nms`: greedy NMS by score that ignores labels (FG-OVD: ``batched_nms`` with every
  ``idxs = 0`` at IoU 0.5), so an incorrect higher-confidence box suppresses a correct one at the same place. A box is
  suppressed when its IoU with a kept higher-scoring box is ``> iou_threshold`` (torchvision's rule). 3D IoU (default)
  is computed only for prediction pairs of the same image whose bounding spheres overlap
  (``candidate_pairs`` + ``paired_iou_3d``), with Omni3D's validity rule applied to both boxes (invalid boxes
  neither suppress nor get suppressed); 2D IoU is selectable.
- :func:`gt_label_ranks`: rank of the correct label = number of vocabulary entries whose score is ``>=`` the correct
  label's (1 = best; ties count against, as FG-OVD's ``>=``; ``RemapResult.rank_of`` uses ``>`` instead). The
  prediction used for a GT is the highest-scoring one with 3D IoU ``> iou_threshold`` (0.5) with it — FG-OVD takes
  the first suppressed prediction in list order, which is the highest-scoring one only when the list is sorted.
  A GT with no such prediction, or whose prediction has no valid score vector, gets the worst rank V (FG-OVD: a zero
  score vector, so rank N + 1 = V).
- :func:`median_rank`: both FG-OVD's ``sorted(ranks)[len // 2 + 1]`` (one past the usual median index; clamped to the
  last element for very short lists) and the usual median, plus the mean.
- :func:`vocabulary_size_curve`: for k hard negatives, every prediction associated with a GT (best class-agnostic
  3D IoU ``>= assoc_iou``, default 0.25) takes the argmax of its score vector restricted to {the GT's class} ∪ the k
  classes most similar to it (by a given text-embedding similarity matrix; ties in the argmax go to the true
  class), and is re-scored with that entry's score. Predictions not associated with any GT keep their full-vocabulary
  argmax (they are false positives whatever the vocabulary). k = 0 is a classification oracle; k = V − 1 is plain
  full-vocabulary argmax.

**Hard-negative tiers** (FG-OVD's Difficulty- and Attribute-based benchmarks, §3.2 and Table 2 / Fig. 4), adapted to
class names: FG-OVD builds, per object, a vocabulary of its positive caption and N negative captions made by
attribute substitution (Hard / Medium / Easy: 1 / 2 / 3 attributes replaced; Trivial: captions of other objects;
Color / Material / Pattern / Transparency: one attribute of that type replaced). Our labels are class names, not
captions, so (choices where FG-OVD's definition left one):

- **Difficulty tiers by text-embedding similarity** to the positive class (``similarity``, e.g.
  ``semantic.cosine_similarity_matrix`` of the encoder's class text embeddings; the other classes ordered by
  decreasing similarity, ties to the lower index, as :func:`hardest_negatives`): **hard** = the N most similar
  classes, **medium** = the next band, **easy** = the band after (band width ``band``, default N: ranks 1..N,
  N+1..2N, 2N+1..3N; with ``band`` = B >= N, the first N of ranks 1..B, B+1..2B, 2B+1..3B, so that the vocabularies
  of one tier are nested as N grows), **trivial** = N other classes drawn at random (FG-OVD: "randomly sampled from
  other objects").
- **Ontology tiers** (the analogue of FG-OVD's attribute-type benchmarks, by the super-category ontology the caller
  passes as ``super_of``, e.g. ``taxonomy.super_category``): **same_super** = N random classes of the positive's
  super-category, **other_super** = N random classes of other super-categories. Drawn at random so that they
  measure the ontology relation, not embedding similarity. Whatever the caller's ontology calls a class (its
  "other" bucket included) is a super-category like any other.
- Random draws are **per class, not per object**: one seeded permutation of the other classes per class
  (``np.random.default_rng(seed)``, classes in index order), the tier's negatives are its first N entries (filtered to
  the relation for the ontology tiers). FG-OVD draws per positive caption; our positive is the class name, so every
  object of a class (and FG-OVD's per-image groups sharing a positive) gets the same vocabulary, and vocabularies
  are nested in N.
- A class with fewer than N negatives in a tier (a small vocabulary, a super-category with few members) is **left
  out of that tier**, with its objects (FG-OVD keeps only annotations with >= N negatives); the counts say how many.
- **Rank** (1..N+1) of the true class among its object's vocabulary, for every evaluated, non-ignored GT of the tier:
  the prediction used is the highest-scoring one (label-blind, any prediction row of ``score_matrix`` unless
  ``pred_keep``) with 3D IoU > ``iou_threshold`` (0.5; FG-OVD's text says >=, its code suppresses at > 0.5), as
  :func:`gt_label_ranks`; ties count against the true class (FG-OVD's ``>=``). ``accuracy`` = share of matched
  objects ranked 1; ``median_rank`` / ``mean_rank`` over matched objects; ``median_rank_fgovd`` as FG-OVD's code
  does, over all objects of the tier with the unmatched ones at the worst rank N+1.
- **mAP per tier**: every active prediction associated with a GT of the tier (best class-agnostic 3D IoU >=
  ``assoc_iou``, 0.25, :func:`associate_true_class`) takes the argmax of its scores restricted to that object's
  vocabulary and is re-scored with it (as :func:`vocabulary_size_curve`); predictions associated with a GT left out
  of the tier are dropped with it; the others keep their full-vocabulary argmax. mAP_3D over the categories with GT
  in the tier (Omni3D's 3D parameters unless ``params``). Class-agnostic NMS, when wanted, is applied by the caller
  (predictions with ``pred_label < 0`` stay out).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
from numba import njit

from ov3d_core.diagnostics.distance import same_group_pairs
from ov3d_core.eval.ap import APInputs, APParams, map3d
from ov3d_core.geometry.iou2d import paired_iou_2d
from ov3d_core.geometry.iou3d import candidate_pairs, paired_iou_3d, valid_boxes

__all__ = ["class_agnostic_nms", "label_ranks", "gt_rank_matches", "gt_label_ranks", "median_rank",
           "hardest_negatives", "associate_true_class", "restricted_argmax", "vocabulary_size_curve",
           "DIFFICULTY_TIERS", "ONTOLOGY_TIERS", "random_negative_orders", "tier_negatives", "tier_object_ranks",
           "tier_vocabulary_curve", "hard_negative_tiers"]


# ---------------------------------------------------------------------------------------------------- NMS
@njit(cache=True)
def _greedy_nms(order, indptr, nbr, n):
    suppressed = np.zeros(n, np.bool_)
    keep = np.zeros(n, np.bool_)
    for i in range(order.shape[0]):
        d = order[i]
        if suppressed[d]:
            continue
        keep[d] = True
        for q in range(indptr[d], indptr[d + 1]):
            suppressed[nbr[q]] = True
    return keep


def _pred_pairs(image, corners, box2d, mode: str):
    """(i, j, iou) for i < j of boxes in the same image that may overlap."""
    if mode == "3d":
        if corners is None:
            raise ValueError("class_agnostic_nms: mode '3d' needs corners")
        c = np.asarray(corners, np.float64)
        ia, ib = candidate_pairs(image, image, c, c)
        sel = ia < ib
        ia, ib = ia[sel], ib[sel]
        iou = paired_iou_3d(c, c, ia, ib, check_valid=False)
        ok = valid_boxes(c)
        iou = np.where(ok[ia] & ok[ib], iou, 0.0)
        return ia, ib, iou
    if mode != "2d":
        raise ValueError(f"class_agnostic_nms: expected mode '3d' or '2d', got {mode!r}")
    if box2d is None:
        raise ValueError("class_agnostic_nms: mode '2d' needs box2d")
    b = np.asarray(box2d, np.float64)
    if corners is not None:
        c = np.asarray(corners, np.float64)
        ia, ib = candidate_pairs(image, image, c, c, b, b)
    else:  # every pair of the same image
        _, code = np.unique(image, return_inverse=True)
        ia, ib = same_group_pairs(code.astype(np.int64), code.astype(np.int64))
        ia, ib = ib, ia
    sel = ia < ib
    ia, ib = ia[sel], ib[sel]
    return ia, ib, paired_iou_2d(b, b, ia, ib)


def class_agnostic_nms(pred_image, pred_score, *, corners=None, box2d=None, iou_threshold: float = 0.5,
                       mode: str = "3d", keep=None, group=None) -> np.ndarray:
    """Keep mask ``(n_pred,)`` of label-blind greedy NMS, per image (and per ``group`` when given).

    Args:
        pred_image: ``(n_pred,)`` image ids.
        pred_score: ``(n_pred,)`` scores; visited in descending order (ties: lower row first).
        corners: ``(n_pred, 8, 3)`` corners (needed for 3D, used as the 2D broad phase when given).
        box2d: ``(n_pred, 4)`` XYXY boxes (needed for 2D).
        iou_threshold: suppress when IoU > this (0.5).
        mode: "3d" (default) or "2d".
        keep: optional ``(n_pred,)`` bool: only these take part; the others come back False.
        group: optional ``(n_pred,)`` int extra partition (e.g. FG-OVD's per (image, positive-category) groups).
    """
    image = np.asarray(pred_image).reshape(-1)
    score = np.asarray(pred_score, np.float64).reshape(-1)
    n = len(image)
    part = np.ones(n, bool) if keep is None else np.asarray(keep, bool).reshape(-1)
    key = image if group is None else np.stack([image, np.asarray(group).reshape(-1)], axis=1)
    _, img = np.unique(key.reshape(n, -1), axis=0, return_inverse=True) if n else (None, np.zeros(0, np.int64))
    img = np.asarray(img, np.int64).reshape(-1)
    ia, ib, iou = _pred_pairs(img, corners, box2d, mode)
    hit = (iou > iou_threshold) & part[ia] & part[ib]
    a, b = np.r_[ia[hit], ib[hit]], np.r_[ib[hit], ia[hit]]
    o = np.argsort(a, kind="stable")
    a, b = a[o], b[o]
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(a, minlength=n), out=indptr[1:])
    rows = np.flatnonzero(part)
    order = rows[np.lexsort((rows, -score[rows]))]
    return _greedy_nms(order.astype(np.int64), indptr, b.astype(np.int64), n)


# ---------------------------------------------------------------------------------------------------- ranks
def label_ranks(scores, correct) -> np.ndarray:
    """``(N,)`` rank of ``correct[i]`` in ``scores[i]`` (``(N, V)``): #{v : scores[i, v] >= scores[i, correct[i]]}.

    1 = the correct label beats every other entry; ties count against it. Rows whose correct score is not finite
    get V (the worst)."""
    s = np.asarray(scores, np.float64)
    c = np.asarray(correct, np.int64).reshape(-1)
    if s.ndim != 2 or len(s) != len(c):
        raise ValueError(f"label_ranks: expected scores (N, V) and correct (N,), got {s.shape} and {c.shape}")
    V = s.shape[1]
    if len(c) and (c.min() < 0 or c.max() >= V):
        raise ValueError(f"label_ranks: expected correct labels in [0, {V}), got [{c.min()}, {c.max()}]")
    if len(c) == 0:
        return np.zeros(0, np.int64)
    v = s[np.arange(len(c)), c]
    with np.errstate(invalid="ignore"):
        r = (s >= v[:, None]).sum(axis=1)
    return np.where(np.isfinite(v), r, V).astype(np.int64)


def gt_rank_matches(inputs: APInputs, *, iou_threshold: float = 0.5, pred_keep=None) -> np.ndarray:
    """``(n_gt,)`` prediction row used for each GT's rank: the highest-scoring prediction (label-blind, among
    ``pred_keep``) with pair IoU > ``iou_threshold``; -1 if none. Ties in score: lower row."""
    pg = np.asarray(inputs.pair_gt, np.int64)
    pp = np.asarray(inputs.pair_pred, np.int64)
    iou = np.asarray(inputs.pair_iou, np.float64)
    score = np.asarray(inputs.pred_score, np.float64)
    n_gt = len(inputs.gt_label)
    ok = iou > iou_threshold
    if pred_keep is not None:
        ok &= np.asarray(pred_keep, bool)[pp]
    g, p = pg[ok], pp[ok]
    out = np.full(n_gt, -1, np.int64)
    if len(g):
        o = np.lexsort((p, -score[p], g))
        g, p = g[o], p[o]
        first = np.r_[True, g[1:] != g[:-1]]
        out[g[first]] = p[first]
    return out


def gt_label_ranks(inputs: APInputs, score_matrix, *, iou_threshold: float = 0.5, pred_keep=None,
                   vocabulary=None) -> pd.DataFrame:
    """Per evaluated, non-ignored GT: ``gt``, ``label``, ``pred`` (nullable), ``rank`` (1…V; V when unmatched).

    ``score_matrix`` is ``(n_pred, V)`` with columns in the vocabulary order of ``inputs.gt_label``."""
    S = np.asarray(score_matrix, np.float64)
    V = S.shape[1]
    gl = np.asarray(inputs.gt_label, np.int64)
    ev = (gl >= 0) & ~np.asarray(inputs.gt_ignore, bool)
    match = gt_rank_matches(inputs, iou_threshold=iou_threshold, pred_keep=pred_keep)
    rows = np.flatnonzero(ev)
    m = match[rows]
    rank = np.full(len(rows), V, np.int64)
    has = m >= 0
    if has.any():
        rank[has] = label_ranks(S[m[has]], gl[rows[has]])
    df = pd.DataFrame({"gt": rows, "label": gl[rows], "pred": pd.array(np.where(has, m, 0), dtype="Int64"),
                       "rank": rank})
    df.loc[~has, "pred"] = pd.NA
    if vocabulary is not None:
        df["category"] = np.asarray(list(vocabulary), dtype=object)[gl[rows]]
    return df


def median_rank(ranks) -> dict:
    """FG-OVD's ``sorted(r)[len // 2 + 1]`` (index clamped to the last element), the usual median, the mean and n."""
    r = np.sort(np.asarray(ranks, np.float64).reshape(-1))
    n = len(r)
    if n == 0:
        return {"median_fgovd": float("nan"), "median": float("nan"), "mean": float("nan"), "n": 0}
    return {"median_fgovd": float(r[min(n // 2 + 1, n - 1)]), "median": float(np.median(r)),
            "mean": float(r.mean()), "n": int(n)}


# ---------------------------------------------------------------------------------------------------- vocabulary size
def hardest_negatives(similarity) -> np.ndarray:
    """``(V, V - 1)``: for each class, the other classes by decreasing similarity (ties: lower index first)."""
    S = np.asarray(similarity, np.float64)
    V = S.shape[0]
    if S.shape != (V, V):
        raise ValueError(f"hardest_negatives: expected a square (V, V) similarity, got {S.shape}")
    out = np.empty((V, max(V - 1, 0)), np.int64)
    idx = np.arange(V)
    for c in range(V):
        others = idx[idx != c]
        out[c] = others[np.lexsort((others, -S[c, others]))]
    return out


def associate_true_class(inputs: APInputs, *, iou: float = 0.25) -> np.ndarray:
    """``(n_pred,)`` class of the evaluated, non-ignored GT with the best class-agnostic pair IoU >= ``iou``
    (ties: lower GT row), -1 where none."""
    pg = np.asarray(inputs.pair_gt, np.int64)
    pp = np.asarray(inputs.pair_pred, np.int64)
    v = np.asarray(inputs.pair_iou, np.float64)
    gl = np.asarray(inputs.gt_label, np.int64)
    ok = (gl[pg] >= 0) & ~np.asarray(inputs.gt_ignore, bool)[pg] & (v >= iou)
    out = np.full(len(inputs.pred_label), -1, np.int64)
    g, p, v = pg[ok], pp[ok], v[ok]
    if len(p):
        o = np.lexsort((g, -v, p))
        g, p = g[o], p[o]
        first = np.r_[True, p[1:] != p[:-1]]
        out[p[first]] = gl[g[first]]
    return out


def restricted_argmax(score_matrix, true_class, neg_order, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Labels and scores ``(n_pred,)``: argmax over {true} ∪ ``neg_order[true, :k]`` where ``true_class >= 0``
    (ties: the true class, then the harder negative), full argmax elsewhere (ties: lower index). NaN scores never
    win; rows with no finite score get label -1."""
    S = np.asarray(score_matrix, np.float64)
    t = np.asarray(true_class, np.int64)
    n = len(S)
    Sf = np.where(np.isfinite(S), S, -np.inf)
    lab = np.argmax(Sf, axis=1) if S.shape[1] else np.full(n, -1)
    has = t >= 0
    if has.any():
        cand = np.concatenate([t[has, None], np.asarray(neg_order)[t[has], :k]], axis=1)
        vals = Sf[np.flatnonzero(has)[:, None], cand]
        lab = lab.copy()
        lab[has] = cand[np.arange(len(cand)), np.argmax(vals, axis=1)]
    sc = Sf[np.arange(n), np.maximum(lab, 0)] if n else np.zeros(0)
    bad = ~np.isfinite(sc)
    lab = np.where(bad, -1, lab).astype(np.int64)
    return lab, np.where(bad, 0.0, sc)


def vocabulary_size_curve(inputs: APInputs, score_matrix, similarity, *, n_categories: int, ks=None,
                          true_class=None, assoc_iou: float = 0.25, rescore: bool = True,
                          params: APParams | None = None) -> pd.DataFrame:
    """mAP_3D and label rank as the number k of hard negatives grows (module docstring).

    Args:
        inputs: evaluation arrays; predictions with ``pred_label < 0`` (filtered, e.g. by class-agnostic NMS) stay
            out at every k.
        score_matrix: ``(n_pred, V)`` per-prediction scores over the vocabulary (e.g. ``RemapResult.full``).
        similarity: ``(V, V)`` text-embedding similarity (e.g. ``semantic.cosine_similarity_matrix``).
        n_categories: V.
        ks: the k values (default: 0, 1, 2, 3, 5, 10, 20, ... up to V − 1).
        true_class: ``(n_pred,)`` GT class per prediction (default :func:`associate_true_class` at ``assoc_iou``).
        rescore: score = the chosen entry of the score vector (else keep ``inputs.pred_score``).
        params: AP parameters.

    Returns:
        DataFrame: ``k``, ``AP3D`` (percent), ``accuracy`` (associated predictions given their true class),
        ``median_rank`` / ``median_rank_fgovd`` / ``mean_rank`` of the true class among its k + 1 candidates.
    """
    S = np.asarray(score_matrix, np.float64)
    V = int(n_categories)
    if S.shape != (len(inputs.pred_label), V):
        raise ValueError(f"vocabulary_size_curve: expected score_matrix of shape {(len(inputs.pred_label), V)}, "
                         f"got {S.shape}")
    neg = hardest_negatives(similarity)
    t = associate_true_class(inputs, iou=assoc_iou) if true_class is None else np.asarray(true_class, np.int64)
    active = np.asarray(inputs.pred_label, np.int64) >= 0
    t = np.where(active, t, -1)
    if ks is None:
        ks = sorted({k for k in (0, 1, 2, 3, 5) if k < V} | set(range(10, V, 10)) | {max(V - 1, 0)})
    rows = []
    assoc = np.flatnonzero(t >= 0)
    Sf = np.where(np.isfinite(S), S, -np.inf)
    for k in ks:
        k = int(min(max(k, 0), V - 1))
        lab, sc = restricted_argmax(S, t, neg, k)
        lab = np.where(active, lab, -1)
        mod = replace(inputs, pred_label=lab, pred_score=sc if rescore else inputs.pred_score)
        ap = map3d(mod, n_categories=V, params=params)
        if len(assoc):
            cand = np.concatenate([t[assoc, None], neg[t[assoc], :k]], axis=1)
            vals = Sf[assoc[:, None], cand]
            rk = label_ranks(vals, np.zeros(len(assoc), np.int64))
            acc = float(np.mean(lab[assoc] == t[assoc]))
        else:
            rk, acc = np.zeros(0), float("nan")
        mr = median_rank(rk)
        rows.append({"k": k, "vocabulary_size": k + 1, "AP3D": ap, "accuracy": acc, "median_rank": mr["median"],
                     "median_rank_fgovd": mr["median_fgovd"], "mean_rank": mr["mean"], "n_associated": len(assoc)})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------------- tiers
#: FG-OVD's difficulty-based benchmarks, by text-embedding similarity (module docstring).
DIFFICULTY_TIERS = ("hard", "medium", "easy", "trivial")
#: The ontology analogue of FG-OVD's attribute-based benchmarks.
ONTOLOGY_TIERS = ("same_super", "other_super")
_BAND_INDEX = {"hard": 0, "medium": 1, "easy": 2}


def random_negative_orders(n_classes: int, seed: int = 0) -> np.ndarray:
    """``(V, V - 1)``: per class (in index order), a permutation of the other classes from
    ``np.random.default_rng(seed)``."""
    V = int(n_classes)
    rng = np.random.default_rng(seed)
    out = np.empty((V, max(V - 1, 0)), np.int64)
    idx = np.arange(V)
    for c in range(V):
        out[c] = rng.permutation(idx[idx != c])
    return out


def tier_negatives(similarity, tier: str, n: int, *, super_of=None, seed: int = 0, band: int | None = None,
                   random_orders=None) -> np.ndarray:
    """``(V, n)`` negatives of each class in ``tier`` (module docstring), most relevant first; a row of -1 where the
    class has fewer than ``n`` negatives in the tier.

    Args:
        similarity: ``(V, V)`` class text-embedding similarity.
        tier: one of :data:`DIFFICULTY_TIERS` or :data:`ONTOLOGY_TIERS`.
        n: number of negatives N (>= 1).
        super_of: ``(V,)`` super-category of each class (needed by the ontology tiers).
        seed: seed of the random tiers (ignored with ``random_orders``).
        band: band width of hard / medium / easy (default ``n``; must be >= ``n``).
        random_orders: ``(V, V - 1)`` from :func:`random_negative_orders` (computed from ``seed`` when None).
    """
    S = np.asarray(similarity, np.float64)
    V = S.shape[0]
    n = int(n)
    if n < 1:
        raise ValueError(f"n: expected >= 1 negatives, got {n}")
    out = np.full((V, n), -1, np.int64)
    if tier in _BAND_INDEX:
        b = n if band is None else int(band)
        if b < n:
            raise ValueError(f"band: expected >= n ({n}), got {b}")
        lo = _BAND_INDEX[tier] * b
        if lo + n <= V - 1:
            out[:] = hardest_negatives(S)[:, lo:lo + n]
        return out
    if tier not in ("trivial",) + ONTOLOGY_TIERS:
        raise ValueError(f"tier: expected one of {list(DIFFICULTY_TIERS + ONTOLOGY_TIERS)}, got {tier!r}")
    if S.shape != (V, V):
        raise ValueError(f"tier_negatives: expected a square (V, V) similarity, got {S.shape}")
    orders = random_negative_orders(V, seed) if random_orders is None else np.asarray(random_orders, np.int64)
    if tier == "trivial":
        if n <= V - 1:
            out[:] = orders[:, :n]
        return out
    if super_of is None:
        raise ValueError(f"tier {tier!r}: expected `super_of`, the super-category of each class")
    sup = np.asarray(list(super_of), dtype=object)
    if len(sup) != V:
        raise ValueError(f"super_of: expected {V} super-categories, got {len(sup)}")
    for c in range(V):
        same = sup[orders[c]] == sup[c]
        pick = orders[c][same if tier == "same_super" else ~same]
        if len(pick) >= n:
            out[c] = pick[:n]
    return out


def tier_object_ranks(inputs: APInputs, score_matrix, negatives, *, iou_threshold: float = 0.5, pred_keep=None,
                      gt_match=None, vocabulary=None) -> pd.DataFrame:
    """Per evaluated, non-ignored GT whose class has a full row of ``negatives`` (``(V, n)``): ``gt``, ``label``,
    ``pred`` (nullable; the prediction used), ``rank`` (1..n+1 among {true} ∪ its negatives; ``<NA>`` when no
    prediction overlaps), ``category`` with ``vocabulary``. ``gt_match``: :func:`gt_rank_matches` when known."""
    S = np.asarray(score_matrix, np.float64)
    neg = np.asarray(negatives, np.int64)
    gl = np.asarray(inputs.gt_label, np.int64)
    avail = (neg >= 0).all(axis=1) if neg.shape[1] else np.ones(len(neg), bool)
    ev = (gl >= 0) & ~np.asarray(inputs.gt_ignore, bool)
    ev[ev] = avail[gl[ev]]
    match = gt_rank_matches(inputs, iou_threshold=iou_threshold, pred_keep=pred_keep) if gt_match is None \
        else np.asarray(gt_match, np.int64)
    rows = np.flatnonzero(ev)
    m = match[rows]
    has = m >= 0
    rank = pd.array(np.zeros(len(rows), np.int64), dtype="Int64")
    rank[~has] = pd.NA
    if has.any():
        t = gl[rows[has]]
        cand = np.concatenate([t[:, None], neg[t]], axis=1)
        rank[has] = label_ranks(S[m[has][:, None], cand], np.zeros(len(t), np.int64))
    df = pd.DataFrame({"gt": rows, "label": gl[rows], "pred": pd.array(np.where(has, m, 0), dtype="Int64"),
                       "rank": rank})
    df.loc[~has, "pred"] = pd.NA
    if vocabulary is not None:
        df["category"] = np.asarray(list(vocabulary), dtype=object)[gl[rows]]
    return df


def _tier_map(inputs: APInputs, S: np.ndarray, neg: np.ndarray, true_class: np.ndarray, V: int, params,
              rescore: bool) -> float:
    """mAP_3D with every prediction associated with a GT of the tier choosing among that GT's vocabulary."""
    avail = (neg >= 0).all(axis=1)
    gl = np.asarray(inputs.gt_label, np.int64)
    gl_t = np.where((gl >= 0) & avail[np.maximum(gl, 0)], gl, -1)
    active = np.asarray(inputs.pred_label, np.int64) >= 0
    t = np.where(active, true_class, -1)
    dropped = (t >= 0) & ~avail[np.maximum(t, 0)]
    t = np.where(dropped, -1, t)
    lab, sc = restricted_argmax(S, t, np.where(neg >= 0, neg, 0), neg.shape[1])
    lab = np.where(active & ~dropped, lab, -1)
    mod = replace(inputs, gt_label=gl_t, pred_label=lab, pred_score=sc if rescore else inputs.pred_score)
    return map3d(mod, n_categories=V, params=params)


def tier_vocabulary_curve(inputs: APInputs, score_matrix, similarity, *, n_categories: int, ns=range(1, 11),
                          tiers=None, super_of=None, seed: int = 0, band: int | None = None,
                          iou_threshold: float = 0.5, assoc_iou: float = 0.25, pred_keep=None,
                          params: APParams | None = None, rescore: bool = True) -> pd.DataFrame:
    """FG-OVD's vocabulary-size curve per tier: one row per (tier, N) (module docstring).

    Args:
        inputs: evaluation arrays (3D IoU pairs); predictions with ``pred_label < 0`` stay out of the mAP.
        score_matrix: ``(n_pred, V)`` per-prediction scores over the vocabulary (e.g. ``RemapResult.full``).
        similarity: ``(V, V)`` class text-embedding similarity.
        n_categories: V.
        ns: the numbers of negatives N (default 1..10, FG-OVD's Fig. 4).
        tiers: the tiers (default: :data:`DIFFICULTY_TIERS`, plus :data:`ONTOLOGY_TIERS` when ``super_of`` is given).
        super_of: ``(V,)`` super-category per class (the ontology tiers).
        seed, band: the random tiers' seed and the similarity bands' width (:func:`tier_negatives`).
        iou_threshold: the rank's overlap rule (IoU > 0.5); assoc_iou: the mAP's association (>= 0.25).
        pred_keep: predictions the rank may use (default: every row of ``score_matrix``).
        params: AP parameters (Omni3D 3D). rescore: a prediction's score = its chosen entry.

    Returns:
        ``tier``, ``kind`` ("difficulty" / "ontology"), ``n_negatives``, ``vocabulary_size`` (N + 1),
        ``n_classes`` (classes with N negatives in the tier), ``n_objects`` (evaluated GT of those classes),
        ``n_excluded`` (evaluated GT left out), ``n_matched``, ``accuracy`` (rank-1 share of matched),
        ``median_rank``, ``mean_rank`` (matched), ``median_rank_fgovd`` (all, unmatched at N + 1), ``AP3D``
        (percent; NaN when no category of the tier has GT).
    """
    S = np.asarray(score_matrix, np.float64)
    V = int(n_categories)
    if S.shape != (len(inputs.pred_label), V):
        raise ValueError(f"tier_vocabulary_curve: expected score_matrix of shape {(len(inputs.pred_label), V)}, "
                         f"got {S.shape}")
    sim = np.asarray(similarity, np.float64)
    if sim.shape != (V, V):
        raise ValueError(f"tier_vocabulary_curve: expected a ({V}, {V}) similarity, got {sim.shape}")
    if tiers is None:
        tiers = DIFFICULTY_TIERS + (ONTOLOGY_TIERS if super_of is not None else ())
    tiers = tuple(tiers)
    orders = random_negative_orders(V, seed)
    match = gt_rank_matches(inputs, iou_threshold=iou_threshold, pred_keep=pred_keep)
    true_class = associate_true_class(inputs, iou=assoc_iou)
    gl = np.asarray(inputs.gt_label, np.int64)
    n_eval = int(((gl >= 0) & ~np.asarray(inputs.gt_ignore, bool)).sum())
    rows = []
    for tier in tiers:
        for n in ns:
            n = int(n)
            neg = tier_negatives(sim, tier, n, super_of=super_of, band=band, random_orders=orders)
            r = tier_object_ranks(inputs, S, neg, gt_match=match)
            matched = r["rank"].notna().to_numpy()
            rk = r["rank"].to_numpy(dtype=np.float64, na_value=np.nan)
            mr = median_rank(rk[matched])
            fg = median_rank(np.where(matched, rk, n + 1))
            n_obj = len(r)
            rows.append({"tier": tier, "kind": "ontology" if tier in ONTOLOGY_TIERS else "difficulty",
                         "n_negatives": n, "vocabulary_size": n + 1,
                         "n_classes": int((neg >= 0).all(axis=1).sum()), "n_objects": n_obj,
                         "n_excluded": n_eval - n_obj, "n_matched": int(matched.sum()),
                         "accuracy": float(np.mean(rk[matched] == 1)) if matched.any() else float("nan"),
                         "median_rank": mr["median"], "mean_rank": mr["mean"],
                         "median_rank_fgovd": fg["median_fgovd"],
                         "AP3D": _tier_map(inputs, S, neg, true_class, V, params, rescore) if n_obj
                         else float("nan")})
    return pd.DataFrame(rows, columns=["tier", "kind", "n_negatives", "vocabulary_size", "n_classes", "n_objects",
                                       "n_excluded", "n_matched", "accuracy", "median_rank", "mean_rank",
                                       "median_rank_fgovd", "AP3D"])


def hard_negative_tiers(inputs: APInputs, score_matrix, similarity, *, n_categories: int, n_negatives: int = 5,
                        **kw) -> pd.DataFrame:
    """One row per tier at N = ``n_negatives`` (FG-OVD's Table 2 uses N = 5, its attribute benchmarks N = 2):
    :func:`tier_vocabulary_curve` with ``ns=[n_negatives]`` (same columns and keywords)."""
    return tier_vocabulary_curve(inputs, score_matrix, similarity, n_categories=n_categories, ns=[n_negatives], **kw)
