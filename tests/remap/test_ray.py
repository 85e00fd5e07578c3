"""The Ray engines on a local Ray instance (one per module, 2 CPUs) and the tiny demo: the Ray embedding engine writes
the in-process engine's cache, resumes only missing shards, reports a failing image while the other shards finish,
survives a killed worker; the Ray sweep gives the in-process table. The report on Ray: ``test_ray_report.py``."""

from __future__ import annotations

import filecmp
import functools
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import ray
import torch

from ov3d_core.benchmark import Benchmark
from ov3d_core.cli import main
from ov3d_core.errors import InputError
from ov3d_core.remap.cache import EmbeddingStore
from ov3d_core.remap.engines import embed
from ov3d_core.remap.engines import ray_data
from ov3d_core.remap.engines.ray_data import (ShardEncoder, check_address, cut_shard, embed_ray_many, plan_workers,
                                              work_items)
from ov3d_core.remap.pipeline import LiveRemapper
from ov3d_core.remap.sources import crop_source
from ov3d_core.analysis.sweep import SweepJob, grid, sweep
from tests.remap.fakes import CaptionFake, DiesOnce, FakeEncoder, RaisesOn

REPO = Path(__file__).resolve().parents[2]
CACHE_FILES = ("records.npy", "valid.npy", "state.json", "embeddings.npy")


@pytest.fixture(scope="module")
def ray_instance():
    # Workers import ov3d_core and tests.* from this checkout (the engine ships it itself when it starts Ray).
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=256 << 20, logging_level="ERROR",
             runtime_env={"env_vars": {"PYTHONPATH": str(REPO)}})
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def demo(tmp_path_factory, copied_demo):
    return copied_demo(tmp_path_factory.mktemp("demo") / "demo", images=4, seed=0)


@pytest.fixture
def demo_copy(demo, tmp_path):
    """A private copy of the demo (its images may be broken by the test)."""
    out = tmp_path / "demo"
    shutil.copytree(demo, out, ignore=shutil.ignore_patterns(".ov3d_cache"))
    return out


def _bench(root):
    return Benchmark.from_yaml(Path(root) / "benchmark.yaml")


def _same_files(a: Path, b: Path, names=CACHE_FILES) -> dict:
    return {n: filecmp.cmp(a / n, b / n, shallow=False) for n in names}


def _assert_within_fp16(a, b):
    """Equal, or apart by at most one float16 step (floating-point differences between processes, then rounding)."""
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    step = np.spacing(np.abs(np.maximum(np.abs(a), np.abs(b))).astype(np.float16)).astype(np.float32)
    assert a.shape == b.shape and (np.abs(a - b) <= step).all()


# ------------------------------------------------------------------------------------------------ embedding
def test_cli_embed_on_ray_writes_the_in_process_cache(ray_instance, demo, tmp_path, capsys):
    common = ["embed", "--benchmark", str(demo / "benchmark.yaml"), "--dataset", "demo_outdoor_av", "--run",
              "detany_like", "--encoder", "proxy", "--chunk-size", "8", "--no-progress"]
    # The proxy's float32 outputs depend on torch's intra-op thread count (1 vs 2 threads: ~1e-7 apart, and hundreds of
    # the stored float16 values differ), so the in-process side runs with the Ray actors' count (1 CPU each here)
    # and the two caches must then be byte for byte the same.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        assert main([*common, "--cache-dir", str(tmp_path / "local")]) == 0
    finally:
        torch.set_num_threads(threads)
    assert main([*common, "--cache-dir", str(tmp_path / "ray"), "--engine", "ray"]) == 0
    out = capsys.readouterr().out
    assert "shards:  8 of 8 computed now (ray, 2 workers)" in out and "58 predictions" in out
    b = _bench(demo)
    ds, run = b.dataset("demo_outdoor_av"), b.run("detany_like", "demo_outdoor_av")
    crops = b.run_spec("detany_like", "demo_outdoor_av").crops
    local = embed(EmbeddingStore(tmp_path / "local"), ds, run, "proxy", crops_json=crops, chunk_size=8)
    on_ray = embed(EmbeddingStore(tmp_path / "ray"), ds, run, "proxy", crops_json=crops, chunk_size=8)
    assert local.cached and on_ray.cached  # the in-process engine reads the Ray-written entry as its own
    assert _same_files(local.embeddings.path, on_ray.embeddings.path) == dict.fromkeys(CACHE_FILES, True)
    assert not (on_ray.embeddings.path / "chunks").exists()
    # `remap` reads it unchanged
    assert main(["remap", *common[1:], "--cache-dir", str(tmp_path / "ray"), "--theta", "0.3",
                 "--out", str(tmp_path / "remapped.json")]) == 0
    assert "kept:" in capsys.readouterr().out


