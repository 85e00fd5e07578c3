"""``ov3d report --engine ray`` as a user without a cluster runs it: no Ray in the process beforehand. The crop
embeddings of every remapped run and the template sweep run on one local Ray instance, started once and shut down at
the end, with one pool of encoder actors for every view's crops, and the prompt tables are the in-process report's."""

from __future__ import annotations

import pandas as pd
import pytest
import ray

from ov3d_core.analysis import sweep as sweep_module
from ov3d_core.analysis.view import DEFAULT_TEMPLATES
from ov3d_core.benchmark import Benchmark
from ov3d_core.cli import main
from ov3d_core.remap.cache import TextEmbeddingCache
from ov3d_core.remap.encoders import LazyEncoder
from ov3d_core.remap.engines import ray_data
from ov3d_core.remap.templates import prompts_for, resolve_templates
from tests.remap.test_ray import demo, demo_copy  # noqa: F401 - the tiny demo and a private copy (fixtures)


@pytest.fixture
def no_ray():
    if ray.is_initialized():  # a Ray instance another module left behind would hide the report's own start
        ray.shutdown()
    yield
    if ray.is_initialized():
        ray.shutdown()


def test_report_on_ray_starts_ray_once_and_writes_the_in_process_prompt_tables(no_ray, demo_copy, tmp_path,
                                                                                 monkeypatch):
    starts = []
    real_init = ray.init

    def counted_init(*args, **kw):  # the real ray.init, counted
        starts.append(kw.get("address"))
        return real_init(*args, **kw)

    monkeypatch.setattr(ray, "init", counted_init)
    pipelines = []
    real_pipeline = ray_data._run_pipeline
    monkeypatch.setattr(ray_data, "_run_pipeline", lambda todo, *a, **k: pipelines.append(
        sorted((e.dataset, e.run) for e, _, _ in todo)) or real_pipeline(todo, *a, **k))
    cfg = demo_copy / "benchmark.yaml"
    # the sweep's Ray tasks find every template's text embeddings in the benchmark's text cache (encoded once by the
    # sweep before it starts them, so that no task loads the model to encode them again)
    b = Benchmark.from_yaml(cfg)
    text_dir = b.config.cache_dir / "text"
    want_texts = {TextEmbeddingCache.key(LazyEncoder("proxy").cache_key, prompts_for(t, b.dataset(d).vocabulary))
                  for d in b.dataset_names for t in resolve_templates(list(DEFAULT_TEMPLATES))}
    texts_at_sweep = []
    real_groups = sweep_module._ray_groups
    monkeypatch.setattr(sweep_module, "_ray_groups", lambda *a, **k: texts_at_sweep.append(
        {p.stem for p in text_dir.rglob("*.npy")}) or real_groups(*a, **k))
    common = ["report", "--config", str(cfg), "--encoder", "proxy", "--splits", "20", "--remap-runs", "cubercnn_star"]
    assert main([*common, "--out", str(tmp_path / "ray"), "--engine", "ray"]) == 0
    # three remapped views (one per dataset) embedded and one sweep: all on the one local instance, closed after
    assert starts == [None]
    # ... and the three views' crops went through one Ray dataset: one pool of encoder actors, not one per view
    assert pipelines == [[("demo_indoor", "cubercnn_star"), ("demo_outdoor", "cubercnn_star"),
                          ("demo_outdoor_av", "cubercnn_star")]]
    assert not ray.is_initialized()
    assert len(texts_at_sweep) == 1 and texts_at_sweep[0] >= want_texts and len(want_texts) == 3 * 15
    assert main([*common, "--out", str(tmp_path / "local")]) == 0
    for name in ("prompt_templates", "prompt_sensitivity", "three_axis"):
        a = pd.read_csv(tmp_path / "ray" / "csv" / f"{name}.csv")
        b = pd.read_csv(tmp_path / "local" / "csv" / f"{name}.csv")
        pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert len(pd.read_csv(tmp_path / "ray" / "csv" / "prompt_templates.csv")) == 15 * 3
