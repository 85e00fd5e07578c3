"""``ov3d compare``: is the difference real? A paired image-bootstrap test of two runs on the same images, or of one
run under two protocols, per headline number and per category; and (``--tiers``) the leaderboard with the runs
whose gaps are not significant grouped into tiers.

A subcommand of its own rather than an ``evaluate`` flag: it answers another question (A - B, not A), with its own
output (differences, intervals, p-values, the multiple-comparison correction) and options, on the same inputs as
``evaluate``. Every number is an ``Analysis`` call (``paired``, ``leaderboard_tiers``); both sides are scored on one
set of image resamples per dataset, which is what pairs them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ov3d_core.analysis import View
from ov3d_core.commands._common import CLI, add_bootstrap_arguments, add_input_arguments, names_list
from ov3d_core.commands.evaluate import _PairProgress, _analysis, _check_args
from ov3d_core.errors import InputError
from ov3d_core.eval.constants import PROTOCOLS, RECALL_KEY, SUMMARY_KEYS
from ov3d_core.report import json_records

CORRECTION_TEXT = {"holm": "Holm-corrected (family-wise error)", "bh": "Benjamini-Hochberg-corrected (false "
                   "discovery rate)", "none": "not corrected for multiple comparisons"}


def register(sub) -> None:
    p = sub.add_parser("compare", help="paired bootstrap test of two runs (or two protocols), and significance tiers",
                       description="Paired image-bootstrap comparison A - B on the same images: two runs (--runs "
                                   "A,B) or one run under two protocols (--protocols dataset-level,target-aware); "
                                   "the difference, its interval and p-value per headline number and per category "
                                   "(with the multiple-comparison correction stated). --tiers: the leaderboard with "
                                   "significance tiers.")
    add_input_arguments(p)
    p.add_argument("--runs", help="two runs to compare, A,B (default: the two runs, when there are exactly two); "
                                  "one run with --protocols")
    p.add_argument("--protocols", help="compare one run under two protocols, e.g. dataset-level,target-aware")
    p.add_argument("--protocol", default=None, choices=list(PROTOCOLS),
                   help="protocol of a run comparison and of the tiers (default: dataset-level)")
    p.add_argument("--dataset", help="comma-separated datasets to compare on (default: every dataset with both)")
    p.add_argument("--min-score", type=float, default=0.0, help="drop predictions below this score")
    add_bootstrap_arguments(p, method="percentile")
    p.add_argument("--correction", default="holm", choices=["holm", "bh", "none"],
                   help="multiple-comparison control over the categories and the tier gaps (default: holm)")
    p.add_argument("--tiers", action="store_true",
                   help="the leaderboard of every run with significance tiers (Analysis.leaderboard_tiers)")
    p.add_argument("--metric", default="AP3D", choices=list(SUMMARY_KEYS), help="metric of the tiers (default: AP3D)")
    p.add_argument("--json", dest="json_out", help="write every number to this JSON file")
    p.add_argument("--cache-dir", default=".ov3d_cache", help="geometry cache folder")
    p.set_defaults(func=run)


def _check(args) -> None:
    """Argument errors before any file is read (InputError: one line, exit 2)."""
    _check_args(args)
    runs, protocols = names_list(args.runs, "--runs"), names_list(args.protocols, "--protocols")
    if protocols:
        if len(protocols) != 2 or len(set(protocols)) != 2 or not set(protocols) <= set(PROTOCOLS):
            raise InputError(CLI, None, "--protocols", f"two different protocols of {PROTOCOLS}", args.protocols)
        if args.protocol is not None:
            raise InputError(CLI, None, "--protocol", "left out with --protocols (it names both)", args.protocol)
        if len(runs) > 1:
            raise InputError(CLI, None, "--runs", "one run with --protocols", args.runs)
    elif runs and (len(runs) != 2 or len(set(runs)) != 2):
        raise InputError(CLI, None, "--runs", "two different runs, A,B", args.runs)
    args.runs, args.protocols = runs, protocols
    args.protocol = args.protocol or PROTOCOLS[0]


def _datasets(a, args, need: list[str]) -> list[str]:
    """The datasets to compare on: ``--dataset`` (each must have the runs in ``need``) or every one that has."""
    asked = names_list(args.dataset, "--dataset")
    for d in asked:
        if d not in a.datasets:
            raise InputError(CLI, None, "--dataset", f"one of {a.datasets}", d)
    pool = asked or a.datasets
    out = [d for d in pool if all(r in a.runs(d) for r in need)]
    if not out or (asked and len(out) < len(asked)):
        missing = next(d for d in pool if d not in out) if pool else None
        raise InputError(CLI, None, "--runs", f"runs on the dataset {missing!r}: {a.runs(missing) if missing else []}",
                         need)
    return out


def _pairs(a, args) -> list[tuple]:
    """(view A, view B) per dataset."""
    every = list(dict.fromkeys(run for _, run in a.run_entries()))
    want = 1 if args.protocols else 2
    runs = args.runs or (every if len(every) == want else None)
    if runs is None:
        raise InputError(CLI, None, "--runs", f"{'one run' if want == 1 else 'two runs, A,B'} of {every}",
                         None)
    for r in runs:
        if r not in every:
            raise InputError(CLI, None, "--runs", f"runs of {every}", r)
    out = []
    for d in _datasets(a, args, runs):
        if args.protocols:
            out.append(tuple(View(dataset=d, run=runs[0], protocol=p, min_score=args.min_score)
                             for p in args.protocols))
        else:
            out.append(tuple(View(dataset=d, run=r, protocol=args.protocol, min_score=args.min_score) for r in runs))
    return out


def _keyed_json(df, key: str, name_a: str, name_b: str) -> dict:
    out = {}
    for r in json_records(df):
        name = r.pop(key)
        r["a"], r["b"] = r.pop(name_a), r.pop(name_b)
        out[str(name)] = r
    return out


def _fmt(v, scale: float = 1.0, digits: int = 2) -> str:
    import math

    return "nan" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{scale * v:.{digits}f}"


def _pair_text(df, key: str, name_a: str, name_b: str, adjusted: bool) -> list[str]:
    wa, wb = max(7, len(name_a)), max(7, len(name_b))
    p_col = "p_adjusted" if adjusted else "p_value"
    lines = [f"  {key:<16} {name_a:>{wa}} {name_b:>{wb}} {'diff':>7}  {'interval':<17} {'p_adj' if adjusted else 'p':>7}  significant"]
    for r in df.to_dict(orient="records"):
        d = 3 if r[key] == RECALL_KEY else 2  # the README's units: recall a fraction, AP percent
        interval = f"[{_fmt(r['lo'], digits=d)}, {_fmt(r['hi'], digits=d)}]"
        lines.append(f"  {str(r[key]):<16} {_fmt(r[name_a], digits=d):>{wa}} {_fmt(r[name_b], digits=d):>{wb}} "
                     f"{_fmt(r['diff'], digits=d):>7}  {interval:<17} {_fmt(r[p_col], digits=4):>7}  "
                     f"{'--' if r[p_col] is None or r[p_col] != r[p_col] else ('yes' if r['significant'] else 'no')}")
    return lines


def _tiers_text(df, metric: str) -> list[str]:
    s, d = 1.0, (3 if metric == RECALL_KEY else 2)  # the README's units: recall a fraction, AP percent
    lines = [f"  {'tier':>4} {'rank':>4}  {'run':<20} {metric:>8}  {'interval':<17} {'gap to next':>11}  "
             f"{'p_adjusted':>10}  significant"]
    for r in df.to_dict(orient="records"):
        last = r["rank"] == len(df)
        lines.append(f"  {r['tier']:>4} {r['rank']:>4}  {str(r['run']):<20} {_fmt(r['value'], s, d):>8}  "
                     f"{'[' + _fmt(r['lo'], s, d) + ', ' + _fmt(r['hi'], s, d) + ']':<17} "
                     f"{'' if last else _fmt(r['gap'], s, d):>11}  {'' if last else _fmt(r['p_adjusted'], digits=4):>10}"
                     f"  {'' if last else ('yes' if r['significant'] else 'no')}")
    return lines


def _geometry(a, runs_on: dict, *, tolerate: bool = False) -> None:
    """The pair geometry of every (run, dataset) compared, with evaluate's progress bar while it is computed. A run
    that fails to load is an error (one line), or with ``tolerate`` a note (the tiers leave it out)."""
    for d, runs in runs_on.items():
        for r in runs:
            progress = _PairProgress(f"{r}/{d}")
            try:
                a.geometry(d, r, progress=progress)
            except InputError as exc:
                if not tolerate:
                    raise
                print(f"note: run {r} on {d} is left out of the tiers: {exc}", file=sys.stderr)
            finally:
                progress.close()


def run(args) -> int:
    _check(args)
    a = _analysis(args)
    boot = {"unit": "image", "n_resamples": args.resamples, "level": args.level, "method": args.ci_method,
            "seed": args.seed, "correction": args.correction}
    result: dict = {"bootstrap": boot, "comparisons": [], "tiers": {}}
    kw = dict(n_resamples=args.resamples, seed=args.seed, level=args.level)
    settings = (f"paired image bootstrap, {args.resamples} resamples, seed {args.seed}, {100 * args.level:g}% "
                f"{args.ci_method} intervals")
    if args.runs or args.protocols or not args.tiers:
        pairs = _pairs(a, args)
        _geometry(a, {va.dataset: list(dict.fromkeys((va.run, vb.run))) for va, vb in pairs})
        for va, vb in pairs:
            pc = a.paired(va, vb, method=args.ci_method, correction=args.correction, **kw)
            head, cat = pc.to_frame(), pc.per_category_frame()
            what = (f"{va.run} under {pc.name_a} - {pc.name_b}" if args.protocols
                    else f"{pc.name_a} - {pc.name_b} ({va.protocol})")
            print(f"{what} on {va.dataset}: {settings}; headline numbers: one test each, significant: p < "
                  f"{1 - args.level:g}")
            print("\n".join(_pair_text(head, "metric", pc.name_a, pc.name_b, adjusted=False)))
            n_cat = int(cat["p_value"].notna().sum())
            print(f"  per category: p-values {CORRECTION_TEXT[args.correction]} over {n_cat} categories; "
                  f"significant: adjusted p < {1 - args.level:g}")
            print("\n".join(_pair_text(cat, "category", pc.name_a, pc.name_b, adjusted=True)))
            print(f"  (AP in percent; {RECALL_KEY} a fraction)\n")
            result["comparisons"].append({
                "dataset": va.dataset, "a": pc.name_a, "b": pc.name_b, "view_a": va.to_dict(), "view_b": vb.to_dict(),
                "headline": _keyed_json(head, "metric", pc.name_a, pc.name_b),
                "per_category": _keyed_json(cat.drop(columns=["correction"]), "category", pc.name_a, pc.name_b),
                "correction": args.correction})
    if args.tiers:
        datasets = _datasets(a, args, [])
        _geometry(a, {d: a.runs(d) for d in datasets}, tolerate=True)
        for d in datasets:
            t = a.leaderboard_tiers(View(dataset=d, protocol=args.protocol, min_score=args.min_score),
                                    metric=args.metric, correction=args.correction, **kw)
            print(f"{args.metric} tiers on {d} ({args.protocol}): {100 * args.level:g}% BCa intervals, "
                  f"{args.resamples} image resamples, seed {args.seed}; gap to the next run: paired bootstrap "
                  f"(percentile), p-values {CORRECTION_TEXT[args.correction]} over {max(len(t) - 1, 0)} gaps; runs "
                  "joined by a non-significant gap share a tier")
            print("\n".join(_tiers_text(t, args.metric)) + "\n")
            result["tiers"][d] = json_records(t)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result, indent=2, allow_nan=False))
    sys.stdout.flush()
    return 0
