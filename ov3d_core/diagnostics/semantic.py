"""Confusion cost weighted by semantic distance: confusing a sofa for a chair should cost less than a toilet for a
chair. Pure functions of a confusion-count matrix (rows = GT class, columns = predicted label, as
``ov3d_core.diagnostics.confusion.ConfusionMatrix``) and a class-by-class cost.

Costs:

- :func:`embedding_cost`: ``cost(i, j) = 1 − cos(e_i, e_j)`` from a text-embedding matrix (one row per class); the
  diagonal is 0. Values lie in [0, 2] (1 for orthogonal embeddings).
- :func:`tree_cost`: a two-level tree from a super-category ontology (``ov3d_core.ontology``, default the paper's
  "ov3d-bench"): 0 for the same class, 0.5 for two classes of the same super-category, 1 otherwise. Classes in an
  ontology's catch-all bucket ("other" of "ov3d-explorer-10") are *not* considered siblings of each other (cost 1),
  since "other" is not a semantic group.

Numbers (:func:`semantic_confusion_cost`), per GT class and overall:

- ``off_diagonal_share`` = Σ_{j≠i} counts(i, j) / Σ_j counts(i, j): the unweighted confusion rate of matched GT;
- ``weighted_error`` = Σ_{j≠i} counts(i, j)·cost(i, j) / Σ_{j≠i} counts(i, j): the mean semantic cost of a confusion
  (NaN when there is none);
- ``cost_per_match`` = Σ_{j≠i} counts(i, j)·cost(i, j) / Σ_j counts(i, j): the two combined (expected cost per matched
  GT).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ov3d_core.ontology import resolve_ontology

__all__ = ["cosine_similarity_matrix", "embedding_cost", "tree_cost", "SemanticConfusion",
           "semantic_confusion_cost"]


def cosine_similarity_matrix(embeddings) -> np.ndarray:
    """``(C, C)`` cosine similarity of the rows of ``embeddings (C, D)`` (zero rows: similarity 0 with others)."""
    E = np.asarray(embeddings, np.float64)
    if E.ndim != 2:
        raise ValueError(f"embeddings: expected a (C, D) matrix, got shape {E.shape}")
    n = np.linalg.norm(E, axis=1, keepdims=True)
    U = np.divide(E, n, out=np.zeros_like(E), where=n > 0)
    S = np.clip(U @ U.T, -1.0, 1.0)
    np.fill_diagonal(S, 1.0)
    return S


def embedding_cost(embeddings) -> np.ndarray:
    """``(C, C)`` cost 1 − cosine similarity of the class text embeddings; zero diagonal."""
    C = 1.0 - cosine_similarity_matrix(embeddings)
    np.fill_diagonal(C, 0.0)
    return C


def tree_cost(class_names, ontology=None, *, sibling_cost: float = 0.5) -> np.ndarray:
    """``(C, C)`` tree distance: 0 same class, ``sibling_cost`` (0.5) same super-category (not the ontology's
    fallback bucket), 1 else. ``ontology``: an ``Ontology``, a built-in name or a bare rules table (default
    "ov3d-bench"); ``InputError`` naming the classes it does not map."""
    onto = resolve_ontology(ontology)
    names = [str(n) for n in class_names]
    onto.require(names)
    sup = np.asarray([onto.super_category(n) for n in names], dtype=object)
    same = (sup[:, None] == sup[None, :]) & (sup[:, None] != onto.fallback)
    C = np.where(same, sibling_cost, 1.0)
    np.fill_diagonal(C, 0.0)
    return C


@dataclass(frozen=True, eq=False)
class SemanticConfusion:
    """Semantic-distance-weighted confusion summary.

    Attributes:
        per_class: one row per GT class: ``category``, ``n_matched``, ``n_confused``, ``off_diagonal_share``,
            ``weighted_error``, ``cost_per_match``, ``top_confusion`` (most frequent wrong label) and its cost.
        overall: the same three numbers over all matched GT (``n_matched``, ``n_confused`` too).
        cost: the ``(C, C)`` cost used.
    """

    per_class: pd.DataFrame
    overall: dict
    cost: np.ndarray


def semantic_confusion_cost(confusion, cost, class_names=None) -> SemanticConfusion:
    """Weighted and unweighted confusion numbers (module docstring).

    Args:
        confusion: a ``ConfusionMatrix`` (its ``counts`` and ``class_names``) or a ``(C, C)`` count array with rows
            = GT class, columns = predicted label.
        cost: ``(C, C)`` cost, e.g. :func:`embedding_cost` or :func:`tree_cost` (only off-diagonal entries used).
        class_names: names when ``confusion`` is an array.
    """
    if hasattr(confusion, "counts"):
        counts = np.asarray(confusion.counts, np.float64)
        names = list(confusion.class_names) if class_names is None else list(class_names)
    else:
        counts = np.asarray(confusion, np.float64)
        names = list(class_names) if class_names is not None else [str(i) for i in range(len(counts))]
    cost = np.asarray(cost, np.float64)
    C = len(counts)
    if counts.shape != (C, C) or cost.shape != (C, C) or len(names) != C:
        raise ValueError(f"semantic_confusion_cost: expected counts and cost of shape ({C}, {C}) and {C} names, got "
                         f"{counts.shape}, {cost.shape}, {len(names)}")
    off = counts * (1.0 - np.eye(C))
    weighted = (off * cost).sum(axis=1)
    n_match = counts.sum(axis=1)
    n_conf = off.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(n_match > 0, n_conf / np.where(n_match > 0, n_match, 1), np.nan)
        werr = np.where(n_conf > 0, weighted / np.where(n_conf > 0, n_conf, 1), np.nan)
        cpm = np.where(n_match > 0, weighted / np.where(n_match > 0, n_match, 1), np.nan)
    top = np.where(n_conf > 0, np.argmax(off, axis=1), -1)
    per_class = pd.DataFrame({
        "category": names, "n_matched": n_match.astype(np.int64), "n_confused": n_conf.astype(np.int64),
        "off_diagonal_share": share, "weighted_error": werr, "cost_per_match": cpm,
        "top_confusion": [names[t] if t >= 0 else None for t in top],
        "top_confusion_cost": [cost[i, t] if t >= 0 else np.nan for i, t in enumerate(top)]})
    tm, tc, tw = n_match.sum(), n_conf.sum(), weighted.sum()
    overall = {"n_matched": int(tm), "n_confused": int(tc),
               "off_diagonal_share": float(tc / tm) if tm else float("nan"),
               "weighted_error": float(tw / tc) if tc else float("nan"),
               "cost_per_match": float(tw / tm) if tm else float("nan")}
    return SemanticConfusion(per_class=per_class, overall=overall, cost=cost)
