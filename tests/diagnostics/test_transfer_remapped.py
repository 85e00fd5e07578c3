"""Remapped runs as first-class runs (issue 23, item 1): with a remap spec, every closed-vocabulary run takes part in
the leaderboard, the domain-transfer tables and the three-axis table as ``X*`` beside ``X``, with the remapped run's
own AP (not the closed vocabulary's), in-domain where ``X`` is; the prompt axis is measured where a run has a prompt
response of its own."""

from __future__ import annotations

import numpy as np
import pytest

from ov3d_core.analysis import Analysis, RemapSpec, View


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    from ov3d_core.demo.build import build_demo

    out = tmp_path_factory.mktemp("demo_star") / "demo"
    build_demo(out, images=12, seed=0, annotations_only=True)
    return Analysis.from_yaml(out / "benchmark.yaml")


def test_transfer_lists_the_remapped_twin_with_its_own_ap(demo):
    spec = RemapSpec(encoder="proxy")
    view = demo.view(demo.datasets[0])
    star_runs = {d: demo.remapped_runs(d, spec) for d in demo.datasets}
    assert all(r == ["cubercnn_star"] for r in star_runs.values())  # the demo's one closed-vocabulary run
    plain = demo.transfer(view)["transfer"]
    assert "cubercnn_star*" not in set(plain["run"])
    tt = demo.transfer(view, remap=spec)["transfer"]
    assert set(tt["run"]) == set(plain["run"]) | {"cubercnn_star*"}
    for d in demo.datasets:
        row = tt[(tt["run"] == "cubercnn_star*") & (tt["dataset"] == d)].iloc[0]
        own = demo.summary(View(d, "cubercnn_star", remap=spec))
        assert row["map3d"] == pytest.approx(own["AP3D"], abs=1e-12)
        raw = tt[(tt["run"] == "cubercnn_star") & (tt["dataset"] == d)].iloc[0]
        assert raw["map3d"] == pytest.approx(demo.summary(View(d, "cubercnn_star"))["AP3D"], abs=1e-12)
        assert bool(row["in_domain"]) == bool(raw["in_domain"])  # trained where X was trained
    # the remap changes the outdoor AP (the paper's central result hangs on it): the twin is not a copy of X
    out = [d for d in demo.datasets if demo.environment(d) == "outdoor"]
    star = tt[tt["run"] == "cubercnn_star*"].set_index("dataset").loc[out, "map3d"].to_numpy()
    raw = tt[tt["run"] == "cubercnn_star"].set_index("dataset").loc[out, "map3d"].to_numpy()
    assert not np.allclose(star, raw)
    axes = demo.transfer(view, remap=spec)["three_axis"].set_index("run")
    assert "cubercnn_star*" in axes.index
    assert axes.loc["cubercnn_star*", "semantic"] == pytest.approx(
        np.mean([demo.summary(View(d, "cubercnn_star", remap=spec))["AP3D"] for d in demo.datasets]), abs=1e-9)


def test_leaderboard_with_remap_adds_the_twin_after_its_run(demo):
    spec = RemapSpec(encoder="proxy")
    d = demo.datasets[0]
    lb = demo.leaderboard(demo.view(d), remap=spec)
    runs = list(lb["run"])
    assert runs[runs.index("cubercnn_star") + 1] == "cubercnn_star*"
    assert len(lb) == len(demo.runs(d)) + 1


def test_prompt_cv_keys_match_the_rows_it_measures(demo):
    spec = RemapSpec(encoder="proxy")
    cv = demo.prompt_cv(demo.view(demo.datasets[0]), spec, ("S1", "S2", "O1"))
    # a prompt response of its own: the remapped closed-vocabulary run, and the prompt-conditioned run's files
    assert set(cv) == {"cubercnn_star*", "promptable"}
    own = np.mean([demo.prompt_sensitivity(View(d, "promptable"), ("S1", "S2", "O1")).cv for d in demo.datasets])
    assert cv["promptable"] == pytest.approx(own, rel=1e-12)
    expect = np.mean([demo.prompt_sensitivity(View(d, "cubercnn_star", remap=spec), ("S1", "S2", "O1")).cv
                      for d in demo.datasets])
    assert cv["cubercnn_star*"] == pytest.approx(expect, rel=1e-12)
    axes = demo.transfer(demo.view(demo.datasets[0]), prompt_cv=cv, remap=spec)["three_axis"].set_index("run")
    assert axes.loc["cubercnn_star*", "prompt_robustness"] == pytest.approx(1 - expect, rel=1e-12)
    assert np.isnan(axes.loc["cubercnn_star", "prompt_robustness"])


