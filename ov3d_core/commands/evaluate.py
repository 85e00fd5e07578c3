"""``ov3d evaluate``: the Omni3D-style table and a JSON file with every number (through ``ov3d_core.Analysis``).

Predictions whose category is outside the evaluated vocabulary are not scored (as Omni3D does) and never dropped
silently: they are counted per category in the table and in the JSON (``out_of_vocabulary``). Only a category that
cannot be resolved at all (no name, an unknown id) is an error (exit 2).
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

from tqdm import tqdm

from ov3d_core.analysis import Analysis, View
from ov3d_core.commands._common import (CLI, add_bootstrap_arguments, add_input_arguments, check_bootstrap_args,
                                        check_finite, check_output_file, read_name_list)
from ov3d_core.errors import InputError
from ov3d_core.eval.constants import PROTOCOLS, RECALL_KEY, SUMMARY_KEYS
from ov3d_core.io.progress import reporting


def register(sub) -> None:
    p = sub.add_parser("evaluate", help="score predictions against Omni3D GT (Omni3D protocol, exact 3D IoU)",
                       description="Score one or more prediction files against one or more GT files.")
    add_input_arguments(p)
    p.add_argument("--protocol", default="dataset-level", choices=list(PROTOCOLS))
    p.add_argument("--min-score", type=float, default=0.0, help="drop predictions below this score")
    p.add_argument("--json", dest="json_out", help="write all numbers to this JSON file")
    p.add_argument("--cache-dir", default=".ov3d_cache", help="geometry cache folder")
    p.add_argument("--ci", action="store_true",
                   help="image-bootstrap confidence intervals of every number (Analysis.bootstrap)")
    add_bootstrap_arguments(p)
    p.set_defaults(func=run)


def _num(v):
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


def _block(summary: dict, per_category, out_of_vocab=None, subsets: dict | None = None) -> dict:
    out = {k: _num(summary.get(k)) for k in SUMMARY_KEYS}
    out["per_category"] = {
        r.category: {"AP3D": _num(r.AP3D), "n_gt": int(r.n_gt), "n_pred": int(r.n_pred)}
        for r in per_category.itertuples(index=False)}
    if out_of_vocab is not None:
        out["out_of_vocabulary"] = {str(c): int(n) for c, n in zip(out_of_vocab["category"], out_of_vocab["n_pred"])}
    if subsets:
        out["subsets"] = {name: _num(v) for name, v in subsets.items()}
    return out


def _bar(**kw):
    """A tqdm bar on stderr that appears only once its step has run for ``OV3D_PROGRESS_DELAY`` seconds (default 1):
    a step shorter than that leaves stderr untouched (errors stay one line)."""
    return tqdm(file=sys.stderr, leave=False, delay=float(os.environ.get("OV3D_PROGRESS_DELAY", "1")), **kw)


def _advance(bar, done: int) -> None:
    """Move ``bar`` to ``done`` through ``update`` (which honours the delay; ``refresh`` would draw at once)."""
    if done > bar.n:
        bar.update(done - bar.n)
    if bar.total and done >= bar.total and bar.format_dict["elapsed"] >= bar.delay:
        bar.refresh()  # the final state of a bar that is shown (update may skip it within mininterval)


class _PairProgress:
    """A tqdm bar on stderr for the geometry of one run (shown only while pairs are computed, not on cache hits)."""

    def __init__(self, label: str):
        self.label, self.bar = label, None

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None and total:
            self.bar = _bar(total=total, desc=f"geometry {self.label}", unit="img")
        if self.bar is not None:
            _advance(self.bar, done)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def ci_json(frame, key: str, n_resamples: int, seed: int) -> dict:
    """A ``BootstrapResult.to_frame()`` / ``per_category_frame()`` as JSON: name -> {value, lo, hi, se, n_valid,
    level, method, n_resamples, seed} (NaN as null)."""
    return {str(r[key]): {"value": _num(r["value"]), "lo": _num(r["lo"]), "hi": _num(r["hi"]), "se": _num(r["se"]),
                          "n_valid": int(r["n_valid"]), "level": float(r["level"]), "method": str(r["method"]),
                          "n_resamples": int(n_resamples), "seed": int(seed)}
            for r in frame.to_dict(orient="records")}


def undefined_interval_notes(where: str, block: dict, method: str) -> list[str]:
    """A note naming the numbers that have a value but no interval (BCa: every resample on one side of the value;
    or too few resamples define it), so that a null interval is never silent."""
    missing = [k for part in ("ci", "ci_per_category") for k, c in block.get(part, {}).items()
               if c["value"] is not None and (c["lo"] is None or c["hi"] is None)]
    if not missing:
        return []
    why = ("every resample fell on one side of the value, where BCa is undefined; --ci-method percentile gives one"
           if method == "bca" else "no resample defines it")
    return [f"note: {where}: no interval for {len(missing)} number(s) ({', '.join(missing)}): {why}"]


class _StepBars:
    """tqdm bars on stderr for the loading steps that ``ov3d_core.io.progress`` reports (parse: bytes; convert and
    cache write: one step each), one per step, removed when it ends."""

    def __init__(self):
        self.bars: dict = {}

    def __call__(self, step: str, done: int, total: int) -> None:
        bar = self.bars.get(step)
        if bar is None:
            in_bytes = step.startswith("parse")
            bar = self.bars[step] = _bar(total=total, desc=step, unit="B" if in_bytes else "step",
                                         unit_scale=in_bytes)
        _advance(bar, done)
        if done >= total:
            bar.close()
            del self.bars[step]

    def close(self) -> None:
        for bar in self.bars.values():
            bar.close()
        self.bars.clear()


def _fmt(v, key: str = "AP3D") -> str:
    """One number of the table in the README's units, as in the JSON, the report and the app: AP-like numbers in
    percent with 2 decimals, ``recall3D@15`` (a fraction) with 3."""
    if v is None:
        return "   nan"
    return f"{v:6.3f}" if key == RECALL_KEY else f"{v:6.2f}"


def _interval(c: dict | None, key: str = "AP3D") -> str:
    if c is None:
        return ""
    return f" [{_fmt(c['lo'], key).strip()}, {_fmt(c['hi'], key).strip()}]"


def _table(title: str, block: dict) -> str:
    head = f"{title}\n" + " ".join(f"{k:>11}" for k in SUMMARY_KEYS)
    vals = [block[k] for k in SUMMARY_KEYS]
    row = " ".join(f"{_fmt(v, k):>11}" for k, v in zip(SUMMARY_KEYS, vals))
    lines = [head, row + f"   (AP in percent; {RECALL_KEY} a fraction)"]
    ci, ci_cat = block.get("ci"), block.get("ci_per_category") or {}
    if ci:
        c0 = next(iter(ci.values()))
        lines.append(f"  {100 * c0['level']:g}% intervals ({c0['method']}, {c0['n_resamples']} image resamples, "
                     f"seed {c0['seed']}):")
        lines += [f"    {k:<12} {_fmt(v, k).strip():>6}{_interval(ci.get(k), k)}"
                  for k, v in zip(SUMMARY_KEYS, vals) if k in ci]
    lines += [f"  {name:<24} AP3D {_fmt(c['AP3D'])}{_interval(ci_cat.get(name))}  n_gt {c['n_gt']:>6}  "
              f"n_pred {c['n_pred']:>7}" for name, c in block["per_category"].items()]
    oov = block.get("out_of_vocabulary") or {}
    if oov:
        lines.append(f"  not evaluated (outside the vocabulary): {sum(oov.values())} predictions: "
                     + ", ".join(f"{c} {n}" for c, n in oov.items()))
    return "\n".join(lines)


def _check_args(args) -> None:
    """Argument errors before any file is read (InputError: one line, exit 2)."""
    check_finite(args.min_score, "--min-score")
    if args.json_out:
        check_output_file(args.json_out, "--json")
    if args.categories is not None and not [c for c in args.categories.split(",") if c.strip()]:
        raise InputError(CLI, None, "--categories", "at least one category name", args.categories)
    if args.run_name and len(set(args.run_name)) != len(args.run_name):
        dup = next(n for n in args.run_name if args.run_name.count(n) > 1)
        raise InputError(CLI, None, "--run-name", "a different name for each run", dup)
    check_bootstrap_args(args, enabled=getattr(args, "ci", True))
    if args.run_name and args.pred and len(args.run_name) > len(args.pred):
        raise InputError(CLI, None, "--run-name", f"at most one name per --pred ({len(args.pred)})",
                         len(args.run_name))


def _analysis(args):
    if args.benchmark:
        return Analysis.from_yaml(args.benchmark)
    if not args.gt or not args.pred:
        raise InputError(CLI, None, "--gt/--pred", "at least one --gt and one --pred (or --benchmark)")
    cl = None
    if args.category_list:
        cl = tuple(read_name_list(args.category_list))
        if not cl:
            raise InputError(args.category_list, None, None, "one category name per line", "an empty file")
    cats = None if args.categories is None else [c.strip() for c in args.categories.split(",") if c.strip()]
    a = Analysis.from_files(args.gt, args.pred, run_names=args.run_name or None,
                            formats=[args.format] * len(args.pred), category_list=cl, categories=cats,
                            cache_dir=args.cache_dir)
    if len(a.run_entries()) != len(args.pred):  # two files whose default names collide (same stem or folder)
        raise InputError(CLI, None, "--run-name", "one name per --pred (two prediction files get the same "
                         "default name; give --run-name for each)", [str(p) for p in args.pred])
    return a


def run(args) -> int:
    _check_args(args)
    a = _analysis(args)
    result: dict = {"protocol": args.protocol, "datasets": {}, "runs": {}}
    if args.ci:  # per run and dataset, not for the pooled numbers
        result["bootstrap"] = {"unit": "image", "n_resamples": args.resamples, "level": args.level,
                               "method": args.ci_method, "seed": args.seed}
    entries = a.run_entries()
    steps = _StepBars()
    with reporting(steps):  # every file is read (and checked) before any geometry: a bad one fails before the work
        try:
            a.load_inputs()
        finally:
            steps.close()
    info = {d: a.dataset_info(d) for d in dict.fromkeys(d for d, _ in entries)}
    notes = [f"note: dataset {info[d]['name']} has no ground-truth annotations: every AP is NaN (null in the "
             "JSON)" for d in info if info[d]["n_gt_boxes"] == 0]
    bar = tqdm(entries, desc="evaluate", unit="run", file=sys.stderr,
               disable=len(entries) < 2 and not sys.stderr.isatty())
    for dataset, run_name in bar:
        ds_name = info[dataset]["name"]
        progress = _PairProgress(f"{run_name}/{ds_name}")
        try:
            a.geometry(dataset, run_name, progress=progress)
        finally:
            progress.close()
        v = View(dataset=dataset, run=run_name, protocol=args.protocol, min_score=args.min_score)
        with _bar(total=1, desc=f"scoring {run_name}/{ds_name}", unit="step") as sbar:
            a.score(v)
            sbar.update(1)
        if a.n_predictions(dataset, run_name) == 0:
            notes.append(f"note: run {run_name} has no predictions on {ds_name}: every AP is 0")
        block = _block(a.summary(v), a.per_category(v), a.out_of_vocabulary(v), a.omni3d_subsets(v))
        if args.ci:
            boot = a.bootstrap(v, n_resamples=args.resamples, seed=args.seed, level=args.level,
                               method=args.ci_method)
            block["ci"] = ci_json(boot.to_frame(), "metric", args.resamples, args.seed)
            block["ci_per_category"] = ci_json(boot.per_category_frame(), "category", args.resamples, args.seed)
            notes += undefined_interval_notes(f"run {run_name} on {ds_name}", block, args.ci_method)
        result["runs"].setdefault(run_name, {})[ds_name] = block
    # The documented shape: datasets -> NAME -> numbers (of the first/only run), pooled over datasets per run.
    first_run = entries[0][1] if entries else None
    if first_run is not None:
        result["datasets"] = result["runs"][first_run]
        v0 = View(dataset=entries[0][0], run=first_run, protocol=args.protocol, min_score=args.min_score)
        pooled = a.pooled(v0)
        result["pooled"] = _block(pooled["summary"], pooled["per_category"], None, pooled["subsets"])
    for name, per_ds in result["runs"].items():
        for ds_name, block in per_ds.items():
            print(_table(f"{name} on {ds_name} ({args.protocol})", block))
            print()
    if "pooled" in result and len(result["datasets"]) > 1:
        print(_table(f"{first_run} pooled over {len(result['datasets'])} datasets", result["pooled"]))
    for n in notes:
        print(n, file=sys.stderr)
    if args.json_out:
        try:
            Path(args.json_out).expanduser().write_text(json.dumps(result, indent=2))
        except OSError as exc:  # checked up front; this is a disk that filled or a folder that went away since
            raise InputError(args.json_out, None, "--json", "a writable file", exc.strerror or str(exc)) from None
    return 0
