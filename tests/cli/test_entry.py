"""The process entry (``ov3d`` / ``python -m ov3d_core``) ends without the interpreter's teardown: what it printed and
wrote must be complete, the exit status kept, and the atexit handlers run; a process with a thread still at work
exits the normal way."""

import json
import subprocess
import sys
import threading

from ov3d_core.cli import skips_teardown
from tests.cli.test_evaluate_cli import files  # noqa: F401  (the fixture)


def test_evaluate_through_the_entry_prints_and_writes_everything(files):  # noqa: F811
    gt, pred, tmp = files
    out = tmp / "out.json"
    proc = subprocess.run([sys.executable, "-m", "ov3d_core", "evaluate", "--gt", str(gt), "--pred", str(pred),
                           "--json", str(out), "--cache-dir", str(tmp / "cache")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    rows = [line for line in proc.stdout.splitlines() if line.strip()]
    assert rows[-1].lstrip().startswith("table") and "n_pred" in rows[-1]  # the table's last row got out
    assert set(json.loads(out.read_text())["datasets"]) and (tmp / "cache" / "loads").is_dir()


def test_atexit_handlers_run_and_the_status_is_kept(tmp_path):
    code = ("import atexit, sys\n"
            "atexit.register(lambda: print('handler ran', flush=True))\n"
            "from ov3d_core.cli import entry\n"
            f"entry(['evaluate', '--gt', {str(tmp_path / 'missing.json')!r}, '--pred', {str(tmp_path / 'p.json')!r}])\n"
            "print('not reached')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stdout.splitlines() == ["handler ran"]
    assert proc.stderr.startswith("error:") and "missing.json" in proc.stderr


def test_a_thread_at_work_means_a_normal_exit():
    stop = threading.Event()
    busy = threading.Thread(target=stop.wait, name="someone-elses-worker")
    idle_writer = threading.Thread(target=stop.wait, name="ov3d-cache-writer_0")
    daemon = threading.Thread(target=stop.wait, name="helper", daemon=True)
    for t in (busy, idle_writer, daemon):
        t.start()
    try:
        main_only = [threading.main_thread()]
        assert skips_teardown(main_only)
        assert skips_teardown(main_only + [idle_writer, daemon])
        assert not skips_teardown(main_only + [busy])
    finally:
        stop.set()
        for t in (busy, idle_writer, daemon):
            t.join()
    assert skips_teardown([threading.main_thread(), busy])  # a finished thread is no reason to wait
