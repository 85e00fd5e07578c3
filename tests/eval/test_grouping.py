"""``pair_index``: the position of each asked (GT, prediction) pair in a pair table, -1 when it is not stored, the same
whether a few boxes (one image's: only their pairs are sorted) or many are asked."""

import numpy as np
import pytest

from ov3d_core.eval.grouping import pair_index


@pytest.mark.parametrize("n_asked", [3, 40, 5000])  # the first two take the few-boxes path
def test_pair_index_against_a_dictionary(n_asked):
    rng = np.random.default_rng(n_asked)
    n_pairs = 4000
    pg = rng.integers(0, 300, n_pairs).astype(np.int32)  # int32 columns as a memory-mapped table may hold
    pp = rng.integers(0, 2000, n_pairs)
    first = {}
    for k, key in enumerate(zip(pg.tolist(), pp.tolist())):
        first.setdefault(key, k)  # duplicates: the first position, as a stable sort finds it
    g = rng.integers(-1, 300, n_asked)
    d = rng.integers(-1, 2000, n_asked)
    stored = rng.integers(0, n_pairs, n_asked // 2)
    g[: len(stored)], d[: len(stored)] = pg[stored], pp[stored]  # half of them certainly stored
    want = np.array([first.get((a, b), -1) if a >= 0 and b >= 0 else -1 for a, b in zip(g.tolist(), d.tolist())])
    np.testing.assert_array_equal(pair_index(pg, pp, g, d), want)
    assert (want >= 0).sum() >= len(stored)
