"""``python -m ov3d_core remap``: SigLIPv2 remapping of a run's predictions (training-free, geometry unchanged).

Each predicted box's 2D crop is matched against the dataset's category names under a prompt template; the box takes
the most similar category when its score reaches theta (the calibrated probability for SigLIP, the cosine for CLIP
and the demo proxy) and is discarded otherwise. Writes the remapped predictions as Cube R-CNN JSON and prints their
mAP_3D.
"""

from __future__ import annotations

import sys

from ov3d_core.commands.embed import add_encoder_args, prepare


def category_ids_for(dataset, names) -> dict[str, int]:
    """Ids for the writer: the dataset's own ids, then Omni3D's, then new ids past the largest one."""
    from ov3d_core.io.predictions import dataset_category_ids
    from ov3d_core.taxonomy import OMNI3D_NAME_TO_ID

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


def evaluate(bench, dataset: str, run: str, view) -> dict:
    if hasattr(bench, "evaluate"):
        return bench.evaluate(dataset, run, view)
    from ov3d_core.eval.ap import evaluate_view

    ds, r = bench.dataset(dataset), bench.run(run, dataset)
    res = evaluate_view(ds.gt, r.pred, bench.pairs(run, dataset), view, proximity=ds.proximity)
    return {"AP3D": res.ap()}


def run_remap(args) -> int:
    from ov3d_core.io.writers import write_cubercnn_json
    from ov3d_core.remap.cache import TextEmbeddingCache
    from ov3d_core.remap.pipeline import LiveRemapper, remapped_run
    from ov3d_core.remap.remap import to_label_view
    from ov3d_core.remap.templates import load_templates

    templates = load_templates(args.templates_file) if args.templates_file else None
    bench, ds, run, spec, encoder, store, emb = prepare(args)
    classes = tuple(ds.vocabulary)
    text_cache = TextEmbeddingCache(store.root)
    live = LiveRemapper(emb, run.pred.record, run.pred.score, encoder, classes, text_cache=text_cache,
                        templates=templates)
    chosen = live.resolve(args.template)
    res = live.result(args.template, args.theta, args.score_mode)
    view = to_label_view(res, ds.vocabulary, class_names=classes)
    out_run = remapped_run(run, res, classes)
    path = write_cubercnn_json(out_run, args.out, category_ids=category_ids_for(ds, classes))
    summary = evaluate(bench, ds.name, run.name, view)
    ap = summary.get("AP3D", float("nan")) if isinstance(summary, dict) else float("nan")
    try:
        before = evaluate(bench, ds.name, run.name, None).get("AP3D", float("nan"))
    except Exception:  # noqa: BLE001 - the comparison line is optional
        before = float("nan")

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
    print(f"wrote:     {path}")
    print(f"mAP_3D:    {ap:.2f}  ({ds.name}, {run.name}*, dataset-level vocabulary of {len(classes)} classes; "
          f"{before:.2f} with the detector's own labels)")
    if spec is not None and getattr(spec, "closed_vocabulary", None) is None:
        print(f"note: run {run.name!r} is not marked closed-vocabulary in the benchmark; remapped anyway",
              file=sys.stderr)
    return 0


def register(subparsers) -> None:
    from ov3d_core.remap.remap import SCORE_MODES

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
