"""Doubtful input is said out loud (issue 11, loader part): every case here was silent, wrong or a traceback in the
loaders before the columnar rewrite (tests/io/legacy). JSON cases run through both readers (dicts and the kernel).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch

from ov3d_core.errors import InputError
from ov3d_core.io import CUBERCNN_50, load_omni3d_gt, load_predictions
from tests.io.factories import (
    file_digest, make_annotation, make_categories, make_gt_json, make_image, make_pred, make_pred_json,
)


@pytest.fixture(params=["dicts", "scan"])
def reader(request, monkeypatch):
    monkeypatch.setenv("OV3D_JSON_READER", request.param)
    return request.param


@pytest.fixture
def ds(tmp_path):
    anns = [make_annotation(1, 1, category="chair"), make_annotation(2, 2, category="table")]
    return load_omni3d_gt(make_gt_json(tmp_path, images=[make_image(1), make_image(2)], annotations=anns,
                                       name="ds_gt.json"))


def one_line_error(fn, *parts) -> InputError:
    """``fn()`` raises an InputError: one line, naming every part."""
    with pytest.raises(InputError) as e:
        fn()
    msg = str(e.value)
    assert "\n" not in msg, msg
    for part in parts:
        assert part in msg, f"{part!r} not in {msg!r}"
    return e.value


def write(tmp_path, name: str, text: str | bytes) -> Path:
    p = tmp_path / name
    (p.write_bytes if isinstance(text, bytes) else p.write_text)(text)
    return p


# ------------------------------------------------------------------------------------------------ .pth category list

def _pth(tmp_path, instances, name="instances_predictions.pth") -> Path:
    path = tmp_path / name
    torch.save([{"image_id": 1, "K": np.eye(3), "width": 640, "height": 480, "instances": instances}], path)
    return path


def test_pth_without_category_list_is_refused(tmp_path, ds):
    path = _pth(tmp_path, [make_pred(1, category_id=0)])
    e = one_line_error(lambda: load_predictions(path, ds), str(path), "`category_list`", "--category-list",
                       "category_list: [...]", "contiguous")
    assert e.field == "category_list"
    assert load_predictions(path, ds, category_list=["chair"]).pred.category.tolist() == ["chair"]


def test_pth_with_names_in_the_file_needs_no_list(tmp_path, ds):
    path = _pth(tmp_path, [make_pred(1, category_id=0, category_name="table"), make_pred(1, category_id=None,
                                                                                         category_name="lamp")])
    run = load_predictions(path, ds)
    assert run.pred.category.tolist() == ["table", "lamp"]
    assert run.meta["out_of_vocabulary"] == {"lamp": 1}


@pytest.mark.parametrize("records", [[], [{"image_id": 1, "instances": []}, {"image_id": 2, "instances": []}]])
def test_empty_pth_is_a_valid_empty_run(tmp_path, ds, records):
    path = tmp_path / "p.pth"
    torch.save(records, path)
    run = load_predictions(path, ds)
    assert len(run.pred) == 0 and run.pred.corners.shape == (0, 8, 3) and run.meta["out_of_vocabulary"] == {}
    assert run.meta["n_records"] == len(records)


# ------------------------------------------------------------------------------------------------ vocabulary

def test_out_of_vocabulary_predictions_are_kept_and_counted(tmp_path, ds, reader):
    preds = [make_pred(1, category_id=18), make_pred(1, category_id=5), make_pred(2, category_id=5),
             make_pred(2, category_id=None, category_name="sofa chair"), make_pred(2, category_id=37)]
    run = load_predictions(make_pred_json(tmp_path, preds), ds)
    assert run.pred.category.tolist() == ["chair", "truck", "truck", "sofa chair", "table"]
    assert run.pred.data["in_vocab"].tolist() == [True, False, False, False, True]
    assert run.meta["out_of_vocabulary"] == {"truck": 2, "sofa chair": 1}
    assert list(run.meta["out_of_vocabulary"]) == ["truck", "sofa chair"]  # most frequent first


def test_unresolvable_prediction_category_is_an_error(tmp_path, ds, reader):
    p = make_pred_json(tmp_path, [make_pred(1), make_pred(2, category_id=4321)])
    one_line_error(lambda: load_predictions(p, ds), "preds.json", "[1] (image_id 2)", "`category_id`", "4321")
    p = make_pred_json(tmp_path, [make_pred(1), make_pred(2, category_id=None)])
    one_line_error(lambda: load_predictions(p, ds), "preds.json", "[1] (image_id 2)", "`category_id`", "present")


def test_gt_category_id_must_resolve_even_with_a_name(tmp_path, reader):
    """An annotation whose id is in neither the file's categories nor the Omni3D table was dropped silently."""
    anns = [make_annotation(1), make_annotation(7, category="chair", category_id=4321)]
    p = make_gt_json(tmp_path, annotations=anns, categories=make_categories(["chair"]))
    e = one_line_error(lambda: load_omni3d_gt(p), "gt.json", "annotations[1] (id 7)", "`category_id`", "4321")
    assert e.field == "category_id"


