"""Session-scoped demo builds shared by the demo tests (kept tiny: the whole folder runs in seconds)."""

from __future__ import annotations

import pytest

#: Images per dataset of the rendered test build (3 datasets x 5 runs).
TINY_IMAGES = 3
#: Images per dataset of the annotations-only build used for metric-level checks (no rendering: fast).
EVAL_IMAGES = 60


@pytest.fixture(scope="session")
def tiny_build(tmp_path_factory):
    """A rendered demo build (seed 0) and its manifest: ``(folder, manifest)``."""
    from ov3d_core.demo.build import build_demo

    out = tmp_path_factory.mktemp("demo") / "demo"
    manifest = build_demo(out, images=TINY_IMAGES, seed=0, workers=1)
    return out, manifest


@pytest.fixture(scope="session")
def ann_build(tmp_path_factory):
    """An annotations-only build (seed 0) with enough images for AP comparisons: ``(folder, manifest)``."""
    from ov3d_core.demo.build import build_demo

    out = tmp_path_factory.mktemp("demo_ann") / "demo"
    manifest = build_demo(out, images=EVAL_IMAGES, seed=0, annotations_only=True)
    return out, manifest


@pytest.fixture(scope="session")
def tiny_benchmark(tiny_build):
    from ov3d_core.benchmark import Benchmark

    return Benchmark.from_yaml(tiny_build[0] / "benchmark.yaml")


@pytest.fixture(scope="session")
def ann_benchmark(ann_build):
    from ov3d_core.benchmark import Benchmark

    return Benchmark.from_yaml(ann_build[0] / "benchmark.yaml")
