"""A new session re-checks the input files of the shared ``Analysis`` (``cache.fresh_key``): an edited predictions
file gives the new session the new numbers; unchanged files are not re-read (same Analysis, same loaded objects).

Each test writes its own mini benchmark (``minibench``), since it edits files of it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from streamlit.testing.v1 import AppTest

from ov3d_app import cache
from ov3d_core.analysis import Analysis, View
from tests.app.minibench import build

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def _session(cfg: Path) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params["src"] = "config"
    at.query_params["cfg"] = str(cfg)
    at.query_params["ds"] = "MiniIndoor"
    at.run()
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    return at


def _ap_shown(at: AppTest, run: str) -> float:
    board = at.dataframe[0].value.set_index(["dataset", "run"])
    return float(board.loc[("MiniIndoor", run), "AP3D"])


def _ap_fresh(cfg: Path, run: str) -> float:
    """The AP3D of a run from an Analysis built here from the files (not the app's)."""
    return float(Analysis.from_yaml(cfg).leaderboard_row(View(dataset="MiniIndoor", run=run))["AP3D"])


def test_a_new_session_sees_an_edited_predictions_file(tmp_path):
    cfg = build(tmp_path / "mini")
    preds = tmp_path / "mini" / "MiniIndoor" / "good" / "preds.json"
    first = _session(cfg)
    before = _ap_shown(first, "good")
    assert abs(before - _ap_fresh(cfg, "good")) < 5e-3  # the table shows 2 decimals at most

    recs = json.loads(preds.read_text())
    preds.write_text(json.dumps([r for r in recs if r["score"] < 0.9]))  # the confident TPs are gone
    expected = _ap_fresh(cfg, "good")
    assert expected < before - 1.0  # the edit matters

    second = _session(cfg)
    assert abs(_ap_shown(second, "good") - expected) < 5e-3
    assert abs(_ap_shown(second, "sloppy") - _ap_fresh(cfg, "sloppy")) < 5e-3  # the untouched run too
    first.run()  # a session that was already open keeps one consistent state until it re-checks
    assert abs(_ap_shown(first, "good") - before) < 5e-3


def test_unchanged_inputs_are_not_re_read_by_a_new_session(tmp_path):
    cfg = build(tmp_path / "mini")
    _session(cfg)
    base = cache.config_key(cfg)
    key = cache.fresh_key(base)
    a = cache.analysis(key)
    loaded = dict(a.benchmark._datasets), dict(a.benchmark._runs)
    assert loaded[0] and loaded[1]  # the first session loaded files

    again = _session(cfg)
    assert not again.exception
    assert cache.fresh_key(base) == key
    b = cache.analysis(key)
    assert b is a  # the same shared Analysis ...
    assert all(b.benchmark._datasets[k] is v for k, v in loaded[0].items())  # ... with the objects it had loaded
    assert all(b.benchmark._runs[k] is v for k, v in loaded[1].items())


def test_a_rewrite_that_keeps_size_and_mtime_is_still_noticed(tmp_path):
    cfg = build(tmp_path / "mini")
    base = cache.config_key(cfg)
    key = cache.fresh_key(base)
    preds = tmp_path / "mini" / "MiniOutdoor" / "sloppy" / "preds.json"
    st = preds.stat()
    text = preds.read_text()
    preds.write_text(text.replace("0.7", "0.6", 1))  # same size
    os.utime(preds, ns=(st.st_atime_ns, st.st_mtime_ns))  # and the old mtime: only ctime tells
    assert preds.stat().st_size == st.st_size and preds.stat().st_mtime_ns == st.st_mtime_ns
    new = cache.fresh_key(base)
    assert new != key and cache.path_of(new) == cache.path_of(key) == str(cfg.resolve())
    assert cache.fresh_key(base) == new  # and then it is current
    assert cache.analysis(new) is not cache.analysis(key)
