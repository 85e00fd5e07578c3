"""Training-free VLM remapping (paper, "Training-Free VLM Remapping"): pure functions on embeddings.

Each predicted box keeps its geometry. Its crop embedding is compared with the text embeddings of the dataset's
category names; the box takes the top-1 category if that category's score reaches ``theta`` and is discarded
otherwise. Scores are the encoder's calibrated probability when it has one (SigLIP: sigmoid with the model's logit
scale and bias), else the raw cosine (CLIP, the demo proxy).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ov3d_core.eval.labels import LabelView

SCORE_MODES = ("detector", "similarity", "product")


@dataclass(frozen=True, eq=False)
class Ranking:
    """The threshold-independent part of remapping ``n`` boxes onto ``C`` classes (cached by the live path: a
    threshold or score-mode change reuses it).

    Attributes:
        label: ``(n,)`` int64 top-1 class index (ties: the lowest index); -1 where the crop is not valid or C = 0.
        top1: ``(n,)`` float64 top-1 value (probability if ``calibrated`` else cosine); NaN where not valid.
        margin: ``(n,)`` float64 top-1 minus top-2 value; NaN where not valid or C < 2.
        sim: ``(n, C)`` float32 cosines.
        valid: ``(n,)`` bool rows with a crop embedding.
        calibrated: values are probabilities from the encoder's calibrated sigmoid.
    """

    label: np.ndarray
    top1: np.ndarray
    margin: np.ndarray
    sim: np.ndarray
    valid: np.ndarray
    calibrated: bool
    probability_fn: Callable | None = None

    @property
    def full(self) -> np.ndarray:
        """``(n, C)`` float32 values for every class (probabilities if calibrated, else cosines); NaN rows where the
        crop is not valid. Computed on first use."""
        cached = self.__dict__.get("_full")
        if cached is None:
            vals = self.sim if self.probability_fn is None else self.probability_fn(self.sim)
            cached = np.asarray(vals, dtype=np.float32)
            if not self.valid.all():
                cached = np.where(self.valid[:, None], cached, np.float32(np.nan))
            object.__setattr__(self, "_full", cached)
        return cached

    def rank_of(self, class_index: np.ndarray) -> np.ndarray:
        """1-based rank of the given class (e.g. the matched GT class) for every box (ties share the better rank);
        0 where the crop is invalid or the class index is -1."""
        ci = np.asarray(class_index, dtype=np.int64).reshape(-1)
        n, C = self.sim.shape
        if C == 0:
            return np.zeros(len(ci), np.int64)
        ok = (ci >= 0) & self.valid
        v = self.sim[np.arange(n), np.where(ok, ci, 0)]
        rank = (self.sim > v[:, None]).sum(axis=1) + 1
        return np.where(ok, rank, 0).astype(np.int64)


@dataclass(frozen=True, eq=False)
class RemapResult:
    """Per-box outcome of remapping ``n`` boxes onto ``C`` classes.

    Attributes:
        label: ``(n,)`` int64 top-1 class index (ties: the lowest index); -1 where the crop is not valid or C = 0.
        keep: ``(n,)`` bool: valid crop and top-1 value >= theta.
        score: ``(n,)`` float64 confidence after fusion (see ``score_mode``); defined for discarded boxes too.
        top1: ``(n,)`` float64 top-1 value (probability or cosine); NaN where the crop is not valid.
        margin: ``(n,)`` float64 top-1 minus top-2 value; NaN where invalid or C < 2.
        ranking: the threshold-independent :class:`Ranking` (``full`` values, ``rank_of``).
        theta, score_mode, calibrated: the settings that produced it (``calibrated``: values are probabilities).
    """

    label: np.ndarray
    keep: np.ndarray
    score: np.ndarray
    top1: np.ndarray
    margin: np.ndarray
    ranking: Ranking
    theta: float
    score_mode: str
    calibrated: bool

    def __len__(self) -> int:
        return len(self.label)

    @property
    def full(self) -> np.ndarray:
        """``(n, C)`` float32 scores for every class, for rankings and median-rank analyses (see ``Ranking.full``)."""
        return self.ranking.full

    def rank_of(self, class_index: np.ndarray) -> np.ndarray:
        return self.ranking.rank_of(class_index)


def similarities(crop_emb: np.ndarray, text_emb: np.ndarray) -> np.ndarray:
    """Cosine similarities ``(n, C)`` float32 of L2-normalised crop ``(n, d)`` and text ``(C, d)`` embeddings."""
    a = np.asarray(crop_emb, dtype=np.float32)
    b = np.asarray(text_emb, dtype=np.float32)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
        raise ValueError(f"similarities: expected (n, d) and (C, d), got {a.shape} and {b.shape}")
    return a @ b.T


def rank(sim: np.ndarray, *, encoder_probability_fn: Callable[[np.ndarray], np.ndarray | None] | None = None,
         valid: np.ndarray | None = None) -> Ranking:
    """Top-1 class, its value and the margin to the runner-up for cosines ``sim (n, C)``.

    ``encoder_probability_fn`` (e.g. ``encoder.probability``) maps cosines to calibrated probabilities; it must be
    non-decreasing (SigLIP's sigmoid is), so the ranking is taken on the cosines and only the top-2 values are
    mapped. When it is None or returns None (uncalibrated encoders), values are the cosines.
    """
    sim = np.asarray(sim, dtype=np.float32)
    if sim.ndim != 2:
        raise ValueError(f"rank: expected (n, C) similarities, got shape {sim.shape}")
    n, C = sim.shape
    valid = np.ones(n, bool) if valid is None else np.asarray(valid, dtype=bool).reshape(-1).copy()
    if len(valid) != n:
        raise ValueError(f"rank: {n} similarity rows but {len(valid)} validity flags")
    if n and C:
        valid &= np.isfinite(sim).all(axis=1)
    fn = encoder_probability_fn
    calibrated = fn is not None and fn(np.zeros(1, np.float32)) is not None
    if C == 0 or n == 0:
        nan = np.full(n, np.nan)
        return Ranking(np.full(n, -1, np.int64), nan, nan.copy(), sim, valid, calibrated, fn if calibrated else None)
    rows = np.arange(n)
    label = np.argmax(sim, axis=1).astype(np.int64)  # first maximum: ties go to the lowest index
    top = np.empty((n, 2), np.float64)
    top[:, 0] = sim[rows, label]
    if C >= 2:
        rest = sim.copy()
        rest[rows, label] = -np.inf
        top[:, 1] = rest.max(axis=1)
    else:
        top[:, 1] = np.nan
    if calibrated:
        top = np.asarray(fn(top), dtype=np.float64)
    top1, margin = top[:, 0].copy(), top[:, 0] - top[:, 1]
    label[~valid] = -1
    top1[~valid] = np.nan
    margin[~valid] = np.nan
    return Ranking(label, top1, margin, sim, valid, calibrated, fn if calibrated else None)


def decide(ranking: Ranking, det_scores: np.ndarray, *, theta: float, score_mode: str = "detector") -> RemapResult:
    """Apply the threshold and the score fusion to a :class:`Ranking` (cheap: O(n))."""
    if score_mode not in SCORE_MODES:
        raise ValueError(f"score_mode must be one of {SCORE_MODES}, got {score_mode!r}")
    det = np.asarray(det_scores, dtype=np.float64).reshape(-1)
    n = len(ranking.label)
    if len(det) != n:
        raise ValueError(f"remap: {n} similarity rows but {len(det)} detector scores")
    valid = ranking.valid
    top1 = ranking.top1
    with np.errstate(invalid="ignore"):
        keep = valid & (top1 >= theta)
    if score_mode == "detector":
        score = det.copy()
    elif score_mode == "similarity":
        score = np.where(valid, top1, 0.0)
    else:
        score = det * np.where(valid, np.clip(top1, 0.0, None), 0.0)
    return RemapResult(label=ranking.label, keep=keep, score=score.astype(np.float64), top1=top1,
                       margin=ranking.margin, ranking=ranking, theta=float(theta), score_mode=score_mode,
                       calibrated=ranking.calibrated)


def remap(sim: np.ndarray, det_scores: np.ndarray, *, theta: float,
          encoder_probability_fn: Callable[[np.ndarray], np.ndarray | None] | None = None,
          score_mode: str = "detector", valid: np.ndarray | None = None) -> RemapResult:
    """Remap boxes with cosine similarities ``sim (n, C)`` and detector scores ``(n,)``: :func:`rank` then
    :func:`decide`.

    Args:
        theta: keep a box when its top-1 value reaches it (probability if calibrated, else cosine).
        encoder_probability_fn: e.g. ``encoder.probability``; when it returns an array, values are probabilities,
            when it is None or returns None (uncalibrated encoders), values are the cosines.
        score_mode: "detector" keeps the detector score, "similarity" uses the top-1 value, "product" multiplies
            them (a negative cosine counts as 0).
        valid: ``(n,)`` rows that have a crop embedding (others: label -1, never kept).
    """
    if score_mode not in SCORE_MODES:
        raise ValueError(f"score_mode must be one of {SCORE_MODES}, got {score_mode!r}")
    return decide(rank(sim, encoder_probability_fn=encoder_probability_fn, valid=valid), det_scores, theta=theta,
                  score_mode=score_mode)


def remap_embeddings(crop_emb: np.ndarray, text_emb: np.ndarray, det_scores: np.ndarray, *, theta: float,
                     encoder=None, score_mode: str = "detector", valid: np.ndarray | None = None) -> RemapResult:
    """:func:`similarities` then :func:`remap`, using ``encoder.probability`` when the encoder is calibrated."""
    fn = encoder.probability if encoder is not None and getattr(encoder, "has_calibrated_bias", False) else None
    return remap(similarities(crop_emb, text_emb), det_scores, theta=theta, encoder_probability_fn=fn,
                 score_mode=score_mode, valid=valid)


def to_label_view(result: RemapResult, vocabulary, *, class_names=None):
    """The remapped labels as an ``ov3d_core.eval.labels.LabelView`` over the dataset ``vocabulary``.

    ``class_names`` is the class list the text embeddings were built from (default: the vocabulary itself); labels
    are translated into vocabulary codes by name, -1 where a name is not in the vocabulary. Geometry is untouched:
    only labels, scores and the keep mask change.
    """
    vocabulary = tuple(vocabulary)
    label = np.asarray(result.label, dtype=np.int64)
    if class_names is not None and tuple(class_names) != vocabulary:
        index = {name: i for i, name in enumerate(vocabulary)}
        lut = np.array([index.get(name, -1) for name in class_names] + [-1], dtype=np.int64)
        label = lut[np.where(label >= 0, label, len(class_names))]
    keep = result.keep & (label >= 0)
    return LabelView(label, np.asarray(result.score, dtype=np.float64), keep, vocabulary)
