"""3D detection confusion matrices (OV3D-Bench, "Semantic Robustness"), fine and super-category level.

The paper: match each ground-truth box to a prediction under a one-to-one Hungarian assignment with 3D IoU >= 0.5,
discard the unmatched, and count cell (i, j) = GT class i matched to a prediction labelled j, normalised per GT
class. Here that is a pure function of the cached pairs (``ov3d_core.eval.pairs.Pairs``) and a label view
(``ov3d_core.eval.labels.LabelView``); changing the view (protocol, remap, template) never touches geometry.

Decisions where the paper is silent (each is a parameter or documented below):

- **Which boxes take part.** GT: only non-ignored GT (Omni3D ``ignore`` flag) of the evaluated vocabulary
  (``gt_label >= 0``). Ignored GT are excluded rather than matched-and-dropped, so they can neither hold a
  prediction nor be counted as missed. Predictions: those with ``view.keep & view.label >= 0``; optionally also
  ``score >= score_threshold`` (default: none, as the paper states no score cut).
- **Assignment objective.** Maximum total 3D IoU over GT-prediction pairs with IoU >= threshold (``scipy``
  ``linear_sum_assignment``), solved per connected component of the candidate graph. Pairs only exist within an
  image, so this equals solving per image, but skips the solver for the (common) isolated one-to-one pairs.
- **Normalisation.** :meth:`ConfusionMatrix.normalized` divides each row by that GT class's number of *matched*
  boxes, so every non-empty row sums to 1; the optional ``missed`` column (unmatched non-ignored GT) is kept out of
  the normalisation and reported separately.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from ov3d_core.eval.assignment import hungarian_matches
from ov3d_core.eval.constants import CONFUSION_IOU
from ov3d_core.ontology import Ontology, resolve_ontology

__all__ = ["ConfusionMatrix", "SuperCategoryConfusion", "confusion_matrix", "hungarian_matches",
           "super_category_confusion", "super_category_names"]


def _frozen(arr, dtype) -> np.ndarray:
    out = np.array(arr, dtype=dtype, copy=True)
    out.setflags(write=False)
    return out


@dataclass(frozen=True, eq=False)
class ConfusionMatrix:
    """Counts of matched GT (rows) against the label of the prediction they matched (columns).

    Attributes:
        counts: ``(C, C)`` int64; ``counts[i, j]`` = GT of class i matched to a prediction labelled j.
        class_names: the C row/column names (the view's vocabulary, or super-categories after projection).
        threshold: 3D IoU threshold of the assignment.
        missed: ``(C,)`` int64 non-ignored GT of each class left unmatched, or None.
        match_gt: ``(M,)`` int64 GT rows (into the GT BoxSet) of the matched pairs.
        match_pred: ``(M,)`` int64 prediction rows of the matched pairs.
        match_image: ``(M,)`` int64 image ids of the matched pairs.
        match_iou: ``(M,)`` float64 3D IoU of the matched pairs.
        match_gt_label: ``(M,)`` int64 row code (into ``class_names``) of each match.
        match_pred_label: ``(M,)`` int64 column code of each match.
    """

    counts: np.ndarray
    class_names: tuple[str, ...]
    threshold: float
    missed: np.ndarray | None = None
    match_gt: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    match_pred: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    match_image: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    match_iou: np.ndarray = field(default_factory=lambda: np.zeros(0))
    match_gt_label: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    match_pred_label: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def __post_init__(self):
        c = len(self.class_names)
        if self.counts.shape != (c, c):
            raise ValueError(f"ConfusionMatrix.counts: expected shape {(c, c)}, got {self.counts.shape}")
        if self.missed is not None and self.missed.shape != (c,):
            raise ValueError(f"ConfusionMatrix.missed: expected shape {(c,)}, got {self.missed.shape}")
        m = len(self.match_gt)
        for name in ("match_pred", "match_image", "match_iou", "match_gt_label", "match_pred_label"):
            if len(getattr(self, name)) != m:
                raise ValueError(f"ConfusionMatrix.{name}: expected length {m}, got {len(getattr(self, name))}")

    # ----------------------------------------------------------------------------------------------- numbers
    @property
    def n_matched(self) -> int:
        """Number of matched pairs (the sum of all counts)."""
        return int(self.counts.sum())

    @property
    def matched_per_class(self) -> np.ndarray:
        """``(C,)`` matched GT per class (row sums): the normaliser of :meth:`normalized`."""
        return self.counts.sum(axis=1)

    def normalized(self) -> np.ndarray:
        """``(C, C)`` float64 rows divided by the class's matched count; rows of unmatched classes are NaN."""
        rows = self.matched_per_class.astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(rows[:, None] > 0, self.counts / rows[:, None], np.nan)

    def diagonal(self) -> pd.Series:
        """Per-class fraction of matched GT given their own label (NaN where nothing matched)."""
        return pd.Series(np.diag(self.normalized()), index=list(self.class_names), name="diagonal")

    @property
    def accuracy(self) -> float:
        """Fraction of all matched pairs whose predicted label equals the GT class (NaN if none matched)."""
        n = self.n_matched
        return float(np.trace(self.counts) / n) if n else float("nan")

    def _code(self, key: int | str) -> int:
        if isinstance(key, str):
            try:
                return self.class_names.index(key)
            except ValueError:
                raise KeyError(f"unknown class {key!r}") from None
        key = int(key)
        if not -len(self.class_names) <= key < len(self.class_names):
            raise IndexError(f"class index {key} out of range for {len(self.class_names)} classes")
        return key % len(self.class_names)

    def cell_pairs(self, i: int | str, j: int | str) -> pd.DataFrame:
        """The matched pairs behind cell (GT class ``i``, predicted class ``j``), by index or name.

        Returns:
            DataFrame with columns ``gt_row, pred_row, image_id, iou``, highest IoU first.
        """
        sel = np.flatnonzero((self.match_gt_label == self._code(i)) & (self.match_pred_label == self._code(j)))
        sel = sel[np.argsort(-self.match_iou[sel], kind="stable")]
        return pd.DataFrame({"gt_row": self.match_gt[sel], "pred_row": self.match_pred[sel],
                             "image_id": self.match_image[sel], "iou": self.match_iou[sel]})

    def top_confusions(self, k: int | None = 10) -> pd.DataFrame:
        """Off-diagonal cells with count > 0, largest first: ``gt_class, pred_class, count, fraction``."""
        long = self.to_long_frame()
        off = long[(long["gt_class"] != long["pred_class"]) & (long["count"] > 0)]
        off = off.sort_values(["count", "fraction"], ascending=False, kind="stable").reset_index(drop=True)
        return off if k is None else off.head(k)

    # ----------------------------------------------------------------------------------------------- reshaping
    def project(self, mapping: Sequence[str] | Callable[[str], str], names: Sequence[str] | None = None,
                *, drop: Sequence[str] = ()) -> "ConfusionMatrix":
        """Aggregate classes into coarser groups (e.g. super-categories); matches keep their rows for drill-down.

        Args:
            mapping: the group of each class (a sequence aligned with ``class_names``) or a callable name -> group.
            names: group order of the result (default: order of first appearance in ``mapping``).
            drop: groups to remove: their rows, columns, matches and missed counts disappear.
        """
        groups = [mapping(n) for n in self.class_names] if callable(mapping) else list(mapping)
        if len(groups) != len(self.class_names):
            raise ValueError(f"project: expected {len(self.class_names)} group names, got {len(groups)}")
        names = list(dict.fromkeys(groups)) if names is None else list(names)
        names = [n for n in names if n not in set(drop)]
        lookup = {n: k for k, n in enumerate(names)}
        missing = sorted({g for g in groups if g not in lookup and g not in set(drop)})
        if missing:
            raise ValueError(f"project: groups {missing} are not in `names`")
        code = np.array([lookup.get(g, -1) for g in groups], dtype=np.int64)
        g_lab, p_lab = code[self.match_gt_label], code[self.match_pred_label]
        ok = (g_lab >= 0) & (p_lab >= 0)
        counts = np.zeros((len(names), len(names)), np.int64)
        np.add.at(counts, (g_lab[ok], p_lab[ok]), 1)
        missed = None
        if self.missed is not None:
            missed = np.zeros(len(names), np.int64)
            np.add.at(missed, code[code >= 0], self.missed[code >= 0])
        return ConfusionMatrix(
            counts=_frozen(counts, np.int64), class_names=tuple(names), threshold=self.threshold,
            missed=None if missed is None else _frozen(missed, np.int64),
            match_gt=_frozen(self.match_gt[ok], np.int64), match_pred=_frozen(self.match_pred[ok], np.int64),
            match_image=_frozen(self.match_image[ok], np.int64), match_iou=_frozen(self.match_iou[ok], np.float64),
            match_gt_label=_frozen(g_lab[ok], np.int64), match_pred_label=_frozen(p_lab[ok], np.int64))

    def compact(self) -> "ConfusionMatrix":
        """Only the classes with a non-zero row, column or missed count (large vocabularies)."""
        used = (self.counts.sum(0) > 0) | (self.counts.sum(1) > 0)
        if self.missed is not None:
            used |= self.missed > 0
        names = [n for n, u in zip(self.class_names, used) if u]
        return self.project(list(self.class_names), names=names, drop=[n for n, u in zip(self.class_names, used)
                                                                        if not u])

    def to_frame(self, normalize: bool = False, include_missed: bool = True) -> pd.DataFrame:
        """Wide table: index ``gt`` class, one column per predicted class (and ``missed`` when known)."""
        values = self.normalized() if normalize else self.counts
        df = pd.DataFrame(values, index=pd.Index(list(self.class_names), name="gt"),
                          columns=pd.Index(list(self.class_names), name="pred"))
        if include_missed and self.missed is not None:
            df["missed"] = self.missed
        return df

    def to_long_frame(self) -> pd.DataFrame:
        """One row per cell: ``gt_class, pred_class, count, fraction`` (fraction = row-normalised)."""
        c = len(self.class_names)
        names = np.array(self.class_names, dtype=object)
        return pd.DataFrame({"gt_class": np.repeat(names, c), "pred_class": np.tile(names, c),
                             "count": self.counts.ravel(), "fraction": self.normalized().ravel()})

    def to_dict(self) -> dict:
        """JSON-friendly summary (NaN stays NaN)."""
        return {"class_names": list(self.class_names), "threshold": self.threshold,
                "counts": self.counts.tolist(), "normalized": self.normalized().tolist(),
                "missed": None if self.missed is None else self.missed.tolist(),
                "n_matched": self.n_matched, "accuracy": self.accuracy}


def confusion_matrix(pairs, view, gt_label: np.ndarray, gt_ignore: np.ndarray, gt_image: np.ndarray, *,
                     iou_threshold: float = CONFUSION_IOU, include_missed: bool = True,
                     score_threshold: float | None = None) -> ConfusionMatrix:
    """Fine-level confusion matrix from cached pairs and a label view (see the module docstring for the rules).

    Args:
        pairs: ``Pairs`` (uses ``gt``, ``pred``, ``iou3d``).
        view: ``LabelView`` over the predictions (``label``, ``score``, ``keep``, ``vocabulary``).
        gt_label: ``(n_gt,)`` int64 GT codes into ``view.vocabulary`` (-1 = not evaluated).
        gt_ignore: ``(n_gt,)`` bool Omni3D ignore flags.
        gt_image: ``(n_gt,)`` int64 image ids.
        iou_threshold: minimum 3D IoU of a match (inclusive), in (0, 1].
        include_missed: add the per-class count of unmatched non-ignored GT.
        score_threshold: optional minimum prediction score.

    Returns:
        A :class:`ConfusionMatrix` over ``view.vocabulary``.
    """
    if not 0.0 < iou_threshold <= 1.0:
        raise ValueError(f"Expected `iou_threshold` in (0, 1], got {iou_threshold}")
    gt_label = np.asarray(gt_label, np.int64)
    gt_ignore = np.asarray(gt_ignore, bool)
    gt_image = np.asarray(gt_image, np.int64)
    pred_ok = np.asarray(view.keep, bool) & (np.asarray(view.label) >= 0)
    if score_threshold is not None:
        pred_ok &= np.asarray(view.score) >= score_threshold
    gt_ok = (gt_label >= 0) & ~gt_ignore
    p_gt, p_pred = np.asarray(pairs.gt, np.int64), np.asarray(pairs.pred, np.int64)
    p_iou = np.asarray(pairs.iou3d, np.float64)
    cand = np.flatnonzero((p_iou >= iou_threshold) & gt_ok[p_gt] & pred_ok[p_pred])
    picked = cand[hungarian_matches(p_gt[cand], p_pred[cand], p_iou[cand])]
    picked = picked[np.lexsort((p_pred[picked], p_gt[picked]))]
    m_gt, m_pred = p_gt[picked], p_pred[picked]
    c = len(view.vocabulary)
    g_lab, p_lab = gt_label[m_gt], np.asarray(view.label, np.int64)[m_pred]
    counts = np.zeros((c, c), np.int64)
    np.add.at(counts, (g_lab, p_lab), 1)
    missed = None
    if include_missed:
        unmatched = gt_ok.copy()
        unmatched[m_gt] = False
        missed = np.bincount(gt_label[unmatched], minlength=c).astype(np.int64)
    return ConfusionMatrix(
        counts=_frozen(counts, np.int64), class_names=tuple(view.vocabulary), threshold=float(iou_threshold),
        missed=None if missed is None else _frozen(missed, np.int64), match_gt=_frozen(m_gt, np.int64),
        match_pred=_frozen(m_pred, np.int64), match_image=_frozen(gt_image[m_gt], np.int64),
        match_iou=_frozen(p_iou[picked], np.float64), match_gt_label=_frozen(g_lab, np.int64),
        match_pred_label=_frozen(p_lab, np.int64))


# --------------------------------------------------------------------------------------------- super-categories
def super_category_names(ontology=None) -> tuple[str, ...]:
    """Super-category display order of ``ontology`` (default "ov3d-bench"; a name, an ``Ontology`` or a bare rules
    table, see ``ov3d_core.ontology.resolve_ontology``): its super-categories, then its fallback bucket if any."""
    return resolve_ontology(ontology).names


@dataclass(frozen=True, eq=False)
class SuperCategoryConfusion:
    """The fine matrix projected onto super-categories, with the paper's summary numbers.

    Attributes:
        matrix: the super-category :class:`ConfusionMatrix` (``cell_pairs`` works at this level too).
        fine_to_super: super-category of each fine class, aligned with the fine ``class_names``.
        fine_class_names: the fine vocabulary.
        cross_super_share_of_confusions: among matched pairs whose *fine* labels differ, the fraction whose
            super-categories also differ ("how many mistakes leave the coarse category"); NaN if no confusion.
        cross_super_share_of_matches: among *all* matched pairs, the fraction whose super-categories differ
            (pooled over pairs; dominated by frequent classes); NaN if nothing matched.
        mean_off_diagonal: 1 - mean over super-categories of the row-normalised diagonal (class-balanced; the
            reading that fits the paper's Fig. 4, where "15% cross" sits with diagonals from 0.61 to 0.97).
        dropped_other: whether pairs touching the ontology's fallback bucket ("other") were removed before all of
            the above (always False for an ontology without one, such as the paper's).
        ontology: the :class:`~ov3d_core.ontology.Ontology` used (its ``name`` and ``how`` say which, for the table).
    """

    matrix: ConfusionMatrix
    fine_to_super: tuple[str, ...]
    fine_class_names: tuple[str, ...]
    cross_super_share_of_confusions: float
    cross_super_share_of_matches: float
    mean_off_diagonal: float
    dropped_other: bool
    ontology: Ontology = field(default_factory=lambda: resolve_ontology(None))

    @property
    def cross_super_share(self) -> float:
        """Alias of ``cross_super_share_of_confusions`` (the primary definition)."""
        return self.cross_super_share_of_confusions

    def diagonal(self) -> pd.Series:
        """Per super-category fraction of matched GT predicted in the same super-category."""
        return self.matrix.diagonal()

    def to_frame(self, normalize: bool = True) -> pd.DataFrame:
        """The super-category matrix (row-normalised by default) with the ``missed`` column."""
        return self.matrix.to_frame(normalize=normalize)

    def mapping_frame(self) -> pd.DataFrame:
        """Fine class -> super-category, for display and for editing the rules table."""
        return pd.DataFrame({"class": list(self.fine_class_names), "super_category": list(self.fine_to_super)})

    def to_dict(self) -> dict:
        return {"cross_super_share_of_confusions": self.cross_super_share_of_confusions,
                "cross_super_share_of_matches": self.cross_super_share_of_matches,
                "mean_off_diagonal": self.mean_off_diagonal, "dropped_other": self.dropped_other,
                "ontology": self.ontology.name,
                "diagonal": {k: float(v) for k, v in self.diagonal().items()},
                "matrix": self.matrix.to_dict(),
                "fine_to_super": dict(zip(self.fine_class_names, self.fine_to_super))}


def super_category_confusion(cm: ConfusionMatrix, ontology=None, *, drop_other: bool = False
                             ) -> SuperCategoryConfusion:
    """Project a fine confusion matrix onto an ontology's super-categories and summarise cross-category errors.

    Args:
        cm: the fine-level matrix (from :func:`confusion_matrix`).
        ontology: the ``Ontology``, a built-in name ("ov3d-bench", the default, or "ov3d-explorer-10") or a bare
            substring rules table (its categories plus "other"). Every class of ``cm`` must be mapped:
            ``InputError`` naming the ones that are not (an ontology without a fallback bucket).
        drop_other: remove the classes of the fallback bucket ("other"), as in the paper's 9-way view. By default
            the bucket is kept as a row so nothing vanishes silently; it then counts like any super-category.
            Nothing to drop under an ontology without a bucket.
    """
    onto = resolve_ontology(ontology)
    onto.require(cm.class_names)
    fine_to_super = tuple(onto.super_category(n) for n in cm.class_names)
    bucket = onto.fallback if onto.fallback in onto.names else None
    drop = (bucket,) if drop_other and bucket is not None else ()
    names = onto.names
    sup = cm.project(fine_to_super, names=names, drop=drop)
    code = {n: k for k, n in enumerate(names)}
    s = np.array([code[x] for x in fine_to_super], np.int64)
    gs, ps = s[cm.match_gt_label], s[cm.match_pred_label]
    keep = np.ones(len(gs), bool)
    if drop:
        keep = (gs != code[bucket]) & (ps != code[bucket])
    fine_diff = (cm.match_gt_label != cm.match_pred_label) & keep
    super_diff = (gs != ps) & keep
    n_conf, n_all = int(fine_diff.sum()), int(keep.sum())
    diag = np.diag(sup.normalized())
    return SuperCategoryConfusion(
        matrix=sup, fine_to_super=fine_to_super, fine_class_names=tuple(cm.class_names),
        cross_super_share_of_confusions=float(super_diff.sum() / n_conf) if n_conf else float("nan"),
        cross_super_share_of_matches=float(super_diff.sum() / n_all) if n_all else float("nan"),
        mean_off_diagonal=float(1.0 - np.nanmean(diag)) if np.isfinite(diag).any() else float("nan"),
        dropped_other=bool(drop), ontology=onto)
