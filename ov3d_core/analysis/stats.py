"""Statistics and mining, composed for a view: image-bootstrap intervals, paired tests, leaderboards with
significance tiers, failure-mining lists and the one-object view."""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import numpy as np
import pandas as pd

from ov3d_core.analysis.view import (MINING_KINDS, View, check_seed, finite_number, pair_names, positive_int,
                                     score_key, view_error)
from ov3d_core.diagnostics import mining
from ov3d_core.diagnostics.bootstrap import (METHODS, ImageResamples, bootstrap_ods, bootstrap_score, leaderboard,
                                             paired_comparison)
from ov3d_core.diagnostics.distance import DistanceParams
from ov3d_core.errors import InputError

__all__ = ["Stats"]


class Stats:
    """Mixin of :class:`~ov3d_core.analysis.Analysis`: intervals, tests, tiers and mining."""

    def resamples(self, dataset: str, n_resamples: int = 1000, seed: int = 0):
        """The image bootstrap resamples of a dataset (every image of its GT file, with or without boxes): drawn
        once per (dataset, B, seed) and shared by every view scored on them, which is what pairs a comparison."""
        n, sd = positive_int("n_resamples", n_resamples), check_seed(seed)

        def compute():
            return ImageResamples.draw(self.benchmark.dataset(dataset).images["image_id"].to_numpy(), n, sd)

        return self._memoised("resamples", (dataset, n, sd), compute)

    def bootstrap(self, view: View, *, n_resamples: int = 1000, seed: int = 0, level: float = 0.95,
                  method: str = "bca", ods: bool = False):
        """Image-bootstrap intervals of every headline number of a view (``diagnostics.bootstrap``): a
        ``BootstrapResult`` whose ``to_frame()`` is ``metric, value, lo, hi, se, n_valid, level, method`` (AP3D,
        AP3D@15/25/50, N/M/F, recall3D@15, with ``ods=True`` ODS / ODS_canonical) and ``per_category_frame()``.

        Matching is fixed per image, so each resample only re-accumulates with image weights (exact: equal to the
        evaluator on the replicated images). ``method``: "bca" (default) or "percentile". ODS is the "3dmood"
        distance mode (with the dataset's proximity flag); other distance modes have no bootstrap."""
        if method not in METHODS:
            raise view_error("method", f"one of {METHODS}", method)
        lvl = finite_number("level", level, 0.0, 1.0, lo_open=True)
        if lvl >= 1.0:
            raise view_error("level", "a value in (0, 1)", level)
        if not isinstance(ods, bool):
            raise view_error("ods", "True or False", ods)
        if ods and view.distance_mode != "3dmood":
            raise view_error("distance_mode", "'3dmood' for an ODS bootstrap", view.distance_mode)
        self._need_run(view)
        rs = self.resamples(view.dataset, n_resamples, seed)

        def compute():
            c = self.context(view)
            sc = self.score(view)
            out = bootstrap_score(c.dataset, c.run, sc, rs)
            if ods:
                out = out.join(bootstrap_ods(c.gt, c.pred, sc.view, rs, gt_label=sc.gt_label,
                                             params=DistanceParams(proximity=bool(c.proximity))))
            return out

        res = self._memoised("bootstrap", (score_key(view), rs.n_resamples, rs.seed, ods), compute)
        return replace(res, level=lvl, method=method)

    def paired(self, a: View, b: View, *, n_resamples: int = 1000, seed: int = 0, level: float = 0.95,
               method: str = "percentile", correction: str = "holm", ods: bool = False):
        """Paired bootstrap test of A - B on the same image resamples: two runs on one dataset, or one run under two
        protocols, templates, θ or thresholds. A ``PairedComparison``: ``to_frame()`` per headline number
        (``diff, lo, hi, p_value, significant``), ``per_category_frame()`` with ``correction`` ("holm": family-wise,
        "bh": false discovery rate, "none") over the categories. Names: the runs, else what differs."""
        if a.dataset != b.dataset:
            raise view_error("dataset", f"the same dataset in both views ({a.dataset!r})", b.dataset)
        if score_key(a) == score_key(b):
            raise view_error("view", "two views that differ in run, protocol, threshold, remapping or classes",
                              a.label)
        name_a, name_b = pair_names(a, b)
        ra = self.bootstrap(a, n_resamples=n_resamples, seed=seed, ods=ods)
        rb = self.bootstrap(b, n_resamples=n_resamples, seed=seed, ods=ods)
        try:
            return paired_comparison(ra, rb, name_a=name_a, name_b=name_b, level=level, method=method,
                                     correction=correction)
        except ValueError as exc:
            raise view_error("paired", "a valid level, method and correction", str(exc)) from None

    def leaderboard_tiers(self, view: View, *, metric: str = "AP3D", n_resamples: int = 1000, seed: int = 0,
                          level: float = 0.95, correction: str = "holm") -> pd.DataFrame:
        """The runs of ``view.dataset`` ranked by ``metric`` under ``view``'s protocol and threshold, each with its
        BCa interval, and whether the gap to the next run is significant (paired bootstrap, ``correction`` over the
        n - 1 gaps): ``rank, run, value, lo, hi, gap, gap_lo, gap_hi, p_value, p_adjusted, significant, tier``
        (runs joined by non-significant gaps share a tier). Runs that fail to load are left out."""
        results = []
        for run in self.runs(view.dataset):
            try:
                results.append((run, self.bootstrap(view.with_(run=run, remap=None), n_resamples=n_resamples,
                                                    seed=seed)))
            except InputError:
                continue
        if not results:
            raise InputError(self.config_file, None, "runs", f"at least one loadable run on {view.dataset!r}",
                             "none")
        if metric not in results[0][1].metrics:
            raise view_error("metric", f"one of {list(results[0][1].metrics)}", metric)
        return leaderboard(results, metric=metric, level=level, correction=correction)

    def _entries(self, view: View, runs: Sequence[str] | None) -> dict:
        """run -> (Run, RunScore) under ``view``'s settings (the view's own remapping for its run only)."""
        names = list(runs) if runs is not None else self.runs(view.dataset)
        out = {}
        for run in names:
            v = view if run == view.run else view.with_(run=run, remap=None)
            try:
                out[run] = (self.inputs(v).run, self.score(v))
            except InputError:
                if runs is not None:
                    raise
        if not out:
            raise InputError(self.config_file, None, "runs", f"at least one loadable run on {view.dataset!r}",
                             "none")
        return out

    def mine(self, view: View, kind: str, *, runs: Sequence[str] | None = None):
        """Failure mining (``diagnostics.mining``): a ``Ranking`` of images (``images``: ``rank, image_id, <value>,
        n_boxes``) and of the boxes behind them (``boxes``), for ``kind`` in :data:`MINING_KINDS`:

        - "cross-class": false positives at ``view.iou`` sitting on a GT of another class (well localised, misnamed);
        - "oracle-gain": what the target-aware oracle hides (needs a dataset-level view);
        - "depth-error": true positives by |z_pred - z_gt|;
        - "disagreement": GT localised by several runs under different labels (``runs``, default all);
        - "missed-by-all": GT every run misses at ``view.iou`` (``runs``, default all)."""
        if kind not in MINING_KINDS:
            raise view_error("kind", f"one of {MINING_KINDS}", kind)
        ds = self.view_dataset(view)
        key = (score_key(view), view.iou, kind, None if runs is None else tuple(runs))
        if kind in ("disagreement", "missed-by-all"):
            def compute():
                entries = self._entries(view, runs)
                if kind == "disagreement":
                    return mining.run_disagreement(ds, entries)
                return mining.missed_by_all(ds, entries, iou=view.iou)
        else:
            self._need_run(view)
            if kind == "oracle-gain" and view.protocol != "dataset-level":
                raise view_error("protocol", "'dataset-level' (the oracle's gain is measured against it)",
                                 view.protocol)
            fn = {"cross-class": mining.cross_class_false_positives, "oracle-gain": mining.oracle_gain,
                  "depth-error": mining.depth_errors}[kind]

            def compute():
                return fn(ds, self.inputs(view).run, self.score(view), iou=view.iou)

        return self._memoised("mine", key, compute)

    def object_view(self, view: View, gt_row: int, *, runs: Sequence[str] | None = None):
        """One GT object against every run (the paper's Fig. 1): an ``ObjectView`` whose table has, per run, the
        best-overlapping prediction (any class), its IoU, class, score and status at ``view.iou``, and whether the
        evaluator matched the object; ``sentence()`` reads "5 of 5 runs localise this chair, none names it"."""
        ds = self.view_dataset(view)
        if isinstance(gt_row, bool) or not isinstance(gt_row, (int, np.integer)) or not 0 <= int(gt_row) < len(ds.gt):
            raise view_error("gt_row", f"a GT row in [0, {len(ds.gt)})", gt_row)
        key = (score_key(view), view.iou, int(gt_row), None if runs is None else tuple(runs))
        return self._memoised("object_view", key,
                              lambda: mining.object_view(ds, self._entries(view, runs), int(gt_row), iou=view.iou))

