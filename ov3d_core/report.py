"""Whole-benchmark diagnostics report: every table of the OV3D-Bench paper for every (run, dataset) of a benchmark.

Two halves, as in nuscenes-devkit's eval (pure algorithm module, separate render step):

- **Tables** (pure): :func:`report_tables` takes a :class:`~ov3d_core.benchmark.Benchmark` and
  :class:`ReportOptions` and returns ``{name: DataFrame}``; each piece is its own function
  (:func:`score_all`, :func:`leaderboard_table`, :func:`per_category_table`, :func:`protocol_tables`,
  :func:`confusion_tables`, :func:`class_split_table`, :func:`transfer_tables`). :func:`build_report` bundles the
  tables with a JSON-friendly summary and the notes a reader needs.
- **Writer**: :func:`write_report` writes every table as CSV, the readable ones as Markdown, the main ones as
  LaTeX (``tabular`` via ``DataFrame.style.to_latex``, 2 decimals, NaN as ``--``), plus ``index.md``,
  ``README.md`` and ``summary.json``.

Every number comes from the same functions the ``evaluate`` CLI and the app use (``Benchmark.score`` ->
``RunScore``), so a leaderboard row equals ``Benchmark.score(run, dataset, protocol=..., min_score=...).summary``.

Units: AP values are percent (0-100); recall, shares, fractions and ratios are fractions (0-1). NaN means "not
defined" (no GT, too few classes for a subset, no in-domain reference, no prompt results); it is never filled in.

Decisions where the brief and the paper are silent:

- ``--protocol`` picks the protocol of the leaderboard, per-category, confusion, class-split, transfer and
  three-axis tables. The protocol comparison (Table 7) always scores both protocols on the same thresholded view.
- Confusion matrices use the protocol's scored view (``RunScore.view``), 3D IoU >= ``confusion_iou`` (paper: 0.5),
  non-ignored vocabulary GT only. The pooled super-category matrix (Fig. 4) sums the counts of every (run, dataset);
  its cross-super share is ``sum(super off-diagonal) / sum(fine off-diagonal)`` over all of them.
- Class splits draw with the same ``seed`` for every (run, dataset), so two rows with the same number of classes use
  the same subsets.
- Domain transfer: a run's ``trained_on`` is the union over its config entries; environments come from the config
  (``DatasetSpec.environment``), else from the loaded dataset. Training datasets that are not in the config have no
  known environment, which can leave a run's same-environment flag unknown.
- Prompt robustness (Fig. 5) is NaN unless per-run prompt CVs are passed in (``prompt_cv``): a report never invents
  prompt results.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Mapping

import numpy as np
import pandas as pd

from ov3d_core.eval.protocols import CROSS_CLASS_IOU

__all__ = ["ReportOptions", "Report", "TableSpec", "TABLES", "score_all", "leaderboard_table", "pivot_table",
           "per_category_table", "protocol_tables", "confusion_tables", "class_split_table", "transfer_tables",
           "report_tables", "build_report", "write_report", "to_markdown", "to_latex"]

ALL = "(all)"


@dataclass(frozen=True)
class ReportOptions:
    """Settings of a report.

    Attributes:
        protocol: "dataset-level" (the paper's) or "target-aware", for every table but the protocol comparison.
        min_score: drop predictions scoring below this before anything is scored.
        n_subsets: random class subsets per (run, dataset) in the class-split table (paper: 5,000).
        subset_size: classes per subset (paper: 10).
        seed: seed of the subset generator.
        confusion_iou: 3D IoU of the one-to-one confusion assignment (paper: 0.5).
        cross_class_iou: 3D IoU at which a prediction removed by the target-aware oracle counts as sitting on a GT
            of another class.
    """

    protocol: str = "dataset-level"
    min_score: float = 0.0
    n_subsets: int = 5000
    subset_size: int = 10
    seed: int | None = 0
    confusion_iou: float = 0.5
    cross_class_iou: float = CROSS_CLASS_IOU

    def __post_init__(self):
        from ov3d_core.eval.scoring import PROTOCOLS

        if self.protocol not in PROTOCOLS:
            raise ValueError(f"protocol: expected one of {PROTOCOLS}, got {self.protocol!r}")
        if self.n_subsets < 1 or self.subset_size < 1:
            raise ValueError(f"Expected positive n_subsets and subset_size, got {self.n_subsets}, {self.subset_size}")
        if not 0.0 < self.confusion_iou <= 1.0:
            raise ValueError(f"confusion_iou: expected a value in (0, 1], got {self.confusion_iou}")


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
        "depth (near/medium/far) and 3D class-agnostic recall at IoU 0.15 (fraction).",
        latex=True, latex_drop=("environment", "protocol", "n_images", "n_pred")),
    "map3d": TableSpec("mAP_3D per run and dataset", "Tables 3/4", "AP3D (percent), runs x datasets.", latex=True),
    "recall": TableSpec("3D class-agnostic recall", "Table 2",
                        "Fraction of non-ignored GT matched by some kept prediction at 3D IoU >= 0.15, regardless of "
                        "the predicted label; runs x datasets.", latex=True),
    "per_category": TableSpec("Per-category AP", "Tables 3/4 (per class)",
                              "One row per (run, dataset, category): n_gt, n_pred, AP3D and its slices, AR and "
                              "class-agnostic recall of the category's GT."),
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
        "Per run: geometric (mean recall), semantic (mean mAP_3D, in/out of domain), prompt robustness (1 - CV; NaN "
        "without prompt results) and cross-domain ratio, with ranks (1 = best).", latex=True),
}

_FRACTION = re.compile(r"recall|share|ratio|fraction|diag|geometric|robustness|accuracy|delta_rel")


# ==================================================================================================== tables
def score_all(bench, options: ReportOptions | None = None, *, progress: Callable | None = None) -> dict:
    """``{(run, dataset): RunScore}`` for every run of the benchmark, in config order."""
    options = options or ReportOptions()
    specs = list(bench.config.runs.values())
    it = progress(specs) if progress else specs
    return {(s.name, s.dataset): bench.score(s.name, s.dataset, protocol=options.protocol,
                                             min_score=options.min_score) for s in it}


def _environment(bench, dataset: str) -> str | None:
    spec = bench.config.datasets.get(dataset)
    env = spec.environment if spec is not None else None
    if env is None and spec is not None:
        env = getattr(bench.dataset(dataset), "environment", None)
    return env


def leaderboard_table(bench, scores: Mapping) -> pd.DataFrame:
    """One row per (run, dataset): identity columns, then ``RunScore.summary`` unchanged (same keys, same order)."""
    rows = []
    for (run, dataset), sc in scores.items():
        spec = bench.run_spec(run, dataset)
        ds = bench.dataset(dataset)
        rows.append({"run": run, "dataset": dataset, "environment": _environment(bench, dataset),
                     "in_domain": spec.in_domain, "protocol": sc.protocol, "n_images": int(len(ds.images)),
                     "n_gt": int(sc.recall.n_gt), "n_pred": int(np.count_nonzero(sc.view.evaluated)),
                     **{k: float(v) for k, v in sc.summary.items()}})
    cols = ["run", "dataset", "environment", "in_domain", "protocol", "n_images", "n_gt", "n_pred"]
    return pd.DataFrame(rows, columns=cols + _summary_keys(scores))


def _summary_keys(scores: Mapping) -> list[str]:
    for sc in scores.values():
        return list(sc.summary)
    return ["AP3D", "AP3D@15", "AP3D@25", "AP3D@50", "AP3D-N", "AP3D-M", "AP3D-F", "recall3D@15"]


def pivot_table(long: pd.DataFrame, value: str, datasets: list[str] | None = None) -> pd.DataFrame:
    """Runs x datasets of one column (runs in first-appearance order, datasets in ``datasets`` order)."""
    runs = list(dict.fromkeys(long["run"]))
    cols = datasets if datasets is not None else list(dict.fromkeys(long["dataset"]))
    wide = long.pivot(index="run", columns="dataset", values=value) if len(long) else pd.DataFrame()
    wide = wide.reindex(index=runs, columns=[c for c in cols if c in set(long["dataset"])])
    wide.columns.name = None
    wide.index.name = "run"
    return wide.astype(np.float64).reset_index()


def per_category_table(scores: Mapping) -> pd.DataFrame:
    """One row per (run, dataset, category): ``RunScore.per_category`` with run, dataset and super-category."""
    from ov3d_core.taxonomy import super_category

    parts = []
    for (run, dataset), sc in scores.items():
        df = sc.per_category
        df.insert(0, "run", run)
        df.insert(1, "dataset", dataset)
        df.insert(3, "super_category", [super_category(c) for c in df["category"]])
        parts.append(df)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["run", "dataset", "category"])


def protocol_tables(bench, options: ReportOptions | None = None, *,
                    progress: Callable | None = None) -> dict[str, pd.DataFrame]:
    """Table 7 for every (run, dataset): ``protocol_summary``, ``protocol_per_class``, ``protocol_removed``.

    Both protocols score the run's default view after the ``min_score`` threshold.
    """
    from ov3d_core.diagnostics.protocol_comparison import compare_protocols_boxes
    from ov3d_core.eval.scoring import threshold_view

    options = options or ReportOptions()
    summ, per_class, removed = [], [], []
    specs = list(bench.config.runs.values())
    for s in (progress(specs) if progress else specs):
        ds, r = bench.dataset(s.dataset), bench.run(s.name, s.dataset)
        view = threshold_view(bench.default_view(s.name, s.dataset), options.min_score)
        cmp = compare_protocols_boxes(ds.gt, r.pred, bench.pairs(s.name, s.dataset), view, proximity=ds.proximity,
                                      overlap_threshold=options.cross_class_iou, keep_results=False)
        key = {"run": s.name, "dataset": s.dataset}
        summ.append({**key, "n_categories": int(np.isfinite(cmp.ap_dataset_level).sum()), **cmp.summary()})
        pc = cmp.to_frame()
        rm = cmp.removed.copy()
        for df in (pc, rm):
            df.insert(0, "run", s.name)
            df.insert(1, "dataset", s.dataset)
        per_class.append(pc)
        removed.append(rm)
    cols = ["run", "dataset", "n_categories", "map_dataset_level", "map_target_aware", "delta_abs", "ratio",
            "n_removed", "n_removed_cross_class", "count_ignored_as_present", "only_images_with_gt",
            "overlap_threshold"]
    return {"protocol_summary": pd.DataFrame(summ, columns=cols),
            "protocol_per_class": _concat(per_class), "protocol_removed": _concat(removed)}


def _concat(parts: list[pd.DataFrame]) -> pd.DataFrame:
    parts = [p for p in parts if len(p.columns)]
    if not parts:
        return pd.DataFrame(columns=["run", "dataset"])
    non_empty = [p for p in parts if len(p)]
    return pd.concat(non_empty, ignore_index=True) if non_empty else parts[0].iloc[0:0].reset_index(drop=True)


def confusion_tables(bench, scores: Mapping, options: ReportOptions | None = None) -> dict[str, pd.DataFrame]:
    """Fig. 2 and Fig. 4 for every (run, dataset), and the super-category matrix pooled over all of them.

    Returns ``confusion_fine`` (non-zero cells), ``confusion_fine_classes``, ``confusion_super`` (every cell),
    ``confusion_super_summary`` (one row per (run, dataset) plus a pooled ``(all)`` row) and
    ``confusion_super_pooled`` (row-normalised pooled matrix).
    """
    from ov3d_core.diagnostics.confusion import confusion_matrix, super_category_confusion, super_category_names

    options = options or ReportOptions()
    supers = list(super_category_names())
    fine, fine_cls, sup_long, summary = [], [], [], []
    pooled = np.zeros((len(supers), len(supers)), np.int64)
    pooled_missed = np.zeros(len(supers), np.int64)
    n_fine_conf_all = 0
    for (run, dataset), sc in scores.items():
        ds = bench.dataset(dataset)
        cm = confusion_matrix(sc.pairs, sc.view, sc.gt_label, ds.gt.ignore, ds.gt.image_id,
                              iou_threshold=options.confusion_iou, include_missed=True)
        key = {"run": run, "dataset": dataset}
        long = cm.to_long_frame()
        long = long[long["count"] > 0].reset_index(drop=True)
        long.insert(0, "run", run)
        long.insert(1, "dataset", dataset)
        fine.append(long)
        fine_cls.append(_fine_classes(cm, run, dataset))
        sup = super_category_confusion(cm)
        sl = sup.matrix.to_long_frame().rename(columns={"gt_class": "gt_super", "pred_class": "pred_super"})
        sl.insert(0, "run", run)
        sl.insert(1, "dataset", dataset)
        sup_long.append(sl)
        counts = sup.matrix.counts
        pooled += _align(counts, sup.matrix.class_names, supers)
        pooled_missed += _align_vec(sup.matrix.missed, sup.matrix.class_names, supers)
        n_conf = int(cm.n_matched - np.trace(cm.counts))
        n_fine_conf_all += n_conf
        diag = sup.diagonal()
        summary.append({**key, "n_matched": cm.n_matched, "n_fine_confusions": n_conf, "accuracy": cm.accuracy,
                        "cross_super_share_of_confusions": sup.cross_super_share_of_confusions,
                        "cross_super_share_of_matches": sup.cross_super_share_of_matches,
                        "mean_off_diagonal": sup.mean_off_diagonal,
                        **{f"diag_{n}": float(diag.get(n, np.nan)) for n in supers}})
    # pooled over every (run, dataset)
    rows = pooled.sum(axis=1).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        norm = np.where(rows[:, None] > 0, pooled / np.where(rows == 0, 1, rows)[:, None], np.nan)
    n_all = int(pooled.sum())
    n_cross = int(n_all - np.trace(pooled))
    diag = np.diag(norm)
    summary.append({"run": ALL, "dataset": ALL, "n_matched": n_all, "n_fine_confusions": n_fine_conf_all,
                    "accuracy": (n_all - n_fine_conf_all) / n_all if n_all else np.nan,
                    "cross_super_share_of_confusions": n_cross / n_fine_conf_all if n_fine_conf_all else np.nan,
                    "cross_super_share_of_matches": n_cross / n_all if n_all else np.nan,
                    "mean_off_diagonal": float(1.0 - np.nanmean(diag)) if np.isfinite(diag).any() else np.nan,
                    **{f"diag_{n}": float(d) for n, d in zip(supers, diag)}})
    pooled_df = pd.DataFrame(norm, columns=supers)
    pooled_df.insert(0, "gt", supers)
    pooled_df["n_matched"] = pooled.sum(axis=1)
    pooled_df["missed"] = pooled_missed
    sum_cols = ["run", "dataset", "n_matched", "n_fine_confusions", "accuracy", "cross_super_share_of_confusions",
                "cross_super_share_of_matches", "mean_off_diagonal"] + [f"diag_{n}" for n in supers]
    return {"confusion_fine": _concat(fine), "confusion_fine_classes": _concat(fine_cls),
            "confusion_super": _concat(sup_long), "confusion_super_summary": pd.DataFrame(summary, columns=sum_cols),
            "confusion_super_pooled": pooled_df}


def _align(counts: np.ndarray, names, order: list[str]) -> np.ndarray:
    idx = [order.index(n) for n in names]
    out = np.zeros((len(order), len(order)), np.int64)
    out[np.ix_(idx, idx)] = counts
    return out


def _align_vec(v, names, order: list[str]) -> np.ndarray:
    out = np.zeros(len(order), np.int64)
    if v is not None:
        out[[order.index(n) for n in names]] = v
    return out


def _fine_classes(cm, run: str, dataset: str) -> pd.DataFrame:
    counts = cm.counts
    matched = counts.sum(axis=1)
    correct = np.diag(counts)
    off = counts.copy()
    np.fill_diagonal(off, 0)
    top = off.argmax(axis=1) if off.size else np.zeros(0, np.int64)
    top_n = off.max(axis=1) if off.size else np.zeros(0, np.int64)
    names = np.asarray(cm.class_names, dtype=object)
    with np.errstate(invalid="ignore", divide="ignore"):
        top_frac = np.where(matched > 0, top_n / np.maximum(matched, 1), np.nan)
    df = pd.DataFrame({
        "run": run, "dataset": dataset, "class": list(cm.class_names), "n_matched": matched, "n_correct": correct,
        "missed": cm.missed if cm.missed is not None else np.zeros(len(names), np.int64),
        "diagonal": cm.diagonal().to_numpy(),
        "most_confused_with": np.where(top_n > 0, names[top] if len(names) else names, None),
        "most_confused_fraction": np.where(top_n > 0, top_frac, np.nan)})
    used = (df["n_matched"] > 0) | (df["missed"] > 0)
    return df[used].reset_index(drop=True)


def class_split_table(scores: Mapping, options: ReportOptions | None = None) -> pd.DataFrame:
    """Table 9 for every (run, dataset): subset mAP statistics over the per-category AP3D."""
    from ov3d_core.diagnostics.splits import class_split_sensitivity

    options = options or ReportOptions()
    rows = []
    for (run, dataset), sc in scores.items():
        pc = sc.per_category
        s = class_split_sensitivity(pd.Series(pc["AP3D"].to_numpy(np.float64), index=list(pc["category"])),
                                    subset_size=options.subset_size, n_subsets=options.n_subsets, seed=options.seed)
        d = s.to_dict()
        rows.append({"run": run, "dataset": dataset, "n_classes": d["n_classes"], "full": d["full"],
                     "mean": d["mean"], "std": d["std"], "min": d["min"], "max": d["max"], "adverse": d["adverse"],
                     "favourable": d["favourable"], "subset_size": d["subset_size"], "n_subsets": d["n_subsets"],
                     "seed": d["seed"], "bottom_classes": "; ".join(d["bottom_classes"]),
                     "top_classes": "; ".join(d["top_classes"])})
    cols = ["run", "dataset", "n_classes", "full", "mean", "std", "min", "max", "adverse", "favourable",
            "subset_size", "n_subsets", "seed", "bottom_classes", "top_classes"]
    return pd.DataFrame(rows, columns=cols)


def trained_on(bench) -> dict[str, tuple[str, ...]]:
    """run -> datasets it was trained on (union over the run's config entries)."""
    out: dict[str, list[str]] = {}
    for s in bench.config.runs.values():
        out.setdefault(s.name, [])
        out[s.name] += [d for d in s.trained_on if d not in out[s.name]]
    return {k: tuple(v) for k, v in out.items()}


def transfer_tables(bench, leaderboard: pd.DataFrame,
                    prompt_cv: Mapping[str, float] | None = None) -> dict[str, pd.DataFrame]:
    """Tables 4/5 and Fig. 5 from the leaderboard: ``transfer``, ``transfer_per_run``, ``transfer_pairs``,
    ``three_axis`` (prompt robustness NaN for runs without an entry in ``prompt_cv``)."""
    from ov3d_core.diagnostics.transfer import domain_transfer, three_axis_breakdown

    rec = "recall3D@15" if "recall3D@15" in leaderboard else next(c for c in leaderboard if c.startswith("recall"))
    results = pd.DataFrame({"run": leaderboard["run"], "dataset": leaderboard["dataset"],
                            "map3d": leaderboard["AP3D"], "recall": leaderboard[rec]})
    envs = {d: _environment(bench, d) for d in bench.config.datasets}
    tt = domain_transfer(results, trained_on(bench), envs)
    axes = three_axis_breakdown(tt, prompt_cv)
    table = axes.to_frame()
    ranks = axes.ranks().set_index("run")
    for ax in axes.AXES:
        table[f"rank_{ax}"] = table["run"].map(ranks[ax]).astype("Int64")
    return {"transfer": tt.table, "transfer_per_run": tt.per_run, "transfer_pairs": tt.pairs, "three_axis": table}


def report_tables(bench, options: ReportOptions | None = None, *, prompt_cv: Mapping[str, float] | None = None,
                  progress: Callable | None = None, scores: Mapping | None = None) -> dict[str, pd.DataFrame]:
    """Every table of the report, ``{name: DataFrame}`` in :data:`TABLES` order."""
    options = options or ReportOptions()
    scores = score_all(bench, options, progress=progress) if scores is None else scores
    lb = leaderboard_table(bench, scores)
    datasets = list(bench.config.datasets)
    rec = next((c for c in lb.columns if c.startswith("recall3D")), "recall3D@15")
    tables = {"leaderboard": lb, "map3d": pivot_table(lb, "AP3D", datasets), "recall": pivot_table(lb, rec, datasets),
              "per_category": per_category_table(scores)}
    tables.update(protocol_tables(bench, options))
    tables.update(confusion_tables(bench, scores, options))
    tables["class_splits"] = class_split_table(scores, options)
    tables.update(transfer_tables(bench, lb, prompt_cv))
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
    if v is None or v is pd.NA:
        return None
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return None if math.isnan(v) else float(v)
    return v


def _records(df: pd.DataFrame) -> list[dict]:
    return [{k: _num(v) for k, v in r.items()} for r in df.to_dict(orient="records")]


def build_report(bench, options: ReportOptions | None = None, *, prompt_cv: Mapping[str, float] | None = None,
                 progress: Callable | None = None) -> Report:
    """Score every run, build every table, and collect the main numbers and notes."""
    from ov3d_core.errors import InputError

    options = options or ReportOptions()
    if not bench.config.runs:
        raise InputError(str(bench.config.path or "<config>"), None, "runs", "at least one run to report on", [])
    tables = report_tables(bench, options, prompt_cv=prompt_cv, progress=progress)
    lb = tables["leaderboard"]
    summ_keys = [c for c in lb.columns if c.startswith(("AP3D", "recall3D"))]
    runs: dict = {}
    for r in lb.to_dict(orient="records"):
        runs.setdefault(r["run"], {})[r["dataset"]] = {
            "in_domain": bool(r["in_domain"]), "n_gt": int(r["n_gt"]), "n_pred": int(r["n_pred"]),
            **{k: _num(r[k]) for k in summ_keys}}
    for r in tables["protocol_summary"].to_dict(orient="records"):
        runs[r["run"]][r["dataset"]]["protocol_comparison"] = {
            k: _num(r[k]) for k in ("map_dataset_level", "map_target_aware", "ratio", "n_removed",
                                    "n_removed_cross_class")}
    for r in tables["class_splits"].to_dict(orient="records"):
        runs[r["run"]][r["dataset"]]["class_split"] = {
            k: _num(r[k]) for k in ("n_classes", "mean", "std", "adverse", "favourable", "full")}
    sup = tables["confusion_super_summary"]
    for r in sup.to_dict(orient="records"):
        if r["run"] != ALL:
            runs[r["run"]][r["dataset"]]["confusion"] = {
                k: _num(r[k]) for k in ("n_matched", "accuracy", "cross_super_share_of_confusions",
                                        "mean_off_diagonal")}
    pooled = sup[sup["run"] == ALL]
    datasets = {}
    for name, spec in bench.config.datasets.items():
        ds = bench.dataset(name)
        datasets[name] = {"environment": _environment(bench, name), "n_images": int(len(ds.images)),
                          "n_gt_boxes": int(len(ds.gt)), "n_categories": len(ds.vocabulary)}
    notes = _notes(bench, tables, prompt_cv, options)
    summary = {
        "benchmark": bench.config.name, "config": str(bench.config.path) if bench.config.path else None,
        "options": asdict(options), "datasets": datasets, "runs": runs,
        "super_category_pooled": _records(pooled)[0] if len(pooled) else None,
        "transfer_per_run": _records(tables["transfer_per_run"]),
        "three_axis": _records(tables["three_axis"]), "notes": notes}
    return Report(benchmark=bench.config.name, config=summary["config"], options=options, tables=tables,
                  summary=summary, notes=notes)


def _notes(bench, tables: dict, prompt_cv, options: ReportOptions) -> list[str]:
    notes = []
    axes = tables["three_axis"]
    if not prompt_cv:
        notes.append("Prompt robustness (three_axis.prompt_robustness) is NaN: no prompt-sensitivity results were "
                     "given to the report, and none are invented. Run the prompt probe (Table 8) and pass its "
                     "per-run CV to fill this column.")
    else:
        missing = [r for r in axes["run"] if r not in prompt_cv]
        if missing:
            notes.append(f"Prompt robustness is NaN for runs without prompt results: {', '.join(missing)}.")
    no_env = [d for d in bench.config.datasets if _environment(bench, d) is None]
    if no_env:
        notes.append(f"Datasets without an environment (left out of every transfer ratio): {', '.join(no_env)}.")
    known = set(bench.config.datasets)
    outside = sorted({d for v in trained_on(bench).values() for d in v} - known)
    if outside:
        notes.append("Training datasets not in the config (environment unknown, so they do not count towards a "
                     f"run's training environment): {', '.join(outside)}.")
    no_train = [r for r, v in trained_on(bench).items() if not v]
    if no_train:
        notes.append(f"Runs without `trained_on` (every dataset counts as out-of-domain): {', '.join(no_train)}.")
    few = tables["class_splits"]
    few = few[few["n_classes"] < options.subset_size]
    if len(few):
        notes.append(f"Class splits are NaN where fewer than {options.subset_size} classes have GT: "
                     + ", ".join(f"{r} on {d}" for r, d in zip(few["run"], few["dataset"])) + ".")
    notes.append("The target-aware protocol is an evaluation-side filter of cached predictions (drop predictions "
                 "whose class is not annotated in their image); a detector truly prompted per image would also "
                 "change its scores.")
    return notes


# ==================================================================================================== writing
def _fmt_cell(v, decimals: int, na: str) -> str:
    if v is None or v is pd.NA or (isinstance(v, (float, np.floating)) and math.isnan(v)):
        return na
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (float, np.floating)):
        return f"{v:.{decimals}f}"
    return str(v)


def to_markdown(df: pd.DataFrame, *, decimals: int = 2, fraction_decimals: int = 3, na: str = "--") -> str:
    """A GitHub pipe table: floats with ``decimals`` (fraction-like columns with ``fraction_decimals``), NaN as
    ``na``, booleans as yes/no."""
    if not len(df.columns):
        return "_(empty)_\n"
    cols = [str(c) for c in df.columns]
    dec = [fraction_decimals if _FRACTION.search(c) and not c.startswith("rank_") else decimals for c in cols]
    num = [pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c]) for c in df.columns]

    def esc(s: str) -> str:
        return s.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(esc(c) for c in cols) + " |",
             "|" + "|".join("---:" if n else "---" for n in num) + "|"]
    for row in df.itertuples(index=False, name=None):
        lines.append("| " + " | ".join(esc(_fmt_cell(v, d, na)) for v, d in zip(row, dec)) + " |")
    if not len(df):
        lines.append("\n_(no rows)_")
    return "\n".join(lines) + "\n"