def test_failing_image_is_reported_others_finish_and_resume_recomputes_only_missing_shards(
        ray_instance, demo_copy, tmp_path, tiny_dirs):
    spec = f"hf:{tiny_dirs['siglip2']}"
    b = _bench(demo_copy)
    ds, run = b.dataset("demo_indoor"), b.run("ovmono_like", "demo_indoor")
    src = crop_source(ds, run, FakeEncoder())  # pixels: the image path of every row
    bad = Path(src.paths[int(np.flatnonzero(src.valid)[0])])
    good_bytes = bad.read_bytes()
    bad.write_bytes(b"not an image")
    chunk = 4
    bad_shards = sorted({i // chunk for i in np.flatnonzero(src.valid) if src.paths[i] == str(bad)})
    store = EmbeddingStore(tmp_path / "ray")

    rep = embed(store, ds, run, spec, engine="ray", chunk_size=chunk, progress=False, workers=1)
    n_shards = -(-len(src.records) // chunk)
    assert not rep.complete and rep.n_shards == n_shards
    assert sorted(f.chunk for f in rep.failures) == bad_shards
    assert all(f.images == (str(bad),) and f.kind == "input" and "readable image" in f.error for f in rep.failures)
    assert sorted(rep.written) == sorted(set(range(n_shards)) - set(bad_shards))  # the others finished
    assert store.load(ds.name, run.name, rep.encoder_key) is None  # no partial cache is ever served

    bad.write_bytes(good_bytes)
    chunks = store.directory(ds.name, run.name, rep.encoder_key) / "chunks"
    deleted = rep.written[0]
    (chunks / f"{deleted:05d}.npy").unlink()
    again = embed(store, ds, run, spec, engine="ray", chunk_size=chunk, progress=False, workers=1)
    assert again.complete and not again.failures
    assert sorted(again.written) == sorted(bad_shards + [deleted])  # only the missing shards were computed

    ref = embed(EmbeddingStore(tmp_path / "local"), ds, run, spec, chunk_size=chunk, progress=False, device="cpu")
    assert ref.written == list(range(n_shards))
    same = _same_files(ref.embeddings.path, again.embeddings.path)
    assert same["records.npy"] and same["valid.npy"] and same["state.json"]
    _assert_within_fp16(ref.embeddings.emb, again.embeddings.emb)
    assert ref.embeddings.valid.sum() > 0 and np.abs(ref.embeddings.float32()).sum() > 0


def test_several_runs_share_one_actor_pool_and_a_killed_worker_loses_only_its_shard(ray_instance, demo, tmp_path,
                                                                                     monkeypatch):
    """Two runs (and one of them again) in one Ray dataset, served by one pool of encoder actors, one of which dies
    inside its first shard: every shard of both runs is written once, each run's cache is the in-process one."""
    b = _bench(demo)
    jobs = [(b.dataset(d), b.run(r, d), b.run_spec(r, d).crops)
            for d, r in (("demo_outdoor", "wild_like"), ("demo_indoor", "cubercnn_star"))]
    pipelines = []
    real = ray_data._run_pipeline
    monkeypatch.setattr(ray_data, "_run_pipeline", lambda todo, *a, **k: pipelines.append(len(todo)) or real(
        todo, *a, **k))
    marker = tmp_path / "killed"
    store = EmbeddingStore(tmp_path / "ray")
    reps = embed_ray_many(store, jobs + jobs[:1], functools.partial(DiesOnce, str(marker)), chunk_size=5,
                          progress=False, workers=1)
    assert marker.exists()  # a worker did die mid-shard
    assert pipelines == [2]  # both runs in one Ray dataset (one actor pool); the repeated job computed once
    assert len(reps) == 3 and reps[2] is reps[0]
    for (ds, run, crops), rep in zip(jobs, reps):
        assert (rep.dataset, rep.run) == (ds.name, run.name)
        assert rep.complete and not rep.failures
        assert sorted(rep.written) == list(range(rep.n_shards))  # every shard written once, the lost one retried
        ref = embed(EmbeddingStore(tmp_path / "local"), ds, run, CaptionFake(), crops_json=crops, chunk_size=5)
        assert _same_files(ref.embeddings.path, rep.embeddings.path) == dict.fromkeys(CACHE_FILES, True)
    again = embed_ray_many(store, jobs, CaptionFake, chunk_size=5, progress=False)
    assert pipelines == [2] and all(r.cached for r in again)  # complete entries: no Ray work at all


def test_an_encoder_error_names_the_record_at_fault(demo, tmp_path):
    """In-process check of the actor's logic: each input of a failing shard is retried alone to find the culprit."""
    b = _bench(demo)
    ds, run = b.dataset("demo_outdoor"), b.run("wild_like", "demo_outdoor")
    src = crop_source(ds, run, CaptionFake(), crops_json=b.run_spec("wild_like", "demo_outdoor").crops)
    store = EmbeddingStore(tmp_path)
    entry = store.begin(ds.name, run.name, "fake:v1", records=src.records, valid=src.valid,
                        inputs_hash=src.inputs_hash, chunk_size=6)
    item = work_items(src, entry)[1]
    row_of_bad = int(np.frombuffer(item["rows"], np.int64)[2])
    actor = ShardEncoder(functools.partial(RaisesOn, str(src.captions[row_of_bad])), "fake:v1", "cpu", None)
    block, _, err = actor.encode(cut_shard(item))
    assert block == b"" and '"rows": [' in err and "cannot encode this one" in err
    culprits = json.loads(err)["rows"]
    assert row_of_bad in culprits
    assert all(src.captions[r] == src.captions[row_of_bad] for r in culprits)  # only rows with that caption
    ok = ShardEncoder(CaptionFake, "fake:v1", "cpu", None).encode(cut_shard(item))
    assert ok[2] == "" and len(ok[0]) == (item["hi"] - item["lo"]) * ok[1] * 2
    with pytest.raises(RuntimeError, match="another checkpoint"):
        ShardEncoder(CaptionFake, "fake:other", "cpu", None)


def test_worker_plan_and_address_checks():
    assert plan_workers({"CPU": 2.0}, 10, gpus_per_worker=None, workers=None) == {
        "workers": 2, "gpus": 0.0, "cpus": 0.5, "crop_tasks": 4, "device": "cpu", "threads": 1}
    gpu = plan_workers({"CPU": 16.0, "GPU": 4.0}, 100, gpus_per_worker=None, workers=None)
    assert gpu["workers"] == 4 and gpu["gpus"] == 1.0 and gpu["device"] == "cuda" and gpu["cpus"] == 1.0
    assert plan_workers({"CPU": 16.0, "GPU": 4.0}, 100, gpus_per_worker=0.5, workers=None)["workers"] == 8
    assert plan_workers({"CPU": 16.0, "GPU": 4.0}, 3, gpus_per_worker=None, workers=None)["workers"] == 3
    assert plan_workers({"CPU": 16.0, "GPU": 4.0}, 100, gpus_per_worker=0, workers=None)["device"] == "cpu"
    with pytest.raises(InputError, match="gpus-per-worker"):
        plan_workers({"CPU": 4.0}, 10, gpus_per_worker=1, workers=None)
    for ok in ("auto", "10.0.0.5:6379", "head-node:6379", "ray://head:10001", "[::1]:6379", None):
        assert check_address(ok) == ok
    for bad in ("nope", "host:", "host:99999", "http://host:80", "host:port", ":6379"):
        with pytest.raises(InputError, match="--address"):
            check_address(bad)


# ------------------------------------------------------------------------------------------------ sweeps
RUNS = [("demo_indoor", "cubercnn_star"), ("demo_outdoor", "ovmono_like")]


@pytest.fixture(scope="module")
def swept(demo, tmp_path_factory):
    """Embeddings of two runs (in-process) in a private cache, and the in-process sweep over them."""
    cache = tmp_path_factory.mktemp("sweep_cache")
    b = _bench(demo)
    for d, r in RUNS:
        embed(EmbeddingStore(cache), b.dataset(d), b.run(r, d), "proxy", crops_json=b.run_spec(r, d).crops,
              progress=False)
    jobs = grid(RUNS, ["proxy"], ["S1", "standard", "a photo of a {} in a room."], [0.25, 0.45],
                ["dataset-level", "target-aware"])
    jobs = jobs[::-1]  # rows must follow the job order, not the grouping
    return cache, jobs, sweep(demo / "benchmark.yaml", jobs, cache_dir=cache)


def test_local_sweep_rows_are_the_single_run_numbers(demo, swept):
    cache, jobs, table = swept
    assert len(table) == len(jobs) == 24
    assert list(table[["dataset", "run", "template", "theta", "protocol"]].itertuples(index=False, name=None)) == \
        [(j.dataset, j.run, j.template, j.theta, j.protocol) for j in jobs]
    b = _bench(demo)
    from ov3d_core.remap.encoders import make_encoder

    enc = make_encoder("proxy")
    for i in (0, 7, 18):
        j = jobs[i]
        ds, run = b.dataset(j.dataset), b.run(j.run, j.dataset)
        src = crop_source(ds, run, enc, crops_json=b.run_spec(j.run, j.dataset).crops)
        live = LiveRemapper(EmbeddingStore(cache).load(ds.name, run.name, enc.cache_key, src.inputs_hash),
                            run.pred.record, run.pred.score, enc, ds.vocabulary)
        from ov3d_core.eval.scoring import apply_protocol, score_view

        lv = apply_protocol(live.label_view(j.template, j.theta), ds, run, j.protocol)
        want = score_view(ds, run, b.pairs(j.run, j.dataset), lv).summary
        for k, v in want.items():
            assert table.loc[i, k] == pytest.approx(v, nan_ok=True, rel=0, abs=0)
        assert table.loc[i, "n_kept"] == int(live.result(j.template, j.theta).keep.sum())
    # theta matters: a stricter threshold keeps fewer boxes somewhere
    assert (table.groupby(["dataset", "template", "protocol"])["n_kept"].nunique() > 1).any()


def test_a_sweep_task_with_every_embedding_cached_never_loads_the_model(demo, swept, monkeypatch):
    """A sweep's group (what each Ray task runs) in a process with no encoder yet: the crop embeddings and the
    template texts are in the caches (the local sweep wrote them), so its rows come without building the model."""
    from ov3d_core.analysis import prompts
    from ov3d_core.analysis.sweep import score_group
    from ov3d_core.remap import encoders

    cache, jobs, table = swept
    built = []
    real = encoders.ProxyEncoder.__init__
    monkeypatch.setattr(encoders.ProxyEncoder, "__init__", lambda self, *a, **k: built.append(1) or real(
        self, *a, **k))
    monkeypatch.setattr(prompts, "_encoders", {})  # as in a fresh task process
    monkeypatch.setattr(encoders, "_PROXIES", {})
    group = [j for j in jobs if (j.dataset, j.run) == RUNS[0]]
    rows = pd.DataFrame(score_group(str(demo / "benchmark.yaml"), group, cache_dir=str(cache)))
    want = table[(table["dataset"] == RUNS[0][0]) & (table["run"] == RUNS[0][1])].reset_index(drop=True)
    pd.testing.assert_frame_equal(rows, want, check_exact=True)
    assert built == []
    # the same encoder object loads the model on its first encoding, with the key it was described with
    enc = prompts._encoders["proxy"]
    assert not enc.loaded and enc.probability(np.zeros(3)) is None and not enc.loaded
    assert enc.encode_text(["a chair"]).shape == (1, enc.load().dim) and enc.loaded and built == [1]
    assert enc.cache_key == enc.load().cache_key and enc.name == enc.load().name


def test_the_ray_sweep_prepares_the_template_texts_and_nothing_else(demo_copy, swept, monkeypatch):
    """Before its Ray tasks start, a Ray sweep encodes every group's template texts into the benchmark's text cache,
    and only those: this process builds no remapper, so no run's crop embeddings are read into memory here (the
    tasks load them; at Omni3D scale they are gigabytes)."""
    from ov3d_core.analysis import Analysis
    from ov3d_core.analysis import sweep as sweep_module
    from ov3d_core.remap.cache import TextEmbeddingCache
    from ov3d_core.remap.encoders import LazyEncoder
    from ov3d_core.remap.templates import prompts_for, resolve_templates

    cache, jobs, _ = swept
    monkeypatch.setattr(Analysis, "remapper", lambda *a, **k: pytest.fail("a remapper was built"))
    parts = [[j for j in jobs if (j.dataset, j.run) == pair] for pair in RUNS]
    cfg = demo_copy / "benchmark.yaml"  # a text cache of its own, empty
    sweep_module._encode_template_texts(str(cfg), parts, cache_dir=str(cache), templates_file=None, pad=0.0,
                                        min_size=8)
    b = _bench(demo_copy)
    key = LazyEncoder("proxy").cache_key
    want = {TextEmbeddingCache.key(key, prompts_for(t, b.dataset(d).vocabulary))
            for d, _ in RUNS for j in jobs for t in resolve_templates(j.template)}
    assert {p.stem for p in (b.config.cache_dir / "text").rglob("*.npy")} == want and len(want) == 2 * 6


def test_ray_sweep_equals_the_local_sweep(ray_instance, demo, swept):
    cache, jobs, table = swept
    on_ray = sweep(demo / "benchmark.yaml", jobs, engine="ray", cache_dir=cache)
    pd.testing.assert_frame_equal(on_ray, table, check_exact=True)


def test_sweep_input_errors(demo, tmp_path):
    cfg = demo / "benchmark.yaml"
    with pytest.raises(InputError, match="ov3d embed"):
        sweep(cfg, [SweepJob("demo_indoor", "wild_like", "proxy", "S1", 0.3)], cache_dir=tmp_path)
    for bad, field in ((("demo_indoor", "wild_like", "proxy", "S1", float("nan"), "dataset-level"), "theta"),
                       (("demo_indoor", "wild_like", "proxy", "S1", 0.3, "everything"), "protocol"),
                       (("demo_indoor", "wild_like", "proxy", "no such template", 0.3, "dataset-level"), "template")):
        with pytest.raises(InputError, match=field):
            sweep(cfg, [bad], cache_dir=tmp_path)