# ------------------------------------------------------------------------------------------------ empty and broken

def test_empty_prediction_list_is_a_valid_empty_run(tmp_path, ds, reader):
    run = load_predictions(write(tmp_path, "preds.json", " [ ] \n"), ds)
    assert len(run.pred) == 0 and run.meta["out_of_vocabulary"] == {}
    assert run.pred.box2d.shape == (0, 4) and run.pred.category.dtype == object


def test_gt_without_annotations_is_a_valid_empty_dataset(tmp_path, reader):
    ds = load_omni3d_gt(make_gt_json(tmp_path, images=[make_image(1)], annotations=[],
                                     categories=make_categories(["chair"])))
    assert len(ds.gt) == 0 and ds.vocabulary == ("chair",) and len(ds.images) == 1


@pytest.mark.parametrize("where", ["top", "record", "field", "gt_field"])
def test_deep_nesting_is_one_line(tmp_path, ds, reader, where):
    deep = "[" * 100_000 + "]" * 100_000
    if where == "top":
        p = write(tmp_path, "preds.json", deep)
    elif where == "record":
        p = write(tmp_path, "preds.json", f"[{json.dumps(make_pred(1))}, {deep}]")
    elif where == "field":
        rec = json.dumps(make_pred(1))
        p = write(tmp_path, "preds.json", f"[{rec[:-1]}, \"extra\": {deep}}}]")
    else:
        text = make_gt_json(tmp_path, annotations=[make_annotation(1)]).read_text()
        p = write(tmp_path, "gt.json", text[:-1] + f', "extra": {deep}}}')
        one_line_error(lambda: load_omni3d_gt(p), "gt.json", "nested")
        return
    one_line_error(lambda: load_predictions(p, ds), "preds.json", "nested")


@pytest.mark.parametrize("where", ["score", "extra", "image_id"])
def test_integer_of_thousands_of_digits_is_one_line(tmp_path, ds, reader, where):
    rec = make_pred(1)
    text = json.dumps([make_pred(1), rec])
    big = "7" * 5000
    if where == "score":
        text = text.replace(f'"score": {rec["score"]}', f'"score": {big}', 2)
    elif where == "image_id":
        text = text[:-2] + f', "image_id": {big}' + "}]"
    else:
        text = text[:-2] + f', "extra": [{big}]' + "}]"
    p = write(tmp_path, "preds.json", text)
    one_line_error(lambda: load_predictions(p, ds), "preds.json", "digits")


def test_non_utf8_text_is_one_line(tmp_path, ds, reader):
    text = json.dumps([make_pred(1), make_pred(2, category_id=None, category_name="chair")]).encode()
    p = write(tmp_path, "preds.json", text.replace(b'"chair"', b'"ch\xffir"'))
    one_line_error(lambda: load_predictions(p, ds), "preds.json", "UTF-8")
    gt = make_gt_json(tmp_path, annotations=[make_annotation(1)]).read_bytes()
    p = write(tmp_path, "gt.json", gt.replace(b'"Test"', b'"T\xe9st"', 1))
    one_line_error(lambda: load_omni3d_gt(p), "gt.json", "UTF-8")


@contextlib.contextmanager
def _unprivileged():
    """Drop the effective uid to nobody while inside (root reads any file regardless of its mode)."""
    if os.geteuid() != 0:
        yield
        return
    os.setegid(65534)
    os.seteuid(65534)
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)


