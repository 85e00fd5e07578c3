"""Many people on one server: N concurrent sessions open the Overview, then each toggles the protocol.

For each N (default 1, 5, 20) a fresh ``streamlit run app.py`` on 127.0.0.1 (the demo; the on-disk load caches as
they are, ``--cold-disk`` deletes them first) gets N websocket clients that speak Streamlit's own protocol, as the
browser does (``BackMsg.rerun_script`` in, ``ForwardMsg`` deltas out), all started at once:

- first data: connect -> the first number on the page (a metric or table of the Overview); complete: -> the run's
  ``script_finished``;
- protocol toggle: after every session has loaded, all flip the sidebar's protocol radio at the same moment (to
  target-aware: computed once for the server; then back: every session's page from the shared memo), timed from
  the click to the first number and to the end of the run; then each one flips it, waits for the run, thinks
  0.5-1.5 s and flips again, for ``--seconds``;
- server RSS (the server process and its children), sampled every 0.25 s.

Each level starts a fresh server, so by default "first data" includes the server process's own first start
(imports, the load cache's loader digest, reading the benchmark); ``--prewarm`` lets one session open the Overview
first (a server started before the meeting) and then starts the N at once.

Clients are websocket-level, not browsers: twenty Chromium tabs would need the same two cores as the server and
measure the test machine instead (each person has their own browser). One Chromium session is measured alongside
(``--browser``) to relate the two. Loopback only; every level stops by itself (``--timeout``).

Run: ``python bench/bench_sessions.py`` (``--levels 1,5,20 --seconds 60``); ``--markdown`` prints the table rows
for bench/RESULTS.md. ``--first-start DIR``: instead, the first start of a server with no demo yet (it builds the
demo into DIR while the session waits): seconds to the first number, and the progress texts shown meanwhile.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from streamlit.proto.BackMsg_pb2 import BackMsg  # noqa: E402
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg  # noqa: E402

from tests.app.live import rss_mib, serve  # noqa: E402

DATA_ELEMENTS = ("metric", "arrow_data_frame")


def _quantile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(q * (len(s) - 1)))))]


class Session:
    """One websocket client: loads the Overview, then toggles the protocol radio."""

    def __init__(self, url: str):
        self.url = url
        self.ws = None
        self.radio_id: str | None = None
        self.first_data: float | None = None
        self.complete: float | None = None
        self.once: tuple[float, float] | None = None  # the simultaneous flip: (to first number, to the end)
        self.toggles: list[tuple[float, float]] = []  # (to first number, to the end of the run)
        self.error: str | None = None

    async def _run(self, widgets=None) -> tuple[float | None, float]:
        """Send one rerun; return (seconds to the first number, seconds to script_finished)."""
        msg = BackMsg()
        msg.rerun_script.query_string = ""
        msg.rerun_script.page_script_hash = ""
        if widgets:
            for wid, value in widgets:
                w = msg.rerun_script.widget_states.widgets.add()
                w.id = wid
                w.string_value = value
        t0 = time.perf_counter()
        await self.ws.send(msg.SerializeToString())
        first = None
        while True:
            raw = await self.ws.recv()
            fm = ForwardMsg()
            fm.ParseFromString(raw)
            kind = fm.WhichOneof("type")
            if kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
                el = fm.delta.new_element
                typ = el.WhichOneof("type")
                if typ in DATA_ELEMENTS and first is None:
                    first = time.perf_counter() - t0
                if typ == "radio" and "target-aware" in el.radio.options:
                    self.radio_id = el.radio.id
            elif kind == "script_finished":
                return first, time.perf_counter() - t0

    async def open(self, start: asyncio.Event):
        import websockets

        await start.wait()
        t0 = time.perf_counter()
        host = self.url.split("//", 1)[1]
        try:
            self.ws = await websockets.connect(f"ws://{host}/_stcore/stream", subprotocols=["streamlit"],
                                               origin=self.url, max_size=None, open_timeout=600)
            first, done = await self._run()
            lag = time.perf_counter() - t0 - done
            self.first_data = (first + lag) if first is not None else None
            self.complete = done + lag
        except Exception as exc:  # noqa: BLE001 - reported in the results
            self.error = f"{type(exc).__name__}: {exc}"

    async def toggle_once(self, start: asyncio.Event, value: str):
        """One flip, when every session flips at the same moment."""
        if self.ws is None or self.radio_id is None:
            return
        await start.wait()
        try:
            first, done = await self._run([(self.radio_id, value)])
            self.once = (first if first is not None else float("nan"), done)
        except Exception as exc:  # noqa: BLE001
            self.error = f"{type(exc).__name__}: {exc}"

    async def toggle_for(self, seconds: float, rng: random.Random):
        if self.ws is None or self.radio_id is None:
            return
        end = time.perf_counter() + seconds
        value = "target-aware"
        try:
            while time.perf_counter() < end:
                first, done = await self._run([(self.radio_id, value)])
                self.toggles.append((first if first is not None else float("nan"), done))
                value = "dataset-level" if value == "target-aware" else "target-aware"
                await asyncio.sleep(rng.uniform(0.5, 1.5))
        except Exception as exc:  # noqa: BLE001
            self.error = f"{type(exc).__name__}: {exc}"

    async def close(self):
        if self.ws is not None:
            await self.ws.close()


async def _prewarm(url: str) -> float:
    """One session that opens the Overview and leaves (the server's first start, before the meeting): seconds."""
    s = Session(url)
    go = asyncio.Event()
    go.set()
    await s.open(go)
    await s.close()
    if s.error:
        raise RuntimeError(s.error)
    return s.complete or float("nan")


async def _level(url: str, n: int, seconds: float, seed: int, pid: int, cpu: dict) -> list[Session]:
    if cpu.get("prewarm"):
        cpu["prewarm_s"] = await _prewarm(url)
    sessions = [Session(url) for _ in range(n)]
    start = asyncio.Event()
    tasks = [asyncio.create_task(s.open(start)) for s in sessions]
    await asyncio.sleep(0.1)
    start.set()
    await asyncio.gather(*tasks)
    for value in ("target-aware", "dataset-level"):  # the first flip computes the view once for the server
        go = asyncio.Event()
        flips = [asyncio.create_task(s.toggle_once(go, value)) for s in sessions]
        await asyncio.sleep(0.1)
        c0 = _cpu_s(pid)
        go.set()
        await asyncio.gather(*flips)
        cpu[value] = _cpu_s(pid) - c0
        if value == "target-aware":
            for s in sessions:
                s.first_flip, s.once = s.once, None
    rng = random.Random(seed)
    await asyncio.gather(*(s.toggle_for(seconds, random.Random(rng.random())) for s in sessions))
    await asyncio.gather(*(s.close() for s in sessions))
    return sessions


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process (its threads included), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _sample_rss(pid: int, stop: threading.Event, out: list[float]):
    while not stop.is_set():
        out.append(rss_mib(pid))
        stop.wait(0.25)


def _browser_first_data(url: str) -> dict:
    """One Chromium session on the same server: seconds to the first metric and to an idle page."""
    from tests.app.live import chromium, wait_idle

    with chromium() as b:
        page = b.new_page(viewport={"width": 1500, "height": 1100})
        page.set_default_timeout(600_000)
        t = time.perf_counter()
        page.goto(url)
        page.locator('[data-testid="stMetricValue"]').first.wait_for()
        first = time.perf_counter() - t
        wait_idle(page)
        return {"first_data_s": round(first, 2), "complete_s": round(time.perf_counter() - t, 2)}


def run_level(n: int, args, demo: Path) -> dict:
    if args.cold_disk:
        shutil.rmtree(demo / ".ov3d_cache", ignore_errors=True)
    load_before = os.getloadavg()
    log = Path(tempfile.mkdtemp(prefix="ov3d-bench-sessions-")) / "server.log"
    with serve(log, env={"OV3D_DEMO_DIR": str(demo)}) as (url, proc):
        idle_rss = rss_mib(proc.pid)
        samples: list[float] = []
        stop = threading.Event()
        sampler = threading.Thread(target=_sample_rss, args=(proc.pid, stop, samples), daemon=True)
        sampler.start()
        t = time.perf_counter()
        try:
            cpu: dict = {"prewarm": args.prewarm}
            sessions = asyncio.run(asyncio.wait_for(_level(url, n, args.seconds, args.seed, proc.pid, cpu),
                                                    args.timeout))
        finally:
            stop.set()
            sampler.join(2)
        wall = time.perf_counter() - t
        browser = _browser_first_data(url) if args.browser else None
    first = [s.first_data for s in sessions if s.first_data is not None]
    complete = [s.complete for s in sessions if s.complete is not None]
    once = [s.once[1] for s in sessions if s.once is not None]
    once_first = [s.once[0] for s in sessions if s.once is not None and s.once[0] == s.once[0]]
    cold = [s.first_flip[1] for s in sessions if getattr(s, "first_flip", None) is not None]
    tog_first = [a for s in sessions for a, _ in s.toggles if a == a]
    tog_done = [b for s in sessions for _, b in s.toggles]
    return {
        "sessions": n, "errors": [s.error for s in sessions if s.error], "wall_s": round(wall, 1),
        "prewarm_s": round(cpu["prewarm_s"], 2) if "prewarm_s" in cpu else None,
        "load_avg_before": [round(x, 1) for x in load_before], "load_avg_after": [round(x, 1) for x in os.getloadavg()],
        "first_data_median_s": round(statistics.median(first), 2) if first else None,
        "first_data_p95_s": round(_quantile(first, 0.95), 2) if first else None,
        "complete_median_s": round(statistics.median(complete), 2) if complete else None,
        "complete_p95_s": round(_quantile(complete, 0.95), 2) if complete else None,
        "flip_at_once_first_median_s": round(statistics.median(once_first), 2) if once_first else None,
        "flip_at_once_done_median_s": round(statistics.median(once), 2) if once else None,
        "flip_at_once_done_p95_s": round(_quantile(once, 0.95), 2) if once else None,
        "first_flip_done_median_s": round(statistics.median(cold), 2) if cold else None,
        "server_cpu_per_memo_hit_run_s": round(cpu.get("dataset-level", float("nan")) / max(1, len(once)), 3),
        "toggles": len(tog_done),
        "toggle_first_median_s": round(statistics.median(tog_first), 2) if tog_first else None,
        "toggle_first_p95_s": round(_quantile(tog_first, 0.95), 2) if tog_first else None,
        "toggle_done_median_s": round(statistics.median(tog_done), 2) if tog_done else None,
        "toggle_done_p95_s": round(_quantile(tog_done, 0.95), 2) if tog_done else None,
        "rss_idle_mib": round(idle_rss), "rss_peak_mib": round(max(samples)) if samples else None,
        "browser_after": browser,
    }


def first_start(folder: Path, timeout: float) -> dict:
    """A fresh server whose demo folder is empty: one session from connect to the first number (the demo is built
    while it waits), with the progress texts it was shown."""
    shutil.rmtree(folder, ignore_errors=True)
    load_before = os.getloadavg()
    log = Path(tempfile.mkdtemp(prefix="ov3d-bench-first-")) / "server.log"
    texts: list[tuple[float, str]] = []

    async def one(url: str) -> tuple[float | None, float]:
        import websockets

        host = url.split("//", 1)[1]
        t0 = time.perf_counter()
        async with websockets.connect(f"ws://{host}/_stcore/stream", subprotocols=["streamlit"], origin=url,
                                      max_size=None, open_timeout=600) as ws:
            msg = BackMsg()
            msg.rerun_script.query_string = ""
            await ws.send(msg.SerializeToString())
            first = None
            while True:
                fm = ForwardMsg()
                fm.ParseFromString(await ws.recv())
                kind = fm.WhichOneof("type")
                if kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
                    el = fm.delta.new_element
                    typ = el.WhichOneof("type")
                    if typ == "progress":
                        texts.append((round(time.perf_counter() - t0, 1), el.progress.text))
                    if typ in DATA_ELEMENTS and first is None:
                        first = time.perf_counter() - t0
                elif kind == "script_finished":
                    return first, time.perf_counter() - t0

    with serve(log, env={"OV3D_DEMO_DIR": str(folder)}) as (url, proc):
        first, done = asyncio.run(asyncio.wait_for(one(url), timeout))
    shown = texts[:: max(1, len(texts) // 8)] + texts[-1:]
    return {"first_data_s": round(first, 1) if first else None, "complete_s": round(done, 1),
            "load_avg_before": [round(x, 1) for x in load_before],
            "load_avg_after": [round(x, 1) for x in os.getloadavg()], "progress_texts": shown}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--levels", default="1,5,20", help="concurrent sessions per level (comma-separated)")
    ap.add_argument("--seconds", type=float, default=60.0, help="seconds of protocol toggling per level")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds after which a level is stopped")
    ap.add_argument("--demo", type=Path, default=None, help="demo folder (default: the app's, built if missing)")
    ap.add_argument("--cold-disk", action="store_true", help="delete the demo's on-disk load caches per level")
    ap.add_argument("--browser", action="store_true", help="also time one Chromium session after each level")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--prewarm", action="store_true",
                    help="one session opens the Overview first (the server's first start), then the N open at once")
    ap.add_argument("--markdown", action="store_true", help="print RESULTS.md table rows")
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--first-start", type=Path, metavar="DIR",
                    help="instead: a fresh server with an empty demo folder DIR (deleted first): time to first data")
    args = ap.parse_args()

    if args.first_start is not None:
        res = first_start(args.first_start, args.timeout)
        print(json.dumps(res, indent=1))
        if args.json:
            args.json.write_text(json.dumps(res, indent=1))
        return 0

    if args.demo is None:
        from ov3d_core.demo import ensure_demo
        from ov3d_core.io.paths import demo_dir

        args.demo = Path(ensure_demo(demo_dir()))
    results = {"machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "demo": str(args.demo),
               "seconds": args.seconds, "cold_disk": args.cold_disk, "prewarm": args.prewarm, "levels": []}
    for n in (int(x) for x in args.levels.split(",")):
        res = run_level(n, args, args.demo)
        results["levels"].append(res)
        print(json.dumps(res), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    if args.markdown:
        print("| sessions | first data median / p95 (s) | page complete median / p95 (s) | all flip at once: "
              "first number / run done median, p95 (s) | continuous toggles | toggle: first number median / p95 (s) "
              "| toggle: run done median / p95 (s) | server CPU per page run (s) | server RSS idle / peak (MiB) | "
              "load avg before / after (1 min) |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in results["levels"]:
            print(f"| {r['sessions']} | {r['first_data_median_s']} / {r['first_data_p95_s']} | "
                  f"{r['complete_median_s']} / {r['complete_p95_s']} | {r['flip_at_once_first_median_s']} / "
                  f"{r['flip_at_once_done_median_s']}, {r['flip_at_once_done_p95_s']} | {r['toggles']} | "
                  f"{r['toggle_first_median_s']} / {r['toggle_first_p95_s']} | {r['toggle_done_median_s']} / "
                  f"{r['toggle_done_p95_s']} | {r['server_cpu_per_memo_hit_run_s']} | "
                  f"{r['rss_idle_mib']} / {r['rss_peak_mib']} | "
                  f"{r['load_avg_before'][0]} / {r['load_avg_after'][0]} |" + (f" errors: {len(r['errors'])}" if r["errors"] else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
