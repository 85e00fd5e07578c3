"""``ov3d report``: every table the app shows, for every run on every dataset of a benchmark, in one folder.

Writes CSV for every table, Markdown for the readable ones, LaTeX for the main ones, plus ``index.md``,
``README.md`` and ``summary.json`` (see ``ov3d_core.report``).
"""

from __future__ import annotations

import argparse
import sys

from ov3d_core.commands._common import add_bootstrap_arguments


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return v


def _iou(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1], got {text!r}") from None
    if not 0.0 < v <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1], got {text!r}")
    return v


def _check_stats_args(args) -> tuple[str, str] | None:
    """The bootstrap and mining options (InputError: one line, exit 2); returns ``--paired`` as two run names."""
    from ov3d_core.commands._common import check_bootstrap_args, names_list
    from ov3d_core.errors import InputError

    paired = names_list(args.paired, "--paired")
    if paired and (len(paired) != 2 or paired[0] == paired[1]):
        raise InputError(None, None, "--paired", "two different runs, A,B", args.paired)
    stats = args.ci or bool(paired)
    check_bootstrap_args(args, enabled=stats, needs="--ci or --paired")
    if args.correction is not None and not stats:
        raise InputError(None, None, "--correction", "given with --ci or --paired", args.correction)
    if args.mine_top is not None and not args.mine:
        raise InputError(None, None, "--mine-top", "given with --mine", args.mine_top)
    return tuple(paired) if paired else None


def register(sub) -> None:
    p = sub.add_parser("report", help="write every diagnostics table of a benchmark (CSV, Markdown, LaTeX)",
                       description="Score every run on every dataset of a benchmark config and write every table "
                                   "of the app (leaderboard, recall, per-category AP, protocol comparison, confusion, "
                                   "semantic cost, class splits, domain transfer, three axes, TIDE, monocular oracles, "
                                   "centre-distance AP / ODS; with --encoder: prompt sensitivity, PCR/PLC, FG-OVD "
                                   "ranks and vocabulary curve, calibration) to one folder.")
    p.add_argument("--config", "--benchmark", dest="config", required=True, help="benchmark YAML")
    p.add_argument("--out", required=True, help="output folder (created; files in it are overwritten)")
    p.add_argument("--protocol", default="dataset-level", choices=["dataset-level", "target-aware"],
                   help="protocol of every table but the protocol comparison (default: dataset-level)")
    p.add_argument("--min-score", type=float, default=0.0, help="drop predictions below this score")
    p.add_argument("--splits", type=_positive_int, default=5000,
                   help="random class subsets per run and dataset for the class-split table (default: 5000)")
    p.add_argument("--subset-size", type=_positive_int, default=10, help="classes per subset (default: 10)")
    p.add_argument("--seed", type=int, default=0, help="seed of the class subsets (default: 0)")
    p.add_argument("--confusion-iou", type=_iou, default=0.5,
                   help="3D IoU of the confusion-matrix assignment (default: 0.5)")
    p.add_argument("--tide-fg", type=_iou, default=0.25, help="3D TIDE foreground IoU (default: 0.25)")
    p.add_argument("--tide-bg", type=_iou, default=0.1, help="3D TIDE background IoU (default: 0.1)")
    p.add_argument("--encoder", default=None,
                   help="remap encoder for the prompt tables: `proxy` (the demo's stand-in) or `hf:<checkpoint or "
                        "dir>`; without it the prompt tables are left out")
    p.add_argument("--theta", type=float, default=None,
                   help="remap threshold (default: 0.5 for a calibrated probability, 0 for a cosine)")
    p.add_argument("--score-mode", default="detector", choices=["detector", "similarity", "product"],
                   help="remap score fusion (default: detector)")
    p.add_argument("--engine", default="local", choices=["local", "ray"],
                   help="ray: the prompt tables' crop embeddings and template sweep run on a Ray cluster (same numbers)")
    p.add_argument("--address", default=None, help="Ray cluster address with --engine ray (auto, HOST:PORT, ray://...)")
    p.add_argument("--boxes", action="store_true",
                   help="also write the status of every prediction and GT box (pred_status, gt_status)")
    p.add_argument("--status-iou", type=_iou, default=0.25,
                   help="3D IoU at which boxes are marked TP / FP / FN in those tables (default: 0.25)")
    p.add_argument("--remap-runs", default=None, help="comma-separated runs to remap (default: every remappable run)")
    p.add_argument("--ci", action="store_true",
                   help="also write image-bootstrap intervals of every run's numbers (ci, ci_per_category) and the "
                        "leaderboard with significance tiers (tiers); resampled from --seed")
    p.add_argument("--paired", default=None, metavar="A,B",
                   help="also write the paired comparison of two runs on every dataset with both (paired, "
                        "paired_per_category)")
    add_bootstrap_arguments(p, seed=False)
    p.add_argument("--correction", default=None, choices=["holm", "bh", "none"],
                   help="multiple-comparison control of the tier gaps and per-category differences (default: holm)")
    p.add_argument("--mine", action="store_true",
                   help="also write the failure-mining lists (mining_<kind>: top images per kind for each run)")
    p.add_argument("--mine-top", type=_positive_int, default=None, help="images per mining list (default: 10)")
    p.add_argument("--subset", default=None, metavar="NAME",
                   help="score only the images of this image subset (`image_subsets` of every dataset)")
    p.add_argument("--paper", action="store_true",
                   help="write the tables and figures of the four source documents instead, each named after the "
                        "document's table or figure (ov3dbench_table3_map3d.csv, ...), with PAPER.md: what each "
                        "file reproduces and what the inputs cannot give")
    p.add_argument("--figures", default="png", choices=["png", "svg", "html", "none"],
                   help="format of the --paper figures (default: png; none: their data as CSV only)")
    p.set_defaults(func=run)


