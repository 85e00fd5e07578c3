"""Issue 25, item 9: the prompt lab's θ and its first open.

- θ looked inert (0.00 → 0.10 changed nothing on the demo) and the slider gave no hint where the similarities lie:
  ``Analysis.theta_profile`` gives the distribution of the top-1 values over the slider's range and the boxes each
  θ keeps; the page draws it as a strip above the slider and says how many boxes the current θ keeps.
- The first open embedded the run's crops (~10 s on the demo): the app's background warm-up now computes what the
  prompt lab opens on (``cache.warm_prompt_lab``) from the first page view, so the page finds it computed.
  Timings: bench/RESULTS.md, "Issue 25: prompt lab" (never asserted here)."""

from __future__ import annotations

import json
import shutil
import time

import numpy as np
import pytest

from ov3d_app.cache import DEMO_ENV
from ov3d_core.analysis import Analysis, RemapSpec
from ov3d_core.analysis.view import score_key
from tests.app.test_pages import app, problems

DS = "demo_indoor"


@pytest.fixture(scope="module")
def core(tiny_demo):
    return Analysis.from_yaml(tiny_demo / "benchmark.yaml")


def _view(core, theta=None):
    run = core.remappable_runs(DS, "proxy")[0]
    return core.view(DS, run, remap=RemapSpec(encoder="proxy", theta=theta))


def test_theta_profile_counts_what_the_remap_rule_keeps(core):
    v = _view(core, theta=0.3)
    prof = core.theta_profile(v)  # cosine: the slider's range -0.2 .. 1.0, step 0.01
    assert prof["theta"].iloc[0] == pytest.approx(-0.2) and prof["theta"].iloc[-1] == pytest.approx(1.0)
    assert len(prof) == 121
    res = core.remap_result(v)
    top1 = np.asarray(res.top1)[np.isfinite(res.top1)]
    for k in (0, 30, 50, 80, 120):
        th = prof["theta"].iloc[k]
        assert prof["n_kept"].iloc[k] == np.count_nonzero(top1 >= th)
        assert prof["n_at"].iloc[k] == (np.count_nonzero((top1 >= th) & (top1 < prof["theta"].iloc[k + 1]))
                                        if k < 120 else np.count_nonzero(top1 >= th))
    assert prof["n_at"].sum() == np.count_nonzero(top1 >= -0.2)
    info = prof.attrs
    assert info["n_kept_at_theta"] == np.count_nonzero(res.keep)  # the view's θ, as the remapping keeps
    assert info["n_with_crop"] == len(top1) > 0
    assert info["top1_min"] == pytest.approx(top1.min()) and info["top1_max"] == pytest.approx(top1.max())
    assert info["share_kept_at_theta"] == pytest.approx(np.count_nonzero(res.keep) / len(top1))
    # the demo's case: every top-1 value lies above 0.1, so θ 0.00 -> 0.10 keeps the same boxes
    assert info["top1_min"] > 0.1 and prof.set_index(prof["theta"].round(2))["n_kept"][[0.0, 0.1]].nunique() == 1


def test_theta_profile_refuses_a_bad_grid(core):
    from ov3d_core.errors import InputError

    with pytest.raises(InputError):
        core.theta_profile(_view(core), lo=0.5, hi=0.2)


