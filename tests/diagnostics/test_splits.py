"""Class-split sensitivity against a slow, direct computation on the same random stream."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ov3d_core.diagnostics.splits import class_split_sensitivity, draw_subsets


def _slow(ap_pool, subset_size, n_subsets, seed):
    rng = np.random.default_rng(seed)
    means = []
    for _ in range(n_subsets):
        keys = rng.random(len(ap_pool))  # the same stream, one row at a time
        chosen = sorted(range(len(ap_pool)), key=lambda i: keys[i])[:subset_size]
        means.append(sum(ap_pool[i] for i in chosen) / subset_size)
    return np.array(means)


def test_matches_slow_direct_computation():
    rng = np.random.default_rng(3)
    ap = rng.uniform(0, 60, 30)
    ap[[4, 11, 25]] = np.nan  # absent classes leave the pool
    names = [f"c{i}" for i in range(30)]
    res = class_split_sensitivity(ap, class_names=names, subset_size=10, n_subsets=400, seed=11)
    pool = ap[np.isfinite(ap)]
    slow = _slow(list(pool), 10, 400, 11)
    np.testing.assert_allclose(res.subset_means, slow, rtol=0, atol=1e-9)
    assert res.mean == pytest.approx(slow.mean()) and res.std == pytest.approx(slow.std())
    assert res.min == pytest.approx(slow.min()) and res.max == pytest.approx(slow.max())
    assert res.n_classes == 27 and "c4" not in res.class_names
    assert res.full == pytest.approx(pool.mean())


def test_bounds_by_hand():
    ap = pd.Series({f"k{i}": float(i) for i in range(20)})
    res = class_split_sensitivity(ap, subset_size=10, n_subsets=5000, seed=0)
    assert res.adverse == pytest.approx(4.5) and res.favourable == pytest.approx(14.5)
    assert res.bottom_classes() == [f"k{i}" for i in range(10)]
    assert res.top_classes() == [f"k{i}" for i in range(19, 9, -1)]
    assert res.adverse <= res.min <= res.mean <= res.max <= res.favourable
    assert res.mean == pytest.approx(9.5, abs=0.1)  # unbiased draws: E[subset mean] = pool mean
    d = res.to_dict()
    assert d["n_subsets"] == 5000 and d["subset_size"] == 10
    assert list(res.to_frame().columns)[:3] == ["subset_size", "n_subsets", "seed"]


def test_subsets_are_uniform_and_distinct():
    idx = draw_subsets(20, 10, 5000, np.random.default_rng(1))
    assert idx.shape == (5000, 10)
    assert all(len(set(row)) == 10 for row in idx[:200])
    freq = np.bincount(idx.ravel(), minlength=20) / 5000
    np.testing.assert_allclose(freq, 0.5, atol=0.05)


def test_seed_reproducible_and_different():
    ap = {f"k{i}": float(i * i) for i in range(15)}
    a = class_split_sensitivity(ap, n_subsets=100, seed=5)
    b = class_split_sensitivity(ap, n_subsets=100, seed=5)
    c = class_split_sensitivity(ap, n_subsets=100, seed=6)
    np.testing.assert_array_equal(a.subset_means, b.subset_means)
    assert not np.array_equal(a.subset_means, c.subset_means)


def test_small_pools():
    res = class_split_sensitivity([1.0, 2.0, np.nan], subset_size=10)
    assert math.isnan(res.mean) and math.isnan(res.adverse) and res.full == pytest.approx(1.5)
    assert res.subset_means.size == 0 and res.bottom_classes() == []
    exact = class_split_sensitivity([1.0, 2.0, 3.0], subset_size=3, n_subsets=50)
    assert exact.mean == pytest.approx(2.0) and exact.std == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError):
        class_split_sensitivity([1.0], subset_size=0)
