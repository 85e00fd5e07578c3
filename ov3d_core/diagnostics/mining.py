"""Failure mining and the object-centric view: which images (and boxes) to open first, and every run's take on one
GT object (the paper's Fig. 1: "five detectors localise it, none names it").

Each miner is a pure function of scored views (``RunScore`` from ``Benchmark.score``, with its ``Run``) and returns
a :class:`Ranking`: ``boxes`` (one row per box that counts, ranking value first) and ``images`` (one row per image
with at least one such box, ``rank, image_id, value, n_boxes``, best first; ties: more boxes, then lower image id).
Statuses are the evaluator's, read at ``iou`` (default ``STATUS_IOU`` = 0.25, the inspector's); "localised" means a
kept prediction of any class at 3D IoU >= ``RECALL_IOU`` (0.15, the paper's class-agnostic recall criterion).

- :func:`cross_class_false_positives`: FPs overlapping a GT of another class (3D IoU >= ``overlap``, default
  ``CROSS_CLASS_IOU`` = 0.15); image value = their count.
- :func:`oracle_gain`: what the target-aware oracle hides: the predictions it removes that were FPs under the
  dataset-level view; image value = their count, with ``ap_gain`` (AP3D points won by removing only that image's
  predictions, computed exactly for the ``exact_top`` highest-ranked images).
- :func:`run_disagreement`: GT localised by several runs under different labels; value = distinct labels - 1.
- :func:`depth_errors`: TPs by absolute depth error |z_pred - z_gt| (m); image value = the largest.
- :func:`missed_by_all`: non-ignored GT that every run misses at ``iou``; image value = their count; each row says
  how many runs localise it anyway.
- :func:`object_view`: one GT row against every run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np
import pandas as pd

from ov3d_core.diagnostics.protocol_comparison import removed_predictions
from ov3d_core.eval.ap import evaluate_view
from ov3d_core.eval.grouping import argmax_by_group, pair_index
from ov3d_core.eval.protocols import CROSS_CLASS_IOU, target_aware_view
from ov3d_core.eval.scoring import RECALL_IOU, STATUS_IOU

__all__ = ["Ranking", "ObjectView", "cross_class_false_positives", "oracle_gain", "run_disagreement",
           "depth_errors", "missed_by_all", "object_view", "rank_images"]


@dataclass(frozen=True, eq=False)
class Ranking:
    """A mined list. ``value``: the ranking column's name; ``description``: what it counts (one sentence)."""

    boxes: pd.DataFrame
    images: pd.DataFrame
    value: str
    description: str

    def to_frame(self) -> pd.DataFrame:
        """The ranked images."""
        return self.images

    def top(self, n: int = 10) -> pd.DataFrame:
        return self.images.head(n)


def rank_images(boxes: pd.DataFrame, value: str, how: str = "count") -> pd.DataFrame:
    """Per image of ``boxes``: ``value`` = the count of its rows (``how="count"``), or the max / sum of column
    ``value``; ``rank, image_id, value, n_boxes``, best first (ties: more boxes, then lower image id)."""
    cols = ["rank", "image_id", value, "n_boxes"]
    if boxes.empty:
        return pd.DataFrame({c: pd.Series(dtype=float if c == value else np.int64) for c in cols})
    g = boxes.groupby("image_id", sort=True)
    n = g.size()
    v = n.astype(np.float64) if how == "count" else getattr(g[value], how)()
    df = pd.DataFrame({"image_id": n.index.to_numpy(), value: v.to_numpy(), "n_boxes": n.to_numpy()})
    df = df.sort_values([value, "n_boxes", "image_id"], ascending=[False, False, True], kind="stable")
    df.insert(0, "rank", np.arange(1, len(df) + 1))
    return df.reset_index(drop=True)[cols]


def _names(vocab, codes) -> np.ndarray:
    """Category names of codes (-1 and other negatives -> None)."""
    v = np.asarray(tuple(vocab) + (None,), dtype=object)
    codes = np.asarray(codes, np.int64)
    return v[np.where(codes >= 0, codes, len(vocab))]