def run(args) -> int:
    from pathlib import Path

    from tqdm import tqdm

    from ov3d_core.analysis import Analysis, RemapSpec
    from ov3d_core.commands._common import CLI, check_finite
    from ov3d_core.errors import InputError
    from ov3d_core.report import ReportOptions, build_report, write_report

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise InputError(str(out), None, None, "a folder to write the report to (or a new path)", "an existing file")
    check_finite(args.min_score, "--min-score")
    check_finite(args.theta, "--theta")
    if args.encoder is not None:
        try:
            RemapSpec(encoder=args.encoder, theta=args.theta, score_mode=args.score_mode)
        except InputError as exc:  # named as the option the user typed
            option = {"remap.encoder": "--encoder", "remap.theta": "--theta"}.get(exc.field, exc.field)
            raise InputError(CLI, None, option, exc.expected, exc.got) from None
    runs = None if args.remap_runs is None else tuple(r.strip() for r in args.remap_runs.split(",") if r.strip())
    paired = _check_stats_args(args)
    stats = {} if not (args.ci or paired) else {
        "n_resamples": args.resamples, "level": args.level, "ci_method": args.ci_method, "ci_seed": args.seed,
        "correction": args.correction or "holm"}
    if args.seed < 0 and stats:
        raise InputError(CLI, None, "--seed", "a non-negative integer (it seeds the bootstrap too)", args.seed)
    options = ReportOptions(ci=args.ci, paired=paired, mine=args.mine, mine_top=args.mine_top or 10, **stats,
                            protocol=args.protocol, min_score=args.min_score, n_subsets=args.splits,
                            subset_size=args.subset_size, seed=args.seed, confusion_iou=args.confusion_iou,
                            tide_fg=args.tide_fg, tide_bg=args.tide_bg, encoder=args.encoder, theta=args.theta,
                            score_mode=args.score_mode, remap_runs=runs, boxes=args.boxes,
                            status_iou=args.status_iou, engine=args.engine, address=args.address,
                            subset=args.subset)
    if args.engine == "ray" and args.encoder is None:
        raise InputError(CLI, None, "--engine", "--encoder as well (Ray runs the prompt tables only)", "ray")
    a = Analysis.from_yaml(args.config)
    names = list(dict.fromkeys(run for _, run in a.run_entries()))
    for r in paired or ():
        if r not in names:
            raise InputError(a.config_file, None, "--paired", f"runs of the config {names}", r)
    a.load_inputs()  # every file is read (and checked) before any scoring: a bad one fails first
    if args.subset is not None:
        for d in a.datasets:
            a.benchmark.image_subset(d, args.subset)  # a subset some dataset lacks: one line naming it
    if args.paper:
        return _paper(a, options, out, args.figures)
    n = len(a.run_entries())

    def progress(items):
        return tqdm(items, desc="score", unit="run", file=sys.stderr, disable=n < 2 and not sys.stderr.isatty())

    report = build_report(a, options, progress=progress)
    try:
        written = write_report(report, out)
    except OSError as exc:
        raise InputError(str(out), None, None, f"a writable folder ({exc.strerror or exc})") from None
    lb = report.tables["leaderboard"]
    print(f"{a.name}: {len(lb)} run(s) x dataset(s), protocol {options.protocol}")
    cols = [c for c in ("run", "dataset", "AP3D", "AP3D@25", "recall3D@15") if c in lb.columns]
    print(lb[cols].to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    for note in report.notes:
        print(f"note: {note}")
    print(f"wrote {len(written)} files to {out}/ (start at {out / 'index.md'})")
    return 0


def _paper(a, options, out, figure_format: str) -> int:
    """``--paper``: every artefact of ``ov3d_core.paper`` the inputs allow, and PAPER.md."""
    from ov3d_core.errors import InputError
    from ov3d_core.paper import build_paper, write_paper

    result = build_paper(a, options, progress=lambda msg: print(f"paper: {msg}", file=sys.stderr))
    try:
        written = write_paper(result, out, figure_format=figure_format)
    except OSError as exc:
        raise InputError(str(out), None, None, f"a writable folder ({exc.strerror or exc})") from None
    for stem, why in result.missing.items():
        print(f"not written: {stem}: {why}")
    print(f"wrote {len(written)} files to {out}/ (start at {out / 'PAPER.md'})")
    return 0
