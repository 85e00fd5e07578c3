"""Progress of the loading steps: the loaders report parse (bytes, also from parallel regions), convert and cache
steps to a ``reporting`` callback, and ``ov3d evaluate`` draws them (and geometry and scoring) on stderr."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from ov3d_core.cli import main
from ov3d_core.io import columnar, load_omni3d_gt, load_predictions
from ov3d_core.io.loadcache import cached_load
from ov3d_core.io.progress import Counter, report, reporting
from tests.io.factories import make_annotation, make_gt_json, make_image, make_pred_from_annotation, make_pred_json


@pytest.fixture()
def files(tmp_path):
    rng = np.random.default_rng(0)
    images = [make_image(i) for i in range(1, 41)]
    anns, preds = [], []
    for i in range(1, 41):
        for k in range(5):
            a = make_annotation(len(anns) + 1, i, category=("chair", "table")[k % 2],
                                center=(rng.uniform(-2, 2), 0.3, rng.uniform(3, 30)), dims=(0.6, 0.9, 0.6))
            anns.append(a)
            preds += [make_pred_from_annotation(a, score=float(s)) for s in rng.random(8)]
    return make_gt_json(tmp_path, images=images, annotations=anns), make_pred_json(tmp_path, preds), tmp_path


class Recorder:
    def __init__(self):
        self.calls: list[tuple[str, int, int, str]] = []
        self._lock = threading.Lock()

    def __call__(self, step, done, total):
        with self._lock:
            self.calls.append((step, done, total, threading.current_thread().name))

    def of(self, step):
        return [(d, t) for s, d, t, _ in self.calls if s == step]


@pytest.mark.parametrize("regions", [1, 3])
def test_loaders_report_parse_bytes_and_convert(files, regions, monkeypatch):
    gt, pred, _ = files
    monkeypatch.setenv("OV3D_JSON_READER", "scan")
    monkeypatch.setenv("OV3D_JSON_THREADS", str(regions))
    monkeypatch.setattr(columnar, "_MIN_REGION_BYTES", 1 << 12)
    monkeypatch.setattr(columnar, "_BLOCK_BYTES", 1 << 14)  # many blocks per region: many updates
    rec = Recorder()
    with reporting(rec):
        ds = load_omni3d_gt(gt)
        run = load_predictions(pred, ds)
    assert len(run.pred) == 1600
    for path in (gt, pred):
        parse = rec.of(f"parse {path.name}")
        size = path.stat().st_size
        assert parse[0] == (0, size) and parse[-1] == (size, size)
        done = [d for d, _ in parse]
        assert done == sorted(done) and len(parse) >= 3
        assert rec.of(f"convert {path.name}") == [(0, 1), (1, 1)]
    workers = {name for s, _, _, name in rec.calls if s == f"parse {pred.name}"} - {"MainThread"}
    if regions == 1:
        assert not workers  # one region: parsed on the calling thread
    else:  # the pool's threads reported their regions' bytes (a fast region may leave a thread unused)
        assert 1 <= len(workers) <= 3
    # the same numbers with or without a reporter
    plain = load_predictions(pred, ds)
    np.testing.assert_array_equal(plain.pred.corners, run.pred.corners)
    np.testing.assert_array_equal(plain.pred.score, run.pred.score)


def test_no_reporter_no_calls_and_cache_step(files):
    gt, _, tmp = files
    rec = Recorder()
    load_omni3d_gt(gt)  # outside a reporting block: nothing is recorded anywhere
    assert rec.calls == []
    with reporting(rec):
        cached_load(tmp / "cache", "dataset", [gt], {}, lambda: load_omni3d_gt(gt))
        cached_load(tmp / "cache", "dataset", [gt], {}, lambda: load_omni3d_gt(gt))  # a hit: no load, no write
    assert rec.of("cache the dataset") == [(0, 1), (1, 1)]
    assert rec.of(f"convert {gt.name}") == [(0, 1), (1, 1)]
    with reporting(rec):
        report("x", 2, 1)
    assert rec.calls[-1][:3] == ("x", 2, 1)


def test_counter_is_cumulative_and_capped():
    rec = Recorder()
    c = Counter(rec, "parse f", 10)
    threads = [threading.Thread(target=lambda: [c.add(1) for _ in range(4)]) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    c.finish()
    done = [d for d, _ in rec.of("parse f")]
    assert done[0] == 0 and done == sorted(done) and done[-1] == 10 and max(done) == 10
    Counter(None, "quiet", 5).add(3)  # no reporter: a no-op


def test_evaluate_draws_every_step_on_stderr(files, capsys, monkeypatch):
    gt, pred, tmp = files
    monkeypatch.setenv("OV3D_JSON_READER", "scan")
    monkeypatch.setenv("OV3D_PROGRESS_DELAY", "0")  # these steps are short: draw them at once
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--cache-dir", str(tmp / "cache")]) == 0
    err = capsys.readouterr().err
    for step in (f"parse {gt.name}", f"convert {gt.name}", "cache the dataset", f"parse {pred.name}",
                 f"convert {pred.name}", "cache the run", "geometry", "scoring"):
        assert step in err, step
    assert "100%" in err


def test_steps_shorter_than_the_delay_leave_stderr_untouched(files, capsys, monkeypatch):
    gt, pred, tmp = files
    monkeypatch.setenv("OV3D_PROGRESS_DELAY", "60")
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--cache-dir", str(tmp / "cache2")]) == 0
    err = capsys.readouterr().err
    assert "%|" not in err and "parse" not in err, err