def _best_other_class_gt(score):
    """Per prediction: the highest-IoU GT of another vocabulary class (IoU, row; 0 / -1 when none)."""
    p = score.pairs
    n_pred = len(score.view)
    sel = (score.gt_label[p.gt] >= 0) & (score.gt_label[p.gt] != score.view.label[p.pred])
    best, row = argmax_by_group(p.pred[sel], p.iou3d[sel], p.gt[sel], n_pred)
    return np.where(row >= 0, best, 0.0), row


def _localising(score, iou: float = RECALL_IOU):
    """Per GT row: the kept prediction of highest 3D IoU, any class (row, IoU; -1 / 0 when none reaches ``iou``)."""
    p = score.pairs
    sel = np.asarray(score.view.keep, bool)[p.pred]
    best, row = argmax_by_group(p.gt[sel], p.iou3d[sel], p.pred[sel], p.n_gt)
    ok = (row >= 0) & (best >= iou)
    return np.where(ok, row, -1), np.where(ok, best, 0.0)


def cross_class_false_positives(dataset, run, score, *, iou: float = STATUS_IOU,
                                overlap: float = CROSS_CLASS_IOU) -> Ranking:
    """False positives at ``iou`` that sit on a GT of another class (3D IoU >= ``overlap``): well localised,
    wrongly named. Boxes: ``pred_row, image_id, class, score, iou_other, other_gt_row, other_class``, highest
    score first; images by their count."""
    fp = score.ap.matches.dt_fp(iou)
    best, other = _best_other_class_gt(score)
    rows = np.flatnonzero(fp & (best >= overlap))
    rows = rows[np.argsort(-score.view.score[rows], kind="stable")]
    boxes = pd.DataFrame({"pred_row": rows, "image_id": run.pred.image_id[rows],
                          "class": _names(score.view.vocabulary, score.view.label[rows]),
                          "score": score.view.score[rows], "iou_other": best[rows], "other_gt_row": other[rows],
                          "other_class": _names(score.view.vocabulary, score.gt_label[other[rows]])})
    return Ranking(boxes, rank_images(boxes, "n_cross_class_fp"), "n_cross_class_fp",
                   f"false positives at 3D IoU {iou:g} overlapping a GT of another class at >= {overlap:g}")


def oracle_gain(dataset, run, score, *, iou: float = STATUS_IOU, exact_top: int = 20,
                count_ignored_as_present: bool = True) -> Ranking:
    """What the target-aware oracle hides on this run: the predictions it removes from the dataset-level view
    ``score`` that were false positives there at ``iou``.

    Boxes: ``pred_row, image_id, class, score, cross_class`` (sits on another class's GT, protocol comparison's
    rule), ``max_iou_other``. Images: ``n_removed_fp`` (the value), ``n_cross_class``, and ``ap_gain``: AP3D with
    only that image's removals applied minus the dataset-level AP3D (exact, for the ``exact_top`` best-ranked
    images; NaN below)."""
    view = score.view
    oracle = target_aware_view(view, run.pred.image_id, dataset.gt.image_id, score.gt_label, dataset.gt.ignore,
                               count_ignored_as_present=count_ignored_as_present)
    removed = removed_predictions(view, oracle, score.pairs, run.pred.image_id, score.gt_label, dataset.gt.ignore)
    fp = score.ap.matches.dt_fp(iou)
    removed = removed[fp[removed["pred_row"].to_numpy(np.int64)]]
    boxes = removed[["pred_row", "image_id", "class", "score", "cross_class", "max_iou_other"]].reset_index(drop=True)
    images = rank_images(boxes, "n_removed_fp")
    images["n_cross_class"] = boxes.groupby("image_id")["cross_class"].sum().reindex(images["image_id"]).to_numpy(
        np.int64) if len(images) else np.zeros(0, np.int64)
    gain = np.full(len(images), np.nan)
    base = score.ap.summary()["AP3D"]
    rows_of = boxes.groupby("image_id")["pred_row"].apply(np.asarray) if len(boxes) else {}
    for i, img in enumerate(images["image_id"].to_numpy()[:exact_top]):
        keep = np.ones(len(view), bool)
        keep[rows_of[img]] = False
        res = evaluate_view(dataset.gt, run.pred, score.pairs, view.filtered(keep), score.ap.params,
                            gt_label=score.gt_label, proximity=score.ap.params.proximity)
        gain[i] = res.summary()["AP3D"] - base
    images["ap_gain"] = gain
    return Ranking(boxes, images, "n_removed_fp",
                   f"dataset-level false positives at 3D IoU {iou:g} that the target-aware oracle removes")


