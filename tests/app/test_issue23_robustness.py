"""The Prompt robustness page (issue 23, items 2, 7, 8): both kinds of prompted runs, with the numbers of the
Analysis calls behind them -- the prompt-conditioned run's own files (PLC below 1: its boxes move), the remapped
closed-vocabulary run X* (boxes shared) with FG-OVD's tiers and the NMS median rank."""

from __future__ import annotations

import numpy as np

from ov3d_core.analysis import Analysis, RemapSpec, View
from tests.app.test_pages import app, metric, problems

DS = "demo_indoor"


def test_the_prompt_conditioned_run_is_measured_on_its_files(tiny_demo):
    at = app("app_pages/robustness.py", ds=DS)
    assert not problems(at), problems(at)
    assert at.selectbox(key="rb_run").options == ["cubercnn_star*", "promptable"]
    at.selectbox(key="rb_run").set_value("promptable").run()
    assert not problems(at), problems(at)
    a = Analysis.from_yaml(tiny_demo / "benchmark.yaml")
    v = View(DS, "promptable")
    s, c, fs = a.prompt_sensitivity(v), a.consistency(v), a.formulation_sensitivity(v)
    assert metric(at, "CV (σ/μ)") == f"{s.cv:.3f}"
    assert metric(at, "PCR") == f"{c.pcr:.3f}" and metric(at, "PLC") == f"{c.plc:.3f}"
    assert c.plc < 1  # its boxes move with the prompt
    assert metric(at, "Largest ΔmAP") == f"{fs.max_delta:.2f}"
    shown = next(d.value for d in at.dataframe if "template" in d.value.columns and "AP3D" in d.value.columns)
    np.testing.assert_allclose(shown["AP3D"].to_numpy(float), a.template_scores(v)["AP3D"].to_numpy(float))
    assert not any("Median rank" == m.label for m in at.metric)  # FG-OVD ranks need a remapped run's scores


def test_the_remapped_run_shows_fgovd_tiers_and_nms_ranks(tiny_demo):
    at = app("app_pages/robustness.py", ds=DS)
    at.selectbox(key="rb_run").set_value("cubercnn_star*").run()
    assert not problems(at), problems(at)
    a = Analysis.from_yaml(tiny_demo / "benchmark.yaml")
    v = View(DS, "cubercnn_star", remap=RemapSpec(encoder="proxy"))
    assert metric(at, "PLC") == f"{a.consistency(v).plc:.3f}" == "1.000"  # boxes shared across templates
    r0, r1 = a.label_rank_summary(v), a.label_rank_summary(v, nms=True)
    assert metric(at, "Median rank") == (f"{r0['median']:g}" if np.isfinite(r0["median"]) else "—")
    assert metric(at, "Median rank, class-agnostic NMS") == (f"{r1['median']:g}" if np.isfinite(r1["median"])
                                                             else "—")
    tiers = next(d.value for d in at.dataframe if "tier" in d.value.columns)
    want = a.hard_negative_tiers(v)
    assert tiers["tier"].tolist() == want["tier"].tolist()
    np.testing.assert_allclose(tiers["AP3D"].to_numpy(float), want["AP3D"].to_numpy(float), equal_nan=True)


def test_a_benchmark_without_prompted_runs_says_so(mini_config):
    at = app("app_pages/robustness.py", src="config", cfg=str(mini_config))
    assert not problems(at), problems(at)
    assert any("answers to a prompt" in i.value for i in at.info)


def test_data_source_lists_the_runs_as_table_1(tiny_demo):
    at = app("app_pages/data_source.py")
    assert not problems(at), problems(at)
    shown = next(d.value for d in at.dataframe if "vocabulary" in d.value.columns)
    want = Analysis.from_yaml(tiny_demo / "benchmark.yaml").methods()
    assert shown["run"].tolist() == want["run"].tolist()
    assert shown.set_index("run").loc["promptable", "prompt"] == "per-template files"
    assert shown.set_index("run").loc["cubercnn_star", "vocabulary"] == "closed"
