"""``python -m ov3d_core remap``: SigLIPv2 remapping of a run's predictions (training-free, geometry unchanged).

Each predicted box's 2D crop is matched against the dataset's category names under a prompt template; the box takes
the most similar category when its score reaches theta (the calibrated probability for SigLIP, the cosine for CLIP
and the demo proxy) and is discarded otherwise. Writes the remapped predictions as Cube R-CNN JSON and prints their
mAP_3D, and the semantic stage's time per image as ``embed`` measured it (OV3D-Bench Table 10) beside the
remap step's own (prompts, similarities and the top-1 pass).
"""

from __future__ import annotations

import sys
import time

from ov3d_core.analysis import Analysis, RemapSpec, View
from ov3d_core.benchmark import Benchmark
from ov3d_core.commands._common import CLI, check_output_file
from ov3d_core.commands.embed import add_encoder_args, check_args
from ov3d_core.diagnostics.runtime import MeasuredStage
from ov3d_core.errors import InputError
from ov3d_core.io.predictions import dataset_category_ids
from ov3d_core.io.writers import write_cubercnn_json
from ov3d_core.remap.cache import EmbeddingStore
from ov3d_core.remap.pipeline import remapped_run
from ov3d_core.remap.remap import SCORE_MODES
from ov3d_core.taxonomy import OMNI3D_NAME_TO_ID


def category_ids_for(dataset, names) -> dict[str, int]:
    """Ids for the writer: the dataset's own ids, then Omni3D's, then new ids past the largest one."""
    own = {v: k for k, v in dataset_category_ids(dataset).items()}
    out = {}
    nxt = max([*own.values(), *OMNI3D_NAME_TO_ID.values(), -1]) + 1
    for name in names:
        if name in own:
            out[name] = own[name]
        elif name not in OMNI3D_NAME_TO_ID:
            out[name] = nxt
            nxt += 1
    return out


def run_remap(args) -> int:
    check_args(args)  # the options shared with `embed` (--chunk-size, --batch-size, --pad, --min-size, --encoder)
    check_output_file(args.out, "--out", folder_must_exist=False)
    if not -1.0 <= args.theta <= 1.0:  # NaN fails this too
        raise InputError(CLI, None, "--theta", "a finite number in [-1, 1] (a probability, or a cosine)", args.theta)
    a = Analysis(Benchmark.from_yaml(args.benchmark), embedding_dir=args.cache_dir,
                 encoder_options={"device": args.device, "batch_size": args.batch_size})
    spec = RemapSpec(encoder=args.encoder, template=args.template, theta=args.theta, score_mode=args.score_mode,
                     templates_file=args.templates_file, pad=args.pad, min_size=args.min_size)
    view = View(dataset=args.dataset, run=args.run, remap=spec)
    bench = a.benchmark
    ds, run = bench.dataset(args.dataset), bench.run(args.run, args.dataset)
    live = a.remapper(args.dataset, args.run, spec, progress=not args.no_progress)
    encoder = live.encoder
    chosen = live.resolve(args.template)
    t0 = time.perf_counter()
    res = a.remap_result(view)
    remap_s = time.perf_counter() - t0
    stage = MeasuredStage.from_timing(EmbeddingStore(a.embedding_dir).timing(ds.name, run.name, encoder.cache_key))
    classes = tuple(ds.vocabulary)
    try:
        path = write_cubercnn_json(remapped_run(run, res, classes), args.out,
                                   category_ids=category_ids_for(ds, classes))
    except OSError as exc:  # checked up front; a disk that filled or a folder that went away since
        raise InputError(args.out, None, "--out", "a writable file", exc.strerror or str(exc)) from None
    ap = a.summary(view).get("AP3D", float("nan"))
    before = a.summary(view.with_(remap=None)).get("AP3D", float("nan"))

    what = "probability" if res.calibrated else "cosine"
    print(f"encoder:   {encoder.name}")
    if "stand-in" in encoder.name:
        print("           (demo stand-in: numbers say nothing about SigLIP)")
    print("template:  " + ", ".join(f"{t.id} {t.text!r}" for t in chosen)
          + (f"  (ensemble of {len(chosen)})" if len(chosen) > 1 else ""))
    line = f"theta:     {args.theta:g} on the top-1 {what}"
    cut = getattr(encoder, "cosine_for_probability", None)
    if res.calibrated and cut is not None and 0 < args.theta < 1:
        line += f" (= cosine {cut(args.theta):.4f} for this checkpoint)"
    print(line)
    print(f"scores:    {args.score_mode}")
    print(f"kept:      {int(res.keep.sum())} of {len(res)} predictions "
          f"({int((~live.valid).sum())} without a crop, {int((live.valid & ~res.keep).sum())} below theta)")
    print("semantic:  " + (stage.describe() if stage is not None else "not measured (embedded by the ray engine)"))
    print(f"remap:     {1e3 * remap_s / max(len(ds.images), 1):.2f} ms/image ({remap_s:.2f} s: prompts, similarities, "
          "top-1)")
    print(f"wrote:     {path}")
    print(f"mAP_3D:    {ap:.2f}  ({ds.name}, {run.name}*, dataset-level vocabulary of {len(classes)} classes; "
          f"{before:.2f} with the detector's own labels)")
    if bench.run_spec(args.run, args.dataset).closed_vocabulary is None:
        print(f"note: run {run.name!r} is not marked closed-vocabulary in the benchmark; remapped anyway",
              file=sys.stderr)
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("remap", help="remap a run's labels with a VLM (SigLIPv2 remapping)",
                              description=__doc__, formatter_class=__import__("argparse").RawDescriptionHelpFormatter)
    add_encoder_args(p)
    p.add_argument("--template", default="S1",
                   help="template id (U1-U5, S1-S5, O1-O5), a group (underdetailed, standard, overdetailed, all: "
                        "ensembled), ids joined by commas, or a literal template with one {} (default S1)")
    p.add_argument("--templates-file", default=None, help="YAML/JSON file of user templates (id, group, text)")
    p.add_argument("--theta", type=float, default=0.5,
                   help="keep a box when its top-1 score reaches this (probability for SigLIP, cosine otherwise)")
    p.add_argument("--score-mode", choices=SCORE_MODES, default="detector",
                   help="detector: keep the detector score; similarity: the top-1 score; product: both")
    p.add_argument("--out", required=True, help="output Cube R-CNN JSON of the remapped predictions")
    p.set_defaults(func=run_remap)
