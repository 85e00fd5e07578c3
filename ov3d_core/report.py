"""Whole-benchmark report: every table the app shows, for every (run, dataset) of a benchmark, in one folder.

Two halves, as in nuscenes-devkit's eval (pure tables, separate writer):

- **Tables** (pure): :func:`report_tables` takes an :class:`~ov3d_core.analysis.Analysis` and :class:`ReportOptions`
  and returns ``{name: DataFrame}``. Every number comes from an ``Analysis`` method for a ``View`` — the same call
  the app's pages and ``ov3d evaluate`` make — so a table here equals what the app renders for the same view
  (``tests/report/test_app_parity.py`` holds them together page by page).
- **Writer**: :func:`write_report` writes every table as CSV, the readable ones as Markdown, the main ones as
  LaTeX (``ov3d_core.tables``), plus ``index.md``, ``README.md`` and ``summary.json``.

Units: AP values are percent (0-100); recall, shares, fractions and ratios are fractions (0-1). NaN means "not
defined" (no GT, too few classes for a subset, no in-domain reference, no prompt results); it is never filled in.

Decisions where the brief and the paper are silent:

- ``protocol`` applies to every table but the protocol comparison (Table 7), which scores both protocols on the
  same thresholded view.
- Confusion matrices: the protocol's scored view, 3D IoU >= ``confusion_iou`` (paper: 0.5), non-ignored vocabulary
  GT only. The pooled super-category matrix (Fig. 4) sums the counts of every (run, dataset); its cross-super share
  is ``sum(super off-diagonal) / sum(fine off-diagonal)`` over all of them.
- Class splits draw with the same ``seed`` for every (run, dataset).
- Domain transfer: a run's ``trained_on`` is the union over its config entries; a dataset's environment is the
  config's ``environment:``, else the loader's (``Analysis.environment``: the one rule the app uses too).
- Prompt tables (Table 8, PCR/PLC, FG-OVD ranks, vocabulary curve, calibration) need an encoder (``encoder``):
  every remappable run (``Analysis.remappable_runs``) is remapped under the 15 preset templates at θ (default: the
  encoder's). Prompt robustness in the three-axis table (Fig. 5) is 1 - the mean CV over datasets; without an
  encoder it is NaN (never invented).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from ov3d_core.analysis import DEFAULT_TEMPLATES, LEADERBOARD_COLUMNS, MINING_KINDS, Analysis, RemapSpec, View
from ov3d_core.analysis.diagnostics import POOLED
from ov3d_core.errors import InputError
from ov3d_core.eval.constants import CONFUSION_IOU, CROSS_CLASS_IOU, PROTOCOLS, RECALL_KEY, STATUS_IOU
from ov3d_core.tables import json_scalar, to_latex, to_markdown
from ov3d_core.taxonomy import super_category

__all__ = ["ReportOptions", "Report", "TableSpec", "TABLES", "PROMPT_TABLES", "BOX_TABLES", "CI_TABLES",
           "PAIRED_TABLES", "MINING_TABLES", "ci_tables", "paired_tables", "mining_tables", "json_records",
           "report_views", "leaderboard_table", "pivot_table",
           "per_category_table", "protocol_tables", "confusion_tables", "class_split_table", "transfer_tables",
           "tide_tables", "oracle_table", "distance_tables", "semantic_table", "prompt_tables", "box_detail_tables",
           "curve_tables", "report_tables", "build_report", "write_report"]

ALL = POOLED


@dataclass(frozen=True)
class ReportOptions:
    """Settings of a report.

    Attributes:
        protocol: "dataset-level" (the paper's) or "target-aware", for every table but the protocol comparison.
        min_score: drop predictions scoring below this before anything is scored.
        n_subsets, subset_size, seed: the class-split table (paper: 5,000 random 10-class subsets).
        confusion_iou: 3D IoU of the one-to-one confusion assignment (paper: 0.5).
        cross_class_iou: 3D IoU at which an oracle-removed prediction counts as sitting on a GT of another class.
        tide_fg, tide_bg: 3D TIDE foreground / background IoUs.
        distance_modes: centre-distance modes of the distance tables.
        encoder: remap encoder for the prompt tables ("proxy", "hf:..."); None: no prompt tables.
        theta: remap threshold (None: the encoder's default); score_mode: remap score fusion.
        templates: the templates of the prompt probe (default: the 15 presets).
        remap_runs: restrict the prompt tables to these runs (None: every remappable run).
        engine: "local" or "ray": with "ray", the crop embeddings of the remapped runs are computed on Ray
            (``ov3d_core.remap.engines``) and the template table is a Ray sweep (``ov3d_core.analysis.sweep``): the same
            numbers as "local". ``address``: the Ray cluster (None: a local instance).
        boxes: also write the per-prediction and per-GT status tables (``pred_status``, ``gt_status``) at
            ``status_iou`` (large: one row per box).
        ci: also write the image-bootstrap intervals of every (run, dataset) (``ci``, ``ci_per_category``) and the
            leaderboard with significance tiers (``tiers``): ``n_resamples`` resamples drawn from ``ci_seed``,
            ``level``, ``ci_method`` ("bca" or "percentile"); ``correction`` over the tier gaps and the categories of
            ``paired``.
        paired: two runs (A, B): also write their paired comparison on every dataset that has both (``paired``,
            ``paired_per_category``).
        mine: also write the failure-mining lists (``mining_<kind>``): the ``mine_top`` first images per kind for
            each run (per dataset for the cross-run kinds).
        subset: score only the images of this named image subset of every dataset (``image_subsets``).
    """

    protocol: str = "dataset-level"
    min_score: float = 0.0
    n_subsets: int = 5000
    subset_size: int = 10
    seed: int | None = 0
    confusion_iou: float = CONFUSION_IOU
    cross_class_iou: float = CROSS_CLASS_IOU
    tide_fg: float = 0.25
    tide_bg: float = 0.1
    distance_modes: tuple[str, ...] = ("3dmood", "3dmood-compat", "nuscenes")
    encoder: str | None = None
    theta: float | None = None
    score_mode: str = "detector"
    templates: tuple[str, ...] = DEFAULT_TEMPLATES
    remap_runs: tuple[str, ...] | None = None
    boxes: bool = False
    status_iou: float = STATUS_IOU
    engine: str = "local"
    address: str | None = None
    ci: bool = False
    n_resamples: int = 1000
    level: float = 0.95
    ci_method: str = "bca"
    ci_seed: int = 0
    correction: str = "holm"
    paired: tuple[str, str] | None = None
    mine: bool = False
    mine_top: int = 10
    subset: str | None = None

    def __post_init__(self):
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"protocol: expected one of {PROTOCOLS}, got {self.protocol!r}")
        if self.n_subsets < 1 or self.subset_size < 1:
            raise ValueError(f"Expected positive n_subsets and subset_size, got {self.n_subsets}, {self.subset_size}")
        if not 0.0 < self.confusion_iou <= 1.0:
            raise ValueError(f"confusion_iou: expected a value in (0, 1], got {self.confusion_iou}")
        if self.engine not in ("local", "ray"):
            raise ValueError(f"engine: expected 'local' or 'ray', got {self.engine!r}")
        if self.n_resamples < 1 or self.mine_top < 1:
            raise ValueError(f"Expected positive n_resamples and mine_top, got {self.n_resamples}, {self.mine_top}")
        if not 0.0 < self.level < 1.0:
            raise ValueError(f"level: expected a value in (0, 1), got {self.level}")
        if self.paired is not None and (len(self.paired) != 2 or self.paired[0] == self.paired[1]):
            raise ValueError(f"paired: expected two different runs, got {self.paired!r}")

    @property
    def bootstrap_kw(self) -> dict:
        """The resampling keywords of ``Analysis.bootstrap`` / ``paired`` / ``leaderboard_tiers``."""
        return {"n_resamples": self.n_resamples, "seed": self.ci_seed, "level": self.level}

    def view(self, dataset: str, run: str | None = None, **kw) -> View:
        return View(dataset=dataset, run=run, protocol=self.protocol, min_score=self.min_score,
                    iou=self.status_iou, subset=self.subset, **kw)

    def remap_spec(self) -> RemapSpec | None:
        if self.encoder is None:
            return None
        return RemapSpec(encoder=self.encoder, theta=self.theta, score_mode=self.score_mode)


@dataclass(frozen=True)
class TableSpec:
    """How a table is presented: title, paper reference, description and the formats it is written in."""

    title: str
    paper: str
    description: str
    markdown: bool = True
    latex: bool = False
    latex_drop: tuple[str, ...] = ()


#: Every table of a report, in index order. CSV is always written.
TABLES: dict[str, TableSpec] = {
    "leaderboard": TableSpec(
        "Leaderboard", "Tables 3/4",
        "One row per (run, dataset): Omni3D AP3D (mean over IoU 0.05:0.50), AP3D at IoU 0.15/0.25/0.50, AP3D by "
        "depth (near/medium/far) and 3D class-agnostic recall at IoU 0.15 (fraction); predictions outside the "
        "vocabulary are counted (not scored).",
        latex=True, latex_drop=("environment", "protocol", "n_images", "n_pred", "n_out_of_vocabulary")),
    "map3d": TableSpec("mAP_3D per run and dataset", "Tables 3/4", "AP3D (percent), runs x datasets.", latex=True),
    "recall": TableSpec("3D class-agnostic recall", "Table 2",
                        "Fraction of non-ignored GT matched by some kept prediction at 3D IoU >= 0.15, regardless of "
                        "the predicted label; runs x datasets.", latex=True),
    "per_category": TableSpec("Per-category AP", "Tables 3/4 (per class)",
                              "One row per (run, dataset, category): n_gt, n_pred, AP3D and its slices, AR and "
                              "class-agnostic recall of the category's GT."),
    "ci": TableSpec("Confidence intervals", "(beyond the paper)",
                    "Per (run, dataset, headline number): the value, its image-bootstrap interval (lo, hi) at the "
                    "stated level and method, the bootstrap standard error and the resamples where it is defined "
                    "(Analysis.bootstrap). Written with --ci.", latex=True),
    "ci_per_category": TableSpec("Confidence intervals per category", "(beyond the paper)",
                                 "Per (run, dataset, category): AP3D and its image-bootstrap interval. Written with "
                                 "--ci.", markdown=False),
    "tiers": TableSpec("Leaderboard with significance tiers", "(beyond the paper)",
                       "Per dataset, runs ranked by AP3D with their BCa intervals; the gap to the next run with its "
                       "paired-bootstrap interval and p-value, corrected over the gaps; runs joined by a "
                       "non-significant gap share a tier (Analysis.leaderboard_tiers). Written with --ci.",
                       latex=True, latex_drop=("gap_lo", "gap_hi", "p_value")),
    "paired": TableSpec("Paired comparison of two runs", "(beyond the paper)",
                        "Per dataset with both runs and headline number: A, B, A - B with its paired image-bootstrap "
                        "interval and p-value (one test per number) (Analysis.paired). Written with --paired A,B.",
                        latex=True),
    "paired_per_category": TableSpec("Paired comparison per category", "(beyond the paper)",
                                     "Per dataset and category: A - B, its interval, p-value and the p-value "
                                     "adjusted over the categories (correction column). Written with --paired A,B."),
    "pred_status": TableSpec("Status of every prediction", "(the scene inspector)",
                             "Per (run, dataset, prediction row): image, category, score, status at the status IoU "
                             "(TP / FP / mislabelled / ignored / not evaluated), matched GT row, best 3D IoU with any "
                             "GT and that GT's row. Written with --boxes.", markdown=False),
    "gt_status": TableSpec("Status of every GT box", "(the scene inspector)",
                           "Per (run, dataset, GT row): image, category, status (TP / FN / ignored / not evaluated) "
                           "and the matched prediction row. Written with --boxes.", markdown=False),
    "pred_details": TableSpec("Per-prediction errors", "(the scene inspector)",
                              "Per (run, dataset, prediction row): status, score ranks (within the class in AP order, "
                              "on the image), depth and volume, the reference GT (matched, else the best 3D overlap) "
                              "and the errors against it: 3D / 2D IoU, centre distance (m), depth error (m, signed), "
                              "size error (1 - aligned IoU), yaw error (degrees). Written with --boxes.",
                              markdown=False),
    "gt_details": TableSpec("Per-GT details", "(the scene inspector, the sample grid)",
                            "Per (run, dataset, GT row): status, ignore reason, truncation, visibility, depth, "
                            "volume, 2D height and the matched prediction with its score and 3D IoU. Written with "
                            "--boxes.", markdown=False),
    "pr_curves": TableSpec("Precision-recall curves", "(the PR-curves page)",
                           "Per (run, dataset, category): Omni3D's interpolated precision at the 101 recall points, "
                           "at the status IoU, without the score threshold; '(all classes)' is the class mean.",
                           markdown=False),
    "operating_points": TableSpec("Operating points of the score threshold", "(the PR-curves page)",
                                  "Per (run, dataset, category) at the status IoU: detections scoring at least the "
                                  "threshold, TP, FP, recall and precision; '(all classes)': the mean recall and the "
                                  "mean curve's precision there."),
    "out_of_vocabulary": TableSpec("Predictions outside the vocabulary", "(not in the paper)",
                                   "Per (run, dataset, category): predictions whose category is not in the "
                                   "evaluated vocabulary; not scored (as Omni3D), counted here."),
    "protocol_summary": TableSpec(
        "Dataset-level vs target-aware protocol", "Table 7",
        "mAP_3D of the same predictions under both protocols, target-aware / dataset-level ratio, and the "
        "predictions the oracle removes (cross_class: on a GT of another class at 3D IoU >= the overlap threshold).",
        latex=True, latex_drop=("count_ignored_as_present", "only_images_with_gt", "overlap_threshold")),
    "protocol_per_class": TableSpec("Protocol comparison per class", "Table 7 (per class)",
                                    "Per-class AP under both protocols, absolute and relative deltas, removed "
                                    "predictions per class."),
    "protocol_removed": TableSpec("Predictions removed by the target-aware oracle", "Table 7 / Fig. 6",
                                  "Every prediction the oracle removes, highest score first, with the best 3D IoU "
                                  "with a GT of another class.", markdown=False),
    "confusion_fine": TableSpec("Fine confusion counts", "Fig. 2",
                                "Non-zero cells of the fine confusion matrix per (run, dataset): GT class, predicted "
                                "class, count and row-normalised fraction (one-to-one Hungarian matching at 3D IoU "
                                ">= the confusion threshold).", markdown=False),
    "confusion_fine_classes": TableSpec("Fine confusion per class", "Fig. 2",
                                        "Per GT class: matched, correctly labelled, missed, diagonal fraction and "
                                        "the class it is most often confused with."),
    "confusion_super": TableSpec("Super-category confusion counts", "Fig. 4",
                                 "Every cell of the super-category matrix per (run, dataset).", markdown=False),
    "confusion_super_summary": TableSpec(
        "Super-category confusion summary", "Fig. 4",
        "Per (run, dataset) and pooled over all of them: share of fine confusions that cross super-categories, "
        "share of all matches that do, 1 - mean diagonal, and the diagonal per super-category.", latex=True),
    "confusion_super_pooled": TableSpec("Super-category confusion matrix (pooled)", "Fig. 4",
                                        "Row-normalised super-category matrix summed over every run and dataset "
                                        "(rows: GT, columns: predicted), with matched and missed GT counts.",
                                        latex=True),
    "semantic_confusion": TableSpec("Semantic-distance-weighted confusion", "(the paper's future work)",
                                    "Per (run, dataset): matched GT, confusions, their share, and their mean cost "
                                    "under the super-category tree (same super-category 0.5, else 1)."),
    "class_splits": TableSpec(
        "Class-split sensitivity", "Table 9",
        "mAP over random class subsets: mean +- std (population), min/max, adverse (bottom classes) and "
        "favourable (top classes) bounds, and the mAP over all classes with GT.", latex=True,
        latex_drop=("subset_size", "n_subsets", "seed", "bottom_classes", "top_classes")),
    "transfer": TableSpec("Domain transfer", "Tables 4/5",
                          "mAP_3D and recall per (run, dataset) with in-domain flag (dataset in the run's "
                          "trained_on) and environment.", latex=True),
    "transfer_per_run": TableSpec("Domain transfer per run", "Table 5",
                                  "Per (run, environment): mean in-domain and out-of-domain mAP_3D and recall, and "
                                  "out / in ratios.", latex=True),
    "transfer_pairs": TableSpec("Domain transfer pairs", "Tables 4(a)/4(b)",
                                "Per dataset: every (in-domain run, same-environment out-of-domain run) pair."),
    "three_axis": TableSpec(
        "Three-axis breakdown", "Fig. 5",
        "Per run: geometric (mean recall), semantic (mean mAP_3D, in/out of domain), prompt robustness (1 - mean "
        "CV over datasets; NaN without an encoder) and cross-domain ratio, with ranks (1 = best).", latex=True),
    "tide": TableSpec("3D TIDE error bins", "(TIDE in 3D)",
                      "Per (run, dataset, bin): count and the mAP_3D gained by fixing only that bin (percentage "
                      "points; the bins do not sum)."),
    "tide_examples": TableSpec("3D TIDE examples", "(TIDE in 3D)",
                               "The highest-scoring false positives of every bin (and missed GT) per (run, dataset).",
                               markdown=False),
    "oracles": TableSpec("Monocular oracles", "(beyond the paper)",
                         "Per (run, dataset, factor): mAP_3D after replacing depth / size / rotation (or all) of "
                         "every associated prediction by its GT's, and the gain."),
    "distance": TableSpec("Centre-distance AP and ODS", "WildDet3D / 3D-MOOD, nuScenes",
                          "Per (run, dataset, mode): centre-distance AP (percent), mean TP errors (mATE, mAOE, mASE: "
                          "fractions) and ODS (percent)."),
    "distance_per_category": TableSpec("Centre-distance AP per category", "WildDet3D / 3D-MOOD, nuScenes",
                                       "Per (run, dataset, mode, category).", markdown=False),
    "prompt_templates": TableSpec("mAP_3D per prompt template", "Table 8",
                                  "Per remapped (run, dataset, template): AP3D, AP3D@25 (percent), recall and the "
                                  "number of boxes kept."),
    "prompt_sensitivity": TableSpec("Prompt sensitivity", "Table 8",
                                    "Per remapped (run, dataset): mAP_3D per prompt type, mean, CV (population "
                                    "std / mean) and the standard -> overdetailed drop.", latex=True),
    "prompt_consistency": TableSpec("Prompt consistency (PCR / PLC)", "Pro-Bench",
                                    "Per remapped (run, dataset): GT recovered under every template (PCR), the "
                                    "localisation agreement of their boxes (PLC), recall under any / on average."),
    "label_ranks": TableSpec("Rank of the correct label", "FG-OVD",
                             "Per remapped (run, dataset): median (usual and FG-OVD's) and mean rank of the GT class "
                             "among the remapped scores of the box that covers it."),
    "vocabulary_curve": TableSpec("mAP_3D vs vocabulary size", "FG-OVD",
                                  "Per remapped (run, dataset, k): mAP_3D when each associated box chooses among its "
                                  "GT class and the k most similar classes."),
    "calibration": TableSpec("Calibrated remap acceptance", "(the paper's limitation)",
                             "Per remapped (run, dataset, rule): held-out mAP_3D of the fixed-θ rule vs a logistic "
                             "model of P(TP) from similarity, margin, detector score and size."),
}


_MINING_DESCRIPTIONS = {
    "cross-class": "false positives at the status IoU lying on a GT of another class (well localised, misnamed)",
    "oracle-gain": "predictions the target-aware oracle removes that were false positives under the dataset-level "
                   "protocol (what the oracle hides), with the AP3D each image's removal gains",
    "depth-error": "true positives by absolute depth error |z_pred - z_gt| (m); image value: the largest",
    "disagreement": "GT localised by several runs under different labels (value: distinct labels - 1)",
    "missed-by-all": "GT that every run misses at the status IoU",
}
for _kind, _text in _MINING_DESCRIPTIONS.items():
    TABLES[f"mining_{_kind.replace('-', '_')}"] = TableSpec(
        f"Failure mining: {_kind}", "(beyond the paper)",
        f"The first images per (run, dataset) by {_text}: rank, image id, the ranking value and the boxes behind "
        f"it (Analysis.mine). Written with --mine." + (" One list per dataset over every run." if _kind in
                                                         ("disagreement", "missed-by-all") else ""))

#: Tables that need an encoder (``ReportOptions.encoder``); left out without one.
PROMPT_TABLES = ("prompt_templates", "prompt_sensitivity", "prompt_consistency", "label_ranks", "vocabulary_curve",
                 "calibration")
#: Tables written only with ``ReportOptions.boxes``.
BOX_TABLES = ("pred_status", "gt_status", "pred_details", "gt_details")
#: Tables written only with ``ReportOptions.ci`` (intervals, tiers) and ``ReportOptions.paired``.
CI_TABLES = ("ci", "ci_per_category", "tiers")
PAIRED_TABLES = ("paired", "paired_per_category")
#: Tables written only with ``ReportOptions.mine``: one per kind of ``Analysis.mine``.
MINING_TABLES = tuple(f"mining_{k.replace('-', '_')}" for k in _MINING_DESCRIPTIONS)


# ==================================================================================================== tables
def report_views(a: Analysis, options: ReportOptions | None = None, *, progress: Callable | None = None
                 ) -> list[View]:
    """One :class:`View` per (run, dataset) of the config, in config order (each run's geometry computed here)."""
    options = options or ReportOptions()
    entries = a.run_entries()
    views = []
    for dataset, run in (progress(entries) if progress else entries):
        a.geometry(dataset, run)
        views.append(options.view(dataset, run))
    return views


def leaderboard_table(a: Analysis, views: Sequence[View]) -> pd.DataFrame:
    """One row per (run, dataset): :meth:`Analysis.leaderboard_row` (run first)."""
    cols = ["run", "dataset"] + [c for c in LEADERBOARD_COLUMNS if c not in ("run", "dataset")]
    return pd.DataFrame([a.leaderboard_row(v) for v in views], columns=LEADERBOARD_COLUMNS)[cols]


def pivot_table(long: pd.DataFrame, value: str, datasets: list[str] | None = None) -> pd.DataFrame:
    """Runs x datasets of one column (runs in first-appearance order, datasets in ``datasets`` order)."""
    runs = list(dict.fromkeys(long["run"]))
    cols = datasets if datasets is not None else list(dict.fromkeys(long["dataset"]))
    wide = long.pivot(index="run", columns="dataset", values=value) if len(long) else pd.DataFrame()
    wide = wide.reindex(index=runs, columns=[c for c in cols if c in set(long["dataset"])])
    wide.columns.name = None
    wide.index.name = "run"
    return wide.astype(np.float64).reset_index()


def _keyed(df: pd.DataFrame, view: View, **extra) -> pd.DataFrame:
    df = df.copy()
    for i, (k, v) in enumerate({"run": view.run, "dataset": view.dataset, **extra}.items()):
        df.insert(i, k, v)
    return df


def _concat(parts: list[pd.DataFrame]) -> pd.DataFrame:
    parts = [p for p in parts if len(p.columns)]
    if not parts:
        return pd.DataFrame(columns=["run", "dataset"])
    non_empty = [p for p in parts if len(p)]
    return pd.concat(non_empty, ignore_index=True) if non_empty else parts[0].iloc[0:0].reset_index(drop=True)


def per_category_table(a: Analysis, views: Sequence[View]) -> pd.DataFrame:
    """One row per (run, dataset, category): :meth:`Analysis.per_category` with run, dataset and super-category."""
    parts = []
    for v in views:
        df = _keyed(a.per_category(v), v)
        df.insert(3, "super_category", [super_category(c) for c in df["category"]])
        parts.append(df)
    return _concat(parts) if parts else pd.DataFrame(columns=["run", "dataset", "category"])


def status_tables(a: Analysis, views: Sequence[View]) -> dict[str, pd.DataFrame]:
    """Per-box statuses of every view with image ids and categories (:meth:`Analysis.status_tables`)."""
    tables = [a.status_tables(v) for v in views]
    return {"pred_status": _concat([_keyed(t["pred"], v) for t, v in zip(tables, views)]),
            "gt_status": _concat([_keyed(t["gt"], v) for t, v in zip(tables, views)])}


def box_detail_tables(a: Analysis, views: Sequence[View]) -> dict[str, pd.DataFrame]:
    """Per-box errors and attributes of every view (:meth:`Analysis.pred_details` / :meth:`Analysis.gt_details`)."""
    return {"pred_details": _concat([_keyed(a.pred_details(v), v) for v in views]),
            "gt_details": _concat([_keyed(a.gt_details(v), v) for v in views])}


def curve_tables(a: Analysis, views: Sequence[View]) -> dict[str, pd.DataFrame]:
    """Interpolated PR curves (:meth:`Analysis.pr_curves`) and the threshold's operating points
    (:meth:`Analysis.operating_points`) of every view at its status IoU."""
    return {"pr_curves": _concat([_keyed(a.pr_curves(v), v) for v in views]),
            "operating_points": _concat([_keyed(a.operating_points(v), v) for v in views])}


def out_of_vocabulary_table(a: Analysis, views: Sequence[View]) -> pd.DataFrame:
    return _concat([_keyed(a.out_of_vocabulary(v), v) for v in views])


def protocol_tables(a: Analysis, views: Sequence[View], options: ReportOptions) -> dict[str, pd.DataFrame]:
    """Table 7 for every (run, dataset): ``protocol_summary``, ``protocol_per_class``, ``protocol_removed``."""
    summ, per_class, removed = [], [], []
    for v in views:
        cmp = a.protocol_comparison(v, overlap_threshold=options.cross_class_iou)
        summ.append({"run": v.run, "dataset": v.dataset, "n_categories": int(np.isfinite(cmp.ap_dataset_level).sum()),
                     **cmp.summary()})
        per_class.append(_keyed(cmp.to_frame(), v))
        removed.append(_keyed(cmp.removed, v))
    cols = ["run", "dataset", "n_categories", "map_dataset_level", "map_target_aware", "delta_abs", "ratio",
            "n_removed", "n_removed_cross_class", "count_ignored_as_present", "only_images_with_gt",
            "overlap_threshold"]
    return {"protocol_summary": pd.DataFrame(summ, columns=cols),
            "protocol_per_class": _concat(per_class), "protocol_removed": _concat(removed)}


def confusion_tables(a: Analysis, views: Sequence[View], options: ReportOptions) -> dict[str, pd.DataFrame]:
    """Fig. 2 and Fig. 4 for every (run, dataset), and the super-category matrix pooled over all of them
    (:meth:`Analysis.confusion_summary`)."""
    fine, fine_cls, sup_long = [], [], []
    for v in views:
        long = a.confusion(v, iou=options.confusion_iou).to_long_frame()
        fine.append(_keyed(long[long["count"] > 0].reset_index(drop=True), v))
        fine_cls.append(_keyed(a.confusion_classes(v, iou=options.confusion_iou), v))
        sup = a.confusion(v, level="super", iou=options.confusion_iou)
        sl = sup.matrix.to_long_frame().rename(columns={"gt_class": "gt_super", "pred_class": "pred_super"})
        sup_long.append(_keyed(sl, v))
    pooled = a.confusion_summary(views, iou=options.confusion_iou)
    return {"confusion_fine": _concat(fine), "confusion_fine_classes": _concat(fine_cls),
            "confusion_super": _concat(sup_long), "confusion_super_summary": pooled["summary"],
            "confusion_super_pooled": pooled["pooled"]}


def semantic_table(a: Analysis, views: Sequence[View], options: ReportOptions) -> pd.DataFrame:
    """Per (run, dataset): the tree-cost semantic confusion summary (:meth:`Analysis.semantic_confusion`)."""
    rows = [{"run": v.run, "dataset": v.dataset, **a.semantic_confusion(v, iou=options.confusion_iou).overall}
            for v in views]
    return pd.DataFrame(rows, columns=["run", "dataset", "n_matched", "n_confused", "off_diagonal_share",
                                       "weighted_error", "cost_per_match"])


def class_split_table(a: Analysis, views: Sequence[View], options: ReportOptions) -> pd.DataFrame:
    """Table 9 for every (run, dataset): subset mAP statistics over the per-category AP3D."""
    rows = []
    for v in views:
        s = a.class_splits(v, subset_size=options.subset_size, n_subsets=options.n_subsets, seed=options.seed)
        d = s.to_dict()
        d["bottom_classes"] = ", ".join(d.get("bottom_classes") or [])
        d["top_classes"] = ", ".join(d.get("top_classes") or [])
        rows.append({"run": v.run, "dataset": v.dataset, **d})
    cols = ["run", "dataset", "n_classes", "subset_size", "n_subsets", "seed", "mean", "std", "min", "max",
            "adverse", "favourable", "full", "bottom_classes", "top_classes"]
    return pd.DataFrame(rows, columns=cols)


def transfer_tables(a: Analysis, options: ReportOptions, prompt_cv=None) -> dict[str, pd.DataFrame]:
    """Tables 4/5 and Fig. 5 (:meth:`Analysis.transfer`): with an encoder, the closed-vocabulary runs take part
    remapped too (``X*``)."""
    return a.transfer(options.view(a.datasets[0]), prompt_cv=prompt_cv, remap=options.remap_spec())


def tide_tables(a: Analysis, views: Sequence[View], options: ReportOptions, *, n_examples: int = 20
                ) -> dict[str, pd.DataFrame]:
    """3D TIDE bins (``tide``) and the top ``n_examples`` of every bin (``tide_examples``) per (run, dataset)."""
    bins, examples = [], []
    for v in views:
        t = a.tide(v, fg=options.tide_fg, bg=options.tide_bg)
        bins.append(_keyed(t.table.assign(base_ap=t.base_ap, fg=t.fg, bg=t.bg), v))
        examples.append(_keyed(a.tide_examples(v, fg=options.tide_fg, bg=options.tide_bg, n=n_examples), v))
    return {"tide": _concat(bins), "tide_examples": _concat(examples)}


def oracle_table(a: Analysis, views: Sequence[View]) -> pd.DataFrame:
    parts = []
    for v in views:
        o = a.oracles(v)
        parts.append(_keyed(o.table.assign(base_ap=o.base_ap), v))
    return _concat(parts)


def _datasets_of(views: Sequence[View]) -> list[str]:
    return list(dict.fromkeys(v.dataset for v in views))


def _on_dataset(df: pd.DataFrame, dataset: str, **extra) -> pd.DataFrame:
    """``df`` with a first ``dataset`` column (then ``extra`` columns): a table of one dataset, not of one run."""
    df = df.reset_index(drop=True).copy()
    for i, (k, v) in enumerate({"dataset": dataset, **extra}.items()):
        df.insert(i, k, v)
    return df


def ci_tables(a: Analysis, views: Sequence[View], options: ReportOptions) -> dict[str, pd.DataFrame]:
    """Image-bootstrap intervals of every view (:meth:`Analysis.bootstrap`: ``ci``, ``ci_per_category``) and the
    leaderboard of every dataset with significance tiers (:meth:`Analysis.leaderboard_tiers`: ``tiers``)."""
    head, cats = [], []
    for v in views:
        b = a.bootstrap(v, method=options.ci_method, **options.bootstrap_kw)
        head.append(_keyed(b.to_frame(), v))
        cats.append(_keyed(b.per_category_frame(), v))
    tiers = [_on_dataset(a.leaderboard_tiers(options.view(d), correction=options.correction, **options.bootstrap_kw),
                         d, metric="AP3D") for d in _datasets_of(views)]
    return {"ci": _concat(head), "ci_per_category": _concat(cats), "tiers": _concat(tiers)}


def paired_tables(a: Analysis, views: Sequence[View], options: ReportOptions) -> dict[str, pd.DataFrame]:
    """A - B of the two runs of ``options.paired`` (:meth:`Analysis.paired`) on every dataset that has both."""
    if options.paired is None:
        return {}
    ra, rb = options.paired
    head, cats = [], []
    for d in _datasets_of(views):
        runs = {v.run for v in views if v.dataset == d}
        if ra in runs and rb in runs:
            pc = a.paired(options.view(d, ra), options.view(d, rb), correction=options.correction,
                          **options.bootstrap_kw)
            head.append(_on_dataset(pc.to_frame(), d))
            cats.append(_on_dataset(pc.per_category_frame(), d))
    return {"paired": _concat(head), "paired_per_category": _concat(cats)}


def mining_tables(a: Analysis, views: Sequence[View], options: ReportOptions) -> dict[str, pd.DataFrame]:
    """The first ``options.mine_top`` images of every :data:`~ov3d_core.analysis.MINING_KINDS` list
    (:meth:`Analysis.mine`) per (run, dataset); the cross-run kinds once per dataset (run ``(all)``). The oracle's
    gain is measured against the dataset-level protocol whatever ``options.protocol`` is."""
    out = {}
    for kind in MINING_KINDS:
        parts = []
        if kind in ("disagreement", "missed-by-all"):
            for d in _datasets_of(views):
                top = a.mine(options.view(d, a.runs(d)[0]), kind).top(options.mine_top)
                parts.append(_on_dataset(top, d).assign(run=ALL)[["run", "dataset", *top.columns]])
        else:
            for v in views:
                vk = v.with_(protocol="dataset-level") if kind == "oracle-gain" else v
                parts.append(_keyed(a.mine(vk, kind).top(options.mine_top), v))
        out[f"mining_{kind.replace('-', '_')}"] = _concat(parts)
    return out


def distance_tables(a: Analysis, views: Sequence[View], options: ReportOptions) -> dict[str, pd.DataFrame]:
    """Centre-distance AP / TP errors / ODS per (run, dataset, mode), and per category."""
    rows, per_cat = [], []
    for v in views:
        for mode in options.distance_modes:
            res = a.distance_table(v.with_(distance_mode=mode))
            rows.append({"run": v.run, "dataset": v.dataset, "mode": mode, **res["summary"]})
            if res["per_category"] is not None:
                per_cat.append(_keyed(res["per_category"], v, mode=mode))
    return {"distance": pd.DataFrame(rows), "distance_per_category": _concat(per_cat)}


def remap_views(a: Analysis, views: Sequence[View], options: ReportOptions) -> list[View]:
    """The views of the prompt tables: every remappable run (or ``options.remap_runs``) with the remap spec."""
    spec = options.remap_spec()
    if spec is None:
        return []
    out = []
    for v in views:
        ok = v.run in a.remappable_runs(v.dataset, spec.encoder)
        if ok and (options.remap_runs is None or v.run in options.remap_runs):
            out.append(v.with_(remap=spec))
    return out


def prompt_tables(a: Analysis, views: Sequence[View], options: ReportOptions) -> dict[str, pd.DataFrame]:
    """Table 8 (per template and per prompt type), PCR/PLC, FG-OVD ranks and vocabulary curve, and calibration,
    for every remapped view (empty tables without an encoder). With ``options.engine == "ray"`` the template tables
    are computed on Ray (:meth:`Analysis.template_scores_many`): the same numbers."""
    if options.encoder is None:
        return {}
    tpl, sens, cons, ranks, vocab, calib = [], [], [], [], [], []
    templates = tuple(options.templates)
    rviews = remap_views(a, views, options)
    scored = a.template_scores_many(rviews, templates, engine=options.engine, address=options.address)
    for v, t in zip(rviews, scored):
        tpl.append(_keyed(t, v))
        s = a.prompt_sensitivity(v, templates)
        sens.append({"run": v.run, "dataset": v.dataset, "encoder": v.remap.encoder, "theta": a.theta(v),
                     **{f"mean_{g}": m for g, m in s.group_mean.items()}, "mean": s.mean, "std": s.std, "cv": s.cv,
                     "drop_standard_to_overdetailed": s.drop_standard_to_overdetailed})
        cons.append({"run": v.run, "dataset": v.dataset, **a.consistency(v, templates).summary()})
        ranks.append({"run": v.run, "dataset": v.dataset, **a.label_rank_summary(v)})
        vocab.append(_keyed(a.vocabulary_curve(v), v))
        calib.append(_keyed(a.calibration(v).table, v))
    return {"prompt_templates": _concat(tpl), "prompt_sensitivity": pd.DataFrame(sens),
            "prompt_consistency": pd.DataFrame(cons), "label_ranks": pd.DataFrame(ranks),
            "vocabulary_curve": _concat(vocab), "calibration": _concat(calib)}


def prompt_cv(a: Analysis, options: ReportOptions) -> dict[str, float]:
    """Per run: the mean over datasets of the prompt CV (:meth:`Analysis.prompt_cv`; empty without an encoder)."""
    if options.encoder is None:
        return {}
    return a.prompt_cv(options.view(a.datasets[0]), options.remap_spec(), tuple(options.templates),
                       runs=options.remap_runs)


def report_tables(a: Analysis, options: ReportOptions | None = None, *, progress: Callable | None = None
                  ) -> dict[str, pd.DataFrame]:
    """Every table of the report, ``{name: DataFrame}`` in :data:`TABLES` order."""
    options = options or ReportOptions()
    views = report_views(a, options, progress=progress)
    lb = leaderboard_table(a, views)
    datasets = list(a.datasets)
    tables = {"leaderboard": lb, "map3d": pivot_table(lb, "AP3D", datasets),
              "recall": pivot_table(lb, RECALL_KEY, datasets), "per_category": per_category_table(a, views),
              "out_of_vocabulary": out_of_vocabulary_table(a, views)}
    if options.boxes:
        tables.update(status_tables(a, views))
        tables.update(box_detail_tables(a, views))
    tables.update(curve_tables(a, views))
    tables.update(protocol_tables(a, views, options))
    tables.update(confusion_tables(a, views, options))
    tables["semantic_confusion"] = semantic_table(a, views, options)
    tables["class_splits"] = class_split_table(a, views, options)
    tables.update(tide_tables(a, views, options))
    tables["oracles"] = oracle_table(a, views)
    tables.update(distance_tables(a, views, options))
    if options.ci:
        tables.update(ci_tables(a, views, options))
    tables.update(paired_tables(a, views, options))
    if options.mine:
        tables.update(mining_tables(a, views, options))
    tables.update(prompt_tables(a, views, options))
    tables.update(transfer_tables(a, options, prompt_cv(a, options) or None))
    return {k: tables[k] for k in TABLES if k in tables}


# ==================================================================================================== bundle
@dataclass
class Report:
    """Tables, summary numbers and notes of one report (what :func:`write_report` writes)."""

    benchmark: str
    config: str | None
    options: ReportOptions
    tables: dict[str, pd.DataFrame]
    summary: dict
    notes: list[str] = field(default_factory=list)


def _num(v):
    try:
        v = json_scalar(v)
    except TypeError:  # other cell types go through as they are
        return v
    return None if isinstance(v, float) and math.isnan(v) else v


def json_records(df: pd.DataFrame) -> list[dict]:
    """The rows of a table as JSON-ready dicts (NaN as None, numpy scalars as Python numbers)."""
    return [{k: _num(v) for k, v in r.items()} for r in df.to_dict(orient="records")]


def build_report(a, options: ReportOptions | None = None, *, progress: Callable | None = None) -> Report:
    """Score every run, build every table, and collect the main numbers and notes. ``a``: an ``Analysis`` (or a
    ``Benchmark``, wrapped)."""
    if not isinstance(a, Analysis):
        a = Analysis(a)
    options = options or ReportOptions()
    if not a.run_entries():
        raise InputError(a.config_file, None, "runs", "at least one run to report on", [])
    tables = report_tables(a, options, progress=progress)
    lb = tables["leaderboard"]
    summ_keys = [c for c in lb.columns if c.startswith(("AP3D", "recall3D"))]
    runs: dict = {}
    for r in lb.to_dict(orient="records"):
        runs.setdefault(r["run"], {})[r["dataset"]] = {
            "in_domain": _num(r["in_domain"]), "n_gt": int(r["n_gt"]), "n_pred": int(r["n_pred"]),
            "n_out_of_vocabulary": int(r["n_out_of_vocabulary"]), **{k: _num(r[k]) for k in summ_keys}}
    for name, key, keys in (
            ("protocol_summary", "protocol_comparison", ("map_dataset_level", "map_target_aware", "ratio",
                                                         "n_removed", "n_removed_cross_class")),
            ("class_splits", "class_split", ("n_classes", "mean", "std", "adverse", "favourable", "full")),
            ("prompt_sensitivity", "prompt_sensitivity", ("mean", "std", "cv", "drop_standard_to_overdetailed")),
            ("prompt_consistency", "prompt_consistency", ("PCR", "PLC"))):
        for r in tables.get(name, pd.DataFrame()).to_dict(orient="records"):
            runs[r["run"]][r["dataset"]][key] = {k: _num(r[k]) for k in keys if k in r}
    for r in tables.get("ci", pd.DataFrame()).to_dict(orient="records"):
        runs[r["run"]][r["dataset"]].setdefault("ci", {})[r["metric"]] = {k: _num(r[k]) for k in ("lo", "hi", "se")}
    sup = tables["confusion_super_summary"]
    for r in sup.to_dict(orient="records"):
        if r["run"] != ALL:
            runs[r["run"]][r["dataset"]]["confusion"] = {
                k: _num(r[k]) for k in ("n_matched", "accuracy", "cross_super_share_of_confusions",
                                        "mean_off_diagonal")}
    pooled = sup[sup["run"] == ALL]
    datasets = {}
    for name in a.datasets:
        info = a.dataset_info(name)
        datasets[name] = {k: info[k] for k in ("environment", "n_images", "n_gt_boxes", "n_categories")}
    notes = _notes(a, tables, options)
    config_path = a.config_path
    summary = {
        "benchmark": a.name, "config": str(config_path) if config_path else None,
        "options": _options_record(options), "datasets": datasets, "runs": runs,
        "super_category_pooled": json_records(pooled)[0] if len(pooled) else None,
        "transfer_per_run": json_records(tables["transfer_per_run"]),
        "three_axis": json_records(tables["three_axis"]), "notes": notes}
    return Report(benchmark=a.name, config=summary["config"], options=options, tables=tables,
                  summary=summary, notes=notes)


def _options_record(options: ReportOptions) -> dict:
    """The options as summary.json holds them; ``subset`` only when one was chosen (a whole-dataset report keeps
    the summary it had before image subsets existed)."""
    record = asdict(options)
    if record.get("subset") is None:
        record.pop("subset", None)
    return record


def _notes(a: Analysis, tables: dict, options: ReportOptions) -> list[str]:
    notes = []
    cvs = prompt_cv(a, options)
    axes = tables["three_axis"]
    if options.encoder is None:
        notes.append("Prompt robustness (three_axis.prompt_robustness) and the prompt tables are empty: no encoder "
                     "was given (--encoder proxy|hf:...), and no prompt result is invented.")
    else:
        missing = [r for r in axes["run"] if r not in cvs]
        if missing:
            notes.append("Prompt robustness is NaN for runs with no prompt response of their own to measure (neither "
                         "per-template prediction files nor a closed-vocabulary run remapped as X* with "
                         f"{options.encoder}): {', '.join(missing)}.")
        if options.encoder == "proxy":
            notes.append("The prompt tables use the demo's stand-in encoder (sentence embeddings of crop captions), "
                         "not an image encoder: they exercise the pipeline, they say nothing about SigLIP.")
    oov = tables["out_of_vocabulary"]
    if len(oov):
        per = oov.groupby(["run", "dataset"], sort=False)["n_pred"].sum()
        notes.append("Predictions outside the evaluated vocabulary (not scored, listed in out_of_vocabulary): "
                     + ", ".join(f"{r} on {d}: {n}" for (r, d), n in per.items()) + ".")
    no_env = [d for d in a.datasets if a.environment(d) is None]
    if no_env:
        notes.append(f"Datasets without an environment (left out of every transfer ratio): {', '.join(no_env)}.")
    trained = a.trained_on()
    outside = sorted({d for v in trained.values() for d in v} - set(a.datasets))
    if outside:
        notes.append("Training datasets not in the config (environment unknown, so they do not count towards a "
                     f"run's training environment): {', '.join(outside)}.")
    no_train = [r for r, v in trained.items() if not v]
    if no_train:
        notes.append(f"Runs without `trained_on` (every dataset counts as out-of-domain): {', '.join(no_train)}.")
    few = tables["class_splits"]
    few = few[few["n_classes"] < options.subset_size]
    if len(few):
        notes.append(f"Class splits are NaN where fewer than {options.subset_size} classes have GT: "
                     + ", ".join(f"{r} on {d}" for r, d in zip(few["run"], few["dataset"])) + ".")
    if options.ci or options.paired:
        notes.append(f"Intervals and tests: image bootstrap (the image is the unit), {options.n_resamples} resamples "
                     f"(seed {options.ci_seed}), {100 * options.level:g}% {options.ci_method} intervals; paired "
                     f"differences and tier gaps with percentile intervals on the same resamples; per-category and "
                     f"tier-gap p-values corrected with {options.correction}. Intervals of rare classes and of "
                     "AP3D@50 on small sets are optimistic (ov3d_core.diagnostics.bootstrap).")
    if options.mine and options.protocol != "dataset-level":
        notes.append("mining_oracle_gain is measured against the dataset-level protocol (what the target-aware "
                     "oracle hides), whatever the report's protocol.")
    notes.append("The target-aware protocol is an evaluation-side filter of cached predictions (drop predictions "
                 "whose class is not annotated in their image); a detector truly prompted per image would also "
                 "change its scores.")
    return notes


# ==================================================================================================== writing
def _index_md(report: Report, files: dict[str, dict[str, str]]) -> str:
    o = report.options
    lines = [f"# OV3D diagnostics report: {report.benchmark}", ""]
    if report.config:
        lines.append(f"Config: `{report.config}`  ")
    lines += [f"Protocol: **{o.protocol}**, min score {o.min_score:g}, confusion IoU {o.confusion_iou:g}, class "
              f"splits {o.n_subsets} x {o.subset_size} classes (seed {o.seed})."
              # a report of every image reads as it did before image subsets existed (byte-identical on the demo)
              + ("" if o.subset is None else f" Images: only those of the image subset **{o.subset}**."), "",
              "See [README.md](README.md) for units, conventions and notes; [summary.json](summary.json) holds the "
              "main numbers.", "", "## mAP_3D (AP3D, percent)", "", to_markdown(report.tables["map3d"]),
              "## Tables", ""]
    for name, spec in TABLES.items():
        if name not in files:
            continue
        links = " · ".join(f"[{fmt}]({path})" for fmt, path in files[name].items())
        lines.append(f"- **{spec.title}** ({spec.paper}): {links}  ")
        lines.append(f"  {spec.description}")
    lines += ["", "## Notes", ""] + [f"- {n}" for n in report.notes]
    return "\n".join(lines) + "\n"


def _readme_md(report: Report) -> str:
    o = report.options
    cmd = (f"ov3d report --config {report.config or 'BENCH.yaml'} --out OUT --protocol {o.protocol} "
           f"--min-score {o.min_score:g} --splits {o.n_subsets} --subset-size {o.subset_size} --seed {o.seed} "
           f"--confusion-iou {o.confusion_iou:g} --tide-fg {o.tide_fg:g} --tide-bg {o.tide_bg:g}")
    if o.encoder is not None:
        cmd += f" --encoder {o.encoder} --score-mode {o.score_mode}" + ("" if o.theta is None else f" --theta {o.theta:g}")
    if o.subset is not None:
        cmd += f" --subset {o.subset}"
    if o.ci or o.paired:
        cmd += ((" --ci" if o.ci else "") + (f" --paired {','.join(o.paired)}" if o.paired else "")
                + f" --resamples {o.n_resamples} --level {o.level:g} --ci-method {o.ci_method} "
                  f"--correction {o.correction}")
    if o.mine:
        cmd += f" --mine --mine-top {o.mine_top}"
    return "\n".join([
        f"# About this report ({report.benchmark})", "",
        "Written by `ov3d_core.report`; reproduce it with:", "", f"    {cmd}", "",
        "## Layout", "",
        "- `index.md`: links to every table.",
        "- `csv/`: every table, full precision (NaN as an empty cell).",
        "- `md/`: the readable tables as Markdown (long per-prediction and per-cell tables are CSV only).",
        "- `tex/`: the main tables as LaTeX `tabular` (booktabs; 2 decimals; NaN as `--`).",
        "- `summary.json`: the main numbers per run and dataset (NaN as null).", "",
        "## Units and conventions", "",
        "- AP3D and its slices are Omni3D AP in percent: mean over 3D IoU 0.05:0.05:0.50 and 101 recall points; "
        "AP3D-N/M/F by GT depth (near/medium/far).",
        "- recall3D@15 is 3D class-agnostic recall (fraction): non-ignored vocabulary GT matched one-to-one by a "
        "kept prediction at 3D IoU >= 0.15, whatever its label.",
        "- Every number is an `ov3d_core.Analysis` call for a `View` (dataset, run, protocol, threshold, remap): the "
        "same numbers the app shows and `ov3d evaluate --benchmark ... --json` writes.",
        "- NaN (`--`) means not defined (no GT, too few classes, no in-domain reference, no prompt results); it is "
        "never filled in.", "",
        "## Notes", ""] + [f"- {n}" for n in report.notes]) + "\n"


def write_report(report: Report, out: str | Path) -> list[Path]:
    """Write every table (CSV; Markdown and LaTeX per :data:`TABLES`), ``index.md``, ``README.md`` and
    ``summary.json`` under ``out``. Returns the written paths."""
    out = Path(out)
    for sub in ("csv", "md", "tex"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    files: dict[str, dict[str, str]] = {}

    def put(rel: str, text: str) -> None:
        p = out / rel
        p.write_text(text, encoding="utf-8")
        written.append(p)

    for name, df in report.tables.items():
        spec = TABLES.get(name, TableSpec(name, "", ""))
        links = {}
        if spec.markdown:
            put(f"md/{name}.md", f"# {spec.title}\n\n{spec.paper}. {spec.description}\n\n{to_markdown(df)}")
            links["md"] = f"md/{name}.md"
        put(f"csv/{name}.csv", df.to_csv(index=False))
        links["csv"] = f"csv/{name}.csv"
        if spec.latex:
            tex_df = df.drop(columns=[c for c in spec.latex_drop if c in df.columns])
            caption = f"{spec.title} ({spec.paper}"
            caption += ")" if name.startswith("protocol_") else f"; {report.options.protocol} protocol)"
            put(f"tex/{name}.tex", to_latex(tex_df, caption=caption, label=f"tab:{name}"))
            links["tex"] = f"tex/{name}.tex"
        files[name] = links
    put("README.md", _readme_md(report))
    put("index.md", _index_md(report, files))
    summary = dict(report.summary)
    summary["files"] = [str(p.relative_to(out)) for p in written] + ["summary.json"]
    put("summary.json", json.dumps(summary, indent=2, allow_nan=False, default=_json_default))
    return written


def _json_default(v):
    out = _num(v)
    if out is v:
        return str(v)
    return out