def test_unreadable_files_are_one_line(ds, reader):
    folder = Path(tempfile.mkdtemp(prefix="ov3d_perm_"))
    try:
        folder.chmod(0o755)
        preds = make_pred_json(folder, [make_pred(1)])
        gt = make_gt_json(folder, annotations=[make_annotation(1)])
        pth = _pth(folder, [make_pred(1, category_id=0)])
        for p in (preds, gt, pth):
            p.chmod(0)
        hidden = folder / "locked"
        hidden.mkdir(mode=0o700)
        inner = make_pred_json(hidden, [make_pred(1)])
        with _unprivileged():
            e1 = _catch(lambda: load_predictions(preds, ds))
            e2 = _catch(lambda: load_omni3d_gt(gt))
            e3 = _catch(lambda: load_predictions(pth, ds, category_list=CUBERCNN_50))
            e4 = _catch(lambda: load_predictions(inner, ds))
        for e, p in ((e1, preds), (e2, gt), (e3, pth), (e4, inner)):
            assert isinstance(e, InputError), repr(e)
            assert str(p) in str(e) and "Permission denied" in str(e) and "\n" not in str(e)
    finally:
        for p in folder.rglob("*"):
            p.chmod(0o700)
        for p in sorted(folder.rglob("*"), reverse=True):
            p.unlink() if p.is_file() else p.rmdir()
        folder.rmdir()


