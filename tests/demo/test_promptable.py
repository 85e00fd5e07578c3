"""The demo's prompt-conditioned run (``promptable``: one prediction file per prompt template), the declared runtimes
and the named image subsets (issue 23): the files load through Benchmark, the templates differ in the intended
direction (AP through Analysis, PCR / PLC through prompt_consistency_per_template), each template draws from its own
sub-stream, and the subsets resolve to the stated sizes."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import yaml

from ov3d_core.demo import detectors as D
from ov3d_core.demo.build import (DEFAULT_IMAGES, PROMPT_PROBE_IMAGES, RUNTIME_IMAGES, _benchmark_yaml, runtime_subset,
                                  runtime_subset_file)
from ov3d_core.demo.scenes import DATASETS

from .conftest import EVAL_IMAGES, TINY_IMAGES

RUN = "promptable"
PROFILE = D.RUNS_BY_NAME[RUN]
STANDARD = ("S1", "S2", "S3", "S4", "S5")
UNDER = ("U1", "U2", "U3", "U4", "U5")
OVER = ("O1", "O2", "O3", "O4", "O5")
PRESETS = UNDER + STANDARD + OVER


def test_templates_are_the_presets_and_probench_types():
    from ov3d_core.remap.templates import BUILTIN_TEMPLATES, PROBENCH_TYPES, resolve_templates

    expected = tuple(t.id for t in BUILTIN_TEMPLATES) + tuple(f"PB-{t}" for t in PROBENCH_TYPES)
    assert PROFILE.templates == D.PROMPTED_TEMPLATES == expected and len(expected) == 23
    assert tuple(t.id for t in BUILTIN_TEMPLATES) == PRESETS
    for t in expected:
        assert [x.id for x in resolve_templates(t)] == [t]  # what the config's per_template ids resolve to
    assert set(D.PROMPT_EFFECTS) == set(expected) and PROFILE.default_template == "S1"
    assert len({D.template_stream_key(t) for t in expected}) == len(expected)  # one sub-stream each


def test_every_template_file_loads_through_benchmark(tiny_build, tiny_benchmark):
    out, manifest = tiny_build
    b = tiny_benchmark
    for spec in DATASETS:
        ds = spec.name
        assert b.run_templates(RUN, ds) == PROFILE.templates and b.default_template(RUN, ds) == "S1"
        vocab = set(b.dataset(ds).vocabulary)
        sizes = {}
        for t in PROFILE.templates:
            r = b.run(RUN, ds, t)
            assert len(r.pred) == manifest["counts"]["predictions"][f"{RUN}__{ds}__{t}"], t
            assert set(r.pred.category) <= vocab
            sizes[t] = len(r.pred)
        assert len(set(sizes.values())) > 1, sizes  # boxes appear and disappear between templates
        default, s1 = b.run(RUN, ds), b.run(RUN, ds, "S1")
        assert len(default.pred) == len(s1.pred) and np.array_equal(default.pred.score, s1.pred.score)
        assert not (out / "runs" / f"{RUN}__{ds}.crops.json").exists()


def test_runs_declare_synthetic_runtimes(tiny_benchmark):
    from ov3d_core.diagnostics.runtime import runtime_table

    b = tiny_benchmark
    declared = {run: b.run_spec(run, "demo_indoor").runtime for run in b.run_names("demo_indoor")}
    assert set(declared) == {r.name for r in D.RUNS}
    for rt in declared.values():
        assert rt is not None and rt.source == "demo (synthetic)" and rt.images == TINY_IMAGES and rt.device
    table = runtime_table(declared).set_index("run")
    assert np.isfinite(table["total_ms"]).all()
    assert table.loc[RUN, "total_ms"] == pytest.approx(176.5 + 121.4)
    assert table.loc["ovmono_like", "total_from"] == "declared"  # a fused pipeline declares its total alone
    assert table.loc["cubercnn_star", "total_ms"] < table.loc["detany_like", "total_ms"]


# ------------------------------------------------------------------------------------------------ behaviour
@pytest.fixture(scope="module")
def per_template(ann_benchmark):
    """Per dataset: an Analysis over the dataset and every template's run (named by its template id), from the
    per-template files Benchmark loads."""
    from ov3d_core.analysis import Analysis

    b = ann_benchmark
    out = {}
    for spec in DATASETS:
        runs = [replace(b.run(RUN, spec.name, t), name=t) for t in b.run_templates(RUN, spec.name)]
        out[spec.name] = Analysis.from_objects(b.dataset(spec.name), runs)
    return out


def _ap(a, ds, templates) -> dict:
    return {t: a.summary(a.view(ds, t))["AP3D"] for t in templates}


def _consistency(a, ds, templates):
    from ov3d_core.diagnostics.consistency import prompt_consistency_per_template

    per = {}
    for t in templates:
        c = a.context(a.view(ds, t))
        per[t] = (c.ap_inputs(), c.pred.corners)
    return prompt_consistency_per_template(per, n_categories=len(a.benchmark.dataset(ds).vocabulary))


def test_templates_differ_in_ap_in_the_intended_direction(per_template):
    for ds, a in per_template.items():
        ap = _ap(a, ds, PROFILE.templates)
        assert all(np.isfinite(v) and v > 0 for k, v in ap.items() if k != "PB-negative"), (ds, ap)
        std, under, over = (np.mean([ap[t] for t in g]) for g in (STANDARD, UNDER, OVER))
        assert std > under and std > over, (ds, std, under, over)
        for bad in ("PB-negative", "PB-relational"):  # Pro-Bench types the detector misreads: clearly worse
            assert ap[bad] < 0.75 * std, (ds, bad, ap[bad], std)
        assert ap["PB-negative"] < min(ap[t] for t in PRESETS), (ds, ap)


def test_pcr_and_plc_are_neither_zero_nor_one(per_template):
    for ds, a in per_template.items():
        std = _consistency(a, ds, STANDARD)
        assert 0 < std.pcr < 1 and 0 < std.plc < 1, (ds, std.summary())
        assert std.pcr < std.recall_mean < std.recall_any  # objects found under one prompt, lost under another
        assert std.per_template["recall"].nunique() > 1
        presets = _consistency(a, ds, PRESETS)
        assert 0 < presets.pcr < std.pcr and 0 < presets.plc < std.plc, (ds, presets.summary(), std.summary())
        assert std.plc > 0.8  # the boxes move a little, not a lot


def test_each_template_draws_from_its_own_sub_stream():
    """A template's predictions depend only on the shared draw and its own stream: a run with fewer templates gives
    the same predictions for the ones it keeps, and two templates with the same effect still differ."""
    from ov3d_core.demo.annotate import annotate
    from ov3d_core.demo.build import typical_dims
    from ov3d_core.demo.rng import Stream
    from ov3d_core.demo.scenes import make_scene, scene_rng

    spec, index, seed = DATASETS[0], 4, 0
    scene = make_scene(spec, index, seed, mesh=False, backdrop=False)
    _, gts = annotate(scene, None)
    dims = typical_dims(seed)

    def simulate(profile):
        streams = {t: Stream([seed, spec.stream, index, 99, D.template_stream_key(t)]) for t in profile.templates}
        return D.simulate_prompted(profile, scene, gts, scene_rng(seed, spec, index, purpose=99), streams, dims)

    def rows(preds):
        return [(p.category, p.score, list(p.center), list(p.dims), p.origin, p.ann_id) for p in preds]

    full = simulate(PROFILE)
    few = simulate(replace(PROFILE, templates=("S3", "PB-negative")))
    assert rows(few["S3"]) == rows(full["S3"]) and rows(few["PB-negative"]) == rows(full["PB-negative"])
    assert D.PROMPT_EFFECTS["S1"] == D.PROMPT_EFFECTS["S2"] and rows(full["S1"]) != rows(full["S2"])
    shared = {p.ann_id for p in full["S1"] if p.origin == "object"} & {p.ann_id for p in full["S2"]
                                                                      if p.origin == "object"}
    assert shared  # the same objects, found under both, with boxes that moved a little
    s1 = {p.ann_id: p for p in full["S1"] if p.origin == "object"}
    s2 = {p.ann_id: p for p in full["S2"] if p.origin == "object"}
    for k in shared:
        gap = np.abs(np.subtract(s1[k].center, s2[k].center)).max()
        assert 0 < gap < 0.5 * max(s1[k].dims), (k, gap)


# ------------------------------------------------------------------------------------------------ image subsets
def test_image_subsets_resolve_to_the_stated_sizes(tiny_benchmark, ann_benchmark, ann_build):
    from ov3d_core.io.config import ImageRule
    from ov3d_core.io.image_subsets import rule_subset

    for b, n_images in ((tiny_benchmark, TINY_IMAGES), (ann_benchmark, EVAL_IMAGES)):
        for spec in DATASETS:
            ds = spec.name
            ids = b.dataset(ds).images["image_id"].to_numpy()
            assert len(ids) == n_images
            assert b.image_subsets(ds) == ("prompt_probe", "runtime")
            probe, runtime = b.image_subset(ds, "prompt_probe"), b.image_subset(ds, "runtime")
            assert len(probe) == min(PROMPT_PROBE_IMAGES, n_images) and np.isin(probe, ids).all()
            assert len(runtime) == min(RUNTIME_IMAGES, n_images) and np.isin(runtime, ids).all()
            assert runtime.tolist() == runtime_subset(spec, n_images, 0)
            assert b.run_spec(RUN, ds).runtime.images == len(runtime)
    # the 60-image build: the runtime list is a proper subset, and a seeded one (not the first 50 images)
    runtime = ann_benchmark.image_subset("demo_indoor", "runtime")
    assert len(runtime) == 50 < EVAL_IMAGES and runtime.tolist() != list(range(100000, 100050))
    text = (ann_build[0] / runtime_subset_file(DATASETS[0])).read_text()
    assert text.startswith("# runtime image subset of demo_indoor")
    # at the default size the probe is a proper subset, and the YAML says so
    assert PROMPT_PROBE_IMAGES < DEFAULT_IMAGES
    text = _benchmark_yaml(0, annotations_only=False)
    doc = yaml.safe_load(text)
    for d in doc["datasets"]:
        assert d["image_subsets"]["prompt_probe"] == {"rule": "random", "n": PROMPT_PROBE_IMAGES, "seed": 0}
    assert "proper subset" in text.split("prompt_probe:")[1].splitlines()[0]
    ids = np.arange(100000, 100000 + DEFAULT_IMAGES)
    probe = rule_subset(ImageRule("random", PROMPT_PROBE_IMAGES, 0), ids)
    assert len(probe) == PROMPT_PROBE_IMAGES and probe.tolist() != ids[:PROMPT_PROBE_IMAGES].tolist()
