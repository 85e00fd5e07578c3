"""``ov3d report --paper``: the tables and figures of the four source documents (seeds/), each as a file named after
the document's own table or figure, with an index of what each file reproduces and of what the inputs cannot give.

Every number is an :class:`~ov3d_core.analysis.Analysis` call for a :class:`~ov3d_core.analysis.View`; this module
only chooses the views (which runs, datasets, subsets and templates each artefact is about), arranges the results
into the documents' layouts (pivots, column selection) and writes them. The views:

- **runs**: every run with its own labels; with an encoder, each closed-vocabulary run also remapped (``X*``, the
  paper's Cube R-CNN*; :meth:`Analysis.run_views`). "Prompted" runs (the prompt tables) are the remapped ``X*`` and
  the prompt-conditioned runs (``per_template`` files).
- **subsets**: the prompt tables (OV3D-Bench Table 8, Pro-Bench) use a dataset's image subset ``prompt_probe`` when
  it has one (the paper's fixed 500-image probe); Table 10 names the ``runtime`` subset's image count when there is
  one. Every other artefact uses every image (the report's ``--subset`` restricts them all).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from ov3d_core.analysis import Analysis, View
from ov3d_core.report import (ReportOptions, _concat, class_split_table, confusion_tables, distance_tables,
                              pivot_table, protocol_tables, transfer_tables)
from ov3d_core.viz import bars, curves, heatmap, runtime as viz_runtime
from ov3d_core.viz.export import figure_bytes, safe_file_name

__all__ = ["ARTEFACTS", "Artefact", "PaperResult", "PROMPT_SUBSET", "RUNTIME_SUBSET", "build_paper", "write_paper"]

#: The image subset of the prompt probe (OV3D-Bench: "a fixed 500-image subset") and of the runtime table
#: ("a fixed 200-image ARKitScenes subset"), when a dataset defines them in ``image_subsets``.
PROMPT_SUBSET = "prompt_probe"
RUNTIME_SUBSET = "runtime"

OV3D, FGOVD, WILD, PRO = ("OV3D-Bench (seeds/000)", "FG-OVD (seeds/001)", "WildDet3D eval card (seeds/002)",
                          "Pro-Bench (seeds/003)")


@dataclass(frozen=True)
class Artefact:
    """One table or figure of a source document: its file stem, the document, what it reproduces, where the app
    shows it, and what it needs ("encoder": prompted runs; "" nothing beyond the benchmark)."""

    stem: str
    document: str
    reproduces: str
    page: str
    kind: str = "table"  # "table" (CSV) or "figure" (image + its data as CSV)
    needs: str = ""


ARTEFACTS: tuple[Artefact, ...] = (
    Artefact("ov3dbench_table1_methods", OV3D, "Table 1: the evaluated methods (modality of the prompt, training "
             "data, closed or open vocabulary)", "Data source (the runs)"),
    Artefact("ov3dbench_table2_recall", OV3D, "Table 2: 3D class-agnostic recall at IoU 0.15, runs x datasets",
             "Overview (leaderboard)"),
    Artefact("ov3dbench_table3_map3d", OV3D, "Table 3: mAP3D under the dataset-level protocol, runs x datasets "
             "(remapped X* beside X)", "Overview (leaderboard)"),
    Artefact("ov3dbench_table4_transfer", OV3D, "Tables 4(a)/(b): in- vs out-of-domain mAP3D and recall per "
             "(run, dataset)", "Splits & transfer"),
    Artefact("ov3dbench_table4_transfer_per_run", OV3D, "Tables 4(a)/(b): per run and environment, out / in ratios",
             "Splits & transfer"),
    Artefact("ov3dbench_table5_transfer_pairs", OV3D, "Table 5: each in-domain run against each out-of-domain run "
             "of the same environment", "Splits & transfer"),
    Artefact("ov3dbench_table7_protocols", OV3D, "Table 7: dataset-level vs target-aware mAP3D per (run, dataset)",
             "Oracle"),
    Artefact("ov3dbench_table7_protocols_per_class", OV3D, "Table 7 (KITTI rows): per-class AP under both "
             "protocols", "Oracle"),
    Artefact("ov3dbench_table8_prompt_sensitivity", OV3D, "Table 8: mAP3D per prompt group, CV and the "
             "standard -> overdetailed drop, on the prompt-probe subset", "Prompt robustness", needs="prompted"),
    Artefact("ov3dbench_table8_templates", OV3D, "Table 8 (per template): mAP3D of each of the 15 templates",
             "Prompt robustness", needs="prompted"),
    Artefact("ov3dbench_table9_class_splits", OV3D, "Table 9: mAP3D over random 10-class subsets (mean, std, "
             "adverse and favourable bounds)", "Splits & transfer"),
    Artefact("ov3dbench_table10_runtime", OV3D, "Table 10: semantic and geometry stage and total ms per image",
             "Overview (runtime)"),
    Artefact("ov3dbench_fig2_confusion", OV3D, "Fig. 2: fine-grained Hungarian confusion matrices (IoU 0.5)",
             "Confusion", kind="figure"),
    Artefact("ov3dbench_fig3_disagreement", OV3D, "Fig. 3: objects localised by several runs under different "
             "labels (the images, ranked)", "Failure mining"),
    Artefact("ov3dbench_fig4_super_confusion", OV3D, "Fig. 4: super-category confusion pooled over every run and "
             "dataset", "Confusion", kind="figure"),
    Artefact("ov3dbench_fig5_three_axis", OV3D, "Fig. 5: the three axes (geometry, semantics, domain) and prompt "
             "robustness", "Overview (three axes)", kind="figure"),
    Artefact("ov3dbench_fig6_oracle_gain", OV3D, "Fig. 6: false positives the target-aware oracle deletes (the "
             "images, ranked)", "Failure mining"),
    Artefact("fgovd_table2_difficulty_tiers", FGOVD, "Table 2: mAP and median rank with N = 5 hard negatives per "
             "difficulty tier (hard, medium, easy, trivial) and per ontology tier", "Prompt robustness",
             needs="remapped"),
    Artefact("fgovd_table4_ap_by_size", FGOVD, "Tables 4-5: AP by object size (S / M / L), AP3D and AP2D",
             "PR curves"),
    Artefact("fgovd_fig4_negatives", FGOVD, "Fig. 4: mAP and median rank against the number of negatives, per tier",
             "Prompt robustness", kind="figure", needs="remapped"),
    Artefact("fgovd_median_rank", FGOVD, "Sec. 4: median rank of the correct label, with and without "
             "class-agnostic NMS", "Prompt robustness", needs="remapped"),
    Artefact("wilddet3d_ods", WILD, "Metrics: centre-distance AP (radius-relative), mATE / mAOE / mASE and ODS",
             "Error breakdown"),
    Artefact("probench_table2_summary", PRO, "Table II: mAP.5 / .75 / .5:.95, latency, PCR, PLC and the largest "
             "prompt delta per run", "Prompt robustness", needs="prompted"),
    Artefact("probench_fig3_ap_vs_iou", PRO, "Fig. 3: mAP against the IoU threshold (3D; 2D in the CSV)", "PR curves",
             kind="figure"),
    Artefact("probench_fig5_accuracy_latency", PRO, "Fig. 5: accuracy against latency (ms per image)",
             "Overview (runtime)", kind="figure"),
    Artefact("probench_sensitivity_per_class", PRO, "Sec. D: per-class largest delta across formulations",
             "Prompt robustness", needs="prompted"),
    Artefact("probench_prompt_types", PRO, "Sec. D: the eight prompt types (categorical, original, wrapped)",
             "Prompt robustness", needs="prompted"),
    Artefact("probench_consistency", PRO, "Sec. D: PCR and PLC per (run, dataset) and per template",
             "Prompt robustness", needs="prompted"),
)

#: What no input of this tool can give, and why (listed in the index).
NOT_REPRODUCIBLE: tuple[tuple[str, str, str], ...] = (
    (OV3D, "Fig. 1", "a qualitative picture of one AV2 object under four runs: the Object view shows it for any "
                     "object; `ov3d export-rerun` writes it as a recording"),
    (OV3D, "Table 6", "not described in the text we have (seeds/000 names no Table 6)"),
    (FGOVD, "Table 1, 6, 11", "statistics of FG-OVD's caption benchmarks: its captions are not an input here"),
    (FGOVD, "Tables 3, 5, 8, 10 (attribute-based: colour, material, pattern, transparency)",
     "the negatives change one attribute word of a caption; our inputs carry class names only, so the attribute "
     "tiers cannot be built (the difficulty and ontology tiers can)"),
    (FGOVD, "Figs. 5-9", "score distributions and caption-generation ablations of FG-OVD's own detectors"),
    (PRO, "Figs. 2, 6", "dataset examples and qualitative predictions"),
    (WILD, "Stereo4D / WildDet3D-Bench tables", "their datasets; any of them given as Omni3D JSON works as-is"),
)


@dataclass
class PaperResult:
    """The artefacts: ``tables`` (stem -> DataFrame; a figure's data under its stem), ``figures`` (stem -> list of
    (file-name suffix, plotly figure): one with suffix "" or one per run and dataset), ``missing`` (stem -> why the
    inputs cannot give it)."""

    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    figures: dict[str, list[tuple[str, object]]] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)


def _prompted_views(a: Analysis, options: ReportOptions) -> list[View]:
    """The runs with a prompt response of their own, on every dataset: the remapped closed-vocabulary runs (X*) and
    the prompt-conditioned runs (per-template files), on the dataset's prompt-probe subset when it has one."""
    spec = options.remap_spec()
    out = []
    for v in a.run_views(options.view(a.datasets[0]), a.datasets, remap=spec):
        if v.remap is None and not a.benchmark.run_templates(v.run, v.dataset):
            continue
        sub = PROMPT_SUBSET if PROMPT_SUBSET in a.benchmark.image_subsets(v.dataset) else None
        out.append(v.with_(subset=sub))
    return out


