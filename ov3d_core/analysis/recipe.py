"""The one recipe of a view, and the one context object every composition of a view starts from.

The recipe (:meth:`Recipe.label_view`)::

    the run's own labels over the dataset vocabulary   (or: the remapped labels of ``view.remap``)
      -> class subset (``view.classes``: other classes are not evaluated, GT and predictions alike)
      -> protocol filter (dataset-level: nothing; target-aware: the per-image GT-class oracle)
      -> score threshold (``view.min_score``)

:class:`ViewContext` carries what a diagnostic is computed from (the dataset, the run, the cached pair geometry and
the scored label view of one view), so that each composition names it once instead of re-fetching and passing the
same five arguments.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ov3d_core.analysis.view import View, restrict_classes, score_key, view_error
from ov3d_core.eval.ap import APInputs, APParams
from ov3d_core.eval.labels import LabelView, label_view_from_names
from ov3d_core.eval.scoring import apply_protocol, score_view, threshold_view
from ov3d_core.eval.subsets import subset_dataset, subset_pairs, subset_rows, subset_run
from ov3d_core.model import Dataset, Run

__all__ = ["Recipe", "ViewContext", "ViewInputs"]


@dataclass(frozen=True, eq=False)
class ViewInputs:
    """The dataset and run a view scores: the template's prediction file (``view.template``) and only the images of
    ``view.subset``. ``gt_rows`` / ``pred_rows``: the kept rows of the full GT and prediction sets (None: all)."""

    dataset: Dataset
    run: Run
    gt_rows: np.ndarray | None = None
    pred_rows: np.ndarray | None = None


class ViewContext:
    """The inputs of one view's numbers: ``dataset``, ``run``, ``pairs`` (cached GT x prediction geometry) and
    ``labels`` (the view's scored ``LabelView``); ``gt`` / ``pred`` / ``proximity`` for short. Made inside a memoised
    computation (the run is loaded, and the pairs read, only when something is computed)."""

    def __init__(self, analysis, view: View):
        self.view = view
        self._analysis = analysis
        inputs = analysis.inputs(view)
        self.dataset, self.run = inputs.dataset, inputs.run

    @property
    def gt(self):
        return self.dataset.gt

    @property
    def pred(self):
        return self.run.pred

    @property
    def proximity(self):
        return self.dataset.proximity

    @cached_property
    def pairs(self):
        return self._analysis.view_pairs(self.view)

    @cached_property
    def labels(self):
        return self._analysis.label_view(self.view)

    def ap_inputs(self, params: APParams | None = None) -> APInputs:
        """The AP engine's inputs of the view (Omni3D's 3D parameters unless ``params`` is given)."""
        return APInputs.from_view(self.gt, self.pred, self.pairs, self.labels,
                                  APParams.omni3d_3d() if params is None else params, proximity=self.proximity)


class Recipe:
    """Mixin of :class:`~ov3d_core.analysis.Analysis`: the label view of a view, its score and its context."""

    def inputs(self, view: View) -> ViewInputs:
        """The dataset and run of a view: with ``view.template`` that template's prediction file, with
        ``view.subset`` restricted to the subset's images (an InputError names an unknown template or subset)."""
        run = self._need_run(view)

        def compute():
            b = self.benchmark
            ds, r = b.dataset(view.dataset), b.run(run, view.dataset, view.template)
            if view.subset is None:
                return ViewInputs(ds, r)
            ids = b.image_subset(view.dataset, view.subset)
            return ViewInputs(subset_dataset(ds, ids), subset_run(r, ids), subset_rows(ds.gt.image_id, ids),
                              subset_rows(r.pred.image_id, ids))

        return self._memoised("inputs", (view.dataset, run, view.template, view.subset), compute)

    def view_dataset(self, view: View) -> Dataset:
        """The dataset of a view (a view without a run too), restricted to ``view.subset``'s images."""
        if view.run is not None:
            return self.inputs(view).dataset
        ds = self.benchmark.dataset(view.dataset)
        if view.subset is None:
            return ds
        return self._memoised("view_dataset", (view.dataset, view.subset),
                              lambda: subset_dataset(ds, self.benchmark.image_subset(view.dataset, view.subset)))

    def view_pairs(self, view: View):
        """The cached pair geometry of a view's inputs (filtered and re-indexed for an image subset)."""
        inputs = self.inputs(view)

        def compute():
            full = self.benchmark.pairs(view.run, view.dataset, template=view.template)
            return full if inputs.gt_rows is None else subset_pairs(full, inputs.gt_rows, inputs.pred_rows)

        if inputs.gt_rows is None:
            return compute()
        return self._memoised("view_pairs", (view.dataset, view.run, view.template, view.subset), compute)

    def context(self, view: View) -> ViewContext:
        """The :class:`ViewContext` of a view with a run (an InputError when the run is not in the config)."""
        self._need_run(view)
        return ViewContext(self, view)

    def base_view(self, view: View):
        """The run's labels over the evaluated vocabulary before protocol and threshold: its own labels, or the
        remapped labels of ``view.remap``; restricted to ``view.classes`` when given."""
        run = self._need_run(view)

        def compute():
            inputs = self.inputs(view)
            ds, r = inputs.dataset, inputs.run
            if view.remap is None:
                lv = label_view_from_names(r.pred.category, r.pred.score, ds.vocabulary)
            else:  # remapped over the run's whole file (the crops' rows), then cut to the subset's rows
                rm = self.remapper(view.dataset, run, view.remap)
                lv = rm.label_view(view.remap.template, self.theta(view), view.remap.score_mode,
                                   vocabulary=ds.vocabulary)
                if inputs.pred_rows is not None:
                    rows = inputs.pred_rows
                    lv = LabelView(lv.label[rows], lv.score[rows], lv.keep[rows], lv.vocabulary)
            if view.classes is not None:
                lv = restrict_classes(lv, view.classes, ds.vocabulary, self.config_file)
            return lv

        return self._memoised("base_view", (view.dataset, run, view.remap, view.classes, view.template, view.subset),
                              compute)

    def label_view(self, view: View):
        """The ``LabelView`` every number of ``view`` is computed from (the recipe in the module docstring)."""
        def compute():
            inputs = self.inputs(view)
            return threshold_view(apply_protocol(self.base_view(view), inputs.dataset, inputs.run, view.protocol),
                                  view.min_score)

        return self._memoised("label_view", score_key(view), compute)

    def vocabulary(self, view: View) -> tuple[str, ...]:
        """The evaluated category names of a view (the subset when ``view.classes`` is given)."""
        ds = self.benchmark.dataset(view.dataset)
        return tuple(c for c in ds.vocabulary if view.classes is None or c in view.classes)

    def theta(self, view: View) -> float:
        """The remapping threshold of a view: the spec's, else the encoder's default."""
        if view.remap is None:
            raise view_error("remap", "a RemapSpec", None)
        if view.remap.theta is not None:
            return float(view.remap.theta)
        enc = self.encoder(view.remap.encoder)
        return 0.5 if getattr(enc, "has_calibrated_bias", False) else 0.0

    def score(self, view: View):
        """The :class:`~ov3d_core.eval.scoring.RunScore` of a view: Omni3D AP with match records, class-agnostic
        recall, the scored label view. Geometry is the cached pair table; only matching and accumulation run."""
        self._need_run(view)

        def compute():
            ctx = self.context(view)
            return score_view(ctx.dataset, ctx.run, ctx.pairs, ctx.labels, protocol=view.protocol)

        return self._memoised("score", score_key(view), compute)
