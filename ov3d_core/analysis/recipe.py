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

from functools import cached_property

from ov3d_core.analysis.view import View, restrict_classes, score_key, view_error
from ov3d_core.eval.ap import APInputs, APParams
from ov3d_core.eval.labels import label_view_from_names
from ov3d_core.eval.scoring import apply_protocol, score_view, threshold_view

__all__ = ["Recipe", "ViewContext"]


class ViewContext:
    """The inputs of one view's numbers: ``dataset``, ``run``, ``pairs`` (cached GT x prediction geometry) and
    ``labels`` (the view's scored ``LabelView``); ``gt`` / ``pred`` / ``proximity`` for short. Made inside a memoised
    computation (the run is loaded, and the pairs read, only when something is computed)."""

    def __init__(self, analysis, view: View):
        self.view = view
        self._analysis = analysis
        self.dataset = analysis.benchmark.dataset(view.dataset)
        self.run = analysis.benchmark.run(view.run, view.dataset)

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
        return self._analysis.benchmark.pairs(self.view.run, self.view.dataset)

    @cached_property
    def labels(self):
        return self._analysis.label_view(self.view)

    def ap_inputs(self, params: APParams | None = None) -> APInputs:
        """The AP engine's inputs of the view (Omni3D's 3D parameters unless ``params`` is given)."""
        return APInputs.from_view(self.gt, self.pred, self.pairs, self.labels,
                                  APParams.omni3d_3d() if params is None else params, proximity=self.proximity)


class Recipe:
    """Mixin of :class:`~ov3d_core.analysis.Analysis`: the label view of a view, its score and its context."""

    def context(self, view: View) -> ViewContext:
        """The :class:`ViewContext` of a view with a run (an InputError when the run is not in the config)."""
        self._need_run(view)
        return ViewContext(self, view)

    def base_view(self, view: View):
        """The run's labels over the evaluated vocabulary before protocol and threshold: its own labels, or the
        remapped labels of ``view.remap``; restricted to ``view.classes`` when given."""
        run = self._need_run(view)

        def compute():
            ds, r = self.benchmark.dataset(view.dataset), self.benchmark.run(run, view.dataset)
            if view.remap is None:
                lv = label_view_from_names(r.pred.category, r.pred.score, ds.vocabulary)
            else:
                rm = self.remapper(view.dataset, run, view.remap)
                lv = rm.label_view(view.remap.template, self.theta(view), view.remap.score_mode,
                                   vocabulary=ds.vocabulary)
            if view.classes is not None:
                lv = restrict_classes(lv, view.classes, ds.vocabulary, self.config_file)
            return lv

        return self._memoised("base_view", (view.dataset, run, view.remap, view.classes), compute)

    def label_view(self, view: View):
        """The ``LabelView`` every number of ``view`` is computed from (the recipe in the module docstring)."""
        def compute():
            ds, r = self.benchmark.dataset(view.dataset), self.benchmark.run(view.run, view.dataset)
            return threshold_view(apply_protocol(self.base_view(view), ds, r, view.protocol), view.min_score)

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