def _check_entries(entries) -> list[tuple[str, object, object]]:
    items = [(str(k), v[0], v[1]) for k, v in dict(entries).items()]
    if not items:
        raise ValueError("expected at least one (run, score) entry")
    n_gt = {s.pairs.n_gt for _, _, s in items}
    if len(n_gt) != 1:
        raise ValueError(f"expected runs scored on one dataset (same GT rows), got GT counts {sorted(n_gt)}")
    vocab = {s.view.vocabulary for _, _, s in items}
    if len(vocab) != 1:
        raise ValueError("expected runs scored over one vocabulary")
    return items


def run_disagreement(dataset, entries: Mapping[str, tuple], *, iou: float = RECALL_IOU) -> Ranking:
    """GT objects that several runs localise (a kept prediction of any class at 3D IoU >= ``iou``) but label
    differently. ``entries``: run name -> (``Run``, ``RunScore``) on the same dataset and vocabulary.

    Boxes (one row per non-ignored evaluated GT localised by >= 2 runs with >= 2 distinct labels):
    ``gt_row, image_id, gt_class, n_distinct_labels - 1`` (the value ``disagreement``), ``n_localised,
    n_correct`` and one column per run with its label (None: not localised). Images: sum of the values."""
    items = _check_entries(entries)
    vocab = items[0][2].view.vocabulary
    gl = items[0][2].gt_label
    ok = (gl >= 0) & ~np.asarray(dataset.gt.ignore, bool)
    labels = np.full((len(gl), len(items)), -2, np.int64)  # -2: not localised; -1: a label outside the vocabulary
    for j, (_, _, sc) in enumerate(items):
        row, _ = _localising(sc, iou)
        labels[row >= 0, j] = sc.view.label[row[row >= 0]]
    loc = labels != -2
    srt = np.sort(labels, axis=1)
    new = np.ones(srt.shape, bool)
    new[:, 1:] = srt[:, 1:] != srt[:, :-1]
    distinct = (new & (srt != -2)).sum(1)
    n_loc = loc.sum(1)
    sel = np.flatnonzero(ok & (n_loc >= 2) & (distinct >= 2))
    value = distinct[sel] - 1
    order = np.lexsort((sel, -n_loc[sel], -value))
    sel, value = sel[order], value[order]
    boxes = pd.DataFrame({"gt_row": sel, "image_id": dataset.gt.image_id[sel], "gt_class": _names(vocab, gl[sel]),
                          "disagreement": value, "n_localised": n_loc[sel],
                          "n_correct": (labels[sel] == gl[sel, None]).sum(1)})
    for j, (name, _, _) in enumerate(items):
        boxes[name] = np.where(loc[sel, j], np.where(labels[sel, j] >= 0, _names(vocab, labels[sel, j]),
                                                     "(not in vocabulary)"), None)
    return Ranking(boxes, rank_images(boxes, "disagreement", how="sum"), "disagreement",
                   f"GT localised (3D IoU >= {iou:g}) by several runs under different labels")


def depth_errors(dataset, run, score, *, iou: float = STATUS_IOU) -> Ranking:
    """True positives at ``iou`` by absolute depth error (m, centre z). Boxes: ``pred_row, gt_row, image_id,
    class, score, depth_error, depth_gt, depth_pred, relative_error, iou3d``, largest error first; images by their
    largest error."""
    m = score.ap.matches
    t = m._t(iou)
    rows = np.flatnonzero(m.dt_tp(iou))
    g = m.dt_match[t, rows]
    zg, zp = dataset.gt.center[g, 2], run.pred.center[rows, 2]
    err = np.abs(zp - zg)
    o = np.lexsort((rows, -err))
    rows, g, zg, zp, err = rows[o], g[o], zg[o], zp[o], err[o]
    pos = pair_index(score.pairs.gt, score.pairs.pred, g, rows)
    boxes = pd.DataFrame({"pred_row": rows, "gt_row": g, "image_id": run.pred.image_id[rows],
                          "class": _names(score.view.vocabulary, score.view.label[rows]),
                          "score": score.view.score[rows], "depth_error": err, "depth_gt": zg, "depth_pred": zp,
                          "relative_error": err / np.abs(zg), "iou3d": np.where(pos >= 0, score.pairs.iou3d[pos], 0.0)})
    return Ranking(boxes, rank_images(boxes, "depth_error", how="max"), "depth_error",
                   f"true positives at 3D IoU {iou:g} ranked by |z_pred - z_gt| (m)")


