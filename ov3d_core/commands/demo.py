"""``python -m ov3d_core demo build``: generate the synthetic demo benchmark (see ov3d_core/demo)."""

from __future__ import annotations

import sys

from ov3d_core.commands._common import CLI
from ov3d_core.errors import InputError


def register(sub) -> None:
    p = sub.add_parser("demo", help="the built-in synthetic demo benchmark",
                       description="Generate the built-in synthetic demo benchmark.")
    dsub = p.add_subparsers(dest="demo_command", required=True)
    b = dsub.add_parser("build", help="generate data/demo (images, GT, simulated runs, crops, benchmark.yaml)",
                        description="Generate the demo benchmark: three datasets (demo_indoor, demo_outdoor, "
                                    "demo_outdoor_av) and five simulated detectors. Deterministic for a seed.")
    b.add_argument("--out", default="data/demo", help="output folder (replaced if it holds a demo build)")
    b.add_argument("--images", type=int, default=None, help="images per dataset (default 150)")
    b.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    b.add_argument("--annotations-only", action="store_true",
                   help="skip rendering: GT and predictions only (no images, depth or point clouds); "
                        "visibility from a z-buffer over projected boxes")
    b.add_argument("--no-progress", action="store_true", help="no progress bar")
    b.set_defaults(func=run_build)


def run_build(args) -> int:
    from pathlib import Path

    # the generator (its shape tables take a second or two to import) loads for this command only, not at every
    # `ov3d` start (the parser imports every command module)
    from ov3d_core.demo.build import DEFAULT_IMAGES, build_demo

    images = DEFAULT_IMAGES if args.images is None else args.images
    if not 1 <= images <= 99_999:
        raise InputError(CLI, None, "--images", "an integer in [1, 99999]", got=images)
    if not 0 <= args.seed < 2**32:  # numpy's SeedSequence takes non-negative seeds
        raise InputError(CLI, None, "--seed", "an integer in [0, 2**32)", got=args.seed)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise InputError(str(out), None, "--out", "a folder (missing, or a previous demo build)", "an existing file")
    bar = None
    progress = None
    if not args.no_progress:
        from tqdm import tqdm

        bar = tqdm(total=1000, file=sys.stderr, desc="demo build",
                   bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed}<{remaining}")

        def progress(frac: float, msg: str) -> None:
            bar.n = int(round(frac * 1000))
            bar.set_description_str(msg, refresh=False)
            bar.refresh()
    try:
        try:
            manifest = build_demo(args.out, images=images, seed=args.seed, annotations_only=args.annotations_only,
                                  progress=progress)
        except FileExistsError as exc:
            raise InputError(args.out, None, "--out", "a missing folder or a previous demo build", got=str(exc))
    finally:
        if bar is not None:
            bar.close()
    c = manifest["counts"]
    print(f"demo benchmark written to {args.out} in {manifest['build_seconds']} s "
          f"(generator {manifest['generator_version']}, seed {manifest['seed']})")
    for name in manifest["datasets"]:
        print(f"  {name}: {c['images'][name]} images, {c['annotations'][name]} annotations")
    print(f"  {len(c['predictions'])} prediction files, {sum(c['predictions'].values())} predictions")
    return 0
