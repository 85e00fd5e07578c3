"""Label views: which label and score each predicted box carries, and which boxes are kept.

Localization is fixed, labels are not. A protocol filter, a SigLIP remapping, a class subset or a super-category
projection produces a new :class:`LabelView` over the same predictions; the GT x prediction geometry (``Pairs``) is
never recomputed. Labels are int64 codes into a vocabulary tuple; ``-1`` means "not evaluated" (out of vocabulary).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["LabelView", "label_view_from_names", "gt_codes", "encode_names"]


def _readonly(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


@dataclass(frozen=True, eq=False)
class LabelView:
    """Labels, scores and a keep mask for the ``n_pred`` rows of one prediction ``BoxSet``.

    Attributes:
        label: ``(n_pred,)`` int64 codes into ``vocabulary``; ``-1`` = not evaluated (out of vocabulary).
        score: ``(n_pred,)`` float64 confidences (finite).
        keep: ``(n_pred,)`` bool; False rows take no part in AP or recall (protocol filter, score threshold, ...).
        vocabulary: the category names the codes index.
    """

    label: np.ndarray
    score: np.ndarray
    keep: np.ndarray
    vocabulary: tuple[str, ...]

    def __post_init__(self):
        label = np.asarray(self.label)
        score = np.asarray(self.score, dtype=np.float64)
        keep = np.asarray(self.keep, dtype=bool)
        n = label.shape[0] if label.ndim == 1 else -1
        if label.ndim != 1 or not (np.issubdtype(label.dtype, np.integer) or n == 0):
            raise ValueError(f"LabelView.label: expected a 1-D integer array, got {label.dtype} {label.shape}")
        if score.shape != (n,) or keep.shape != (n,):
            raise ValueError(f"LabelView: expected score and keep of shape ({n},), got {score.shape} and {keep.shape}")
        vocab = tuple(str(v) for v in self.vocabulary)
        if n and (label.min() < -1 or label.max() >= len(vocab)):
            raise ValueError(f"LabelView.label: expected codes in [-1, {len(vocab)}), "
                             f"got [{label.min()}, {label.max()}]")
        if n and not np.isfinite(score).all():
            raise ValueError("LabelView.score: expected finite scores, got NaN or inf")
        object.__setattr__(self, "label", _readonly(label.astype(np.int64, copy=True)))
        object.__setattr__(self, "score", _readonly(score.copy()))
        object.__setattr__(self, "keep", _readonly(keep.copy()))
        object.__setattr__(self, "vocabulary", vocab)

    def __len__(self) -> int:
        return len(self.label)

    @property
    def n_categories(self) -> int:
        return len(self.vocabulary)

    @property
    def codes(self) -> np.ndarray:
        """``(n_pred,)`` int64: the label where kept and in vocabulary, else -1 (what AP evaluates)."""
        return np.where(self.keep, self.label, -1)

    @property
    def evaluated(self) -> np.ndarray:
        """``(n_pred,)`` bool: kept and in vocabulary."""
        return self.keep & (self.label >= 0)

    def with_keep(self, keep: np.ndarray) -> "LabelView":
        """A new view with ``keep`` replaced (e.g. a score threshold or a target-aware filter)."""
        return LabelView(self.label, self.score, keep, self.vocabulary)

    def filtered(self, mask: np.ndarray) -> "LabelView":
        """A new view keeping only rows that are kept here and where ``mask`` is True."""
        return LabelView(self.label, self.score, self.keep & np.asarray(mask, bool), self.vocabulary)

    def relabel(self, label: np.ndarray, score: np.ndarray | None = None,
                vocabulary: tuple[str, ...] | None = None) -> "LabelView":
        """A new view with new codes (and optionally new scores and vocabulary); ``keep`` is kept."""
        return LabelView(label, self.score if score is None else score, self.keep,
                         self.vocabulary if vocabulary is None else vocabulary)

    def to_frame(self) -> pd.DataFrame:
        names = np.asarray(self.vocabulary + ("",), dtype=object)[self.label]  # -1 -> ""
        return pd.DataFrame({"label": self.label, "category": np.where(self.label >= 0, names, None),
                             "score": self.score, "keep": self.keep})


def encode_names(names, vocabulary) -> np.ndarray:
    """Codes ``(N,)`` int64 of category names in ``vocabulary`` (-1 outside), hash-based (no sorting)."""
    names = np.asarray(names, dtype=object).reshape(-1)
    vocab = pd.Index(list(vocabulary), dtype=object)
    if not vocab.is_unique:
        raise ValueError(f"vocabulary: expected unique names, got duplicates {sorted(vocab[vocab.duplicated()])}")
    if len(names) == 0:
        return np.zeros(0, np.int64)
    # An object Index: pandas 3 would otherwise infer its string dtype and copy every name into Arrow first
    # (0.70 s instead of 0.10 s for 2M names).
    return vocab.get_indexer(pd.Index(names, dtype=object, copy=False)).astype(np.int64)


def gt_codes(gt_categories, vocabulary) -> np.ndarray:
    """Codes ``(n_gt,)`` int64 of GT category names in ``vocabulary`` (-1 outside: not evaluated)."""
    return encode_names(gt_categories, vocabulary)


def label_view_from_names(categories, scores, vocabulary, keep=None) -> LabelView:
    """A :class:`LabelView` from per-prediction category names and scores.

    Args:
        categories: ``(n_pred,)`` category names (e.g. ``BoxSet.category``); names outside ``vocabulary`` get -1.
        scores: ``(n_pred,)`` confidences.
        vocabulary: the evaluated category names.
        keep: optional ``(n_pred,)`` bool mask (default: all True).
    """
    vocabulary = tuple(str(v) for v in vocabulary)
    label = encode_names(categories, vocabulary)
    keep = np.ones(len(label), bool) if keep is None else np.asarray(keep, bool)
    return LabelView(label, np.asarray(scores, np.float64), keep, vocabulary)