def missed_by_all(dataset, entries: Mapping[str, tuple], *, iou: float = STATUS_IOU,
                  localise_iou: float = RECALL_IOU) -> Ranking:
    """Non-ignored GT of the vocabulary that no run matches at ``iou``. Boxes: ``gt_row, image_id, gt_class,
    depth, n_localised`` (runs with a kept prediction of any class at 3D IoU >= ``localise_iou``: found but not
    named), ``best_iou`` (highest such IoU over the runs); images by their count."""
    items = _check_entries(entries)
    vocab = items[0][2].view.vocabulary
    gl = items[0][2].gt_label
    missed = (gl >= 0) & ~np.asarray(dataset.gt.ignore, bool)
    n_loc = np.zeros(len(gl), np.int64)
    best = np.zeros(len(gl))
    for _, _, sc in items:
        t = sc.ap.matches._t(iou)
        missed &= sc.ap.matches.gt_match[t] < 0
        row, b = _localising(sc, localise_iou)
        n_loc += row >= 0
        best = np.maximum(best, b)
    rows = np.flatnonzero(missed)
    rows = rows[np.lexsort((rows, -best[rows], -n_loc[rows]))]
    boxes = pd.DataFrame({"gt_row": rows, "image_id": dataset.gt.image_id[rows], "gt_class": _names(vocab, gl[rows]),
                          "depth": dataset.gt.depth[rows], "n_localised": n_loc[rows], "best_iou": best[rows]})
    return Ranking(boxes, rank_images(boxes, "n_missed_by_all"), "n_missed_by_all",
                   f"non-ignored GT that every one of {len(items)} runs misses at 3D IoU {iou:g}")


# ---------------------------------------------------------------------------------------------------- object view
@dataclass(frozen=True, eq=False)
class ObjectView:
    """One GT object against every run.

    Attributes:
        gt_row, image_id, gt_class, ignored, depth: the object.
        table: one row per run (see :func:`object_view`).
        localise_iou: the "localised" threshold.
    """

    gt_row: int
    image_id: int
    gt_class: str | None
    ignored: bool
    depth: float
    table: pd.DataFrame
    localise_iou: float

    def to_frame(self) -> pd.DataFrame:
        return self.table

    @property
    def summary(self) -> dict:
        """``n_runs``, ``n_localised`` (best IoU >= localise_iou), ``n_named`` (localised with the right class),
        ``n_matched`` (the evaluator matched the GT)."""
        t = self.table
        return {"n_runs": len(t), "n_localised": int(t["localised"].sum()),
                "n_named": int((t["localised"] & t["correct_class"]).sum()), "n_matched": int(t["gt_matched"].sum())}

    def sentence(self) -> str:
        """E.g. "5 of 5 runs localise this chair, none names it"."""
        s = self.summary
        named = "none names it" if s["n_named"] == 0 else f"{s['n_named']} name it"
        return f"{s['n_localised']} of {s['n_runs']} runs localise this {self.gt_class}, {named}"