def _name(v: View) -> str:
    return v.run + ("*" if v.remap is not None else "")


def _keyed(df: pd.DataFrame, v: View) -> pd.DataFrame:
    """``df`` with the view's row name (``X*`` when remapped) and dataset in front."""
    df = df.copy()
    df.insert(0, "dataset", v.dataset)
    df.insert(0, "run", _name(v))
    return df


def build_paper(a: Analysis, options: ReportOptions | None = None, *,
                progress: Callable[[str], None] | None = None) -> PaperResult:
    """Every artefact of :data:`ARTEFACTS` the inputs allow (``options``: protocol, threshold, encoder, class-split
    and confusion settings, as for ``ov3d report``)."""
    options = options or ReportOptions()
    say = progress or (lambda _msg: None)
    res = PaperResult()
    T, F = res.tables, res.figures
    spec = options.remap_spec()
    base = options.view(a.datasets[0])
    runs = a.run_views(base, a.datasets, remap=spec)  # every run, X* beside X
    own = [v for v in runs if v.remap is None]

    say("methods, recall, mAP3D")
    T["ov3dbench_table1_methods"] = a.methods()
    lb = a.leaderboard(base, datasets=a.datasets, remap=spec)
    T["ov3dbench_table2_recall"] = pivot_table(lb, "recall3D@15", a.datasets)
    T["ov3dbench_table3_map3d"] = pivot_table(lb, "AP3D", a.datasets)

    say("domain transfer and the three axes")
    cv = a.prompt_cv(base, spec) if spec is not None or any(a.benchmark.run_templates(r) for r in a.runs()) else {}
    tr = a.transfer(base, prompt_cv=cv or None, remap=spec)
    T["ov3dbench_table4_transfer"] = tr["transfer"]
    T["ov3dbench_table4_transfer_per_run"] = tr["transfer_per_run"]
    T["ov3dbench_table5_transfer_pairs"] = tr["transfer_pairs"]
    T["ov3dbench_fig5_three_axis"] = tr["three_axis"]
    axes = {"geometric": "Geometry: recall3D@15", "semantic": "Semantics: mAP3D",
            "cross_domain_ratio": "Domain: out / in mAP3D", "prompt_robustness": "Prompts: 1 − CV"}
    F["ov3dbench_fig5_three_axis"] = [("", bars.three_axis_chart(tr["three_axis"], axes))]

    say("protocols")
    pt = protocol_tables(a, own, options)
    T["ov3dbench_table7_protocols"] = pt["protocol_summary"]
    T["ov3dbench_table7_protocols_per_class"] = pt["protocol_per_class"]

    say("class splits")
    T["ov3dbench_table9_class_splits"] = class_split_table(a, runs, options)

    say("runtime")
    rt_ds = next((d for d in a.datasets if RUNTIME_SUBSET in a.benchmark.image_subsets(d)), a.datasets[0])
    rt = a.runtime(rt_ds, remap=spec)
    n_rt = len(a.benchmark.image_subset(rt_ds, RUNTIME_SUBSET)) if RUNTIME_SUBSET in a.benchmark.image_subsets(rt_ds) \
        else None
    T["ov3dbench_table10_runtime"] = rt.assign(dataset=rt_ds, runtime_subset_images=n_rt)
    al = a.accuracy_latency(options.view(rt_ds), remap=spec)
    T["probench_fig5_accuracy_latency"] = al.assign(dataset=rt_ds)
    F["probench_fig5_accuracy_latency"] = [("", viz_runtime.accuracy_latency_figure(
        al, title=f"mAP3D on {rt_ds} against total ms per image"))]

    say("confusion")
    ct = confusion_tables(a, runs, options)
    T["ov3dbench_fig2_confusion"] = ct["confusion_fine"]
    F["ov3dbench_fig2_confusion"] = []
    for v in [v for v in runs if v.dataset == a.datasets[0]]:
        cm = a.confusion(v, iou=options.confusion_iou)
        F["ov3dbench_fig2_confusion"].append((f"_{v.run}{'_remapped' if v.remap else ''}_{v.dataset}", heatmap.confusion_heatmap(
            cm.normalized(), cm.class_names,
            title=f"{_name(v)} on {v.dataset}: row-normalised confusion (IoU {options.confusion_iou:g})")))
    pooled = ct["confusion_super_pooled"]
    onto = a.ontology().name
    T["ov3dbench_fig4_super_confusion"] = pooled.assign(ontology=onto)
    supers = [c for c in pooled.columns if c not in ("gt", "n_matched", "missed")]
    F["ov3dbench_fig4_super_confusion"] = [("", heatmap.confusion_heatmap(
        pooled[supers].to_numpy(np.float64), pooled["gt"].tolist(), supers,
        title=f"Super-category confusion, pooled over every run and dataset (ontology: {onto})"))]

    say("mining")
    T["ov3dbench_fig3_disagreement"] = _concat([
        a.mine(options.view(d, a.runs(d)[0]), "disagreement").top(20).assign(dataset=d) for d in a.datasets])
    T["ov3dbench_fig6_oracle_gain"] = _concat([
        _keyed(a.mine(v.with_(protocol="dataset-level"), "oracle-gain").top(20), v) for v in own])

    say("AP against IoU and by size")
    T["probench_fig3_ap_vs_iou"] = _concat([
        _keyed(pd.DataFrame({"iou": kind, "threshold": np.asarray(c.thresholds), "mAP": np.asarray(c.map)}), v)
        for v in runs for kind, c in (("3d", a.ap_vs_iou(v, iou="3d")), ("2d", a.ap_vs_iou(v, iou="2d")))])
    c3 = T["probench_fig3_ap_vs_iou"]
    c3 = c3[(c3["iou"] == "3d") & (c3["dataset"] == a.datasets[0])]
    F["probench_fig3_ap_vs_iou"] = [("", curves.line_chart(
        c3, "threshold", "mAP", "run", title=f"mAP3D against the 3D IoU threshold on {a.datasets[0]}",
        x_title="3D IoU threshold", y_title="mAP3D (%)"))]
    T["fgovd_table4_ap_by_size"] = _concat([
        _keyed(pd.DataFrame([{**a.ap_by_size(v, iou="3d").summary(), **a.ap_by_size(v, iou="2d").summary()}]), v)
        for v in runs])

    say("centre-distance AP and ODS")
    T["wilddet3d_ods"] = distance_tables(a, own, options)["distance"]

    prompted = _prompted_views(a, options) if spec is not None or any(
        a.benchmark.run_templates(r) for r in a.runs()) else []
    if not prompted:
        why = "no run with a prompt response: give --encoder (remaps the closed-vocabulary runs) or per_template files"
        for art in ARTEFACTS:
            if art.needs in ("prompted", "remapped"):
                res.missing[art.stem] = why
        return res

    say("prompt sensitivity (Table 8) and Pro-Bench")
    templates = tuple(options.templates)
    sens, tpl, cons, cons_t, summ, per_class, types = [], [], [], [], [], [], []
    for v in prompted:
        s = a.prompt_sensitivity(v, templates)
        sens.append({"run": _name(v), "dataset": v.dataset, "subset": v.subset or "(all images)",
                     **{f"mean_{g}": m for g, m in s.group_mean.items()}, "mean": s.mean, "std": s.std, "cv": s.cv,
                     "drop_standard_to_overdetailed": s.drop_standard_to_overdetailed})
        tpl.append(_keyed(a.template_scores(v, templates), v))
        c = a.consistency(v, templates)
        cons.append({"run": _name(v), "dataset": v.dataset, **c.summary()})
        cons_t.append(_keyed(c.per_template, v))
        fs = a.formulation_sensitivity(v)
        per_class.append(_keyed(fs.per_class(), v))
        types.append(_keyed(a.prompt_types(v), v))
        iou = a.iou_summary([v.with_(subset=None)])
        i3 = iou[iou["iou"] == "3d"].iloc[0]
        latency = a.runtime(v.dataset, remap=spec).set_index("run")["total_ms"]
        summ.append({"run": _name(v), "dataset": v.dataset, "mAP@.5": i3["mAP@.5"], "mAP@.75": i3["mAP@.75"],
                     "mAP@.5:.95": i3["mAP@.5:.95"], "retained": i3["retained"],
                     "total_ms": float(latency.get(_name(v), np.nan)), "PCR": c.pcr, "PLC": c.plc,
                     "max_delta": fs.max_delta, "best_formulation": fs.best_formulation,
                     "worst_formulation": fs.worst_formulation})
    T["ov3dbench_table8_prompt_sensitivity"] = pd.DataFrame(sens)
    T["ov3dbench_table8_templates"] = _concat(tpl)
    T["probench_table2_summary"] = pd.DataFrame(summ)
    T["probench_consistency"] = pd.DataFrame(cons).merge(
        _concat(cons_t).rename(columns={"recall": "template_recall"}), on=["run", "dataset"], how="left")
    T["probench_sensitivity_per_class"] = _concat(per_class)
    T["probench_prompt_types"] = _concat(types)

    remapped = [v for v in prompted if v.remap is not None]
    if not remapped:
        for art in ARTEFACTS:
            if art.needs == "remapped":
                res.missing[art.stem] = "needs a remapped run (--encoder and a closed-vocabulary run): the " \
                                        "hard negatives are ranked by the remap encoder's scores"
        return res
    say("FG-OVD tiers and ranks")
    tiers, ranks = [], []
    for v in remapped:
        tiers.append(_keyed(a.hard_negative_tiers(v, ns=(1, 2, 3, 5, 8, 10)), v))
        ranks.append({"run": _name(v), "dataset": v.dataset,
                      **{f"{k}": x for k, x in a.label_rank_summary(v).items()},
                      **{f"{k}_nms": x for k, x in a.label_rank_summary(v, nms=True).items()},
                      "n_suppressed_by_nms": a.nms_summary(v)["n_suppressed"]})
    curve = _concat(tiers)
    T["fgovd_fig4_negatives"] = curve
    T["fgovd_table2_difficulty_tiers"] = curve[curve["n_negatives"] == 5].reset_index(drop=True)
    T["fgovd_median_rank"] = pd.DataFrame(ranks)
    first = curve[(curve["dataset"] == remapped[0].dataset) & (curve["run"] == _name(remapped[0]))]
    F["fgovd_fig4_negatives"] = [("", curves.line_chart(
        first, "n_negatives", "AP3D", "tier", title=f"{_name(remapped[0])} on {remapped[0].dataset}: mAP3D against "
                                                    f"the number of negatives per object", x_title="negatives N",
        y_title="mAP3D (%)"))]
    return res


