"""Background cache writes (``npzstore.write(..., background=True)`` and ``deferred_writes``): what is read back is
what was handed over, a read waits for the pending write, an array changed after the call yields a refused file
(never other data), and the CLI leaves its caches written when it returns."""

import json
import logging
import threading

import numpy as np
import pytest

from ov3d_core import cli
from ov3d_core.io import npzstore
from tests.io.factories import make_annotation, make_gt_json, make_image, make_pred_from_annotation


def test_read_waits_for_the_pending_write_and_gets_the_arrays(tmp_path):
    path = tmp_path / "a.npz"
    a = np.arange(1_000_000, dtype=np.float64)
    npzstore.write(path, {"a": a, "b": np.array([1, 2], np.int32)}, {"k": 1}, background=True)
    arrays, meta = npzstore.read(path)  # no wait() first: read waits itself
    assert meta == {"k": 1}
    assert np.array_equal(arrays["a"], a)
    assert arrays["b"].dtype == np.int32


def test_an_array_changed_after_the_call_gives_a_refused_file(tmp_path):
    path = tmp_path / "a.npz"
    a = np.zeros(4_000_000)
    gate = threading.Event()
    # Hold the writer until the array is changed: the digests were taken at the call.
    npzstore.write(tmp_path / "gate.npz", {"x": np.zeros(1)}, {}, background=True)
    npzstore._writer.submit(gate.wait)
    npzstore.write(path, {"a": a}, {}, background=True)
    a[123] = 1.0
    gate.set()
    npzstore.wait(path)
    with pytest.raises(npzstore.StoreError, match="digest mismatch"):
        npzstore.read(path)


def test_a_failed_background_write_is_logged_and_leaves_no_file(tmp_path, caplog):
    path = tmp_path / "a.npz"
    path.mkdir()  # os.replace of the temporary file onto a folder fails, whoever runs the test
    with caplog.at_level(logging.WARNING, logger="ov3d_core.io.npzstore"):
        npzstore.write(path, {"a": np.zeros(10)}, {}, background=True)
        npzstore.wait(path)
    assert "could not write cache file" in caplog.text
    assert path.is_dir()
    assert not list(tmp_path.glob(".tmp-*"))


def test_deferred_writes_is_off_outside_the_block(tmp_path):
    path = tmp_path / "a.npz"
    with npzstore.deferred_writes():
        npzstore.write(path, {"a": np.zeros(10)}, {})
    assert path.is_file()  # waited for on leaving the block
    assert not npzstore._defer.on
    before = dict(npzstore._pending)
    npzstore.write(tmp_path / "b.npz", {"a": np.zeros(10)}, {})
    assert npzstore._pending == before  # written in the foreground
    assert (tmp_path / "b.npz").is_file()


def test_evaluate_returns_with_its_caches_written(tmp_path):
    anns = [make_annotation(1, 1, category="chair")]
    gt = make_gt_json(tmp_path, [make_image(1)], anns)
    pred = tmp_path / "preds.json"
    pred.write_text(json.dumps([make_pred_from_annotation(anns[0], 0.9)]))
    cache = tmp_path / "cache"
    assert cli.main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--cache-dir", str(cache)]) == 0
    assert npzstore._pending == {}
    files = sorted(p.parent.name for p in cache.rglob("*.npz"))
    assert files == ["loads", "loads", "pairs"]
