"""Tables over views and runs: summaries, per-category AP, box statuses, the leaderboard (kept on disk by the score
cache), pooled rows and Omni3D's subset means, domain transfer, per-box details and precision-recall curves."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from ov3d_core.analysis.view import LEADERBOARD_COLUMNS, RemapSpec, View, score_key
from ov3d_core.diagnostics import box_errors
from ov3d_core.diagnostics.runtime import MeasuredStage, accuracy_latency, runtime_table
from ov3d_core.diagnostics.transfer import domain_transfer, three_axis_breakdown
from ov3d_core.errors import InputError
from ov3d_core.eval.constants import RECALL_KEY, SUMMARY_KEYS
from ov3d_core.eval import curves
from ov3d_core.eval.labels import encode_names
from ov3d_core.eval.scoring import score_pooled
from ov3d_core.eval.threads import kernel_threads
from ov3d_core.io import loadcache
from ov3d_core.remap.cache import EmbeddingStore
from ov3d_core.scorecache import decode_frame, encode_frame, encode_row
from ov3d_core.taxonomy import SUBSET_PRESETS, omni3d_preset_for

__all__ = ["Tables", "POOLED_SUBSETS", "subset_means"]

#: Omni3D's pooled subset means (``Analysis.pooled``): all 50 categories, the indoor and the outdoor lists.
POOLED_SUBSETS = ("omni3d", "omni3d_in", "omni3d_out")


def subset_means(ap, vocabulary: Sequence[str], subsets: Mapping[str, Sequence[str]]) -> dict[str, float]:
    """Omni3D's subset means: AP3D over a category list, NaN unless every category was evaluated and has GT."""
    return {name: ap.mean_ap(list(cats)) if set(cats) <= set(vocabulary) else float("nan")
            for name, cats in subsets.items()}


