"""The first start: its progress (``cache.DemoStatus``: an overall estimate of the time left, extrapolated from the
build's own progress, and no estimate until there is enough progress to extrapolate from), and a real server's first
start on an empty demo folder, whose log holds nothing but progress."""

from __future__ import annotations

import os

import pytest

from ov3d_app import cache


@pytest.mark.parametrize("fraction, elapsed, left", [(0.25, 10.0, 30.0), (0.5, 40.0, 40.0), (0.9, 90.0, 10.0)])
def test_the_estimate_extrapolates_the_overall_progress(fraction, elapsed, left):
    assert cache.DemoStatus(fraction=fraction, elapsed=elapsed).eta == pytest.approx(left)


@pytest.mark.parametrize("status", [cache.DemoStatus(fraction=0.01, elapsed=20.0),  # too little progress
                                    cache.DemoStatus(fraction=0.5, elapsed=1.0),  # too early
                                    cache.DemoStatus(fraction=1.0, elapsed=9.0, path="benchmark.yaml")])  # done
def test_no_estimate_without_enough_to_go_on(status):
    assert status.eta is None


def test_a_demo_already_on_disk_is_found_without_a_progress_phase(tiny_demo):
    s = cache.demo_status()  # the first poll waits up to 0.5 s for the check of the folder on disk
    assert s.error is None and s.path == str(tiny_demo / "benchmark.yaml")  # ready at once: no progress bar
    assert cache.demo_ready() == s.path


# ------------------------------------------------------------------------------------------------ the first start's log
#: What the app's files are: copied beside a fresh, empty demo folder for the first-start test.
APP_FILES = ("app.py", "app_pages", "ov3d_app", "assets", ".streamlit")
#: Lines a clean first start never logs: a traceback, Streamlit calls outside a script run (multiprocessing workers
#: that re-ran app.py), a worker started during another's import, warnings, leaked semaphores of a broken pool.
DIRTY = ("Traceback", "ScriptRunContext", "bootstrapping phase", "Warning", "WARNING", "Error", "leaked")


def _inotify_inodes(pid: int) -> set[int]:
    """Inode numbers of every folder the process watches through inotify (``/proc/<pid>/fdinfo``)."""
    import os
    from pathlib import Path

    found: set[int] = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            if os.readlink(fd) != "anon_inode:inotify":
                continue
            text = Path(f"/proc/{pid}/fdinfo/{fd.name}").read_text()
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith("inotify wd:"):
                fields = dict(f.split(":", 1) for f in line.split()[1:] if ":" in f)
                found.add(int(fields["ino"], 16))
    return found


def test_the_first_start_logs_nothing_but_progress(tmp_path):
    """``streamlit run app.py`` (the repository's Streamlit settings, file watcher as configured) with an empty demo
    folder inside the app's folder, as in a fresh clone: the server builds the demo with worker processes (8 images
    per dataset: enough for the process pool) and shows the Overview; its log holds no traceback, no Streamlit call
    outside a script run, no multiprocessing bootstrapping error and no warning, and no folder of the demo is
    watched for changes."""
    import shutil
    import time

    from tests.app.live import REPO, chromium, open_page, serve

    app = tmp_path / "app"
    app.mkdir()
    for name in APP_FILES:
        src = REPO / name
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, app / name)
    demo = app / "data" / "demo"
    demo.mkdir(parents=True)
    log = tmp_path / "server.log"
    env = {"OV3D_DEMO_DIR": str(demo), cache.DEMO_IMAGES_ENV: "8",
           "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])}
    with serve(log, env=env, app_dir=app, watcher=None) as (url, proc), chromium() as browser:
        page = browser.new_page()
        page.set_default_timeout(300_000)
        open_page(page, url, "Overview")
        page.locator('[data-testid="stMainBlockContainer"] [data-testid="stDataFrame"], '
                     '[data-testid="stMainBlockContainer"] .js-plotly-plot').first.wait_for(timeout=300_000)
        time.sleep(2)  # what the first paint starts in the background (the warm-up) gets to log too
        watched = _inotify_inodes(proc.pid)
    assert (demo / "benchmark.yaml").is_file()
    folders = {p.stat().st_ino for p in [demo, *demo.rglob("*")] if p.is_dir()}
    assert not watched & folders, f"{len(watched & folders)} folders of the demo are watched for changes"
    text = log.read_text()
    dirty = [line for line in text.splitlines() if any(d in line for d in DIRTY)]
    assert not dirty, f"{len(dirty)} unexpected lines in the server log, e.g.:\n" + "\n".join(dirty[:10])


def test_the_isolated_build_writes_what_the_in_process_build_writes(tmp_path):
    """``build_demo_isolated`` (the server's build, in a child process) writes the same files as ``build_demo``, reports
    its progress up to 1.0, and a refusal in the child (a folder that is no demo build) comes back as its error."""
    from ov3d_core.demo.build import build_demo, build_demo_isolated

    seen: list[float] = []
    child = build_demo_isolated(tmp_path / "child", images=1, seed=3, progress=lambda f, m: seen.append(f))
    here = build_demo(tmp_path / "here", images=1, seed=3)
    assert child["sha256"] == here["sha256"] and child["counts"] == here["counts"]
    assert seen and seen[-1] == 1.0 and seen == sorted(seen)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    with pytest.raises(FileExistsError, match="not a demo build"):
        build_demo_isolated(tmp_path / "mine", images=1)
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep"
