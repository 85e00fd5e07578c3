"""The disk cache of leaderboard rows and per-category tables: a second Analysis of the same files shows them without
loading any run, equal to a fresh computation; edited inputs, edited code, damaged entries and remapped views are
recomputed."""

from __future__ import annotations

import json
import logging
import math

import numpy as np
import pandas as pd
import pytest

from ov3d_core import scorecache
from ov3d_core.analysis import Analysis, RemapSpec
from ov3d_core.benchmark import Benchmark
from ov3d_core.scorecache import decode_frame, encode_frame
from tests.app import minibench


@pytest.fixture
def cfg(tmp_path):
    return minibench.build(tmp_path / "bench", n_images=4)


def _pairs(a: Analysis):
    return [(d, r) for d in a.datasets for r in a.runs(d)]


def _same_row(x: dict, y: dict) -> None:
    assert x.keys() == y.keys()
    for k in x:
        if isinstance(x[k], float) and math.isnan(x[k]):
            assert isinstance(y[k], float) and math.isnan(y[k]), k
        else:
            assert x[k] == y[k] and type(x[k]) is type(y[k]), k


def _no_run_loads(monkeypatch):
    def refuse(self, *a, **k):
        raise AssertionError("a run was loaded")

    monkeypatch.setattr(Benchmark, "_load_run", refuse)


def test_second_analysis_reads_rows_and_tables_without_loading_runs(cfg, monkeypatch):
    first = Analysis.from_yaml(cfg)
    rows = {p: first.leaderboard_row(first.view(dataset=p[0], run=p[1])) for p in _pairs(first)}
    tables = {p: first.per_category(first.view(dataset=p[0], run=p[1])) for p in _pairs(first)}
    assert len(rows) == 4 and first._scores.misses == 8 and first._scores.hits == 0
    assert len(list((cfg.parent / ".ov3d_cache" / "scores").glob("*.json"))) == 8
    _no_run_loads(monkeypatch)
    second = Analysis.from_yaml(cfg)
    for (d, r), row in rows.items():
        v = second.view(dataset=d, run=r)
        _same_row(second.leaderboard_row(v), row)
        pd.testing.assert_frame_equal(second.per_category(v), tables[d, r])
    assert second._scores.hits == 8 and second._scores.misses == 0
    board = second.leaderboard(second.view(), datasets=second.datasets)  # the Overview's table, all from disk
    assert len(board) == 4


def test_cached_numbers_are_the_computed_ones(cfg):
    a = Analysis.from_yaml(cfg)
    for d, r in _pairs(a):
        v = a.view(dataset=d, run=r)
        row = a.leaderboard_row(v)
        sc = a.score(v)
        for k, val in sc.summary.items():
            if k in row:
                np.testing.assert_equal(row[k], val)
        pd.testing.assert_frame_equal(a.per_category(v), sc.per_category)


