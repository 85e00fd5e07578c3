"""Runtime table (OV3D-Bench Table 10) and accuracy-latency data: hand-given timings (sums, the X* composition,
declared vs measured flags), the encoder timing the embedding cache keeps (per chunk, resumed, summarised), and
``ov3d embed`` with the proxy encoder writing a timing the runtime table reads back."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ov3d_core.cli import main
from ov3d_core.diagnostics.runtime import RUNTIME_COLUMNS, MeasuredStage, accuracy_latency, runtime_table
from ov3d_core.io.config import DeclaredRuntime
from ov3d_core.remap.cache import EmbeddingStore, hash_inputs, timing_summary
from ov3d_core.viz.runtime import accuracy_latency_figure
from tests.remap.fakes import FakeEncoder
from tests.remap.test_cli import build

# Table 10 of the paper (ms per image on one H100 NVL, 200 ARKitScenes images)
PAPER = {"cubercnn": DeclaredRuntime(geometry_ms=33.3, device="H100 NVL", images=200, source="paper Table 10"),
         "detany3d": DeclaredRuntime(semantic_ms=182.9, geometry_ms=400.0, device="H100 NVL", images=200,
                                     source="paper Table 10"),
         "ovmono3d": DeclaredRuntime(total_ms=300.8, device="H100 NVL", source="paper Table 10"),
         "nothing": None}
SIGLIP = MeasuredStage(ms_per_image=190.6, images=200, crops=4000, seconds=38.12, device="cuda:0",
                       device_name="NVIDIA H100 NVL", encoder="siglip2", batch_size=64, cuda_synchronized=True)


def test_runtime_table_by_hand():
    t = runtime_table(PAPER, {"cubercnn*": SIGLIP}, {"cubercnn*": "cubercnn"})
    assert tuple(t.columns) == RUNTIME_COLUMNS
    assert t["run"].tolist() == ["cubercnn", "cubercnn*", "detany3d", "ovmono3d"]  # X* after X; no row for "nothing"
    r = t.set_index("run")
    # a closed-vocabulary detector: geometry only, its total is that sum
    assert r.loc["cubercnn", "total_ms"] == pytest.approx(33.3) and np.isnan(r.loc["cubercnn", "semantic_ms"])
    assert (r.loc["cubercnn", "total_from"], r.loc["cubercnn", "how"]) == ("sum", "declared")
    # the remapped run: measured semantic stage + the declared geometry of the frozen detector
    star = r.loc["cubercnn*"]
    assert star["semantic_ms"] == 190.6 and star["geometry_ms"] == 33.3
    assert star["total_ms"] == pytest.approx(223.9)
    assert (star["semantic_from"], star["geometry_from"], star["total_from"], star["how"]) == \
        ("measured", "declared", "sum", "declared + measured")
    assert star["images"] == 200 and star["note"] == ""  # same device: H100 NVL is the GPU that measured
    assert "ov3d embed" in star["source"] and "paper Table 10" in star["source"]
    # two stages declared: summed; a fused pipeline declares its total alone
    assert r.loc["detany3d", "total_ms"] == pytest.approx(582.9) and r.loc["detany3d", "total_from"] == "sum"
    assert r.loc["ovmono3d", "total_ms"] == 300.8 and r.loc["ovmono3d", "total_from"] == "declared"
    assert np.isnan(r.loc["ovmono3d", "geometry_ms"]) and r.loc["ovmono3d", "geometry_from"] == ""
    # the paper's 2.6x: DetAny3D's total over Cube R-CNN*'s
    assert r.loc["detany3d", "total_ms"] / star["total_ms"] == pytest.approx(2.6, abs=0.01)


def test_remapped_runs_with_missing_parts_say_why():
    cpu = MeasuredStage(ms_per_image=900.0, images=3, crops=9, seconds=2.7, device="cpu", device_name="CPU: x")
    t = runtime_table({"ovmono3d": PAPER["ovmono3d"], "cubercnn": PAPER["cubercnn"]},
                      {"ovmono3d*": cpu, "cubercnn*": cpu, "lonely*": None},
                      {"ovmono3d*": "ovmono3d", "cubercnn*": "cubercnn", "lonely*": "lonely"}).set_index("run")
    fused = t.loc["ovmono3d*"]  # the base declares only a total: no geometry stage to add
    assert fused["semantic_ms"] == 900.0 and math.isnan(fused["total_ms"]) and fused["total_from"] == ""
    assert "ovmono3d declares no geometry stage" in fused["note"] and fused["how"] == "measured"
    mixed = t.loc["cubercnn*"]  # geometry on the paper's GPU, semantic here on a CPU: summed, with a note
    assert mixed["total_ms"] == pytest.approx(933.3) and "different machines" in mixed["note"]
    assert "CPU numbers" in mixed["device"]
    lonely = t.loc["lonely*"]
    assert math.isnan(lonely["total_ms"]) and "no measured semantic stage" in lonely["note"] and lonely["how"] == ""
    with pytest.raises(ValueError, match="no `remapped_from` entry"):
        runtime_table({}, {"x*": cpu}, {})


def test_accuracy_latency_joins_the_leaderboard():
    t = runtime_table(PAPER, {"cubercnn*": SIGLIP}, {"cubercnn*": "cubercnn"})
    board = pd.DataFrame({"run": ["cubercnn*", "detany3d", "ovmono3d", "wild"],
                          "AP3D": [10.13, 12.5, float("nan"), 20.0]})
    pts = accuracy_latency(t, board).set_index("run")
    assert pts.loc["cubercnn*", "plotted"] and pts.loc["cubercnn*", "total_ms"] == pytest.approx(223.9)
    assert pts.loc["cubercnn*", "metric"] == 10.13 and pts.loc["detany3d", "plotted"]
    assert pts.loc["ovmono3d", "reason"] == "no AP3D" and pts.loc["wild", "reason"] == "no runtime"
    assert pts.loc["cubercnn", "reason"] == "no leaderboard row"
    fig = accuracy_latency_figure(pts.reset_index())
    assert {tr.name for tr in fig.data} == {"declared + measured", "declared"}
    xs = sorted(x for tr in fig.data for x in tr.x)
    assert xs == pytest.approx([223.9, 582.9])
    assert "ovmono3d (no AP3D)" in fig.layout.annotations[0].text
    with pytest.raises(ValueError, match="one leaderboard row per run"):
        accuracy_latency(t, pd.DataFrame({"run": ["a", "a"], "AP3D": [1.0, 2.0]}))


def test_timing_summary_by_hand():
    chunks = {"0": {"seconds": 0.5, "load_seconds": 0.1, "crops": 5}, "1": {"seconds": 0.3, "load_seconds": 0.1,
                                                                          "crops": 3}}
    t = timing_summary({"chunks": chunks, "images": 4}, n=8, chunk_size=5)
    assert t["crops"] == 8 and t["seconds"] == pytest.approx(1.0) and t["complete"]
    assert t["ms_per_image"] == pytest.approx(250.0) and t["ms_per_crop"] == pytest.approx(125.0)
    part = timing_summary({"chunks": {"0": chunks["0"]}, "images": 4}, n=8, chunk_size=5)
    assert not part["complete"] and part["ms_per_image"] is None  # a chunk without timing: no per-image number
    assert MeasuredStage.from_timing(part) is None


def test_the_cache_times_each_chunk_and_keeps_it_across_a_resume(tmp_path):
    n, items = 12, [f"crop-{i}" for i in range(12)]
    store, enc = EmbeddingStore(tmp_path), FakeEncoder()

    def compute():
        return store.compute("DS", "r", enc, records=np.arange(n), valid=np.ones(n, bool),
                             load_inputs=lambda rows: [items[i] for i in rows], inputs_hash=hash_inputs(items),
                             chunk_size=5, progress=False)

    enc.fail_after = 7  # the second chunk raises: the first one's time stays with the entry
    with pytest.raises(KeyboardInterrupt):
        compute()
    enc.fail_after = None
    compute()
    t = store.timing("DS", "r", enc.cache_key)
    assert sorted(t["chunks"]) == ["0", "1", "2"] and t["crops"] == 12 and t["complete"]
    assert t["device"] == "cpu" and t["cuda_synchronized"] is False and t["ms_per_image"] is None  # images unknown
    t = store.annotate_timing("DS", "r", enc.cache_key, images=6, engine="local")
    assert t["ms_per_image"] == pytest.approx(1e3 * t["seconds"] / 6) and t["engine"] == "local"
    assert store.timing("DS", "r", enc.cache_key) == t
    assert store.timing("DS", "other", enc.cache_key) is None


def test_embed_with_the_proxy_writes_a_timing_the_runtime_table_reads(tmp_path, capsys):
    bench = build(tmp_path)
    args = ["embed", "--benchmark", str(bench), "--dataset", "Toy", "--run", "closed", "--encoder", "proxy",
            "--no-progress", "--chunk-size", "4"]
    assert main(args) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("timing:"))
    assert "ms/image over 3 images (9 crops" in line and "CPU numbers" in line
    [state] = (tmp_path / "cache" / "embeddings").rglob("state.json")
    key = __import__("json").loads(state.read_text())["encoder_key"]
    timing = EmbeddingStore(tmp_path / "cache" / "embeddings").timing("Toy", "closed", key)
    m = MeasuredStage.from_timing(timing)
    assert m.images == 3 and m.crops == 9 and m.on_cpu and timing["chunks_timed"] == 3 == timing["chunks_total"]
    assert m.ms_per_image == pytest.approx(1e3 * (timing["encode_seconds"] + timing["load_seconds"]) / 3)
    assert f"{m.ms_per_image:.1f} ms/image" in line
    t = runtime_table({"closed": DeclaredRuntime(geometry_ms=40.0)}, {"closed*": timing},
                      {"closed*": "closed"}).set_index("run")
    assert t.loc["closed*", "total_ms"] == pytest.approx(40.0 + m.ms_per_image)
    assert t.loc["closed*", "semantic_from"] == "measured" and t.loc["closed", "how"] == "declared"
    assert main(args) == 0  # cached: the stored timing, said to be from when it was computed
    again = capsys.readouterr().out
    assert f"{m.ms_per_image:.1f} ms/image" in again and "measured when the entry was computed" in again
