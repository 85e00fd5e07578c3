"""The load cache: a hit returns the same data without re-reading; any changed input misses; an entry that is
damaged, foreign, planted or inconsistent is recomputed (never executed, never trusted)."""

import dataclasses
import json
import os
import pickle
import shutil
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ov3d_core.io import loadcache, npzstore
from ov3d_core.io.loadcache import cached_load, decode, encode, file_digest
from ov3d_core.model import Dataset
from tests.bitflips import flipped_copies
from tests.io.factories import make_annotation, make_gt_json, make_image, make_pred_from_annotation


# ------------------------------------------------------------------------------------------------ helpers
def assert_same(a, b, where="obj"):
    """Deep equality of loader outputs: same types, dtypes, shapes and values (NaN equal to NaN)."""
    assert type(a) is type(b), where
    if dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            assert_same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        if a.dtype.kind == "O":
            assert len(a.reshape(-1)) == len(b.reshape(-1)), where
            for x, y in zip(a.reshape(-1), b.reshape(-1)):
                assert_same(x, y, where)
        else:
            assert np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"), where
    elif isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a, b, check_exact=True)
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        for k in a:
            assert_same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for k, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{k}]")
    elif isinstance(a, float) and np.isnan(a):
        assert np.isnan(b), where
    else:
        assert a == b, where


@pytest.fixture
def files(tmp_path):
    """A small GT file (two images, one with a KITTI p2) and a prediction file."""
    imgs = [make_image(1), make_image(2, p2=[[700.0, 0, 600, 45.0], [0, 700, 170, -0.3], [0, 0, 1, 0.005]])]
    anns = [make_annotation(10 + k, image_id=1 + k % 2, category=c, center=(0.3 * k, 0.1, 5 + k))
            for k, c in enumerate(["chair", "table", "chair", "sofa", "lamp"])]
    anns[3]["visibility"] = 0.1  # ignored
    gt = make_gt_json(tmp_path, [*imgs], anns)
    preds = [make_pred_from_annotation(a, score=0.5 + 0.1 * k) for k, a in enumerate(anns)]
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps(preds))
    return gt, pred


def load_gt(path):
    from ov3d_core.io import load_omni3d_gt

    return load_omni3d_gt(path)


def load_run(pred, ds):
    from ov3d_core.io import load_predictions

    return load_predictions(pred, ds, name="r")


class Counter:
    def __init__(self, fn):
        self.fn, self.calls = fn, 0

    def __call__(self):
        self.calls += 1
        return self.fn()


def entries(root):
    return sorted((Path(root) / "loads").glob("*.npz"))


# ------------------------------------------------------------------------------------------------ hits and misses
def test_hit_miss_and_warnings(tmp_path):
    src = tmp_path / "in.json"
    src.write_text("[1, 2, 3]")

    def fn():
        warnings.warn("corner mismatch in record 7", UserWarning)
        return {"a": np.arange(3), "b": ("x", None, 2.5, float("nan"), 2 ** 70)}

    load = Counter(fn)
    with warnings.catch_warnings(record=True) as w1:
        warnings.simplefilter("always")
        a = cached_load(tmp_path / "c", "x", [src], {"p": 1}, load)
    with warnings.catch_warnings(record=True) as w2:
        warnings.simplefilter("always")
        b = cached_load(tmp_path / "c", "x", [src], {"p": 1}, load)
    assert load.calls == 1
    assert_same(a, b)
    assert [str(w.message) for w in w1] == [str(w.message) for w in w2] == ["corner mismatch in record 7"]
    assert [w.category for w in w2] == [UserWarning]
    cached_load(tmp_path / "c", "x", [src], {"p": 2}, load)  # other parameters: another entry
    assert load.calls == 2


def test_an_edit_in_the_middle_keeping_size_and_mtime_misses(tmp_path):
    src = tmp_path / "big.json"
    body = bytearray(b"[" + b"1," * 3_000_000 + b"1]")  # 6 MB: the edit is far from both ends
    src.write_bytes(bytes(body))
    st = src.stat()
    load = Counter(lambda: np.frombuffer(src.read_bytes(), np.uint8).sum())
    first = cached_load(tmp_path / "c", "x", [src], {}, load)
    body[len(body) // 2] = ord("2")
    src.write_bytes(bytes(body))
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert src.stat().st_size == st.st_size and src.stat().st_mtime_ns == st.st_mtime_ns
    second = cached_load(tmp_path / "c", "x", [src], {}, load)
    assert load.calls == 2 and second == first + 1
    # the same content at another path is another entry (the objects record their paths)
    other = tmp_path / "copy.json"
    shutil.copy(src, other)
    cached_load(tmp_path / "c", "x", [other], {}, load)
    assert load.calls == 3


def test_file_digest_memo_is_only_a_precheck(tmp_path):
    src = tmp_path / "f.bin"
    src.write_bytes(b"a" * 1000)
    st = src.stat()
    d1 = file_digest(src)
    src.write_bytes(b"a" * 499 + b"b" + b"a" * 500)
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))  # size and mtime as before; ctime moved
    assert file_digest(src) != d1
    assert file_digest(src, recheck=True) == file_digest(src)


