"""Issue 23 (app): the Overview's "Runtime (Table 10)" section shows ``Analysis.runtime`` and the accuracy-latency
scatter of ``Analysis.accuracy_latency`` on the current dataset, with the remapped runs X* when its "Remapped runs
(X*)" toggle is on, and says which numbers are declared and which measured."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from ov3d_core.analysis import Analysis, RemapSpec, View
from tests.app.test_pages import app, problems
from tests.app.test_parity import _plotly_array

DS = "demo_indoor"
NUM = ["semantic_ms", "geometry_ms", "total_ms"]
TEXT = ["run", "device", "how", "semantic_from", "geometry_from", "total_from", "source", "note"]


def _runtime(at) -> pd.DataFrame:
    found = [d.value for d in at.dataframe if {"run", "semantic_ms", "geometry_ms", "total_ms", "how"}
             <= set(d.value.columns)]
    assert len(found) == 1, [list(d.value.columns) for d in at.dataframe]
    return found[0].reset_index(drop=True)


def _scatter(at) -> dict:
    for c in at.get("plotly_chart"):
        spec = json.loads(c.proto.spec)
        if "Accuracy against latency" in ((spec.get("layout", {}).get("title") or {}).get("text") or ""):
            return spec
    raise AssertionError("no accuracy-latency chart")


def _captions(at) -> str:
    return " ".join(c.value for c in at.caption)


def _check(at, table: pd.DataFrame, points: pd.DataFrame) -> None:
    shown = _runtime(at)
    assert list(shown.columns) == list(table.columns)
    assert shown[TEXT].fillna("").values.tolist() == table[TEXT].fillna("").values.tolist()
    np.testing.assert_allclose(shown[NUM].to_numpy(np.float64), table[NUM].to_numpy(np.float64), rtol=1e-12,
                               equal_nan=True)
    assert shown["images"].tolist() == table["images"].tolist()
    spec = _scatter(at)
    plotted = points[points["plotted"]]
    assert [tr["name"] for tr in spec["data"]] == list(dict.fromkeys(plotted["how"]))
    for tr in spec["data"]:
        sub = plotted[plotted["how"] == tr["name"]]
        assert tr["text"] == sub["run"].tolist()
        np.testing.assert_allclose(_plotly_array(tr["x"]), sub["total_ms"].to_numpy(np.float64), rtol=1e-12)
        np.testing.assert_allclose(_plotly_array(tr["y"]), sub["metric"].to_numpy(np.float64), rtol=1e-12)


def test_runtime_section_equals_analysis(tiny_demo):
    at = app(None, ds=DS)
    assert not problems(at), problems(at)
    from ov3d_app import cache

    # the page's own Analysis: a measured stage is the timing kept with the embeddings its encoder made (another
    # process's encoder options can make another cache entry, timed on its own)
    A = cache.analysis(at.session_state["_inputs_key"])
    star = RemapSpec(encoder="proxy")
    # the toggle is on with the demo's encoder: the remapped runs X* are listed
    assert at.toggle(key="rt_star").value is True
    table = A.runtime(DS, remap=star)  # X*'s semantic stage: the timing the page's remap kept with the embeddings
    points = A.accuracy_latency(View(DS), remap=star)
    assert any(r.endswith("*") for r in table["run"])
    _check(at, table, points)
    text = _captions(at)
    assert "Declared: the runs' `runtime:` entries" in text
    assert ("Measured: X*'s semantic stage" in text) == bool(set(table["how"]) & {"measured", "declared + measured"})
    on_cpu = [r for r, d in zip(table["run"], table["device"]) if "CPU numbers" in str(d)]
    assert ("measured on the CPU (CPU numbers)" in text) == bool(on_cpu)

    at.toggle(key="rt_star").set_value(False).run()
    assert not problems(at), problems(at)
    table = A.runtime(DS)
    assert table["run"].tolist() == A.runs(DS)
    _check(at, table, A.accuracy_latency(View(DS)))
    assert "Measured: X*'s" not in _captions(at) and "CPU numbers" not in _captions(at)


def test_runtime_follows_the_dataset_and_the_subset(tiny_demo):
    """Another dataset and the runtime image subset: the table is that dataset's, the scatter's AP the subset's."""
    ds = "demo_outdoor"
    at = app(None, ds=ds, sub="runtime")
    at.toggle(key="rt_star").set_value(False).run()
    assert not problems(at), problems(at)
    A = Analysis.from_yaml(tiny_demo / "benchmark.yaml")
    _check(at, A.runtime(ds), A.accuracy_latency(View(ds, subset="runtime")))
    assert _scatter(at)["layout"]["title"]["text"] == f"Accuracy against latency · {ds}, images: runtime"
