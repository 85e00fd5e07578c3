"""The columnar loaders against the frozen pre-rewrite loaders (``tests/io/legacy``), record by record.

One generated set at Omni3D density (600 images, ~6k GT, ~60k predictions, a 57 MB predictions file), written with
the irregularities real files have or may have: optional fields left out or null, ids written as ``5.0``, ``-0``,
long and subnormal numbers, exponents, non-ASCII names, duplicated keys, escaped keys, pretty-printed records,
unknown nested fields holding ``NaN``, stored corners that disagree with the pose. Each array of the new loaders,
read both ways (``dicts`` and the ``scan`` kernel, also in tiny blocks so every resumption point is crossed), must
be bit-for-bit the legacy loader's, and every warning the same.
"""

from __future__ import annotations

import json
import math
import re
import warnings
from dataclasses import fields as dc_fields
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from bench.loadfiles import blocks, images_and_categories, per_image
from ov3d_core.io import CUBERCNN_50, columnar, load_omni3d_gt, load_predictions
from ov3d_core.io.predictions import PREDICTION_FIELDS
from ov3d_core.taxonomy import OMNI3D_CATEGORIES
from tests.io.legacy.omni3d import load_omni3d_gt as legacy_gt
from tests.io.legacy.predictions import load_predictions as legacy_predictions

N_IMAGES = 600


# ------------------------------------------------------------------------------------------------ messy files

def _pred_text(i: int, r: dict) -> str:
    r = dict(r)
    if i % 97 == 0:
        del r["bbox3D"]
    if i % 89 == 1 and "bbox3D" in r:
        del r["pose"], r["dimensions"]
    if i % 83 == 2:
        del r["depth"]
    if i % 79 == 3:
        del r["center_2D"]
    if i % 73 == 4:
        r["category_name"] = OMNI3D_CATEGORIES[r.pop("category_id")]
    if i % 71 == 5:
        r["category_name"] = "sofá chair"
    if i % 67 == 6:
        r["image_id"] = float(r["image_id"])
    if i % 61 == 7:
        r["extra"] = {"a": [1, {"b": None}], "c": 'x"y\\z\u00e9', "n": float("nan"), "d": [[[]]], "t": True}
    if i % 5 == 3:  # objects inside a record: false item boundaries for the parallel scan
        r["parts"] = [{"k": 1}, {"k": "},{"}]
    if i % 41 == 12:
        r["bbox"] = [1, 2, 30, 40]
    if i % 37 == 13 and "bbox3D" in r:
        r["center_cam"] = None
    if i % 31 == 14:
        r["bbox"] = ["NEGZERO"] + r["bbox"][1:]  # the integer -0, written below
        if "center_2D" in r:
            r["center_2D"] = [-0.0, r["center_2D"][1]]
    text = json.dumps(r, indent=2 if i % 47 == 10 else None, ensure_ascii=i % 2 == 0).replace('"NEGZERO"', "-0")
    if i % 59 == 8:
        text = text.replace(f'"score": {json.dumps(r["score"])}', '"score": 0.1234567890123456789012345')
    if i % 53 == 9:
        text = '{"score": 99.0, ' + text[1:]
    if i % 43 == 11:
        text = text.replace('"score":', '"sc\\u006fre":')
    if i % 29 == 15 and "depth" in r:
        text = text.replace(f'"depth": {json.dumps(r["depth"])}', '"depth": 3.5E+1', 1)
    if i % 27 == 16:
        text = text.replace(f'"score": {json.dumps(r["score"])}', '"score": 4.9e-310', 1)
    return text


def _ann_text(j: int, a: dict) -> str:
    a = dict(a)
    if j % 13 == 0:
        del a["bbox3D_cam"]
    if j % 11 == 1:
        a["truncation"] = None
        del a["visibility"]
    if j % 7 == 2:
        a["behind_camera"], a["valid3D"] = 0, 1
    if j % 17 == 3:
        del a["category_name"]
    if j % 19 == 4:
        del a["bbox2D_proj"]
    if j % 23 == 5:
        a["id"] = float(a["id"])
    if j % 31 == 7:
        a["extra"] = [float("nan"), {"x": "é"}]
    if j % 37 == 8 and "bbox3D_cam" in a:
        a["bbox3D_cam"] = [[v + 1e-3 for v in row] for row in a["bbox3D_cam"]]
    return json.dumps(a, indent=1 if j % 29 == 6 else None, ensure_ascii=j % 2 == 0)