def test_the_slider_shows_where_the_values_lie_and_what_theta_keeps(tiny_demo, core):
    at = app("app_pages/prompt_lab.py", ds=DS)
    assert not problems(at), problems(at)
    run = at.session_state["focus_run"]
    # the trace names from the parsed spec: plotly writes "θ" as is with orjson installed, as "\u03b8" without
    strip = [c for c in at.get("plotly_chart") if "boxes kept at θ" in
             {t.get("name") for t in json.loads(c.proto.spec).get("data", [])}]
    assert len(strip) == 1  # the distribution and the kept boxes, drawn with the slider
    for theta in (0.0, 0.6):
        at.slider(key="w:theta").set_value(theta).run()
        assert not problems(at), problems(at)
        info = core.theta_profile(core.view(DS, run, remap=RemapSpec(encoder="proxy", theta=theta)),
                                  lo=-0.2, hi=1.0).attrs
        caption = next(c.value for c in at.caption if c.value.startswith("θ = "))
        assert caption.startswith(f"θ = {theta:.2f} keeps **{info['n_kept_at_theta']}** of {info['n_with_crop']} ")
        assert f"[{info['top1_min']:.2f}, {info['top1_max']:.2f}]" in caption
    assert info["n_kept_at_theta"] < info["n_with_crop"]  # θ 0.6 does keep fewer boxes


def test_the_first_page_view_computes_the_prompt_lab_in_the_background(tiny_demo, tmp_path, monkeypatch):
    from ov3d_app import cache
    import ov3d_core.remap.templates as tpl_mod

    demo = tmp_path / "demo"  # its own config key: this process has warmed nothing of it
    shutil.copytree(tiny_demo, demo, ignore=shutil.ignore_patterns(".ov3d_cache"))
    monkeypatch.setenv(DEMO_ENV, str(demo))
    at = app(None, ds=DS)  # the Overview: the first page view
    assert not problems(at), problems(at)
    a = cache.analysis(at.session_state["_inputs_key"])
    run = a.remappable_runs(DS, "proxy")[0]
    done = (str(a.benchmark.config.path), DS, run)
    deadline = time.monotonic() + 300
    while done not in cache.prompt_lab_warm and time.monotonic() < deadline:
        time.sleep(0.2)
    assert done in cache.prompt_lab_warm  # without a visit of the prompt lab
    ids = tuple(t.id for t in tpl_mod.load_templates())
    view = a.view(DS, run, iou=0.25, remap=RemapSpec(encoder="proxy", theta=0.0))
    assert ("template_scores", (score_key(view), ids)) in a._memo  # the page's table, for the page's own view
    assert list((demo / ".ov3d_cache" / "embeddings").rglob("*")), "the crops were not embedded"

    misses = a._memo.misses
    at.switch_page("app_pages/prompt_lab.py")
    at.run()
    assert not problems(at), problems(at)
    assert at.session_state["focus_run"] == run
    table = at.dataframe[1].value
    want = a.template_scores(view, ids)
    assert table["AP3D"].tolist() == pytest.approx(want["AP3D"].tolist(), nan_ok=True)
    assert a._memo.misses - misses <= 3  # the θ strip of the page at most; no embedding, no template scored


def test_only_the_open_section_is_computed_and_drawn(tiny_demo):
    """Issue 25 item 9 (each θ step re-runs the page): the sections under the template table are lazy tabs, so a step
    computes and draws the open one only: the template's detail at first, consistency / ranks and the vocabulary curve
    once their tab is chosen (and then not the detail)."""
    at = app("app_pages/prompt_lab.py", ds=DS)
    assert not problems(at), problems(at)
    labels = lambda: {m.label for m in at.metric}  # noqa: E731
    charts = lambda: [c.proto.spec for c in at.get("plotly_chart")]  # noqa: E731
    assert "Boxes kept" in labels() and not {"PCR", "Median rank"} & labels()
    assert not any("vocabulary size" in c for c in charts())
    at.session_state["pl_section"] = "Consistency and ranking"
    at.run()
    assert not problems(at), problems(at)
    assert {"PCR", "Median rank"} <= labels() and "Boxes kept" not in labels()
    at.slider(key="w:theta").set_value(0.5).run()  # a θ step keeps the open tab
    assert {"PCR", "Median rank"} <= labels() and "Boxes kept" not in labels()
    at.session_state["pl_section"] = "Vocabulary size and calibrated acceptance"
    at.run()
    assert any("vocabulary size" in c for c in charts()) and "PCR" not in labels()
