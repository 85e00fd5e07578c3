"""Fixtures of the app tests: a tiny demo benchmark (a copy of one build per test process, ``copied_demo``) and
the hand-written mini benchmark (``minibench``), each in a temporary folder, and a Streamlit server on the tiny demo
shared by the browser tests of a test process (``demo_server``). The app finds the demo through
``OV3D_DEMO_DIR`` (``ov3d_app.cache.DEMO_ENV``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ov3d_app.cache import DEMO_ENV

TINY_IMAGES = 4
PAGES = ("app_pages/overview.py", "app_pages/scene.py", "app_pages/grid.py", "app_pages/curves.py",
         "app_pages/confusion.py", "app_pages/prompt_lab.py", "app_pages/robustness.py", "app_pages/oracle.py",
         "app_pages/errors.py",
         "app_pages/splits.py", "app_pages/mining.py", "app_pages/object.py")


@pytest.fixture(scope="session", autouse=True)
def app_roots(tmp_path_factory):
    """The app reads only from its allowed roots (``ov3d_app.sources``): here the test's temporary folders and the
    repository (``OV3D_DATA_ROOT``), with the app cache (uploads, written configs) in a temporary folder."""
    from ov3d_app.sources import APP_CACHE_ENV, DATA_ROOT_ENV

    base = tmp_path_factory.getbasetemp()
    saved = {k: os.environ.get(k) for k in (DATA_ROOT_ENV, APP_CACHE_ENV)}
    os.environ[DATA_ROOT_ENV] = os.pathsep.join([str(base), str(Path(__file__).resolve().parents[2])])
    os.environ[APP_CACHE_ENV] = str(tmp_path_factory.mktemp("app_cache"))
    yield base
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="session")
def tiny_demo(tmp_path_factory, copied_demo):
    """Folder of a tiny demo (TINY_IMAGES images per dataset, ``copied_demo``); ``OV3D_DEMO_DIR`` points at it for
    the session."""
    # one folder per test process, whoever asks: tests/export imports this fixture, which makes it a second fixture
    # of its own (a second demo, and OV3D_DEMO_DIR moved to it for the app tests that ran later in the process)
    out = copied_demo(tmp_path_factory.getbasetemp() / "tiny_demo", images=TINY_IMAGES, seed=0)
    old = os.environ.get(DEMO_ENV)
    os.environ[DEMO_ENV] = str(out)
    yield out
    if old is None:
        os.environ.pop(DEMO_ENV, None)
    else:
        os.environ[DEMO_ENV] = old


@pytest.fixture(scope="session")
def mini_config(tmp_path_factory):
    """``benchmark.yaml`` of the hand-written mini benchmark (two datasets, two runs each, known errors)."""
    from tests.app.minibench import build

    return build(tmp_path_factory.mktemp("minibench"))


@pytest.fixture(scope="session")
def demo_server(tiny_demo, tmp_path_factory):
    """URL of ``streamlit run app.py`` on the tiny demo, one per test process, always terminated: shared by the browser
    test files that need no server of their own (each opens its own browser and sessions, and leaves nothing on the
    server but its caches). A fresh server's first page view imports the models and scores the demo (about 10 s on
    2 cores), once per process instead of once per file."""
    from tests.app.live import serve

    with serve(tmp_path_factory.mktemp("demo_server") / "streamlit.log",
               env={"OV3D_DEMO_DIR": str(tiny_demo)}) as (url, _):
        yield url
