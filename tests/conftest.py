"""Suite-wide: the order in which pytest-xdist hands the test files to its workers, what is alive at the start of
each test file kept out of later garbage collections, demo folders copied from one build per test process, and
Streamlit's scan for installed components done once per test process."""

from __future__ import annotations

import gc
import os
import shutil
from pathlib import Path

import pytest

#: The test files that take longest, longest first (seconds in one warm `-n 2` run on 2 cores, bench/RESULTS.md
#: 2026-12-07, fourth session). With ``--dist loadfile --no-loadscope-reorder`` (pytest.ini) xdist hands whole files
#: to whichever worker is free, in collection order: these go first, so that the two workers end together instead of
#: one of them starting a long file near the end (xdist's own order is by number of tests). The rest keep their
#: order. Only the order depends on this list; a file missing from it just runs later.
LONGEST_FIRST = (
    "tests/remap/test_ray.py",  # 105
    "tests/app/test_browser.py",  # 85
    "tests/remap/test_ray_report.py",  # 63
    "tests/app/test_security_browser.py",  # 52
    "tests/app/test_first_start.py",  # 43
    "tests/io/test_parity.py",  # 42
    "tests/app/test_issue25_scene3d.py",  # 42
    "tests/report/test_paper.py",  # 30
    "tests/app/test_views.py",  # 23
    "tests/demo/test_build.py",  # 20
    "tests/cli/test_cli_fuzz.py",  # 19
    "tests/app/test_pages.py",  # 19
    "tests/app/test_state_browser.py",  # 17
    "tests/remap/test_embed_cli.py",  # 16
    "tests/export/test_rerun_app.py",  # 15
    "tests/test_warmup.py",  # 14
    "tests/app/test_parity.py",  # 13
    "tests/app/test_mining_browser.py",  # 11
    "tests/diagnostics/test_bootstrap.py",  # 10
    "tests/app/test_export.py",  # 9
    "tests/test_packaging.py",  # 9
    "tests/demo/test_promptable.py",  # 9
)


def pytest_collection_modifyitems(config, items):
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))  # stable: in-file order kept


#: The test file whose first test last set up in this process (``pytest_runtest_setup`` below).
_frozen_for: list[str | None] = [None]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Before each test file's first test: a full garbage collection, then ``gc.freeze()``.

    Python's full collections scan every object the collector tracks, and a test process keeps millions that live as
    long as it does: the modules, classes and functions of torch, transformers, Streamlit and pandas, imported as the
    files ask for them. Those full collections took 30 s of the two workers' CPU in a ``-n 2`` run (bench/RESULTS.md,
    2026-12-07, eighth session). ``gc.freeze()`` moves what is alive to the permanent generation, which later
    collections skip; the collection before it frees what the previous file left (its module fixtures are torn down
    by then). Objects that were alive at a freeze and later become unreachable in a reference cycle stay in memory
    until the process ends: bounded by what the previous files kept alive (session fixtures, caches)."""
    path = item.nodeid.split("::", 1)[0]
    if path != _frozen_for[0]:
        _frozen_for[0] = path
        gc.collect()
        gc.freeze()


@pytest.fixture(scope="session")
def copied_demo(tmp_path_factory):
    """``copied_demo(dest, images=N, seed=S)``: a demo folder at ``dest``, as ``ensure_demo(dest, images=N, seed=S)``
    leaves it, copied from one build per (N, S) and test process instead of built again (a 4-image build is ~5 s of
    CPU, and several test files build the same one). A valid demo already at ``dest`` is kept.

    ``OV3D_TEST_DEMO`` names a folder that keeps the builds between sessions (``<N>_<S>`` in it, rebuilt only when
    stale); each test still gets a copy."""
    templates: dict[tuple[int, int], Path] = {}

    def copy(dest, *, images: int, seed: int = 0) -> Path:
        from ov3d_core.demo import ensure_demo

        if (images, seed) not in templates:
            keep = os.environ.get("OV3D_TEST_DEMO")
            name = f"{images}_{seed}"
            where = Path(keep) / name if keep else tmp_path_factory.mktemp(f"demo_template_{name}")
            templates[images, seed] = ensure_demo(where, images=images, seed=seed)
        dest = Path(dest)
        if not dest.exists():
            shutil.copytree(templates[images, seed], dest, ignore=shutil.ignore_patterns(".ov3d_cache"))
        return ensure_demo(dest, images=images, seed=seed)  # checks the copy; builds only if it is not one

    return copy


@pytest.fixture(scope="session", autouse=True)
def streamlit_components_scanned_once():
    """Each new ``AppTest`` has Streamlit scan the metadata of every installed distribution for v2 components
    (``streamlit.components.v2.manifest_scanner.scan_component_manifests``, called by its
    ``BidiComponentManager``): 0.2 s of CPU, and the suite creates hundreds of AppTests. The installed packages do
    not change while the suite runs, so the scan runs once per test process and every AppTest's manager registers
    what it found (a copy of the list, as a fresh scan would return). A Streamlit without that module is left as
    it is."""
    try:
        from streamlit.components.v2 import manifest_scanner
    except ImportError:
        yield
        return
    real = manifest_scanner.scan_component_manifests
    found = real()
    manifest_scanner.scan_component_manifests = lambda max_workers=None: list(found)
    try:
        yield
    finally:
        manifest_scanner.scan_component_manifests = real
