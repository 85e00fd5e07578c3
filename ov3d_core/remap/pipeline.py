"""Glue between the data model and the remapping parts: embedding a run, the live re-scoring object the app and the
CLI use, and the remapped ``Run`` (a run's crop inputs: ``ov3d_core.remap.sources``).

The live path: crop embeddings are computed once (``embed_run``, on disk); then :class:`LiveRemapper` re-scores a
template or threshold change with one matrix product (cached per template) and a top-1 pass, no encoder call except
the text side of a template it has not seen (itself cached in memory and on disk).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ov3d_core.memo import Memo
from ov3d_core.model import Run
from ov3d_core.remap.cache import CropEmbeddings, EmbeddingStore, TextEmbeddingCache, class_text_embeddings
from ov3d_core.remap.engines.local import embed_local
from ov3d_core.remap.remap import Ranking, RemapResult, decide, rank, similarities, to_label_view
from ov3d_core.remap.templates import Template, resolve_templates


def embed_run(store: EmbeddingStore, dataset, run, encoder, *, crops_json=None, pad: float = 0.0,
              min_size: float = 8, chunk_size: int = 256, progress: bool = True) -> CropEmbeddings:
    """Crop embeddings of a run: loaded from ``store`` when present and current, else computed in this process
    (resumable; ``ov3d_core.remap.engines`` has the cluster engine). The entry's encoder timing gets the dataset's
    image count (:func:`record_timing`)."""
    rep = embed_local(store, dataset, run, encoder, crops_json=crops_json, pad=pad, min_size=min_size,
                      chunk_size=chunk_size, progress=progress)
    record_timing(store, dataset, run, rep.encoder_key, engine=rep.engine)
    return rep.embeddings


def record_timing(store: EmbeddingStore, dataset, run, encoder_key: str, *, engine: str = "local") -> dict | None:
    """Complete the cached entry's encoder timing with the number of images of ``dataset`` (the denominator of ms
    per image: the run is evaluated on every image, with or without a crop) and the engine; returns the timing
    (``ov3d_core.remap.cache.timing_summary``), or None when the entry was not timed (the Ray engine)."""
    return store.annotate_timing(dataset.name, run.name, encoder_key, images=len(dataset.images), engine=engine)


def _template_key(templates: Sequence[Template]) -> tuple:
    return tuple((t.id, t.text) for t in templates)


class LiveRemapper:
    """Re-scores one run for any template choice and threshold, from cached crop embeddings.

    Args:
        embeddings: the run's crop embeddings (``embed_run`` / ``EmbeddingStore.load``).
        records: the run's prediction record ids, in prediction row order (``run.pred.record``).
        det_scores: the run's detector scores (``run.pred.score``).
        encoder: the encoder that made the embeddings (its text side encodes prompts; its probability, if any,
            calibrates scores).
        class_names: the target category set (the dataset vocabulary).
    """

    def __init__(self, embeddings: CropEmbeddings, records: np.ndarray, det_scores: np.ndarray, encoder,
                 class_names: Sequence[str], *, text_cache: TextEmbeddingCache | None = None,
                 templates: Sequence[Template] | None = None, max_cached: int = 8):
        if embeddings.encoder_key != encoder.cache_key:
            raise ValueError(f"embeddings were made by {embeddings.encoder_key!r}, not {encoder.cache_key!r}")
        rows, found = embeddings.rows_for(records)
        self.valid = found & np.asarray(embeddings.valid)[rows]
        full = embeddings.float32()
        same = len(rows) == len(full) and np.array_equal(rows, np.arange(len(full)))
        self.emb = full if same else full[rows]  # no 300 MB copy when the run's rows are the cache's rows
        self.det_scores = np.asarray(det_scores, dtype=np.float64)
        self.encoder = encoder
        self.class_names = tuple(class_names)
        self.text_cache = text_cache
        self.templates = templates
        self._rankings: Memo[tuple, Ranking] = Memo(max_cached)

    def resolve(self, template) -> list[Template]:
        return resolve_templates(template, self.templates)

    def text_embeddings(self, template) -> np.ndarray:
        return class_text_embeddings(self.encoder, self.resolve(template), self.class_names, self.text_cache)

    def ranking(self, template) -> Ranking:
        """Top-1 classes and values for a template spec (id, group, literal, list), cached per template set: a
        threshold or score-mode change costs O(n), a template change one matrix product."""
        ts = self.resolve(template)

        def compute() -> Ranking:
            text = class_text_embeddings(self.encoder, ts, self.class_names, self.text_cache)
            fn = self.encoder.probability if getattr(self.encoder, "has_calibrated_bias", False) else None
            return rank(similarities(self.emb, text), encoder_probability_fn=fn, valid=self.valid)

        return self._rankings.get(_template_key(ts), compute)

    def warm(self, specs: Sequence = ("U1", "U2", "U3", "U4", "U5", "S1", "S2", "S3", "S4", "S5", "O1", "O2", "O3",
                                      "O4", "O5", "underdetailed", "standard", "overdetailed")) -> None:
        """Precompute rankings for several template specs (e.g. in a background thread after loading), so that
        switching between them is O(n) even for very large runs. Memory: n x C float32 per spec."""
        self._rankings.resize(max(self._rankings.max_items, len(specs)))
        for spec in specs:
            self.ranking(spec)

    def similarities(self, template) -> np.ndarray:
        """``(n_pred, C)`` cosines for a template spec."""
        return self.ranking(template).sim

    def result(self, template, theta: float, score_mode: str = "detector") -> RemapResult:
        return decide(self.ranking(template), self.det_scores, theta=theta, score_mode=score_mode)

    def clear(self) -> None:
        """Forget cached rankings (text embeddings stay in the text cache)."""
        self._rankings.clear()

    def label_view(self, template, theta: float, score_mode: str = "detector", vocabulary=None):
        res = self.result(template, theta, score_mode)
        return to_label_view(res, self.class_names if vocabulary is None else vocabulary,
                             class_names=self.class_names)


def remapped_run(run, result: RemapResult, class_names: Sequence[str], *, name: str | None = None,
                 keep_discarded: bool = False):
    """A new ``Run`` whose predictions carry the remapped category and score; discarded boxes are dropped unless
    ``keep_discarded``. Geometry is copied unchanged. ``data["remap_top1"]`` / ``["remap_margin"]`` are added."""
    names = np.asarray(list(class_names) + [""], dtype=object)
    label = np.asarray(result.label)
    cat = names[np.where(label >= 0, label, len(class_names))]
    cat = np.where(label >= 0, cat, run.pred.category)
    data = dict(run.pred.data)
    data["remap_top1"] = np.nan_to_num(result.top1, nan=0.0)
    data["remap_margin"] = np.nan_to_num(result.margin, nan=0.0, posinf=0.0)
    data["remap_keep"] = np.asarray(result.keep, bool)
    if "in_vocab" in data:
        data["in_vocab"] = np.asarray(result.keep, bool)
    pred = run.pred.with_(category=cat.astype(object), score=np.asarray(result.score, np.float64), data=data)
    if not keep_discarded:
        pred = pred[np.asarray(result.keep, bool)]
    meta = {**run.meta, "remapped_from": run.name, "remap_theta": result.theta, "remap_score_mode": result.score_mode}
    return Run(name=name or f"{run.name}*", dataset=run.dataset, pred=pred, sources=(), meta=meta)