def object_view(dataset, entries: Mapping[str, tuple], gt_row: int, *, iou: float = STATUS_IOU,
                localise_iou: float = RECALL_IOU) -> ObjectView:
    """Every run's best-overlapping prediction (highest 3D IoU > 0, any class, any status) for GT row ``gt_row``.

    Table, one row per run: ``run, pred_row`` (nullable: no prediction overlaps the object in 3D; a box that only
    overlaps in 2D is not near it), ``iou3d, iou2d, pred_class, score, correct_class, localised``
    (``iou3d >= localise_iou``), ``status`` (that prediction's status with respect to THIS object at ``iou``:
    "TP" only when the evaluator matched it to this GT; "ignored" when it matched this GT and the GT is ignored;
    otherwise "mislabelled" (wrong class at 3D IoU >= ``iou``), "FP", or the evaluator's "ignored" / "not
    evaluated"), ``reason`` (why, e.g. "matched another object (GT 3)", "wrong class", "3D IoU below 0.25",
    "duplicate: the evaluator matched pred 4 to this object"), ``pred_status`` and ``pred_matched_gt_row`` (the
    evaluator's status of that prediction in its image, whatever GT it matched, and that GT; nullable),
    ``gt_matched`` (the evaluator matched this GT at ``iou``) and ``matched_pred_row`` (the prediction it matched,
    nullable; it can differ from the best overlap)."""
    items = _check_entries(entries)
    n_gt = items[0][2].pairs.n_gt
    if not 0 <= int(gt_row) < n_gt:
        raise ValueError(f"gt_row: expected a GT row in [0, {n_gt}), got {gt_row}")
    g = int(gt_row)
    vocab = items[0][2].view.vocabulary
    gl = items[0][2].gt_label
    rows = []
    for name, _, sc in items:
        p = sc.pairs
        sel = np.flatnonzero((p.gt == g) & (p.iou3d > 0))
        t = sc.ap.matches._t(iou)
        mp = int(sc.ap.matches.gt_match[t, g])
        row = {"run": name, "pred_row": pd.NA, "iou3d": 0.0, "iou2d": 0.0, "pred_class": None, "score": np.nan,
               "correct_class": False, "localised": False, "status": None, "reason": None, "pred_status": None,
               "pred_matched_gt_row": pd.NA, "gt_matched": mp >= 0, "matched_pred_row": mp if mp >= 0 else pd.NA}
        if len(sel):
            k = sel[np.lexsort((p.pred[sel], -p.iou3d[sel]))[0]]
            d = int(p.pred[k])
            lab = int(sc.view.label[d])
            overlap = float(p.iou3d[k])
            right = bool(lab >= 0 and lab == gl[g])
            evaluator = str(sc.pred_status(iou)["status"].iloc[d])
            other = int(sc.ap.matches.dt_match[t, d])
            status, reason = _status_on_object(evaluator, other, g, mp, d, right, overlap, iou)
            row.update(pred_row=d, iou3d=overlap, iou2d=float(p.iou2d[k]), pred_class=_names(vocab, [lab])[0],
                       score=float(sc.view.score[d]), correct_class=right, localised=bool(overlap >= localise_iou),
                       status=status, reason=reason, pred_status=evaluator,
                       pred_matched_gt_row=other if other >= 0 else pd.NA)
        rows.append(row)
    table = pd.DataFrame(rows)
    for c in ("pred_row", "pred_matched_gt_row", "matched_pred_row"):
        table[c] = table[c].astype("Int64")
    return ObjectView(gt_row=g, image_id=int(dataset.gt.image_id[g]), gt_class=_names(vocab, [gl[g]])[0],
                      ignored=bool(dataset.gt.ignore[g]), depth=float(dataset.gt.depth[g]), table=table,
                      localise_iou=float(localise_iou))


def _status_on_object(evaluator: str, matched_gt: int, g: int, gt_match: int, d: int, right_class: bool,
                      overlap: float, iou: float) -> tuple[str, str]:
    """The status of prediction ``d`` with respect to GT ``g`` and its reason: ``evaluator`` is d's status in its
    image, ``matched_gt`` the GT row d matched (-1), ``gt_match`` the prediction g matched (-1)."""
    if matched_gt == g:
        return evaluator, ("matched to this object" if evaluator == "TP"
                           else "matched to this object, which the evaluator ignores")
    if evaluator == "not evaluated":
        return evaluator, "not evaluated (outside the evaluated vocabulary or below the score threshold)"
    why = []
    if matched_gt >= 0:
        why.append(f"matched another object (GT {matched_gt})")
    if not right_class:
        why.append("wrong class")
    if overlap < iou:
        why.append(f"3D IoU below {iou:g}")
    elif right_class and gt_match >= 0 and gt_match != d:
        why.append(f"duplicate: the evaluator matched pred {gt_match} to this object")
    if evaluator == "ignored" and matched_gt < 0:
        return "ignored", ", ".join(why + ["ignored by the evaluator"])
    status = "mislabelled" if (not right_class and overlap >= iou) else "FP"
    return status, ", ".join(why) or "not matched to this object"
