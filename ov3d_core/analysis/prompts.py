"""Remapping and prompts, composed for a view: the remap encoder and live remapper of a run, the template table
(in this process or on Ray), prompt sensitivity (Table 8), label flips, PCR / PLC (Pro-Bench), FG-OVD label ranks
and vocabulary curve, and calibrated acceptance."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from ov3d_core.analysis.view import DEFAULT_TEMPLATES, RemapSpec, View, score_key, view_error
from ov3d_core.diagnostics.calibration import calibrated_acceptance_from_remap
from ov3d_core.diagnostics.consistency import prompt_consistency_from_inputs
from ov3d_core.diagnostics.fgovd import gt_label_ranks, median_rank, vocabulary_size_curve
from ov3d_core.diagnostics.prompts import label_flips, prompt_sensitivity
from ov3d_core.diagnostics.semantic import cosine_similarity_matrix
from ov3d_core.errors import InputError
from ov3d_core.eval.constants import CONFUSION_IOU, RECALL_KEY
from ov3d_core.remap import cache, pipeline, templates as template_sets
from ov3d_core.remap.encoders import make_encoder
from ov3d_core.remap.engines import ENGINES, embed

__all__ = ["Prompts"]

_TEMPLATE_COLUMNS = ["AP3D", "AP3D@25", RECALL_KEY, "n_kept"]

_encoders: dict = {}
_encoders_lock = threading.Lock()


def _shared_encoder(spec: str, options: Mapping[str, Any]):
    """One encoder per process and spec (the model is loaded once, whichever Analysis asks)."""
    with _encoders_lock:
        if spec not in _encoders:
            _encoders[spec] = make_encoder(spec, **{k: v for k, v in options.items() if v is not None})
        return _encoders[spec]


class Prompts:
    """Mixin of :class:`~ov3d_core.analysis.Analysis`: remapping and the prompt diagnostics of a view."""

    def encoder(self, spec: str):
        """The remap encoder of a spec (one per process and spec: loads torch/transformers on first use)."""
        return _shared_encoder(spec, self.encoder_options)

    def remapper(self, dataset: str, run: str, remap: "RemapSpec | str", *, progress: bool = False):
        """A ``LiveRemapper`` over the run's crop embeddings (computed once, then read from the cache on disk).
        ``remap`` is a :class:`RemapSpec` (or an encoder spec string: default crops and templates)."""
        spec = remap if isinstance(remap, RemapSpec) else RemapSpec(encoder=remap)

        def compute():
            b = self.benchmark
            ds, r = b.dataset(dataset), b.run(run, dataset)
            enc = self.encoder(spec.encoder)
            store = cache.EmbeddingStore(self.embedding_dir)
            emb = pipeline.embed_run(store, ds, r, enc, crops_json=b.run_spec(run, dataset).crops, pad=spec.pad,
                                     min_size=spec.min_size, progress=progress)
            text_cache = cache.TextEmbeddingCache(Path(b.config.cache_dir) / "text")
            return pipeline.LiveRemapper(emb, r.pred.record, r.pred.score, enc, ds.vocabulary, text_cache=text_cache,
                                         templates=template_sets.load_templates(spec.templates_file))

        return self._memoised("remapper", spec.embedding_key(dataset, run), compute)

    def remappable_runs(self, dataset: str, encoder: str) -> list[str]:
        """Runs the prompt lab can remap: with a crops file (the demo's caption proxy) or any run (pixel encoders)."""
        runs = self.runs(dataset)
        if encoder == "proxy":
            return [r for r in runs if self.benchmark.run_spec(r, dataset).crops is not None]
        return runs

    def remap_result(self, view: View):
        """The ``RemapResult`` of ``view.remap`` (labels before the class subset; ``keep`` = the θ rule)."""
        if view.remap is None:
            raise view_error("remap", "a RemapSpec", None)
        rm = self.remapper(view.dataset, self._need_run(view), view.remap)
        return rm.result(view.remap.template, self.theta(view), view.remap.score_mode)

    def class_text_embeddings(self, view: View) -> np.ndarray:
        """``(C, D)`` text embeddings of the dataset's classes under the view's template (needs ``view.remap``)."""
        if view.remap is None:
            raise view_error("remap", "a RemapSpec (the text encoder gives the class embeddings)", None)
        rm = self.remapper(view.dataset, self._need_run(view), view.remap)
        return rm.text_embeddings(view.remap.template)

    def template_labels(self, view: View, templates: Sequence[str] = DEFAULT_TEMPLATES) -> pd.DataFrame:
        """``template`` (its id, or its text for a custom template, or the spec of an ensemble), ``group`` and
        ``text`` of each template spec (no scoring)."""
        if view.remap is None:
            raise view_error("remap", "a RemapSpec (encoder, θ, score mode)", None)
        rm = self.remapper(view.dataset, self._need_run(view), view.remap)
        rows = []
        for spec in templates:
            ts = rm.resolve(spec)
            one = ts[0] if len(ts) == 1 else None
            rows.append({"template": (one.text if one.group == "custom" else one.id) if one else spec,
                         "group": ts[0].group if len({t.group for t in ts}) == 1 else "ensemble",
                         "text": ts[0].text if len(ts) == 1 else " | ".join(t.text for t in ts)})
        return pd.DataFrame(rows, columns=["template", "group", "text"])

    def template_scores(self, view: View, templates: Sequence[str] = DEFAULT_TEMPLATES, *, engine: str = "local",
                        address: str | None = None) -> pd.DataFrame:
        """One row per template: template, group, text, AP3D, AP3D@25 (percent), recall3D@15, n_kept — the run
        remapped under each template at the view's θ and scored under its protocol. ``engine="ray"`` computes it
        on Ray (:meth:`template_scores_many`): the same table."""
        return self.template_scores_many([view], templates, engine=engine, address=address)[0]

    def template_scores_many(self, views: Sequence[View], templates: Sequence[str] = DEFAULT_TEMPLATES, *,
                             engine: str = "local", address: str | None = None) -> list[pd.DataFrame]:
        """:meth:`template_scores` of several remapped views. With ``engine="ray"`` the crop embeddings of the runs
        are computed on Ray (``remap.engines``) and the templates are scored as one Ray sweep
        (``analysis.sweep``: a task per run) on ``address`` (None: a local instance, started once for all the
        views); the tables are the ones this process computes, and are kept in the memo like them."""
        if engine not in ENGINES:
            raise view_error("engine", f"one of {ENGINES}", engine)
        templates = tuple(templates)
        for v in views:
            if v.remap is None:
                raise view_error("remap", "a RemapSpec (encoder, θ, score mode)", None)
        keys = [("template_scores", (score_key(v), templates)) for v in views]
        missing = [v for v, k in zip(views, keys) if k not in self._memo]
        if engine == "ray" and missing and self.benchmark.config.path is not None:
            for v, table in zip(missing, self._ray_template_scores(missing, templates, address)):
                self._memo.put(("template_scores", (score_key(v), templates)), table)
        return [self._memoised(k[0], k[1], lambda v=v: self._template_scores_here(v, templates))
                for v, k in zip(views, keys)]

    def _template_scores_here(self, view: View, templates: tuple[str, ...]) -> pd.DataFrame:
        out = self.template_labels(view, templates)
        vals = []
        for spec in templates:
            v = view.with_(remap=replace(view.remap, template=spec))
            s = self.summary(v)
            vals.append({"AP3D": s.get("AP3D", np.nan), "AP3D@25": s.get("AP3D@25", np.nan),
                         RECALL_KEY: s.get(RECALL_KEY, np.nan),
                         "n_kept": int(np.count_nonzero(self.label_view(v).evaluated))})
        return pd.concat([out, pd.DataFrame(vals, columns=_TEMPLATE_COLUMNS)], axis=1)

    def _ray_template_scores(self, views: Sequence[View], templates: tuple[str, ...],
                             address: str | None) -> list[pd.DataFrame]:
        from ov3d_core.analysis.sweep import SweepJob, sweep  # sweep builds Analysis objects: imported on use

        b = self.benchmark
        store = cache.EmbeddingStore(self.embedding_dir)
        jobs = []
        for v in views:
            rep = embed(store, b.dataset(v.dataset), b.run(v.run, v.dataset), v.remap.encoder, engine="ray",
                        crops_json=b.run_spec(v.run, v.dataset).crops, address=address, progress=False)
            if rep.embeddings is None:
                raise InputError(None, f"{v.dataset} / {v.run}", "embeddings", "every crop shard encoded",
                                 "; ".join(str(f) for f in rep.failures))
            jobs += [SweepJob(v.dataset, v.run, v.remap.encoder, t, self.theta(v), v.protocol, v.remap.score_mode)
                     for t in templates]
        rows = sweep(b.config.path, jobs, engine="ray", cache_dir=self.embedding_dir, address=address)
        out = []
        for v in views:
            got = rows[(rows["dataset"] == v.dataset) & (rows["run"] == v.run)].reset_index(drop=True)
            labels = self.template_labels(v, templates)
            out.append(pd.DataFrame({
                "template": labels["template"], "group": labels["group"], "text": labels["text"],
                "AP3D": got["AP3D"], "AP3D@25": got["AP3D@25"], RECALL_KEY: got[RECALL_KEY],
                "n_kept": got["n_evaluated"].astype(int)}))
        return out

    def prompt_sensitivity(self, view: View, templates: Sequence[str] = DEFAULT_TEMPLATES):
        """Prompt sensitivity (Table 8): mAP3D per template and prompt type, CV (σ/μ, population σ), drops."""
        t = self.template_scores(view, templates)
        return prompt_sensitivity(dict(zip(t["template"], t["AP3D"])), dict(zip(t["template"], t["group"])))

    def prompt_cv(self, view: View, remap: "RemapSpec | str", templates: Sequence[str] = DEFAULT_TEMPLATES, *,
                  runs: Sequence[str] | None = None) -> dict[str, float]:
        """Per run: the mean over datasets of the prompt CV over ``templates`` (every remappable run remapped with
        ``remap``, an encoder spec string meaning its default θ, under ``view``'s protocol and threshold): the
        prompt-robustness axis of the three-axis table."""
        spec = remap if isinstance(remap, RemapSpec) else RemapSpec(encoder=remap)
        out: dict[str, list[float]] = {}
        for d in self.datasets:
            for run in self.remappable_runs(d, spec.encoder):
                if runs is not None and run not in runs:
                    continue
                v = view.with_(dataset=d, run=run, remap=spec)
                out.setdefault(run, []).append(float(self.prompt_sensitivity(v, templates).cv))
        return {r: float(np.mean(v)) for r, v in out.items()}

    def label_flips(self, view: View, reference: str, templates: Sequence[str] = DEFAULT_TEMPLATES):
        """Kept boxes whose remapped top-1 class changes between ``reference`` and the other templates."""
        top1 = {}
        for spec in templates:
            res = self.remap_result(view.with_(remap=replace(view.remap, template=spec)))
            top1[spec] = np.where(res.keep, res.label, -1)
        return label_flips(top1, reference, list(self.benchmark.dataset(view.dataset).vocabulary))

    def consistency(self, view: View, templates: Sequence[str] = DEFAULT_TEMPLATES, *, iou: float = CONFUSION_IOU):
        """PCR / PLC (Pro-Bench) of the remapped run over ``templates``: GT recovered under every template, and the
        localisation agreement of the boxes that recover them (1 with remapping: the boxes are shared)."""
        if view.remap is None:
            raise view_error("remap", "a RemapSpec", None)

        def compute():
            contexts = [self.context(view.with_(remap=replace(view.remap, template=t))) for t in templates]
            return prompt_consistency_from_inputs([c.ap_inputs() for c in contexts], contexts[0].pred.corners,
                                                  n_categories=len(self.vocabulary(view)), iou=iou,
                                                  template_names=list(templates), vocabulary=self.vocabulary(view))

        return self._memoised("consistency", (score_key(view), tuple(templates), iou), compute)

    def label_ranks(self, view: View, *, iou: float = CONFUSION_IOU) -> pd.DataFrame:
        """FG-OVD label rank of every evaluated GT under the remapped scores (1 = the correct class ranks first)."""
        res = self.remap_result(view)
        c = self.context(view)
        out = gt_label_ranks(c.ap_inputs(), res.full, iou_threshold=iou, vocabulary=c.dataset.vocabulary)
        out.insert(1, "image_id", c.gt.image_id[out["gt"].to_numpy(np.int64)])
        return out

    def label_rank_summary(self, view: View, *, iou: float = CONFUSION_IOU) -> dict[str, float]:
        """The median (usual and FG-OVD's) and mean of :meth:`label_ranks` (``diagnostics.fgovd.median_rank``)."""
        return median_rank(self.label_ranks(view, iou=iou)["rank"].to_numpy())

    def vocabulary_curve(self, view: View, ks: Sequence[int] | None = None) -> pd.DataFrame:
        """FG-OVD vocabulary-size curve: mAP3D and rank as the number of hard negatives grows (remapped run)."""
        res = self.remap_result(view)
        sim = cosine_similarity_matrix(self.class_text_embeddings(view))
        c = self.context(view)
        return vocabulary_size_curve(c.ap_inputs(), res.full, sim, n_categories=len(c.dataset.vocabulary), ks=ks)

    def calibration(self, view: View, **kw):
        """Calibrated remap acceptance (logistic regression on held-out images) vs the fixed θ rule."""
        c = self.context(view)
        return calibrated_acceptance_from_remap(c.gt, c.pred, c.pairs, self.remap_result(view), c.dataset.vocabulary,
                                                proximity=c.proximity, **kw)