@pytest.fixture(scope="module")
def messy(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("parity")
    anns, preds, vocab = [], [], []
    for a, p, v in blocks(N_IMAGES, seed=3):
        anns += a
        preds += p
        vocab = v
    images, cats = images_and_categories(N_IMAGES, vocab)
    gt = root / "gt.json"
    head = json.dumps({"info": {"id": 0, "name": "Parity"}, "images": images, "categories": cats})
    gt.write_text(head[:-1] + ', "annotations": [\n' + ",\n".join(_ann_text(j, a) for j, a in enumerate(anns))
                  + "\n]}", encoding="utf-8")
    pred = root / "preds.json"
    big = dict(preds[5], extra="é" * 20_000)  # one record longer than the small test blocks
    pred.write_text("[\n" + ",\n".join(_pred_text(i, r) for i, r in enumerate(preds[:2000] + [big] + preds[2000:]))
                    + "\n]\n", encoding="utf-8")
    small = root / "small.json"
    small.write_text("[" + ", ".join(_pred_text(i, r) for i, r in enumerate(preds[:1500] + [big] + preds[1500:3000]))
                     + "]", encoding="utf-8")
    contiguous = {n: i for i, n in enumerate(CUBERCNN_50)}
    pth_preds = [dict(r, category_id=contiguous[OMNI3D_CATEGORIES[r["category_id"]]]) for r in preds[:20_000]
                 if OMNI3D_CATEGORIES[r["category_id"]] in contiguous]
    recs = per_image(pth_preds)
    for k, rec in enumerate(recs):
        for inst in rec["instances"][::3]:
            inst["bbox3D"] = torch.tensor(inst["bbox3D"], dtype=torch.float32 if k % 2 else torch.float64)
            inst["score"] = torch.tensor(inst["score"])
    pth = root / "preds.pth"
    torch.save(recs, pth)
    return {"gt": gt, "preds": pred, "small": small, "pth": pth}


# ------------------------------------------------------------------------------------------------ comparison

def _same_array(a: np.ndarray, b: np.ndarray, what: str) -> None:
    assert a.shape == b.shape and a.dtype == b.dtype, (what, a.shape, b.shape, a.dtype, b.dtype)
    if a.dtype.kind == "f":  # bit for bit: NaN positions and the sign of zero included
        assert np.array_equal(np.ascontiguousarray(a).view(np.uint64), np.ascontiguousarray(b).view(np.uint64)), what
    elif a.dtype.kind == "O":
        assert a.tolist() == b.tolist(), what
    else:
        assert np.array_equal(a, b), what


def assert_boxsets_equal(a, b) -> None:
    for f in dc_fields(a):
        if f.name != "data":
            _same_array(getattr(a, f.name), getattr(b, f.name), f.name)
    assert sorted(a.data) == sorted(b.data)
    for k in a.data:
        _same_array(a.data[k], b.data[k], f"data[{k!r}]")


def assert_datasets_equal(a, b) -> None:
    assert (a.name, a.vocabulary, a.sources, a.environment, a.proximity, a.root) == \
        (b.name, b.vocabulary, b.sources, b.environment, b.proximity, b.root)
    assert a.category_ids == b.category_ids
    pd.testing.assert_frame_equal(a.images, b.images, check_exact=True)
    _same_array(a.K, b.K, "K")
    assert_boxsets_equal(a.gt, b.gt)


def _load(fn, *args, **kw):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        out = fn(*args, **kw)
    return out, [(w.category.__name__, str(w.message)) for w in rec]


@pytest.fixture(scope="module")
def reference(messy):
    ds, ds_warn = _load(legacy_gt, messy["gt"])
    run, _ = _load(legacy_predictions, messy["preds"], ds)
    small, _ = _load(legacy_predictions, messy["small"], ds)
    pth, _ = _load(legacy_predictions, messy["pth"], ds, category_list=CUBERCNN_50)
    return {"ds": ds, "ds_warn": ds_warn, "run": run, "small": small, "pth": pth}


@pytest.mark.parametrize("reader", ["dicts", "scan"])
def test_gt_and_predictions_match_the_legacy_loader(messy, reference, reader, monkeypatch):
    monkeypatch.setenv("OV3D_JSON_READER", reader)
    ds, ds_warn = _load(load_omni3d_gt, messy["gt"])
    assert ds_warn == reference["ds_warn"] and len(ds_warn) == 1  # the shifted corners, said once
    assert_datasets_equal(ds, reference["ds"])
    assert len(ds.gt) > 5000 and ds.gt.ignore.any() and not ds.gt.ignore.all()
    run, _ = _load(load_predictions, messy["preds"], ds)
    ref = reference["run"]
    assert_boxsets_equal(run.pred, ref.pred)
    assert (run.name, run.dataset, run.sources) == (ref.name, ref.dataset, ref.sources)
    assert run.meta.items() >= ref.meta.items()
    assert len(run.pred) > 60_000
    oov = run.meta["out_of_vocabulary"]
    assert oov == {"sofá chair": int((run.pred.category == "sofá chair").sum())} and oov["sofá chair"] > 500


def test_the_reader_is_chosen_by_size(messy, reference):
    """The 57 MB predictions file is read by the kernel without being told, the 5 MB GT file as dicts."""
    size = messy["preds"].stat().st_size
    assert size >= columnar.SCAN_MIN_BYTES > messy["gt"].stat().st_size
    assert columnar.reader_choice(size) == "scan"
    cols = columnar.read_json_list(messy["preds"], PREDICTION_FIELDS, lambda i, r: f"[{i}]", "a prediction", "a list")
    assert isinstance(cols, columnar.ScannedColumns) and len(cols) == len(reference["run"].pred)


@pytest.mark.parametrize("block_bytes, block_records", [(4096, 1), (4096, 7), (1 << 16, 1000), (700, 3)])
def test_kernel_resumes_anywhere(messy, reference, block_bytes, block_records, monkeypatch):
    """Tiny blocks put buffer ends inside numbers, strings, keys and literals, and one record is 40 KB."""
    monkeypatch.setenv("OV3D_JSON_READER", "scan")
    monkeypatch.setattr(columnar, "_BLOCK_BYTES", block_bytes)
    monkeypatch.setattr(columnar, "_BLOCK_RECORDS", block_records)
    run, _ = _load(load_predictions, messy["small"], reference["ds"])
    assert_boxsets_equal(run.pred, reference["small"].pred)


@pytest.mark.parametrize("regions", [2, 7, 60])
def test_parallel_regions(messy, reference, regions, monkeypatch):
    """The file cut into regions scanned by threads from guessed item boundaries: with 60 regions many guesses fall
    inside records (``"parts": [{...}, {...}]``) and are redone, and the result is still the legacy loader's."""
    monkeypatch.setenv("OV3D_JSON_READER", "scan")
    monkeypatch.setattr(columnar, "_MAX_THREADS", regions)
    monkeypatch.setattr(columnar, "_MIN_REGION_BYTES", 1 << 16)
    misses = columnar.speculation_misses
    run, _ = _load(load_predictions, messy["preds"], reference["ds"])
    assert_boxsets_equal(run.pred, reference["run"].pred)
    assert run.meta["out_of_vocabulary"] == reference_oov(reference)
    if regions == 60:
        assert columnar.speculation_misses > misses


@pytest.mark.parametrize("regions", [2, 7, 60])
def test_parallel_regions_of_a_gt_document(messy, reference, regions, monkeypatch):
    """The GT document's annotations array, in memory, cut into regions scanned by threads from guessed item
    boundaries: still the legacy loader's."""
    monkeypatch.setenv("OV3D_JSON_READER", "scan")
    monkeypatch.setattr(columnar, "_MAX_THREADS", regions)
    monkeypatch.setattr(columnar, "_MIN_REGION_BYTES", 1 << 14)
    calls = []
    real = columnar._scan_memory_region
    monkeypatch.setattr(columnar, "_scan_memory_region", lambda *a, **k: calls.append(1) or real(*a, **k))
    ds, ds_warn = _load(load_omni3d_gt, messy["gt"])
    assert ds_warn == reference["ds_warn"]
    assert_datasets_equal(ds, reference["ds"])
    assert len(calls) >= regions  # the annotations really were scanned in that many regions


def test_gt_regions_guessed_inside_records_are_redone(tmp_path, monkeypatch):
    """Annotations holding lists of objects (``"parts": [{...}, {...}]``): boundary guesses land inside records,
    those regions are redone, and the dataset equals the one-region scan's."""
    from tests.io.factories import make_annotation, make_gt_json, make_image

    images = [make_image(i) for i in range(1, 41)]
    anns = [make_annotation(k + 1, 1 + k % 40, parts=[{"a": k}, {"b": [k, {"c": "}, {"}]}]) for k in range(600)]
    gt = make_gt_json(tmp_path, images, anns)
    monkeypatch.setenv("OV3D_JSON_READER", "scan")
    one, _ = _load(load_omni3d_gt, gt)
    monkeypatch.setattr(columnar, "_MAX_THREADS", 60)
    monkeypatch.setattr(columnar, "_MIN_REGION_BYTES", 1 << 10)
    misses = columnar.speculation_misses
    many, _ = _load(load_omni3d_gt, gt)
    assert columnar.speculation_misses > misses
    assert_datasets_equal(many, one)
    assert len(many.gt) == 600


def reference_oov(reference) -> dict:
    pred = reference["run"].pred
    return {"sofá chair": int((pred.category == "sofá chair").sum())}


def test_pth_matches_the_legacy_loader(messy, reference):
    run, _ = _load(load_predictions, messy["pth"], reference["ds"], category_list=CUBERCNN_50)
    assert_boxsets_equal(run.pred, reference["pth"].pred)
    assert run.meta.items() >= reference["pth"].meta.items()
    assert len(run.pred) > 10_000


def test_messy_file_really_is_messy(messy):
    """The irregularities the comparison relies on are in the file (a guard against a generator change)."""
    text = messy["preds"].read_text(encoding="utf-8")
    for needle in ('"sc\\u006fre":', '"score": 99.0, ', "NaN", "4.9e-310", "3.5E+1", "[-0, ", "[-0.0, ",
                   "0.1234567890123456789012345", "sofá chair", "sof\\u00e1 chair"):
        assert needle in text, needle
    assert re.search(r'"image_id": \d+\.0,', text)
    assert math.isnan(json.loads(messy["gt"].read_text())["annotations"][7]["extra"][0])