def test_runtime_table_and_accuracy_latency_take_the_remapped_run(demo):
    """Table 10: the declared stages of every run (the demo declares them), and X* = the semantic stage measured when
    its crops were embedded (the proxy encoder's timing, CPU numbers) + X's declared geometry stage."""
    spec = RemapSpec(encoder="proxy")
    d = demo.datasets[-1]
    fresh = Analysis.from_yaml(demo.config_path)  # nothing remapped yet in this object: runtime embeds first
    rt = fresh.runtime(d, remap=spec).set_index("run")
    assert "cubercnn_star*" in rt.index
    star, base = rt.loc["cubercnn_star*"], rt.loc["cubercnn_star"]
    assert star["geometry_ms"] == pytest.approx(base["geometry_ms"])
    assert np.isfinite(star["semantic_ms"]) and star["semantic_ms"] > 0
    assert star["total_ms"] == pytest.approx(star["semantic_ms"] + star["geometry_ms"])
    assert "CPU" in star["device"]
    al = demo.accuracy_latency(demo.view(d), remap=spec).set_index("run")
    assert al.loc["cubercnn_star*", "metric"] == pytest.approx(demo.summary(View(d, "cubercnn_star", remap=spec))["AP3D"])
    assert al.loc["cubercnn_star*", "total_ms"] == pytest.approx(star["total_ms"])
    assert bool(al.loc["cubercnn_star*", "plotted"])


def test_hard_negative_tiers_use_the_benchmarks_ontology(demo):
    """FG-OVD tiers of the remapped run: every difficulty and ontology tier at every N, the super-categories those
    of the config's ontology (the paper's nine): the same table as the fgovd function given them by hand."""
    from ov3d_core.diagnostics.fgovd import tier_vocabulary_curve
    from ov3d_core.diagnostics.semantic import cosine_similarity_matrix
    from ov3d_core.ontology import resolve_ontology

    spec = RemapSpec(encoder="proxy")
    v = View(demo.datasets[0], "cubercnn_star", remap=spec)
    got = demo.hard_negative_tiers(v, ns=(1, 3))
    assert set(got["tier"]) == {"hard", "medium", "easy", "trivial", "same_super", "other_super"}
    onto = resolve_ontology("ov3d-bench")
    vocab = list(demo.vocabulary(v))
    c = demo.context(v)
    want = tier_vocabulary_curve(c.ap_inputs(), demo.remap_result(v).full,
                                 cosine_similarity_matrix(demo.class_text_embeddings(v)), n_categories=len(vocab),
                                 ns=(1, 3), tiers=("hard", "medium", "easy", "trivial", "same_super", "other_super"),
                                 super_of=np.array([onto.names.index(onto.super_category(x)) for x in vocab]),
                                 iou_threshold=0.5)
    import pandas as pd

    pd.testing.assert_frame_equal(got.reset_index(drop=True), want.reset_index(drop=True))


def test_a_template_file_is_read_once_per_analysis(demo, monkeypatch):
    """The remapper and the class text embeddings of one Analysis read the templates file once between them, and
    what they rank with is the file's templates."""
    from ov3d_core.analysis import prompts
    from ov3d_core.remap.templates import resolve_templates

    reads = []
    real = prompts.template_sets.load_templates
    monkeypatch.setattr(prompts.template_sets, "load_templates", lambda path=None: reads.append(path) or real(path))
    a = Analysis(demo.benchmark)  # a memo of its own
    spec = RemapSpec(encoder="proxy")
    views = [View(d, "cubercnn_star", remap=spec) for d in demo.datasets]
    text = [a.class_text_embeddings(v) for v in views]
    rm = a.remapper(views[0].dataset, "cubercnn_star", spec)
    a.class_text_embeddings(views[0])
    assert reads == [None]
    assert np.array_equal(rm.text_embeddings(spec.template), text[0])
    assert list(rm.templates) == real() and rm.resolve(spec.template) == resolve_templates(spec.template, real())