def write_paper(result: PaperResult, out: str | Path, *, figure_format: str = "png") -> list[Path]:
    """Write every table as ``<stem>.csv``, every figure as ``<stem>.<format>`` (``<stem>_<run>_<dataset>`` when drawn
    per run;
    ``none``: the figures' data only) and ``PAPER.md``: which document artefact each file reproduces, where the app
    shows it, and what the inputs cannot give, and why."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    files: dict[str, list[str]] = {}
    for stem, df in result.tables.items():
        p = out / f"{stem}.csv"
        p.write_text(df.to_csv(index=False), encoding="utf-8")
        written.append(p)
        files.setdefault(stem, []).append(p.name)
    if figure_format != "none":
        for stem, figs in result.figures.items():
            for suffix, fig in figs:
                p = out / safe_file_name(f"{stem}{suffix}", figure_format)
                p.write_bytes(figure_bytes(fig, figure_format))
                written.append(p)
                files.setdefault(stem, []).append(p.name)
    p = out / "PAPER.md"
    p.write_text(_index(result, files), encoding="utf-8")
    written.append(p)
    return written


def _index(result: PaperResult, files: dict[str, list[str]]) -> str:
    lines = ["# The source documents' tables and figures", "",
             "Each file reproduces one table or figure of a source document (seeds/), from this benchmark's inputs. "
             "Numbers follow the report's units: AP-like numbers in percent, recall, shares and ratios as fractions.",
             "", "| document | artefact | file(s) | app page |", "|---|---|---|---|"]
    for art in ARTEFACTS:
        if art.stem in files:
            lines.append(f"| {art.document} | {art.reproduces} | {', '.join(f'`{f}`' for f in files[art.stem])} | "
                         f"{art.page} |")
    lines += ["", "## Not produced from these inputs", "", "| document | artefact | why |", "|---|---|---|"]
    for art in ARTEFACTS:
        if art.stem not in files:
            why = result.missing.get(art.stem, "not computed")
            lines.append(f"| {art.document} | {art.reproduces} | {why} |")
    for doc, what, why in NOT_REPRODUCIBLE:
        lines.append(f"| {doc} | {what} | {why} |")
    return "\n".join(lines) + "\n"