def test_no_root_or_missing_file_means_no_cache(tmp_path):
    load = Counter(lambda: 1)
    cached_load(None, "x", [], {}, load)
    cached_load(None, "x", [], {}, load)
    cached_load(tmp_path / "c", "x", [tmp_path / "absent.json"], {}, load)
    cached_load(tmp_path / "c", "x", [tmp_path / "absent.json"], {}, load)
    assert load.calls == 4 and not (tmp_path / "c").exists()


def test_values_the_format_cannot_hold_are_not_cached(tmp_path, caplog):
    src = tmp_path / "in.json"
    src.write_text("[]")
    load = Counter(lambda: {"f": lambda: 1})
    cached_load(tmp_path / "c", "x", [src], {}, load)
    cached_load(tmp_path / "c", "x", [src], {}, load)
    assert load.calls == 2 and entries(tmp_path / "c") == []
    assert "not cached" in caplog.text


# ------------------------------------------------------------------------------------------------ real loads
def test_dataset_and_run_round_trip_exactly(tmp_path, files):
    gt_path, pred_path = files
    ds = load_gt(gt_path)
    run = load_run(pred_path, ds)
    assert "p2" in ds.images.columns and ds.images["p2"].iloc[0] is None
    for obj in (ds, run):
        tree, arrays = encode(obj)
        json.dumps(tree)  # the tree is plain JSON
        assert all(a.dtype.kind != "O" for a in arrays.values())
        assert_same(decode(tree, arrays), obj)
    lg = Counter(lambda: load_gt(gt_path))
    a = cached_load(tmp_path / "c", "dataset", [gt_path], {}, lg)
    b = cached_load(tmp_path / "c", "dataset", [gt_path], {}, lg)
    assert lg.calls == 1
    assert_same(a, ds)
    assert_same(b, ds)
    lr = Counter(lambda: load_run(pred_path, ds))
    cached_load(tmp_path / "c", "run", [pred_path, gt_path], {}, lr)
    r = cached_load(tmp_path / "c", "run", [pred_path, gt_path], {}, lr)
    assert lr.calls == 1
    assert_same(r, run)


def test_benchmark_loads_through_the_cache_and_fingerprints_its_inputs(tmp_path, files):
    from ov3d_core.benchmark import Benchmark
    from ov3d_core.io.config import config_from_files

    gt_path, pred_path = files
    cfg = config_from_files([str(gt_path)], [str(pred_path)], cache_dir=str(tmp_path / "cache"))
    b1 = Benchmark(cfg)
    name = b1.dataset_names[0]
    from ov3d_core.analysis import Analysis, View

    ap1 = Analysis(b1).summary(View(name, b1.run_names()[0]))
    assert len(entries(tmp_path / "cache")) == 2  # one dataset, one run
    b2 = Benchmark(cfg)
    assert_same(Analysis(b2).summary(View(name, b2.run_names()[0])), ap1)
    assert_same(b2.dataset(name), b1.dataset(name))
    fp = b1.fingerprint()
    assert set(fp) == {str(gt_path.resolve()), str(pred_path.resolve())}
    st = pred_path.stat()
    text = pred_path.read_text()
    pred_path.write_text(text.replace('"score": 0.5', '"score": 0.4'))  # same size
    os.utime(pred_path, ns=(st.st_atime_ns, st.st_mtime_ns))
    fp2 = Benchmark(cfg).fingerprint()
    assert fp2[str(pred_path.resolve())] != fp[str(pred_path.resolve())]
    assert fp2[str(gt_path.resolve())] == fp[str(gt_path.resolve())]
    b3 = Benchmark(cfg)
    assert b3.run(b3.run_names()[0], name).pred.score.min() == pytest.approx(0.4)  # not the cached 0.5


# ------------------------------------------------------------------------------------------------ untrusted entries
@pytest.fixture
def cached_gt(tmp_path, files):
    gt_path, _ = files
    root = tmp_path / "c"
    cached_load(root, "dataset", [gt_path], {}, lambda: load_gt(gt_path))
    (entry,) = entries(root)
    return gt_path, root, entry


def _reload(root, gt_path):
    load = Counter(lambda: load_gt(gt_path))
    got = cached_load(root, "dataset", [gt_path], {}, load)
    return got, load.calls


