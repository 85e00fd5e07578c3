"""A real app server for browser tests and benchmarks: ``streamlit run app.py`` on 127.0.0.1 with chosen
environment and script arguments (``-- --data-root DIR``), always terminated; and headless Chromium."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.app.test_browser import ARGS, CHROMIUM, REPO, free_port, open_page, wait_idle, wait_js

__all__ = ["ARGS", "CHROMIUM", "REPO", "chromium", "open_page", "rss_mib", "serve", "wait_idle", "wait_js"]


@contextlib.contextmanager
def serve(log: Path, *, env: dict[str, str] | None = None, script_args: tuple[str, ...] = (),
          drop_env: tuple[str, ...] = (), app_dir: Path = REPO, watcher: str | None = "none"):
    """(url, process) of a fresh server; ``env`` is added to (and ``drop_env`` removed from) this environment.
    ``app_dir``: the folder of the ``app.py`` served (its working directory, whose ``.streamlit`` settings apply);
    ``watcher``: ``--server.fileWatcherType`` (None: as the settings say)."""
    port = free_port()
    full = {k: v for k, v in os.environ.items() if k not in drop_env}
    full.update(PYTHONUNBUFFERED="1", **(env or {}))
    cmd = [sys.executable, "-m", "streamlit", "run", str(app_dir / "app.py"), "--server.headless", "true",
           "--server.port", str(port), "--server.address", "127.0.0.1"]
    if watcher is not None:
        cmd += ["--server.fileWatcherType", watcher]
    if script_args:
        cmd += ["--", *script_args]
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, cwd=app_dir, env=full, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 180
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"streamlit did not start:\n{log.read_text()[-3000:]}")
            time.sleep(0.3)
        yield url, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


@contextlib.contextmanager
def chromium(viewport=(1500, 1100)):
    """A headless Chromium browser (Debian's, through Playwright)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            yield browser
        finally:
            browser.close()


def rss_mib(pid: int) -> float:
    """Resident memory of a process and its children (MiB), from /proc."""
    total = 0.0
    pids = [pid]
    try:
        pids += [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        pass
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) / 1024
        except OSError:
            continue
    return total