def _latex_escape(s: str) -> str:
    repl = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
            "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}
    return "".join(repl.get(ch, ch) for ch in s)


def to_latex(df: pd.DataFrame, *, caption: str | None = None, label: str | None = None) -> str:
    """A booktabs ``tabular`` (in a ``table`` when a caption is given): numbers with 2 decimals, NaN as ``--``,
    text escaped. Uses ``DataFrame.style.to_latex`` (jinja2)."""
    df = df.copy()
    for c in df.columns:
        if pd.api.types.is_bool_dtype(df[c]) or df[c].dtype == object:
            df[c] = df[c].map(lambda v: ("yes" if v else "no") if isinstance(v, (bool, np.bool_)) else v)
    df.columns = [str(c) for c in df.columns]
    st = df.style.format(precision=2, na_rep="--", escape="latex")
    st = st.format_index(escape="latex", axis=1).hide(axis="index")
    align = "".join("r" if pd.api.types.is_numeric_dtype(df[c]) else "l" for c in df.columns)
    kw = {"hrules": True, "column_format": align or "l"}
    if caption:
        kw["caption"] = _latex_escape(caption)
        kw["position_float"] = "centering"
    if label:
        kw["label"] = label
    return st.to_latex(**kw)


def _index_md(report: Report, files: dict[str, dict[str, str]]) -> str:
    o = report.options
    lines = [f"# OV3D diagnostics report: {report.benchmark}", ""]
    if report.config:
        lines.append(f"Config: `{report.config}`  ")
    lines += [f"Protocol: **{o.protocol}**, min score {o.min_score:g}, confusion IoU {o.confusion_iou:g}, class "
              f"splits {o.n_subsets} x {o.subset_size} classes (seed {o.seed}).", "",
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
    cmd = (f"python -m ov3d_core report --config {report.config or 'BENCH.yaml'} --out OUT --protocol {o.protocol} "
           f"--min-score {o.min_score:g} --splits {o.n_subsets} --subset-size {o.subset_size} --seed {o.seed} "
           f"--confusion-iou {o.confusion_iou:g}")
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
        "- AP3D and its slices are Omni3D AP in percent: mean over 3D IoU 0.05:0.05:0.50 and 41 recall points; "
        "AP3D-N/M/F by GT depth (near/medium/far).",
        "- recall3D@15 is 3D class-agnostic recall (fraction): non-ignored vocabulary GT matched one-to-one by a "
        "kept prediction at 3D IoU >= 0.15, whatever its label.",
        "- The leaderboard's numbers are `Benchmark.score(run, dataset, protocol=..., min_score=...).summary`, the "
        "same numbers `python -m ov3d_core evaluate --benchmark ... --json` writes.",
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
