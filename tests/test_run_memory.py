"""Loaded runs within a memory budget: beyond it the least recently used run that the load cache can give back is let
go and read back on its next use, with the same arrays and the same numbers; runs given as objects always stay; a bad
``OV3D_RUN_MEMORY_MB`` is an error naming it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from ov3d_core import benchmark as bm
from ov3d_core.analysis import Analysis
from ov3d_core.benchmark import Benchmark, run_memory_budget
from ov3d_core.errors import InputError
from tests.app import minibench


@pytest.fixture
def cfg(tmp_path):
    return minibench.build(tmp_path / "bench", n_images=4)


def _keys(b: Benchmark):
    return [(r, d) for d in b.dataset_names for r in b.run_names(d)]


def _same_run(x, y) -> None:
    for f in dataclasses.fields(x.pred):
        if f.name == "data":
            assert x.pred.data.keys() == y.pred.data.keys()
            for k in x.pred.data:
                np.testing.assert_array_equal(x.pred.data[k], y.pred.data[k])
        else:
            np.testing.assert_array_equal(getattr(x.pred, f.name), getattr(y.pred, f.name))


def test_runs_beyond_the_budget_are_let_go_and_read_back_equal(cfg, monkeypatch):
    b = Benchmark.from_yaml(cfg)
    keys = _keys(b)
    assert len(keys) >= 3
    first = {k: b.run(*k) for k in keys}  # the default budget holds these small runs
    assert b.runs_released == 0 and list(b._runs) == keys
    one = max(r.pred.nbytes for r in first.values())
    monkeypatch.setattr(bm, "run_memory_budget", lambda: one)  # room for one run
    again = b.run(*keys[0])  # still loaded: the same object, now the most recent
    assert again is first[keys[0]]
    b.run(*keys[1])  # already loaded too; nothing is let go until a load happens
    b._runs.pop(keys[2])  # force a load of keys[2]: everything but it goes
    b.run(*keys[2])
    assert list(b._runs) == [keys[2]] and b.runs_released == len(keys) - 1
    back = b.run(*keys[0])  # read back from the load cache
    assert back is not first[keys[0]]
    _same_run(back, first[keys[0]])
    assert list(b._runs) == [keys[0]]


def test_numbers_are_the_same_under_a_tiny_budget(cfg, monkeypatch):
    plenty = Analysis.from_yaml(cfg)
    views = [plenty.view(dataset=d, run=r) for d in plenty.datasets for r in plenty.runs(d)]
    want = [plenty.score(v).per_category for v in views]
    want_summary = [dict(plenty.score(v).summary) for v in views]
    monkeypatch.setattr(bm, "run_memory_budget", lambda: 1)
    tight = Analysis.from_yaml(cfg)
    for v, w, ws in zip(views, want, want_summary):
        pd.testing.assert_frame_equal(tight.score(v).per_category, w)
        np.testing.assert_equal(dict(tight.score(v).summary), ws)
    for v, w in zip(views, want):  # each run is read back once more, in the same order
        tight.clear()
        pd.testing.assert_frame_equal(tight.score(v).per_category, w)
    assert tight.benchmark.runs_released >= 2 * len(views) - 2
    assert len(tight.benchmark._runs) == 1


def test_runs_given_as_objects_are_never_let_go(cfg, monkeypatch, tmp_path):
    src = Benchmark.from_yaml(cfg)
    d = src.dataset_names[0]
    runs = [src.run(r, d) for r in src.run_names(d)]
    b = Benchmark.from_objects(src.dataset(d), runs, cache_dir=tmp_path / "c")
    monkeypatch.setattr(bm, "run_memory_budget", lambda: 1)
    for r in runs:
        assert b.run(r.name, d) is r
    assert b.runs_released == 0 and len(b._runs) == len(runs)


@pytest.mark.parametrize("raw", ["abc", "0", "-5", "1.5", ""])
def test_a_bad_budget_variable_is_an_error_naming_it(monkeypatch, raw):
    monkeypatch.setenv("OV3D_RUN_MEMORY_MB", raw)
    with pytest.raises(InputError, match="OV3D_RUN_MEMORY_MB"):
        run_memory_budget()


def test_the_budget_variable_in_megabytes(monkeypatch):
    monkeypatch.delenv("OV3D_RUN_MEMORY_MB", raising=False)
    assert run_memory_budget() == bm.RUN_MEMORY_MB_DEFAULT << 20
    monkeypatch.setenv("OV3D_RUN_MEMORY_MB", "100")
    assert run_memory_budget() == 100 << 20


def test_a_warm_up_lets_go_of_its_own_loads_before_the_run_in_use(cfg, monkeypatch):
    keys = _keys(Benchmark.from_yaml(cfg))
    assert len(keys) >= 3
    sizes = {k: Benchmark.from_yaml(cfg).run(*k).pred.nbytes for k in keys}
    page, others = keys[0], keys[1:]
    # room for the page's run and one more: each later warm load lets go of the one before
    monkeypatch.setattr(bm, "run_memory_budget", lambda: sizes[page] + max(sizes[k] for k in others))

    b = Benchmark.from_yaml(cfg)
    b.run(*page)
    for k in others:
        b.warm(*k)
        assert k in b._pairs
    assert list(b._runs) == [others[-1], page]  # the page's run stays, and stays the most recent
    assert b.runs_released == len(others) - 1

    plain = Benchmark.from_yaml(cfg)  # the same loads as uses: the page's run is the one let go
    plain.run(*page)
    for k in others:
        plain.pairs(*k)
    assert page not in plain._runs


def test_warming_a_loaded_run_keeps_the_order_of_use(cfg):
    b = Benchmark.from_yaml(cfg)
    keys = _keys(b)
    b.run(*keys[0])
    b.run(*keys[1])
    b.warm(*keys[0])
    assert list(b._runs) == [keys[0], keys[1]] and keys[0] in b._pairs


def test_run_size_counts_every_array_field_of_its_boxes(cfg):
    b = Benchmark.from_yaml(cfg)
    pred = b.run(*_keys(b)[0]).pred
    by_field = sum(sum(np.asarray(a).nbytes for a in getattr(pred, f.name).values()) if f.name == "data"
                   else getattr(pred, f.name).nbytes for f in dataclasses.fields(pred))
    assert pred.nbytes == by_field > 0
