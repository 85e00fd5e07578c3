"""``python -m ov3d_core evaluate``: the Omni3D-style table and a JSON file with every number."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

SUMMARY_KEYS = ("AP3D", "AP3D@15", "AP3D@25", "AP3D@50", "AP3D-N", "AP3D-M", "AP3D-F", "recall3D@15")


def register(sub) -> None:
    p = sub.add_parser("evaluate", help="score predictions against Omni3D GT (Omni3D protocol, exact 3D IoU)",
                       description="Score one or more prediction files against one or more GT files.")
    p.add_argument("--gt", action="append", default=[], help="Omni3D GT JSON (repeat for several files)")
    p.add_argument("--pred", action="append", default=[], help="predictions (.json or .pth; repeat for several runs)")
    p.add_argument("--benchmark", help="a benchmark YAML instead of --gt/--pred: every run on every dataset")
    p.add_argument("--run-name", action="append", default=[], help="name of each --pred run (in order)")
    p.add_argument("--format", default="auto",
                   choices=["auto", "cubercnn-json", "cubercnn-pth", "detany3d-json"])
    p.add_argument("--category-list", help="file with one category name per line: contiguous id -> name (.pth)")
    p.add_argument("--categories", help="comma-separated evaluated vocabulary (default: the GT file's categories)")
    p.add_argument("--protocol", default="dataset-level", choices=["dataset-level", "target-aware"])
    p.add_argument("--min-score", type=float, default=0.0, help="drop predictions below this score")
    p.add_argument("--json", dest="json_out", help="write all numbers to this JSON file")
    p.add_argument("--cache-dir", default=".ov3d_cache", help="geometry cache folder")
    p.set_defaults(func=run)


def _num(v):
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


def _block(summary: dict, per_category, subsets: dict | None = None) -> dict:
    out = {k: _num(summary.get(k)) for k in SUMMARY_KEYS}
    out["per_category"] = {
        r.category: {"AP3D": _num(r.AP3D), "n_gt": int(r.n_gt), "n_pred": int(r.n_pred)}
        for r in per_category.itertuples(index=False)}
    if subsets:
        out["subsets"] = {name: _num(v) for name, v in subsets.items()}
    return out


def _subset_aps(ap, vocabulary, subsets: dict) -> dict:
    """Omni3D's subset means: AP3D over a category list, NaN unless every category was evaluated and has GT."""
    out = {}
    for name, cats in subsets.items():
        out[name] = ap.mean_ap(list(cats)) if set(cats) <= set(vocabulary) else float("nan")
    return out


def _dataset_subsets(name: str, spec) -> dict:
    from ov3d_core.taxonomy import omni3d_preset_for

    subsets = {}
    preset = omni3d_preset_for(name) or omni3d_preset_for(spec.name)
    if preset:
        subsets["omni3d"] = preset
    subsets.update(spec.subsets)
    return subsets


class _PairProgress:
    """A tqdm bar on stderr for the geometry of one run (shown only while pairs are computed, not on cache hits)."""

    def __init__(self, label: str):
        self.label, self.bar = label, None

    def __call__(self, done: int, total: int) -> None:
        from tqdm import tqdm

        if self.bar is None and total:
            self.bar = tqdm(total=total, desc=f"geometry {self.label}", unit="img", file=sys.stderr, leave=False)
        if self.bar is not None:
            self.bar.n = done
            self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _fmt(v) -> str:
    return "   nan" if v is None else f"{v:6.2f}"


def _table(title: str, block: dict) -> str:
    head = f"{title}\n" + " ".join(f"{k:>11}" for k in SUMMARY_KEYS)
    vals = [block[k] if k != "recall3D@15" or block[k] is None else 100 * block[k] for k in SUMMARY_KEYS]
    row = " ".join(f"{_fmt(v):>11}" for v in vals)
    cats = "\n".join(f"  {name:<24} AP3D {_fmt(c['AP3D'])}  n_gt {c['n_gt']:>6}  n_pred {c['n_pred']:>7}"
                     for name, c in block["per_category"].items())
    return f"{head}\n{row}\n{cats}"


def run(args) -> int:
    from tqdm import tqdm

    from ov3d_core.benchmark import Benchmark
    from ov3d_core.io.config import config_from_files, load_config
    from ov3d_core.errors import InputError
    from ov3d_core.eval.scoring import score_pooled
    from ov3d_core.taxonomy import SUBSET_PRESETS

    if args.benchmark:
        config = load_config(args.benchmark)
    else:
        if not args.gt or not args.pred:
            raise InputError(None, None, "--gt/--pred", "at least one --gt and one --pred (or --benchmark)")
        cl = None
        if args.category_list:
            path = Path(args.category_list)
            if not path.is_file():
                raise InputError(str(path), None, None, "an existing category list file", "no such file")
            cl = tuple(line.strip() for line in path.read_text().splitlines() if line.strip())
        config = config_from_files(args.gt, args.pred, run_names=args.run_name or None,
                                   formats=[args.format] * len(args.pred), category_list=cl,
                                   cache_dir=args.cache_dir)
        if args.categories:
            from dataclasses import replace

            ds = next(iter(config.datasets.values()))
            ds = replace(ds, categories=tuple(c.strip() for c in args.categories.split(",") if c.strip()))
            config = replace(config, datasets={ds.name: ds})
    bench = Benchmark(config)
    result: dict = {"protocol": args.protocol, "datasets": {}, "runs": {}}
    runs = list(config.runs.values())
    bar = tqdm(runs, desc="evaluate", unit="run", file=sys.stderr, disable=len(runs) < 2 and not sys.stderr.isatty())
    scores = []
    for spec in bar:
        ds = bench.dataset(spec.dataset)
        progress = _PairProgress(f"{spec.name}/{ds.name}")
        try:
            bench.pairs(spec.name, spec.dataset, progress=progress)
        finally:
            progress.close()
        sc = bench.score(spec.name, spec.dataset, protocol=args.protocol, min_score=args.min_score)
        scores.append((ds, bench.run(spec.name, spec.dataset), sc))
        subsets = _subset_aps(sc.ap, sc.view.vocabulary, _dataset_subsets(ds.name, bench.dataset_spec(spec.dataset)))
        block = _block(sc.summary, sc.per_category, subsets)
        result["runs"].setdefault(spec.name, {})[ds.name] = block
    # The documented shape: datasets -> NAME -> numbers (of the first/only run), pooled over datasets per run.
    first_run = runs[0].name if runs else None
    for name, per_ds in result["runs"].items():
        if name == first_run:
            result["datasets"] = per_ds
    if first_run is not None:
        parts = [(ds, r, sc.pairs, sc.view) for ds, r, sc in scores if r.name == first_run]
        pooled = score_pooled(parts)
        vocab = tuple(pooled["per_category"]["category"])
        pooled_subsets = _subset_aps(pooled["ap"], vocab, {k: SUBSET_PRESETS[k] for k in
                                                         ("omni3d", "omni3d_in", "omni3d_out")})
        result["pooled"] = _block(pooled["summary"], pooled["per_category"], pooled_subsets)
    for name, per_ds in result["runs"].items():
        for ds_name, block in per_ds.items():
            print(_table(f"{name} on {ds_name} ({args.protocol})", block))
            print()
    if "pooled" in result and len(result["datasets"]) > 1:
        print(_table(f"{first_run} pooled over {len(result['datasets'])} datasets", result["pooled"]))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result, indent=2))
    return 0
