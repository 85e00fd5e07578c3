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
from ov3d_core.diagnostics.fgovd import (DIFFICULTY_TIERS, ONTOLOGY_TIERS, gt_label_ranks, median_rank,
                                         tier_vocabulary_curve, vocabulary_size_curve)
from ov3d_core.diagnostics.prompts import (formulation_sensitivity, formulation_type_table, label_flips,
                                           prompt_sensitivity)
from ov3d_core.diagnostics.semantic import cosine_similarity_matrix
from ov3d_core.errors import InputError
from ov3d_core.eval.constants import CONFUSION_IOU, RECALL_KEY
from ov3d_core.remap import cache, pipeline, templates as template_sets
from ov3d_core.remap.encoders import LazyEncoder
from ov3d_core.remap.engines import ENGINES

__all__ = ["Prompts"]

#: Pro-Bench's formulations: the categorical prompt, then each type's original and template-wrapped wording.
_PROBENCH_FORMULATIONS = ("PB-categorical", *(f"PB-{t}" for t in template_sets.PROBENCH_TYPES if t != "categorical"),
                          *(f"PB-{t}-wrapped" for t in template_sets.PROBENCH_TYPES))

_TEMPLATE_COLUMNS = ["AP3D", "AP3D@25", RECALL_KEY, "n_kept"]

_encoders: dict = {}
_encoders_lock = threading.Lock()


def _shared_encoder(spec: str, options: Mapping[str, Any]):
    """One encoder per process and spec (the model is loaded once, whichever Analysis asks, and only when something
    is encoded: ``LazyEncoder``)."""
    with _encoders_lock:
        if spec not in _encoders:
            _encoders[spec] = LazyEncoder(spec, **{k: v for k, v in options.items() if v is not None})
        return _encoders[spec]


