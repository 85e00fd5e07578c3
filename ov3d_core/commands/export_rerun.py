"""``ov3d export-rerun``: a Rerun recording (``.rrd``) of a list of images of one dataset of a benchmark: each image
with its depth map / point cloud, camera, GT and every run's boxes coloured and labelled by status, one step of the
``image`` timeline per image (``ov3d_core.export.rerun``). Open it with ``rerun FILE.rrd``.

The images come from ``--images ID,ID,...`` or ``--images-file F``: a CSV with an ``image_id`` column (the failure
mining page's export) or a text file with one id a line. Needs rerun-sdk (the ``rerun`` extra): without it the
command says so in one line and exits with status 2, before any file is read.
"""

from __future__ import annotations

import csv
import io
import math
import sys
from pathlib import Path

from ov3d_core.analysis import Analysis, View
from ov3d_core.commands._common import CLI, check_output_file, names_list, read_name_list
from ov3d_core.errors import InputError
from ov3d_core.eval.constants import PROTOCOLS, STATUS_IOU
from ov3d_core.export.rerun import MAX_POINTS, RerunMissing, export_rerun, rerun_available


def register(sub) -> None:
    p = sub.add_parser("export-rerun", help="write a Rerun recording (.rrd) of images with their boxes, depth and "
                                            "camera (needs the rerun extra)",
                       description="A Rerun recording of images of one dataset: the image, its depth map / point "
                                   "cloud, the camera (K, image size), the GT and every run's boxes coloured and "
                                   "labelled by their status under the protocol and IoU given, one entity path per "
                                   "run and one step of the `image` timeline per image. Open it with `rerun FILE`.")
    p.add_argument("--benchmark", required=True, help="benchmark YAML (e.g. data/demo/benchmark.yaml)")
    p.add_argument("--dataset", required=True, help="dataset name in the benchmark")
    p.add_argument("--images", help="comma-separated image ids, in timeline order")
    p.add_argument("--images-file", help="a CSV with an image_id column (e.g. a failure-mining list) or a text file "
                                         "with one image id a line")
    p.add_argument("--out", required=True, help="the .rrd file to write")
    p.add_argument("--runs", help="comma-separated runs whose boxes to include (default: every run of the dataset)")
    p.add_argument("--protocol", default="dataset-level", choices=list(PROTOCOLS),
                   help="protocol of the statuses (default: dataset-level)")
    p.add_argument("--iou", type=float, default=STATUS_IOU,
                   help=f"3D IoU at which boxes are TP / FP / FN (default: {STATUS_IOU:g})")
    p.add_argument("--min-score", type=float, default=0.0, help="predictions below it are not evaluated (default 0)")
    p.add_argument("--max-points", type=int, default=None,
                   help="most points logged per point-cloud file (default: the export's MAX_POINTS)")
    p.set_defaults(func=run)


def parse_ids(text: str, option: str) -> list[int]:
    """``--images`` as a list of integer ids."""
    out = []
    for part in names_list(text, option):
        value = _int(part)
        if value is None:
            raise InputError(CLI, None, option, "comma-separated integer image ids", part)
        out.append(value)
    return out


def _int(text: str) -> int | None:
    t = text.strip().strip('"').strip("'")
    try:
        return int(t)
    except ValueError:
        return None


def read_image_ids(path: str | Path) -> list[int]:
    """The image ids of a file: the ``image_id`` column of a CSV whose header has one, else one id a line."""
    lines = read_name_list(path)
    if not lines:
        raise InputError(str(path), None, "image_id", "at least one image id")
    header = [h.strip().strip('"') for h in next(csv.reader([lines[0]]))]
    if "image_id" in header:
        col = header.index("image_id")
        ids = []
        for n, row in enumerate(csv.reader(io.StringIO("\n".join(lines[1:]))), start=2):
            value = _int(row[col]) if col < len(row) else None
            if value is None:
                raise InputError(str(path), f"line {n}", "image_id", "an integer image id",
                                 row[col] if col < len(row) else None)
            ids.append(value)
        if not ids:
            raise InputError(str(path), None, "image_id", "at least one row under the header")
        return ids
    ids = []
    for n, line in enumerate(lines, start=1):
        value = _int(line)
        if value is None:
            raise InputError(str(path), f"line {n}", "image_id", "an integer image id (or a CSV with an image_id "
                             "column)", line[:80])
        ids.append(value)
    return ids


def _check_args(args) -> None:
    """Option errors before any file is read."""
    if (args.images is None) == (args.images_file is None):
        raise InputError(CLI, None, "--images", "given, or --images-file, but not both",
                         None if args.images is None else args.images)
    if args.images is not None:
        parse_ids(args.images, "--images")
    if not (math.isfinite(args.iou) and 0.0 < args.iou <= 1.0):
        raise InputError(CLI, None, "--iou", "a number in (0, 1]", args.iou)
    if not math.isfinite(args.min_score):
        raise InputError(CLI, None, "--min-score", "a finite number", args.min_score)
    if args.max_points is not None and args.max_points < 1:
        raise InputError(CLI, None, "--max-points", "a positive integer", args.max_points)
    names_list(args.runs, "--runs")
    check_output_file(args.out, "--out")


def run(args) -> int:
    _check_args(args)
    if not rerun_available():
        print(f"error: {RerunMissing()}", file=sys.stderr)
        return 2
    ids = parse_ids(args.images, "--images") if args.images is not None else read_image_ids(args.images_file)

    a = Analysis.from_yaml(args.benchmark)
    a.benchmark.dataset_spec(args.dataset)  # an unknown dataset: one line naming the config, before any load
    view = View(args.dataset, protocol=args.protocol, min_score=args.min_score, iou=args.iou)

    def progress(items):
        from tqdm import tqdm

        return tqdm(items, desc="export", unit="image", file=sys.stderr, leave=False,
                    disable=len(ids) < 20 or not sys.stderr.isatty())

    try:
        res = export_rerun(a, view, ids, names_list(args.runs, "--runs") or None, out=args.out,
                           max_points=args.max_points or MAX_POINTS, progress=progress)
    except RerunMissing as exc:  # found but not importable
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        raise InputError(str(args.out), None, "--out", f"a file that can be written ({exc.strerror or exc})") from None
    print(f"wrote {args.out}: {len(res.image_ids)} image(s) of {args.dataset}, {len(res.runs)} run(s) "
          f"({', '.join(res.runs) or 'none'}), {res.nbytes / 1e6:.1f} MB in {res.seconds:.1f} s; "
          f"open it with `rerun {args.out}`")
    for note in res.notes:
        print(f"note: {note}", file=sys.stderr)
    return 0
