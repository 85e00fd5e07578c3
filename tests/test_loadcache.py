"""The load cache: a hit returns the same data without re-reading; a changed file misses; a broken entry reloads."""

import os
import warnings

import numpy as np

from ov3d_core.io.loadcache import cached_load


def test_hit_miss_and_broken_entry(tmp_path):
    src = tmp_path / "in.json"
    src.write_text("[1, 2, 3]")
    calls = []

    def load():
        calls.append(1)
        warnings.warn("corner mismatch in record 7", UserWarning)
        return {"a": np.arange(3)}

    with warnings.catch_warnings(record=True) as w1:
        warnings.simplefilter("always")
        a = cached_load(tmp_path / "c", "x", [src], {"p": 1}, load)
    with warnings.catch_warnings(record=True) as w2:
        warnings.simplefilter("always")
        b = cached_load(tmp_path / "c", "x", [src], {"p": 1}, load)
    assert len(calls) == 1 and np.array_equal(a["a"], b["a"])
    assert [str(w.message) for w in w1] == [str(w.message) for w in w2] == ["corner mismatch in record 7"]
    # other parameters: a different entry
    cached_load(tmp_path / "c", "x", [src], {"p": 2}, load)
    assert len(calls) == 2
    # the file changes (same size, new content and mtime): miss
    src.write_text("[1, 2, 4]")
    os.utime(src, ns=(1, 1))
    cached_load(tmp_path / "c", "x", [src], {"p": 1}, load)
    assert len(calls) == 3
    # a corrupt entry is recomputed, not an error
    for p in (tmp_path / "c" / "loads").iterdir():
        p.write_bytes(b"garbage")
    out = cached_load(tmp_path / "c", "x", [src], {"p": 1}, load)
    assert len(calls) == 4 and np.array_equal(out["a"], np.arange(3))


def test_no_root_means_no_cache(tmp_path):
    calls = []
    cached_load(None, "x", [], {}, lambda: calls.append(1))
    cached_load(None, "x", [], {}, lambda: calls.append(1))
    assert len(calls) == 2
