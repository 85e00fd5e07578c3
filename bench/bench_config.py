"""Benchmark of config loading and of its refusals (run by hand: ``python bench/bench_config.py``).

Each case runs in a fresh process, as a user meets it: the CLI (``ov3d report --config FILE``) for the hostile files,
``load_config`` for the valid ones. Reports wall time and the child's peak RSS (``os.wait4``), plus, side by side in
one process, our bounded loader against ``yaml.safe_load`` (pure-Python PyYAML) and ``yaml.CSafeLoader`` on the
largest config the size cap admits.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def billion_laughs() -> str:
    lines = ["a0: &a0 [" + ", ".join(["lol"] * 9) + "]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    return "\n".join(lines) + "\ndatasets: *a8\n"


def big_config(demo_yaml: str, limit: int = (1 << 20) - 1024) -> str:
    head, runs = demo_yaml.split("runs:\n", 1)
    body = runs * ((limit - len(head)) // len(runs))
    # Unique run names (the schema refuses duplicates), same size class.
    out, i = [], 0
    for line in body.splitlines(keepends=True):
        if line.startswith("- name: "):
            line, i = f"- name: run{i:05d}\n", i + 1
        out.append(line)
    return head + "runs:\n" + "".join(out)


def run_child(args: list[str]) -> tuple[float, float, int, str]:
    """(wall s, peak RSS MiB, exit status, last stderr line) of a fresh process."""
    t = time.perf_counter()
    proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t
    return wall, usage.ru_maxrss / 1024, proc.returncode, (err.strip().splitlines() or [""])[-1][:220]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3, help="in-process timings: best of N")
    a = ap.parse_args()
    from ov3d_core.demo.build import _benchmark_yaml

    demo = _benchmark_yaml(0, annotations_only=False)
    tmp = Path(tempfile.mkdtemp(prefix="bench_config_"))
    files = {
        "billion laughs (1 KB, 9^9 strings)": billion_laughs(),
        "100k-deep flow nesting": "datasets: " + "[" * 100_000 + "]" * 100_000 + "\n",
        "non-UTF-8": "datasets:\n  - name: caf\xe9\n",
        "demo benchmark.yaml (valid)": demo,
        "1 MiB config (valid, the size cap)": big_config(demo),
    }
    paths = {}
    for i, (name, text) in enumerate(files.items()):
        p = tmp / f"c{i}.yaml"
        p.write_bytes(text.encode("latin-1") if "UTF-8" in name else text.encode("utf-8"))
        paths[name] = p

    print(f"# bench_config — {platform.node()} {platform.machine()}, Python {platform.python_version()}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {os.getloadavg()[0]:.1f}\n")
    print("| file | size | command | wall | peak RSS | exit | message |")
    print("|---|---:|---|---:|---:|---:|---|")
    # load_config in a fresh process, timed inside it (imports excluded), then the CLI end to end.
    inner = [sys.executable, "-c", "import sys, time\nfrom ov3d_core.io.config import load_config\n"
             "from ov3d_core.errors import InputError\nt = time.perf_counter()\n"
             "try:\n    c = load_config(sys.argv[1]); what = f'{len(c.runs)} runs'\n"
             "except InputError:\n    what = 'refused'\n"
             "print(f'load_config: {what} in {time.perf_counter() - t:.3f} s', file=sys.stderr)"]
    for name, p in paths.items():
        for label, cmd in (("load_config", inner + [str(p)]),
                           ("ov3d report --config", [sys.executable, "-m", "ov3d_core", "report", "--config", str(p),
                                                     "--out", str(tmp / "out")])):
            if label != "load_config" and "valid" in name:
                continue
            wall, rss, rc, msg = run_child(cmd)
            msg = msg.replace(str(p), p.name)
            print(f"| {name} | {p.stat().st_size / 1024:.1f} KiB | {label} | {wall:.2f} s | {rss:.0f} MiB | {rc} | "
                  f"{msg} |")

    import yaml

    from ov3d_core.io.yaml_safe import load_yaml_bytes

    data = paths["1 MiB config (valid, the size cap)"].read_bytes()

    def best(fn) -> float:
        times = []
        for _ in range(a.repeats):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        return min(times)

    ours = best(lambda: load_yaml_bytes(data, file="big.yaml"))
    pure = best(lambda: yaml.load(data, Loader=yaml.SafeLoader))
    cfast = best(lambda: yaml.load(data, Loader=yaml.CSafeLoader))
    print(f"\nParse only, 1 MiB config, best of {a.repeats} in one process: ours (libyaml events, bounded Python "
          f"composer) {ours:.2f} s, yaml.safe_load (pure Python) {pure:.2f} s ({pure / ours:.1f}x ours), "
          f"yaml.CSafeLoader {cfast:.2f} s ({cfast / ours:.2f}x ours)")


if __name__ == "__main__":
    main()
