"""bench/bench_encode_gpu.py runs as it would on a GPU machine, here on the CPU: one JSON line on stdout, CPU numbers
said so, the per-image number the embedding cache's own timing gives, everything under --out."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_the_gpu_timing_script_on_a_cpu(tmp_path):
    out = tmp_path / "enc"
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES",)}
    p = subprocess.run([sys.executable, str(REPO / "bench" / "bench_encode_gpu.py"), "--out", str(out), "--model",
                        "tiny", "--device", "cpu", "--images", "3", "--crops-per-image", "4", "--warmup", "0",
                        "--runs", "2", "--batch-size", "4"], capture_output=True, text=True, cwd=tmp_path,
                       env=env, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    lines = p.stdout.strip().splitlines()
    assert len(lines) == 1
    r = json.loads(lines[0])
    assert r["cpu_numbers"] is True and r["note"].startswith("CPU numbers") and r["device"] == "cpu"
    assert r["images"] == 3 and r["crops"] == 12 and r["timed_runs"] == 2 and len(r["ms_per_image_runs"]) == 2
    assert r["ms_per_image"] == pytest.approx(statistics.median(r["ms_per_image_runs"]), abs=1e-3)
    assert r["model"] == "random-init tiny" and r["vision_config"]["num_hidden_layers"] == 2
    # the timing came from the cache entries `ov3d embed` wrote under --out
    timings = sorted((out / "cache").rglob("timing.json"))
    assert len(timings) == 2
    per = sorted(json.loads(t.read_text())["ms_per_image"] for t in timings)
    assert per == pytest.approx(sorted(r["ms_per_image_runs"]), abs=1e-3)
    assert not list(tmp_path.glob(".ov3d_cache"))  # nothing in the working folder