def test_planted_pickle_is_never_run(tmp_path, cached_gt):
    gt_path, root, entry = cached_gt
    marker = tmp_path / "pwned"

    class Boom:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    for payload in (pickle.dumps(Boom()), pickle.dumps((Boom(), [])), pickle.dumps(Boom(), protocol=0)):
        entry.write_bytes(payload)
        got, calls = _reload(root, gt_path)
        assert calls == 1 and not marker.exists()
        assert_same(got, load_gt(gt_path))
    # an old-style .pkl entry beside it is ignored too
    (root / "loads" / f"dataset-{entry.stem.split('-', 1)[1]}.pkl").write_bytes(pickle.dumps(Boom()))
    got, calls = _reload(root, gt_path)
    assert not marker.exists()


def test_another_inputs_entry_at_the_key_is_refused(tmp_path, files, cached_gt):
    gt_path, root, entry = cached_gt
    _, pred_path = files
    ds = load_gt(gt_path)
    cached_load(tmp_path / "o", "run", [pred_path, gt_path], {}, lambda: load_run(pred_path, ds))
    (other,) = entries(tmp_path / "o")
    shutil.copy(other, entry)
    got, calls = _reload(root, gt_path)
    assert calls == 1 and isinstance(got, Dataset)
    assert_same(got, ds)


@pytest.mark.parametrize("damage", ["truncate", "empty", "wrong_shape", "wrong_class", "dropped_array"])
def test_damaged_or_inconsistent_entries_are_recomputed(cached_gt, damage):
    gt_path, root, entry = cached_gt
    arrays, meta = npzstore.read(entry)
    arrays = {k: np.array(v) for k, v in arrays.items()}
    if damage == "truncate":
        entry.write_bytes(entry.read_bytes()[: entry.stat().st_size // 2])
    elif damage == "empty":
        entry.write_bytes(b"")
    else:
        tree = meta["tree"]
        gt_node = tree["v"]["gt"]["v"]
        if damage == "wrong_shape":  # a consistent file (digests redone) whose corners lost a row
            name = gt_node["corners"]["a"]
            arrays[name] = arrays[name][1:]
        elif damage == "wrong_class":  # names a class outside the whitelist
            tree["v"]["gt"]["cls"] = "Popen"
        else:
            del arrays[gt_node["center"]["a"]]
        npzstore.write(entry, arrays, meta)
    got, calls = _reload(root, gt_path)
    assert calls == 1
    assert_same(got, load_gt(gt_path))


@pytest.mark.parametrize("kind", ["dataset", "run"])
def test_bit_flips_never_give_a_different_object(tmp_path, files, kind):
    gt_path, pred_path = files
    ds = load_gt(gt_path)
    truth = ds if kind == "dataset" else load_run(pred_path, ds)
    inputs = [gt_path] if kind == "dataset" else [pred_path, gt_path]
    fn = (lambda: load_gt(gt_path)) if kind == "dataset" else (lambda: load_run(pred_path, ds))
    root = tmp_path / "c"
    cached_load(root, kind, inputs, {}, fn)
    (entry,) = entries(root)
    raw = entry.read_bytes()
    refused = tried = 0
    for pos, flipped in flipped_copies(raw, 120):
        tried += 1
        entry.write_bytes(flipped)
        load = Counter(fn)
        got = cached_load(root, kind, inputs, {}, load)
        refused += load.calls
        assert_same(got, truth, f"flip at byte {pos}")
        entry.write_bytes(raw)
    assert refused >= 0.8 * tried  # the rest hit bytes that zip and npy never read


# ------------------------------------------------------------------------------------------------ loader version
def test_loader_version_follows_the_loader_source(tmp_path, monkeypatch):
    pkg = tmp_path / "ov3d_core"
    shutil.copytree(loadcache._PACKAGE, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(loadcache, "_PACKAGE", pkg)

    def version():
        loadcache.loader_version.cache_clear()
        return loadcache.loader_version()

    try:
        v0 = version()
        (pkg / "viz" / "bars.py").write_text((pkg / "viz" / "bars.py").read_text() + "\n# not a loader\n")
        assert version() == v0
        for rel in ("io/omni3d.py", "model.py", "taxonomy.py", "geometry/boxes.py"):
            f = pkg / rel
            before = f.read_text()
            f.write_text(before + "\n# edited\n")
            assert version() != v0, rel  # the loaders themselves and what they import
            f.write_text(before)
            assert version() == v0
        (pkg / "io" / "columnar.py").write_text("X = 1\n")  # a new loader module counts by itself
        assert version() != v0
    finally:
        loadcache.loader_version.cache_clear()