class Prompts:
    """Mixin of :class:`~ov3d_core.analysis.Analysis`: remapping and the prompt diagnostics of a view."""

    def encoder(self, spec: str):
        """The remap encoder of a spec: one per process and spec, which loads its model (torch, transformers, the
        weights) the first time it encodes (``LazyEncoder``)."""
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
            return pipeline.LiveRemapper(emb, r.pred.record, r.pred.score, enc, ds.vocabulary,
                                         text_cache=self._text_cache(), templates=self._templates(spec.templates_file))

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
        """``(C, D)`` text embeddings of the dataset's classes under the view's template (needs ``view.remap``):
        what the view's remapper ranks crops against, from the benchmark's text cache (encoded on a miss). Reads
        neither the run's predictions nor its crop embeddings."""
        if view.remap is None:
            raise view_error("remap", "a RemapSpec (the text encoder gives the class embeddings)", None)
        self._need_run(view)
        templates = template_sets.resolve_templates(view.remap.template, self._templates(view.remap.templates_file))
        return cache.class_text_embeddings(self.encoder(view.remap.encoder), templates,
                                           self.benchmark.dataset(view.dataset).vocabulary, self._text_cache())

    def _templates(self, templates_file) -> tuple:
        """The templates of a file (None: the shipped ones), read once per Analysis: its remappers and
        ``class_text_embeddings`` (called by several diagnostics per view) share them."""
        key = None if templates_file is None else str(templates_file)
        return self._memoised("templates", key, lambda: tuple(template_sets.load_templates(templates_file)))

    def _text_cache(self) -> cache.TextEmbeddingCache:
        """The benchmark's text-embedding cache (``<cache_dir>/text``), one per Analysis: its remappers and
        ``class_text_embeddings`` share its in-memory copies."""
        root = Path(self.benchmark.config.cache_dir) / "text"
        return self._memoised("text_cache", str(root), lambda: cache.TextEmbeddingCache(root))

    def prompted(self, view: View) -> str:
        """How a view answers to a prompt template: ``"remap"`` (``view.remap``: the run's crops relabelled under the
        template) or ``"per_template"`` (a prompt-conditioned run: each template's own prediction file). Anything
        else is an InputError."""
        if view.remap is not None:
            return "remap"
        run = self._need_run(view)
        if self.benchmark.run_templates(run, view.dataset):
            return "per_template"
        raise view_error("remap", f"a RemapSpec, or a run with per_template files ({run!r} has none)", None)

    def template_view(self, view: View, template: str) -> View:
        """``view`` under one template: remapped with it, or that template's prediction file."""
        if self.prompted(view) == "remap":
            return view.with_(remap=replace(view.remap, template=template))
        return view.with_(template=template)

    def prompt_templates(self, view: View, templates: Sequence[str] = DEFAULT_TEMPLATES) -> tuple[str, ...]:
        """The templates of ``templates`` a view is scored under: all of them when remapped; for a prompt-conditioned
        run, those it has a file for (in the given order)."""
        if self.prompted(view) == "remap":
            return tuple(templates)
        have = set(self.benchmark.run_templates(view.run, view.dataset))
        return tuple(t for t in templates if t in have)

    def template_labels(self, view: View, templates: Sequence[str] = DEFAULT_TEMPLATES) -> pd.DataFrame:
        """``template`` (its id, or its text for a custom template, or the spec of an ensemble), ``group`` and
        ``text`` of each template spec (no scoring)."""
        if self.prompted(view) == "remap":
            resolve = self.remapper(view.dataset, self._need_run(view), view.remap).resolve
        else:
            resolve = template_sets.resolve_templates
        rows = []
        for spec in templates:
            ts = resolve(spec)
            one = ts[0] if len(ts) == 1 else None
            rows.append({"template": (one.text if one.group == "custom" else one.id) if one else spec,
                         "group": ts[0].group if len({t.group for t in ts}) == 1 else "ensemble",
                         "text": ts[0].text if len(ts) == 1 else " | ".join(t.text for t in ts)})
        return pd.DataFrame(rows, columns=["template", "group", "text"])

    def template_scores(self, view: View, templates: Sequence[str] = DEFAULT_TEMPLATES, *, engine: str = "local",
                        address: str | None = None) -> pd.DataFrame:
        """One row per template: template, group, text, AP3D, AP3D@25 (percent), recall3D@15, n_kept — the run
        remapped under each template at the view's θ, or a prompt-conditioned run's file of each template it has
        (:meth:`prompt_templates`), scored under the view's protocol. ``engine="ray"`` computes remapped views on Ray
        (:meth:`template_scores_many`): the same table."""
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
            self.prompted(v)  # a RemapSpec or per-template files
        keys = [("template_scores", (score_key(v), templates)) for v in views]
        missing = [v for v, k in zip(views, keys) if k not in self._memo and v.remap is not None]
        if engine == "ray" and missing and self.benchmark.config.path is not None:
            for v, table in zip(missing, self._ray_template_scores(missing, templates, address)):
                self._memo.put(("template_scores", (score_key(v), templates)), table)
        return [self._memoised(k[0], k[1], lambda v=v: self._template_scores_here(v, templates))
                for v, k in zip(views, keys)]

    def _template_scores_here(self, view: View, templates: tuple[str, ...]) -> pd.DataFrame:
        templates = self.prompt_templates(view, templates)
        out = self.template_labels(view, templates)
        vals = []
        for spec in templates:
            v = self.template_view(view, spec)
            s = self.summary(v)
            vals.append({"AP3D": s.get("AP3D", np.nan), "AP3D@25": s.get("AP3D@25", np.nan),
                         RECALL_KEY: s.get(RECALL_KEY, np.nan),
                         "n_kept": int(np.count_nonzero(self.label_view(v).evaluated))})
        return pd.concat([out, pd.DataFrame(vals, columns=_TEMPLATE_COLUMNS)], axis=1)

    def _ray_template_scores(self, views: Sequence[View], templates: tuple[str, ...],
                             address: str | None) -> list[pd.DataFrame]:
        from ov3d_core.analysis.sweep import SweepJob, sweep  # sweep builds Analysis objects: imported on use
        from ov3d_core.remap.engines.ray_data import connect, embed_ray_many  # imports ray on use only

        b = self.benchmark
        store = cache.EmbeddingStore(self.embedding_dir)
        # One Ray connection for every view's embeddings and the sweep: each of them would otherwise start (and shut
        # down) a local instance of its own when this process has none. The views of one encoder are embedded in
        # one Ray dataset: one pool of encoder actors for all of them.
        started = connect(address)
        try:
            by_encoder: dict[str, list[View]] = {}
            for v in views:
                by_encoder.setdefault(v.remap.encoder, []).append(v)
            for encoder, group in by_encoder.items():
                reps = embed_ray_many(store, [(b.dataset(v.dataset), b.run(v.run, v.dataset),
                                               b.run_spec(v.run, v.dataset).crops) for v in group], encoder,
                                      address=address, progress=False)
                for v, rep in zip(group, reps):
                    if rep.embeddings is None:
                        raise InputError(None, f"{v.dataset} / {v.run}", "embeddings", "every crop shard encoded",
                                         "; ".join(str(f) for f in rep.failures))
            jobs = [SweepJob(v.dataset, v.run, v.remap.encoder, t, self.theta(v), v.protocol, v.remap.score_mode)
                    for v in views for t in templates]
            rows = sweep(b.config.path, jobs, engine="ray", cache_dir=self.embedding_dir, address=address)
        finally:
            if started:
                import ray

                ray.shutdown()
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

    def prompt_cv(self, view: View, remap: "RemapSpec | str | None", templates: Sequence[str] = DEFAULT_TEMPLATES, *,
                  runs: Sequence[str] | None = None) -> dict[str, float]:
        """Per run, keyed by its row name in the transfer tables: the mean over datasets of the prompt CV over
        ``templates`` under ``view``'s protocol and threshold (the prompt-robustness axis of the three-axis table).
        A prompt-conditioned run (``per_template`` files) is measured on its own files (name ``X``); a
        closed-vocabulary run remapped with ``remap`` (an encoder spec string: its default θ) as ``X*``
        (:meth:`remapped_runs`). Other runs have no prompt response of their own to measure: not listed."""
        spec = None if remap is None else remap if isinstance(remap, RemapSpec) else RemapSpec(encoder=remap)
        out: dict[str, list[float]] = {}
        for d in self.datasets:
            star = set(self.remapped_runs(d, spec))
            for run in self.runs(d):
                if runs is not None and run not in runs:
                    continue
                base = view.with_(dataset=d, run=run, remap=None, template=None)
                if self.benchmark.run_templates(run, d):
                    name, v = run, base
                elif run in star:
                    name, v = f"{run}*", base.with_(remap=spec)
                else:
                    continue
                out.setdefault(name, []).append(float(self.prompt_sensitivity(v, templates).cv))
        return {r: float(np.mean(v)) for r, v in out.items()}

    def label_flips(self, view: View, reference: str, templates: Sequence[str] = DEFAULT_TEMPLATES):
        """Kept boxes whose remapped top-1 class changes between ``reference`` and the other templates."""
        top1 = {}
        for spec in templates:
            res = self.remap_result(view.with_(remap=replace(view.remap, template=spec)))
            top1[spec] = np.where(res.keep, res.label, -1)
        return label_flips(top1, reference, list(self.benchmark.dataset(view.dataset).vocabulary))

    def consistency(self, view: View, templates: Sequence[str] = DEFAULT_TEMPLATES, *, iou: float = CONFUSION_IOU):
        """PCR / PLC (Pro-Bench) over ``templates``: GT recovered under every template, and the localisation agreement
        of the boxes that recover them. Remapped: the boxes are shared (PLC 1 by construction). A prompt-conditioned
        run: each template's own file, rows and boxes (:meth:`prompt_templates`)."""
        kind = self.prompted(view)
        templates = self.prompt_templates(view, templates)

        def compute():
            if not templates:
                have = list(self.benchmark.run_templates(view.run, view.dataset))
                raise view_error("templates", f"templates the run has files for ({have})", [])
            contexts = [self.context(self.template_view(view, t)) for t in templates]
            corners = contexts[0].pred.corners if kind == "remap" else [c.pred.corners for c in contexts]
            return prompt_consistency_from_inputs([c.ap_inputs() for c in contexts], corners,
                                                  n_categories=len(self.vocabulary(view)), iou=iou,
                                                  template_names=list(templates), vocabulary=self.vocabulary(view))

        return self._memoised("consistency", (score_key(view), tuple(templates), iou), compute)

    def label_ranks(self, view: View, *, iou: float = CONFUSION_IOU, nms: bool = False) -> pd.DataFrame:
        """FG-OVD label rank of every evaluated GT under the remapped scores (1 = the correct class ranks first);
        ``nms``: only the boxes FG-OVD's class-agnostic NMS keeps (:meth:`nms_keep`) may cover a GT."""
        res = self.remap_result(view)
        c = self.context(view)
        keep = self.nms_keep(view) if nms else None
        out = gt_label_ranks(c.ap_inputs(), res.full, iou_threshold=iou, vocabulary=c.dataset.vocabulary,
                             pred_keep=keep)
        out.insert(1, "image_id", c.gt.image_id[out["gt"].to_numpy(np.int64)])
        return out

    def label_rank_summary(self, view: View, *, iou: float = CONFUSION_IOU, nms: bool = False) -> dict[str, float]:
        """The median (usual and FG-OVD's) and mean of :meth:`label_ranks` (``diagnostics.fgovd.median_rank``)."""
        return median_rank(self.label_ranks(view, iou=iou, nms=nms)["rank"].to_numpy())

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

    # ---------------------------------------------------------------- Pro-Bench formulations, FG-OVD tiers
    def template_support(self, view: View, templates: Sequence[str]) -> pd.DataFrame:
        """Which of ``templates`` a view can be scored under, and why not: a remapped view asks its encoder
        (``remap.templates.template_support``: negation, token length); a prompt-conditioned run, its files."""
        ts = [t for spec in templates for t in template_sets.resolve_templates(spec)]
        if self.prompted(view) == "remap":
            caps = template_sets.prompt_capabilities(self.encoder(view.remap.encoder))
            return template_sets.template_support(ts, self.vocabulary(view), caps)
        have = set(self.benchmark.run_templates(view.run, view.dataset))
        return pd.DataFrame({"template": [t.id for t in ts], "group": [t.group for t in ts],
                             "text": [t.text for t in ts], "supported": [t.id in have for t in ts],
                             "reason": ["" if t.id in have else "no per_template file" for t in ts]})

    def formulation_sensitivity(self, view: View, formulations: Sequence[str] | None = None):
        """Pro-Bench prompt sensitivity (seeds/003 §D) of a run: mAP3D per formulation and per class, the largest
        ΔmAP across formulations (run and per class), best and worst formulation, original − categorical and
        wrapped − original. ``formulations``: template ids (default: Pro-Bench's 17, the categorical prompt and
        each type's original and wrapped wording), scored where :meth:`template_support` allows."""
        forms = tuple(formulations) if formulations is not None else _PROBENCH_FORMULATIONS
        sup = self.template_support(view, forms)
        forms = tuple(sup.loc[sup["supported"], "template"])

        def compute():
            per_class, fmap = {}, {}
            for t in forms:
                tv = self.template_view(view, t)
                pc = self.per_category(tv)
                per_class[t] = pd.Series(pc["AP3D"].to_numpy(np.float64), index=pc["category"].tolist())
                fmap[t] = float(self.summary(tv)["AP3D"])
            table = pd.DataFrame(per_class).T.reindex(columns=list(self.vocabulary(view)))
            return formulation_sensitivity(table, fmap,
                                           categorical="PB-categorical" if "PB-categorical" in fmap else None)

        if not forms:
            raise view_error("formulations", "at least one formulation the view supports", list(sup["template"]))
        return self._memoised("formulation_sensitivity", (score_key(view), forms), compute)

    def prompt_types(self, view: View) -> pd.DataFrame:
        """Pro-Bench's eight prompt types, one row each: mAP3D of the categorical, original and template-wrapped
        formulation, their differences, the largest ΔmAP and the best formulation (NaN and None where the encoder
        or the run's files do not allow two of them; :meth:`template_support` says why)."""
        fs = self.formulation_sensitivity(view)
        return formulation_type_table(dict(zip(fs.formulations, fs.map)), template_sets.probench_roles())

    def hard_negative_tiers(self, view: View, *, ns: Sequence[int] = (1, 2, 3, 5, 8), seed: int = 0,
                            iou: float = CONFUSION_IOU) -> pd.DataFrame:
        """FG-OVD's hard-negative tiers for a remapped run (``diagnostics.fgovd``): per object a vocabulary of its
        class and N negatives drawn by difficulty (hard / medium / easy by text-embedding similarity band, trivial at
        random) or by ontology (same / other super-category of the benchmark's ontology); one row per (tier, N) with
        mAP3D, median rank and accuracy. N = 5 is FG-OVD's Table 2 column, the curve over N its Fig. 4 per tier."""
        res = self.remap_result(view)
        ns = tuple(int(n) for n in ns)

        def compute():
            c = self.context(view)
            vocab = list(c.dataset.vocabulary)
            onto = self.ontology()
            super_of = np.array([onto.names.index(onto.super_category(c)) for c in vocab], np.int64)
            sim = cosine_similarity_matrix(self.class_text_embeddings(view))
            return tier_vocabulary_curve(c.ap_inputs(), res.full, sim, n_categories=len(vocab), ns=ns,
                                         tiers=(*DIFFICULTY_TIERS, *ONTOLOGY_TIERS), super_of=super_of, seed=seed,
                                         iou_threshold=iou)

        return self._memoised("hard_negative_tiers", (score_key(view), ns, int(seed), float(iou)), compute)

    def theta_profile(self, view: View, *, lo: float | None = None, hi: float = 1.0,
                      step: float = 0.01) -> pd.DataFrame:
        """Where the top-1 values of a remapped run lie, and how many boxes each θ keeps (the prompt lab's θ
        slider): one row per θ of the grid ``lo, lo + step, ..., hi`` (``lo`` default: 0 for a calibrated encoder's
        probabilities, -0.2 for cosine similarities), under the view's template. ``n_kept``: boxes with a crop
        embedding whose top-1 value reaches θ (the remap rule, ``RemapResult.keep``, before the score threshold and
        the protocol); ``share_kept``: that over the boxes with a crop embedding; ``n_at``: boxes whose top-1 value
        lies in ``[θ, θ + step)`` (the last row: ``≥ θ``), i.e. the distribution of the top-1 values. Values below
        ``lo`` are in no row (every row's ``n_kept`` excludes them). ``attrs``: ``theta`` (the view's),
        ``n_kept_at_theta``, ``share_kept_at_theta``, ``n_with_crop``, ``top1_min`` / ``top1_median`` / ``top1_max``."""
        res = self.remap_result(view)
        if lo is None:
            lo = 0.0 if res.calibrated else -0.2
        if not (np.isfinite(lo) and np.isfinite(hi) and np.isfinite(step) and step > 0 and hi >= lo):
            raise view_error("theta grid", "finite lo <= hi and step > 0", (lo, hi, step))
        top1 = np.asarray(res.top1, np.float64)
        top1 = np.sort(top1[np.isfinite(top1)])
        grid = np.round(lo + step * np.arange(int(np.floor((hi - lo) / step + 1e-9)) + 1), 10)
        kept = len(top1) - np.searchsorted(top1, grid, side="left")  # top1 >= θ, as RemapResult.keep
        at = kept - np.append(kept[1:], 0)
        share = kept / len(top1) if len(top1) else np.full(len(grid), np.nan)
        out = pd.DataFrame({"theta": grid, "n_at": at.astype(np.int64), "n_kept": kept.astype(np.int64),
                            "share_kept": share})
        theta = self.theta(view)
        finite = len(top1) > 0
        out.attrs.update({  # the view's θ and the spread of the values, for the slider's caption
            "theta": theta, "n_with_crop": int(len(top1)),
            "n_kept_at_theta": int(len(top1) - np.searchsorted(top1, theta, side="left")),
            "share_kept_at_theta": (float(len(top1) - np.searchsorted(top1, theta, side="left")) / len(top1)
                                    if finite else float("nan")),
            "top1_min": float(top1[0]) if finite else float("nan"),
            "top1_median": float(np.median(top1)) if finite else float("nan"),
            "top1_max": float(top1[-1]) if finite else float("nan")})
        return out