def _catch(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the test inspects the exception type
        return e
    return None


# ------------------------------------------------------------------------------------------------ bools and int64

@pytest.mark.parametrize("field, value", [
    ("score", True), ("bbox", [1.0, True, 3.0, 4.0]), ("image_id", True), ("category_id", False),
    ("dimensions", [1.0, 1.0, True]), ("depth", False), ("center_2D", [True, 1.0]),
])
def test_booleans_are_not_numbers_in_predictions(tmp_path, ds, reader, field, value):
    p = make_pred_json(tmp_path, [make_pred(1), make_pred(**{"image_id": 2, field: value})])
    e = one_line_error(lambda: load_predictions(p, ds), "preds.json", "[1]", f"`{field}`")
    assert e.field == field


def test_boolean_corner_is_refused(tmp_path, ds, reader):
    rec = make_pred(2)
    rec["bbox3D"][3][1] = True
    p = make_pred_json(tmp_path, [make_pred(1), rec])
    one_line_error(lambda: load_predictions(p, ds), "preds.json", "[1] (image_id 2)", "`bbox3D`", "8x3")


@pytest.mark.parametrize("section, field, value", [
    ("images", "width", True), ("images", "K", [[True, 0, 320], [0, 500, 240], [0, 0, 1]]),
    ("annotations", "id", True), ("annotations", "center_cam", [0.0, True, 5.0]),
    ("annotations", "truncation", False), ("annotations", "category_id", True),
])
def test_booleans_are_not_numbers_in_gt(tmp_path, reader, section, field, value):
    images = [make_image(1), make_image(2)]
    anns = [make_annotation(1), make_annotation(2, 2)]
    (images if section == "images" else anns)[1][field] = value
    p = make_gt_json(tmp_path, images=images, annotations=anns, categories=make_categories(["chair"]))
    e = one_line_error(lambda: load_omni3d_gt(p), "gt.json", f"{section}[1]", f"`{field}`")
    assert e.field == field


@pytest.mark.parametrize("value", [2 ** 63, -(2 ** 63) - 1, 2 ** 64, 10 ** 30, 1e20, -1e19])
def test_ids_beyond_int64_name_the_right_record(tmp_path, ds, reader, value):
    preds = [make_pred(1), make_pred(2), make_pred(value), make_pred(2)]
    p = make_pred_json(tmp_path, preds)
    e = one_line_error(lambda: load_predictions(p, ds), "preds.json", "[2]", "`image_id`", "an integer")
    assert e.record.startswith("[2]") and e.got == value
    preds = [make_pred(1), make_pred(1, category_id=value)]
    one_line_error(lambda: load_predictions(make_pred_json(tmp_path, preds), ds), "[1]", "`category_id`")
    anns = [make_annotation(1), make_annotation(2), make_annotation(value)]
    gt = make_gt_json(tmp_path, annotations=anns, categories=make_categories(["chair"]))
    one_line_error(lambda: load_omni3d_gt(gt), "gt.json", "annotations[2]", "`id`", "an integer")


def test_int64_extremes_are_kept_exactly(tmp_path, reader):
    anns = [make_annotation(2 ** 63 - 1), make_annotation(-(2 ** 63)), make_annotation(9007199254740993)]
    ds = load_omni3d_gt(make_gt_json(tmp_path, annotations=anns, categories=make_categories(["chair"])))
    assert ds.gt.record.tolist() == [2 ** 63 - 1, -(2 ** 63), 9007199254740993]


# ------------------------------------------------------------------------------------------------ .pth tensors

def _bad_tensors():
    return {
        "bfloat16": torch.zeros(8, 3, dtype=torch.bfloat16),
        "quantized": torch.quantize_per_tensor(torch.zeros(8, 3), 0.1, 0, torch.quint8),
        "sparse": torch.zeros(8, 3).to_sparse(),
        "meta": torch.empty(8, 3, device="meta"),
        "complex": torch.zeros(8, 3, dtype=torch.complex64),
        "bool": torch.ones(8, 3, dtype=torch.bool),
        "shape": torch.zeros(7, 3),
        "float8": torch.zeros(8, 3, dtype=torch.float8_e4m3fn),
    }


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("kind", ["bfloat16", "quantized", "sparse", "meta", "complex", "bool", "shape", "float8"])
def test_pth_tensors_numpy_cannot_hold_are_one_line(tmp_path, ds, kind):
    insts = [make_pred(1, category_id=0), make_pred(1, category_id=0)]
    insts[1]["bbox3D"] = _bad_tensors()[kind]
    path = _pth(tmp_path, insts)
    e = one_line_error(lambda: load_predictions(path, ds, category_list=["chair"]), str(path),
                       "[0].instances[1]", "`bbox3D`")
    assert e.field == "bbox3D"
    if kind not in ("shape", "complex", "bool"):  # refused by name (a Kind: the app shows it, it is no file text)
        from ov3d_core.io.yaml_safe import Kind

        named = {"float8": "float8_e4m3fn"}.get(kind, kind)
        assert isinstance(e.got, Kind) and named in e.got and f"got {e.got}" in str(e), (e.got, str(e))


def test_pth_bool_score_tensor_is_refused(tmp_path, ds):
    insts = [make_pred(1, category_id=0), make_pred(1, category_id=0, score=torch.tensor(True))]
    path = _pth(tmp_path, insts)
    one_line_error(lambda: load_predictions(path, ds, category_list=["chair"]), "[0].instances[1]", "`score`")


# ------------------------------------------------------------------------------------------------ inputs untouched

def test_failed_loads_leave_files_untouched(tmp_path, ds, reader):
    p = make_pred_json(tmp_path, [make_pred(1), make_pred(2, score=True)])
    before = (file_digest(p), p.stat().st_mtime_ns)
    with pytest.raises(InputError):
        load_predictions(p, ds)
    assert (file_digest(p), p.stat().st_mtime_ns) == before


# ------------------------------------------------------------------------------------------------ the .pth reader

class _Payload:
    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_pth_reader_runs_no_code(tmp_path, ds):
    marker = tmp_path / "ran"
    path = tmp_path / "evil.pth"
    torch.save([{"image_id": 1, "instances": [{"score": _Payload(str(marker))}]}], path)
    from ov3d_core.io import pthfile

    assert pthfile.read(path) == (False, None, False)  # refused: torch.load(weights_only) judges it
    one_line_error(lambda: load_predictions(path, ds, category_list=["chair"]), "evil.pth", "torch")
    assert not marker.exists()


def test_pth_reader_matches_torch_load(tmp_path):
    from ov3d_core.io import pthfile

    obj = [{"image_id": 3, "K": np.arange(9.0).reshape(3, 3), "instances": [
        {"bbox3D": torch.arange(24, dtype=torch.float32).reshape(8, 3), "score": torch.tensor(0.25, dtype=torch.float64),
         "pose": torch.eye(3)[:, [2, 0, 1]].t(), "ids": torch.arange(10)[3:7], "flag": torch.ones(2, dtype=torch.bool),
         "half": torch.ones(2, dtype=torch.float16), "bbox": [1.0, 2, 3.5, 4], "name": "chair", "none": None}]}]
    path = tmp_path / "p.pth"
    torch.save(obj, path)
    ok, fast, clean = pthfile.read(path)
    assert ok and clean
    from ov3d_core.io.predictions import _numpy_safe_globals

    with torch.serialization.safe_globals(_numpy_safe_globals()):
        ref = torch.load(path, weights_only=True, map_location="cpu")
    a, b = fast[0]["instances"][0], ref[0]["instances"][0]
    assert set(a) == set(b)
    for k, v in b.items():
        if isinstance(v, torch.Tensor):
            assert isinstance(a[k], np.ndarray) and a[k].dtype == v.numpy().dtype and np.array_equal(a[k], v.numpy()), k
        else:
            assert a[k] == v, k
    assert np.array_equal(fast[0]["K"], ref[0]["K"]) and fast[0]["image_id"] == 3