def test_an_edited_prediction_file_is_scored_again(cfg, monkeypatch):
    a = Analysis.from_yaml(cfg)
    d, r = _pairs(a)[0]
    before = a.leaderboard_row(a.view(dataset=d, run=r))
    pred = a.benchmark.run_spec(r, d).predictions
    recs = json.loads(pred.read_text())
    pred.write_text(json.dumps(recs[: len(recs) // 2]))  # half the detections are gone
    fresh = Analysis.from_yaml(cfg)
    after = fresh.leaderboard_row(fresh.view(dataset=d, run=r))
    assert fresh._scores.misses == 1
    sc = fresh.score(fresh.view(dataset=d, run=r))
    np.testing.assert_equal(after["AP3D"], sc.summary["AP3D"])
    assert after["n_pred"] == int(np.count_nonzero(sc.view.evaluated)) < before["n_pred"]


def test_other_code_misses(cfg, monkeypatch):
    a = Analysis.from_yaml(cfg)
    d, r = _pairs(a)[0]
    a.leaderboard_row(a.view(dataset=d, run=r))
    monkeypatch.setattr(scorecache, "code_version", lambda: "edited")
    b = Analysis.from_yaml(cfg)
    b.leaderboard_row(b.view(dataset=d, run=r))
    assert b._scores.misses == 1 and b._scores.hits == 0


@pytest.mark.parametrize("damage", ["flip", "truncate", "other_key", "not_json"])
def test_a_damaged_entry_is_recomputed(cfg, damage, caplog):
    a = Analysis.from_yaml(cfg)
    d, r = _pairs(a)[0]
    want = a.leaderboard_row(a.view(dataset=d, run=r))
    (entry,) = (cfg.parent / ".ov3d_cache" / "scores").glob("*.json")
    text = entry.read_text()
    if damage == "flip":  # a digit of the payload changes: its digest no longer matches
        i = text.index("AP3D") + 12
        text = text[:i] + ("1" if text[i] != "1" else "2") + text[i + 1:]
    elif damage == "truncate":
        text = text[: len(text) // 2]
    elif damage == "other_key":
        obj = json.loads(text)
        obj["key"] = "0" * 32
        text = json.dumps(obj)
    else:
        text = "\x00garbage"
    entry.write_text(text)
    b = Analysis.from_yaml(cfg)
    with caplog.at_level(logging.WARNING, logger="ov3d_core.scorecache"):
        got = b.leaderboard_row(b.view(dataset=d, run=r))
    _same_row(got, want)
    assert b._scores.misses == 1 and "ignoring" in caplog.text


def test_remapped_views_are_not_stored(cfg):
    a = Analysis.from_yaml(cfg)
    d, r = _pairs(a)[0]
    v = a.view(dataset=d, run=r)
    remapped = v.with_(remap=RemapSpec(encoder="proxy", template="S1"))
    assert a._persisted("leaderboard_row", remapped, lambda: {"x": 1.0}, dict, dict) == {"x": 1.0}
    assert not (cfg.parent / ".ov3d_cache" / "scores").exists()


def test_frames_round_trip_exactly():
    df = pd.DataFrame({"category": pd.Series(["chair", "sofa", "bed"], dtype="str"),
                       "AP3D": [12.345678901234567, np.nan, 0.1 + 0.2],
                       "n_gt": np.array([3, 0, 7], np.int64), "flag": [True, False, True],
                       "ranked": pd.array([1, None, 3], dtype="Int64"),
                       "mixed": np.array(["a", None, "c"], object)})
    back = decode_frame(json.loads(json.dumps(encode_frame(df))))
    pd.testing.assert_frame_equal(back, df)
    assert back["AP3D"].iloc[2] == 0.1 + 0.2


def test_frames_outside_the_plain_types_are_refused():
    with pytest.raises(TypeError):
        encode_frame(pd.DataFrame({"x": [object()]}))
    with pytest.raises(TypeError):
        encode_frame(pd.DataFrame({"x": [1.0]}, index=[5]))
    with pytest.raises(ValueError):
        decode_frame({"columns": ["x"], "dtypes": ["datetime64[ns]"], "data": [[0]]})


def test_the_first_cached_result_hashes_every_input_at_once(cfg, monkeypatch):
    # the digests of all GT and prediction files are taken together (on threads), not one view at a time
    from ov3d_core.io import loadcache

    seen = []
    real = loadcache.file_digest

    def spy(path, **kw):
        seen.append(str(path))
        return real(path, **kw)

    monkeypatch.setattr(loadcache, "file_digest", spy)
    a = Analysis.from_yaml(cfg)
    d, r = _pairs(a)[0]
    a.leaderboard_row(a.view(dataset=d, run=r))
    cfg_ = a.benchmark.config
    wanted = {str(f) for s in cfg_.datasets.values() for f in s.gt} | {str(s.predictions) for s in cfg_.runs.values()}
    assert len(wanted) == 6 and wanted <= set(seen)
