"""Pair computation on several threads: the same table, bit for bit, as one thread, and progress in unit order."""

from __future__ import annotations

import numpy as np
import pytest

from ov3d_core.eval import pairs as pairs_mod
from ov3d_core.eval.pairs import compute_pairs
from tests.eval.factories import random_scene

FIELDS = ("gt", "pred", "iou3d", "iou2d", "dist")


@pytest.fixture(scope="module")
def scene():
    return random_scene(np.random.default_rng(5), n_images=60, gt_per_image=(0, 12), copies=(0, 6), background=8)


@pytest.mark.parametrize("threads", [2, 3])
def test_threads_give_the_one_thread_table(scene, threads, monkeypatch):
    gt, pred = scene
    monkeypatch.setenv("OV3D_GEOMETRY_THREADS", "1")
    one_calls: list = []
    one = compute_pairs(gt, pred, chunk_products=40, chunk_boxes=16, chunk_pairs=7,
                        progress=lambda d, t: one_calls.append((d, t)))
    monkeypatch.setenv("OV3D_GEOMETRY_THREADS", str(threads))
    assert pairs_mod.geometry_threads() == threads
    calls: list = []
    many = compute_pairs(gt, pred, chunk_products=40, chunk_boxes=16, chunk_pairs=7,
                         progress=lambda d, t: calls.append((d, t)))
    assert len(one) > 200  # many units, many pairs: the threads really interleave
    for f in FIELDS:
        np.testing.assert_array_equal(getattr(many, f), getattr(one, f), err_msg=f)
    assert calls == one_calls and len(calls) > 20
    done = [d for d, _ in calls]
    assert done == sorted(done) and done[-1] == calls[-1][1]


def test_thread_setting(monkeypatch):
    monkeypatch.setenv("OV3D_GEOMETRY_THREADS", "bad")
    assert 1 <= pairs_mod.geometry_threads() <= 4
    monkeypatch.setenv("OV3D_GEOMETRY_THREADS", "6")
    assert pairs_mod.geometry_threads() == 6
