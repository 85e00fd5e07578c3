"""The overview's statistics equal the front door's (app == core): the intervals shown on the leaderboard, its chart
and the per-category table are ``Analysis.bootstrap(...)`` for the same resamples, level and seed; the significance
tiers are ``Analysis.leaderboard_tiers``; the paired tables are ``Analysis.paired``. The reference is a separate
``Analysis`` of the same config (not the app's cached one)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from ov3d_core.analysis import Analysis
from ov3d_core.eval.constants import SUMMARY_KEYS
from tests.app.test_pages import app, problems
from tests.app.test_parity import _frame, _plotly_array

DS = "demo_indoor"
B = 200  # the smallest choice of the page: the tests exercise the plumbing, not the interval quality
SEED = 0  # the page's seed


@pytest.fixture(scope="module")
def core(tiny_demo):
    return Analysis.from_yaml(tiny_demo / "benchmark.yaml")


@pytest.fixture(scope="module")
def stats_page(tiny_demo):
    at = app(None, ds=DS)
    at.select_slider(key="ci_B").set_value(B)
    at.select_slider(key="ci_level").set_value(0.9)
    at.toggle(key="ci_on").set_value(True).run()
    assert not problems(at), problems(at)
    return at


def test_intervals_are_off_by_default(tiny_demo):
    at = app(None, ds=DS)
    assert not problems(at), problems(at)
    assert at.toggle(key="ci_on").value is False
    assert not any("CI" in c for d in at.dataframe for c in d.value.columns)


def test_leaderboard_intervals_equal_the_bootstrap(stats_page, core):
    at = stats_page
    long = _frame(at, "dataset", "run", "metric", "value", "lo", "hi", "se", "n_valid")
    runs = core.runs(DS)
    assert sorted(long["run"].unique()) == sorted(runs)
    board = _frame(at, "AP3D 90% CI").set_index("run")
    for run in runs:
        ref = core.bootstrap(core.view(DS, run), n_resamples=B, seed=SEED, level=0.9).to_frame()
        shown = long[long["run"] == run].drop(columns=["dataset", "run"]).reset_index(drop=True)
        pd.testing.assert_frame_equal(shown, ref, check_exact=False, rtol=1e-12)
        assert (ref["level"] == 0.9).all() and (ref["method"] == "bca").all()
        r = ref.set_index("metric")
        for m in SUMMARY_KEYS:  # the "[lo, hi]" column beside each headline column
            d = 3 if m == "recall3D@15" else 1
            want = f"[{r.loc[m, 'lo']:.{d}f}, {r.loc[m, 'hi']:.{d}f}]" if np.isfinite(r.loc[m, "lo"]) else "—"
            assert board.loc[run, f"{m} 90% CI"] == want, (run, m)
    # a wider level gives wider intervals from the same resamples
    ref95 = core.bootstrap(core.view(DS, runs[0]), n_resamples=B, seed=SEED, level=0.95).interval("AP3D")
    lo90, hi90 = long[(long["run"] == runs[0]) & (long["metric"] == "AP3D")][["lo", "hi"]].iloc[0]
    assert ref95[0] <= lo90 <= hi90 <= ref95[1] and (lo90, hi90) != ref95


def test_leaderboard_chart_has_the_intervals_as_error_bars(stats_page, core):
    spec = next(json.loads(c.proto.spec) for c in stats_page.get("plotly_chart") if "(90% intervals)" in c.proto.spec)
    traces = {tr["name"]: tr for tr in spec["data"]}
    assert sorted(traces) == sorted(core.runs(DS))
    for run, tr in traces.items():
        f = core.bootstrap(core.view(DS, run), n_resamples=B, seed=SEED, level=0.9).to_frame().set_index("metric")
        y = _plotly_array(tr["y"])
        up, down = _plotly_array(tr["error_y"]["array"]), _plotly_array(tr["error_y"]["arrayminus"])
        for k, m in enumerate(tr["x"]):
            np.testing.assert_allclose([y[k] + up[k], y[k] - down[k]], [f.loc[m, "hi"], f.loc[m, "lo"]],
                                       rtol=1e-9, atol=1e-9, err_msg=f"{run} {m}")


def test_per_category_intervals_equal_the_bootstrap(stats_page, core):
    pc = _frame(stats_page, "run", "category", "AP3D", "AP3D_lo", "AP3D_hi")
    for run, shown in pc.groupby("run", sort=False):
        ref = core.bootstrap(core.view(DS, run), n_resamples=B, seed=SEED, level=0.9).per_category_frame()
        got = shown.set_index("category").loc[ref["category"]]
        np.testing.assert_allclose(got["AP3D_lo"].to_numpy(np.float64), ref["lo"].to_numpy(), rtol=1e-12,
                                   equal_nan=True)
        np.testing.assert_allclose(got["AP3D_hi"].to_numpy(np.float64), ref["hi"].to_numpy(), rtol=1e-12,
                                   equal_nan=True)
        np.testing.assert_allclose(got["AP3D"].to_numpy(np.float64), ref["value"].to_numpy(), rtol=1e-12,
                                   equal_nan=True)


def test_significance_tiers_equal_the_core(stats_page, core):
    at = stats_page
    for corr in ("holm", "bh"):
        at.radio(key="tier_corr").set_value(corr).run()
        assert not problems(at), problems(at)
        shown = _frame(at, "rank", "run", "gap", "p_adjusted", "tier")
        ref = core.leaderboard_tiers(core.view(DS), metric="AP3D", n_resamples=B, seed=SEED, level=0.9,
                                     correction=corr)
        pd.testing.assert_frame_equal(shown.reset_index(drop=True), ref, check_exact=False, rtol=1e-12)
        named = "Holm" if corr == "holm" else "Benjamini-Hochberg"
        assert any(named in c.value and "gaps" in c.value for c in at.caption)


@pytest.mark.parametrize("mode", ["two runs", "two protocols"])
def test_paired_tables_equal_the_core(stats_page, core, mode):
    at = stats_page
    at.toggle(key="paired_on").set_value(True).run()
    at.radio(key="pair_mode").set_value(mode).run()
    runs = core.runs(DS)
    if mode == "two runs":
        at.selectbox(key="pair_a").set_value(runs[1]).run()
        at.selectbox(key="pair_b").set_value(runs[3]).run()
        va, vb = core.view(DS, runs[1]), core.view(DS, runs[3])
    else:
        at.selectbox(key="pair_run").set_value(runs[2]).run()
        va, vb = core.view(DS, runs[2]), core.view(DS, runs[2], protocol="target-aware")
    at.radio(key="pair_corr").set_value("bh").run()
    assert not problems(at), problems(at)
    ref = core.paired(va, vb, n_resamples=B, seed=SEED, level=0.9, correction="bh")
    table = _frame(at, "metric", "diff", "lo", "hi", "p_value", "significant")
    pd.testing.assert_frame_equal(table.reset_index(drop=True), ref.to_frame(), check_exact=False, rtol=1e-12)
    per_cat = _frame(at, "category", "diff", "p_adjusted", "correction")
    pd.testing.assert_frame_equal(per_cat.reset_index(drop=True), ref.per_category_frame(), check_exact=False,
                                  rtol=1e-12)
    assert (per_cat["correction"] == "bh").all()
    assert any("Benjamini-Hochberg" in m.value for m in at.markdown)
    if mode == "two protocols":
        assert list(table.columns[1:3]) == ["dataset-level", "target-aware"]


def test_leaderboard_opens_the_runs_mining_list(tiny_demo):
    at = app(None, ds=DS, run="wild_like")
    at.button(key="lb_mine").click().run()
    assert not problems(at), problems(at)
    assert at.title[0].value == "Failure mining"
    assert at.selectbox(key="w:focus_run:mine").value == "wild_like"