class Tables:
    """Mixin of :class:`~ov3d_core.analysis.Analysis`: the tables of the Overview, the CLI and the report."""

    def summary(self, view: View) -> dict[str, float]:
        """AP3D, AP3D@15/25/50, AP3D-N/M/F (percent) and recall3D@15 (fraction)."""
        return dict(self.score(view).summary)

    def per_category(self, view: View) -> pd.DataFrame:
        """One row per evaluated category: AP3D and its slices (percent), AR, n_gt, n_pred, recall3D (fraction).
        Kept on disk beside the load caches (``ov3d_core.scorecache``): a new process shows it without loading."""
        self._need_run(view)
        return self._memoised("per_category", score_key(view), lambda: self._persisted(
            "per_category", view, lambda: self.score(view).per_category, encode_frame, decode_frame))

    def pred_status(self, view: View) -> pd.DataFrame:
        """Per prediction: TP / FP / mislabelled / ignored / not evaluated at ``view.iou``, matched GT, best IoU."""
        return self._memoised("pred_status", (score_key(view), view.iou), lambda: self.score(view).pred_status(view.iou))

    def status_tables(self, view: View) -> dict[str, pd.DataFrame]:
        """:meth:`pred_status` with each prediction's ``image_id``, ``category`` (from its file) and ``score``, and
        :meth:`gt_status` with each GT's ``image_id`` and ``category``: ``{"pred", "gt"}`` (the report's box tables)."""
        def compute():
            c = self.context(view)
            ps = self.pred_status(view).copy()
            rows = ps["pred"].to_numpy()
            ps.insert(1, "image_id", c.pred.image_id[rows])
            ps.insert(2, "category", c.pred.category[rows])
            ps.insert(3, "score", c.pred.score[rows])
            gs = self.gt_status(view).copy()
            rows = gs["gt"].to_numpy()
            gs.insert(1, "image_id", c.gt.image_id[rows])
            gs.insert(2, "category", c.gt.category[rows])
            return {"pred": ps, "gt": gs}

        return self._memoised("status_tables", (score_key(view), view.iou), compute)

    def gt_status(self, view: View) -> pd.DataFrame:
        """Per GT row: TP / FN / ignored / not evaluated at ``view.iou`` and the matched prediction."""
        return self._memoised("gt_status", (score_key(view), view.iou), lambda: self.score(view).gt_status(view.iou))

    def out_of_vocabulary(self, view: View) -> pd.DataFrame:
        """Predictions of the run whose category (from its file) is outside the dataset vocabulary: not scored, never
        silently dropped. One row per such category with its count (empty when there are none)."""
        run = self._need_run(view)

        def compute():
            inputs = self.inputs(view)
            ds, r = inputs.dataset, inputs.run
            cats = np.asarray(r.pred.category, dtype=object)
            s = pd.Series(cats[encode_names(cats, ds.vocabulary) < 0], dtype=object).value_counts(sort=True)
            return pd.DataFrame({"category": s.index.astype(str).tolist(), "n_pred": s.to_numpy(np.int64)})

        return self._memoised("out_of_vocabulary", (view.dataset, run, view.template, view.subset), compute)

    def leaderboard(self, view: View, datasets: Sequence[str] | None = None, *,
                    remap: RemapSpec | None = None) -> pd.DataFrame:
        """One row per (dataset, run) of ``datasets`` (default: ``view.dataset``; ``"all"`` / every dataset with
        ``datasets=self.datasets``), scored under ``view``'s protocol, threshold, class subset, template and image
        subset. Runs take part with their own labels; with ``remap``, each closed-vocabulary run is followed by its
        remapped twin ``X*`` (:meth:`run_views`).

        Columns: dataset, run, environment, in_domain, protocol, n_images, n_gt, n_pred, n_out_of_vocabulary, then
        :data:`SUMMARY_KEYS`. Runs whose files fail to load are left out (see :meth:`failures`)."""
        names = [view.dataset] if datasets is None else list(datasets)
        rows = []
        for v in self.run_views(view, names, remap=remap):
            try:
                rows.append(self.leaderboard_row(v))
            except InputError:
                continue
        return pd.DataFrame(rows, columns=LEADERBOARD_COLUMNS)

    def remapped_runs(self, dataset: str, remap: RemapSpec | None) -> list[str]:
        """The runs that take part remapped (the paper's Cube R-CNN*, OVM3D-Det*): the closed-vocabulary runs of the
        config (``closed_vocabulary``) that ``remap``'s encoder can remap (none without ``remap``)."""
        if remap is None:
            return []
        ok = set(self.remappable_runs(dataset, remap.encoder))
        return [r for r in self.runs(dataset)
                if r in ok and self.benchmark.run_spec(r, dataset).closed_vocabulary is not None]

    def run_views(self, view: View, datasets: Sequence[str] | None = None, *,
                  remap: RemapSpec | None = None) -> list[View]:
        """Every run of ``datasets`` (default ``view.dataset``) as a view with ``view``'s settings and its own labels,
        each run of :meth:`remapped_runs` followed by its remapped twin (``view.with_(remap=remap)``, named ``X*``):
        the runs of every table that lists runs (leaderboard, transfer, three axes)."""
        out = []
        for ds_name in ([view.dataset] if datasets is None else list(datasets)):
            if view.subset is not None:
                self.benchmark.image_subset(ds_name, view.subset)  # an InputError where the dataset has no such subset
            star = set(self.remapped_runs(ds_name, remap))
            for run in self.runs(ds_name):
                base = view.with_(dataset=ds_name, run=run, remap=None, template=None)
                out.append(base)
                if run in star:
                    out.append(base.with_(remap=remap))
        return out

    def leaderboard_row(self, view: View) -> dict:
        """One leaderboard row (see :meth:`leaderboard`)."""
        def compute():
            sc = self.score(view)
            spec = self.benchmark.run_spec(view.run, view.dataset)
            ds = self.inputs(view).dataset
            s = sc.summary
            return {"dataset": view.dataset, "run": view.run + ("*" if view.remap else ""),
                    "environment": self.environment(view.dataset),
                    "in_domain": spec.in_domain if spec.trained_on else None, "protocol": view.protocol,
                    "n_images": int(len(ds.images)), "n_gt": int(sc.recall.n_gt),
                    "n_pred": int(np.count_nonzero(sc.view.evaluated)),
                    "n_out_of_vocabulary": int(self.out_of_vocabulary(view)["n_pred"].sum()),
                    **{k: float(s.get(k, np.nan)) for k in SUMMARY_KEYS}}

        self._need_run(view)
        return self._memoised("leaderboard_row", score_key(view), lambda: self._persisted(
            "leaderboard_row", view, compute, encode_row, dict))

    def _persisted(self, kind: str, view: View, compute: Callable[[], Any], encode, decode):
        """``compute()`` through the disk cache of small results, keyed by the content of the view's input files
        (remapped views, which also depend on an encoder, and folder inputs are computed every time)."""
        return self._scores.get(kind, None if view.remap is not None else self._input_identity(view), compute,
                                encode, decode)

    def _input_identity(self, view: View) -> dict | None:
        """The config entries of the view's dataset and run (the template's file for ``view.template``) and the (path,
        content digest) of their input files; None when one is not a regular file (a KITTI folder, a missing file:
        computing then says what is wrong) and for an image subset (its ids depend on the loaded GT: computed)."""
        if view.subset is not None:
            return None
        self.digest_inputs()
        ds_spec = self.benchmark.dataset_spec(view.dataset)
        run_spec = self.benchmark.template_spec(view.run, view.dataset, view.template)
        files = [*ds_spec.gt, run_spec.predictions, *([run_spec.crops] if run_spec.crops else [])]
        if ds_spec.calib is not None or not all(Path(f).is_file() for f in files):
            return None
        try:
            digests = [(str(Path(f).resolve()), loadcache.file_digest(f)) for f in files]
        except OSError:
            return None
        return {"view": repr(score_key(view)), "dataset": repr(ds_spec), "run": repr(run_spec), "files": digests}

    def digest_inputs(self) -> None:
        """Digest the GT and prediction files of the whole config once, on threads (the key of the score cache; the
        first cached lookup does it, a page may call it first under a progress message). A leaderboard needs them
        all, and one file after another leaves a core idle (0.36 s per 1.9 GB file alone, 0.21 s two at a time). The
        digests are memoised per process (``file_digest``); a file that cannot be read is left to the view that
        needs it, which then says so."""
        if self._hashed.is_set():
            return
        self._hashed.set()

        cfg = self.benchmark.config
        files = [*(f for spec in cfg.datasets.values() for f in spec.gt), *(r.predictions for r in cfg.runs.values())]
        files = [f for f in dict.fromkeys(Path(f) for f in files) if f.is_file()]

        def digest(f: Path) -> None:
            try:
                loadcache.file_digest(f)
            except OSError:
                pass

        if len(files) > 1:
            with ThreadPoolExecutor(min(kernel_threads(), len(files)), thread_name_prefix="ov3d-hash") as pool:
                list(pool.map(digest, files))

    def per_category_runs(self, view: View, runs: Sequence[str]) -> pd.DataFrame:
        """Per-category AP3D of several runs on ``view.dataset``, long format (run first)."""
        parts = []
        for run in runs:
            pc = self.per_category(view.with_(run=run)).copy()
            pc.insert(0, "run", run)
            parts.append(pc)
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["run", "category", "AP3D"])

    def pooled(self, view: View, datasets: Sequence[str] | None = None) -> dict:
        """Omni3D's pooled row for ``view.run`` over several datasets (the union vocabulary; default: every dataset
        the run is on): ``{"summary", "per_category", "ap", "subsets"}``, ``subsets`` being Omni3D's pooled subset
        means (``omni3d``, ``omni3d_in``, ``omni3d_out``: NaN unless every category of the subset has GT). Pooled
        over one dataset it is that dataset's score (the same detections are not evaluated a second time)."""
        names = list(datasets) if datasets is not None else [d for d in self.datasets if view.run in self.runs(d)]

        def compute():
            if len(names) == 1:
                sc = self.score(view.with_(dataset=names[0]))
                out = {"summary": sc.summary, "per_category": sc.per_category, "ap": sc.ap}
            else:
                parts = []
                for d in names:
                    c = self.context(view.with_(dataset=d))
                    parts.append((c.dataset, c.run, c.pairs, self.score(c.view).view))
                out = score_pooled(parts)
            vocab = tuple(out["per_category"]["category"])
            out["subsets"] = subset_means(out["ap"], vocab, {k: SUBSET_PRESETS[k] for k in POOLED_SUBSETS})
            return out

        return self._memoised("pooled", (score_key(view), tuple(names)), compute)

    def omni3d_subsets(self, view: View) -> dict[str, float]:
        """Omni3D's subset means of a view (AP3D, percent): the dataset's Omni3D category subset (``omni3d``, found
        by its name, e.g. ``SUNRGBD_test``) and the config's own ``subsets`` of the dataset; NaN unless every
        category of a subset was evaluated and has GT."""
        spec = self.benchmark.dataset_spec(view.dataset)
        subsets = {}
        preset = omni3d_preset_for(self.benchmark.dataset(view.dataset).name) or omni3d_preset_for(spec.name)
        if preset:
            subsets["omni3d"] = preset
        subsets.update(spec.subsets)
        sc = self.score(view)
        return self._memoised("omni3d_subsets", score_key(view),
                              lambda: subset_means(sc.ap, sc.view.vocabulary, subsets))

    def environment(self, dataset: str) -> str | None:
        """The dataset's environment: the config's ``environment:``, else what the loader found (e.g. KITTI is
        outdoor), else None. The one rule every transfer table uses."""
        spec = self.benchmark.config.datasets.get(dataset)
        env = spec.environment if spec is not None else None
        if env is None:
            env = getattr(self.benchmark.dataset(dataset), "environment", None)
        return env

    def trained_on(self) -> dict[str, list[str]]:
        """Per run name: the union of the ``trained_on`` datasets of its config entries."""
        out: dict[str, set] = {}
        for spec in self.benchmark.config.runs.values():
            out.setdefault(spec.name, set()).update(spec.trained_on)
        return {k: sorted(v) for k, v in out.items()}

    def transfer(self, view: View, *, prompt_cv: Mapping[str, float] | None = None,
                 remap: RemapSpec | None = None) -> dict[str, pd.DataFrame]:
        """Domain transfer (Tables 4/5) and the three-axis breakdown (Fig. 5) over every (run, dataset), under
        ``view``'s protocol and threshold: ``{"transfer", "transfer_per_run", "transfer_pairs", "three_axis"}``.
        With ``remap``, the closed-vocabulary runs take part remapped too, as ``X*`` beside ``X`` (the paper's
        Cube R-CNN*; :meth:`run_views`), in-domain where ``X`` is. ``prompt_cv`` (row name -> CV over the templates,
        :meth:`prompt_cv`) fills the prompt-robustness column; without it the column is NaN (never invented)."""
        cv = tuple(sorted((prompt_cv or {}).items()))

        def compute():
            lb = self.leaderboard(view.with_(remap=None, template=None), datasets=self.datasets, remap=remap)
            results = pd.DataFrame({"run": lb["run"], "dataset": lb["dataset"], "map3d": lb["AP3D"],
                                    "recall": lb[RECALL_KEY]})
            envs = {d: self.environment(d) for d in self.datasets}
            trained = self.trained_on()
            trained.update({f"{r}*": trained[r] for r in list(trained) if f"{r}*" in set(lb["run"])})
            tt = domain_transfer(results, trained, envs)
            axes = three_axis_breakdown(tt, dict(cv) or None)
            table = axes.to_frame()
            ranks = axes.ranks().set_index("run")
            for ax in axes.AXES:
                table[f"rank_{ax}"] = table["run"].map(ranks[ax]).astype("Int64")
            return {"transfer": tt.table, "transfer_per_run": tt.per_run, "transfer_pairs": tt.pairs,
                    "three_axis": table}

        return self._memoised("transfer", (view.protocol, view.min_score, view.classes, view.subset, cv, remap),
                              compute)

    def runtime(self, dataset: str, *, remap: RemapSpec | None = None) -> pd.DataFrame:
        """Table 10 on ``dataset`` (``diagnostics.runtime``): each run's declared ms per image by stage (its
        ``runtime:`` entry), and with ``remap`` each remapped run ``X*`` (:meth:`remapped_runs`) as the semantic stage
        measured when its crops were embedded (embedded here first when they are not yet; the encoder timing kept
        with the embeddings; NaN with a note when an entry was computed without timing, e.g. on Ray) plus ``X``'s
        declared geometry stage."""
        declared = {r: self.benchmark.run_spec(r, dataset).runtime for r in self.runs(dataset)}
        star = self.remapped_runs(dataset, remap)
        measured = {}
        if star:
            key = self.encoder(remap.encoder).cache_key
            for r in star:  # the crops embedded (and timed) first, so the table does not depend on call order
                self.remapper(dataset, r, remap)
            store = EmbeddingStore(self.embedding_dir)
            measured = {f"{r}*": MeasuredStage.from_timing(store.timing(dataset, r, key)) for r in star}
        return runtime_table(declared, measured, {f"{r}*": r for r in star})

    def accuracy_latency(self, view: View, *, remap: RemapSpec | None = None) -> pd.DataFrame:
        """The accuracy-latency scatter on ``view.dataset``: each run's mAP3D (:meth:`leaderboard`, with the remapped
        runs when ``remap`` is given) against its total ms per image (:meth:`runtime`); a run without both says why."""
        lb = self.leaderboard(view, remap=remap)
        return accuracy_latency(self.runtime(view.dataset, remap=remap), lb[["run", "AP3D"]])

    def pred_details(self, view: View, image_id: int | None = None) -> pd.DataFrame:
        """Per prediction: status at ``view.iou``, score ranks, the reference GT (matched, else best 3D overlap) and
        the errors against it: 3D / 2D IoU, centre distance, depth error, aligned size error, yaw error
        (``diagnostics.box_errors``). ``image_id``: that image's predictions only (the same rows and values; what
        per-image views ask for, so that a 2M-prediction run is not tabulated whole for one image)."""
        def compute():
            c = self.context(view)
            rows = None if image_id is None else np.flatnonzero(np.asarray(c.pred.image_id) == int(image_id))
            ranks = self._memoised("pred_ranks", score_key(view), lambda: box_errors.pred_ranks(c.pred, c.labels))
            return box_errors.pred_details(c.gt, c.pred, c.pairs, c.labels, self.pred_status(view), rows=rows, ranks=ranks)

        key = (score_key(view), view.iou) if image_id is None else (score_key(view), view.iou, int(image_id))
        return self._memoised("pred_details", key, compute)

    def gt_details(self, view: View) -> pd.DataFrame:
        """Per GT box: status at ``view.iou``, ignore reason, truncation, visibility, depth, volume, 2D height and
        the matched prediction (``diagnostics.box_errors``)."""
        def compute():
            c = self.context(view)
            return box_errors.gt_details(c.gt, self.gt_status(view), c.labels.score, c.pairs)

        return self._memoised("gt_details", (score_key(view), view.iou), compute)

    def pr_curves(self, view: View, iou: float | None = None) -> pd.DataFrame:
        """Interpolated precision-recall curves (101 recall points, Omni3D) per category with GT and their class
        mean, at 3D IoU ``iou`` (default ``view.iou``), of the view *without* its score threshold: the threshold is
        a point on these curves (:meth:`operating_points`)."""
        sc = self.score(view.with_(min_score=0.0))
        return curves.interpolated_pr(sc.ap, view.iou if iou is None else iou, sc.view.vocabulary)

    def pr_points(self, view: View, iou: float | None = None) -> pd.DataFrame:
        """The raw precision-recall curve per category (one row per non-ignored evaluated detection in score order)
        at ``iou`` (default ``view.iou``), of the view without its score threshold (``eval.curves.pr_points``)."""
        v0 = view.with_(min_score=0.0)
        t = view.iou if iou is None else float(iou)

        def compute():
            sc = self.score(v0)
            pred = self.inputs(view).run.pred
            a_all = sc.ap.range_index("all")
            return curves.pr_points(sc.ap.matches, sc.view.codes, sc.view.score, pred.image_id,
                                    sc.ap.n_gt[:, a_all], t, sc.view.vocabulary)

        return self._memoised("pr_points", (score_key(v0), t), compute)

    def operating_points(self, view: View, iou: float | None = None) -> pd.DataFrame:
        """Where ``view.min_score`` sits on each category's raw curve at ``iou`` (default ``view.iou``): detections
        kept, TP, FP, recall and precision, then the class mean on the mean curve (``eval.curves.operating_points``)."""
        sc = self.score(view.with_(min_score=0.0))
        a_all = sc.ap.range_index("all")
        pr = self.pr_curves(view, iou)
        return curves.operating_points(self.pr_points(view, iou), view.min_score, sc.ap.n_gt[:, a_all],
                                       sc.view.vocabulary, mean_curve=pr[pr["category"] == curves.ALL_CLASSES])

