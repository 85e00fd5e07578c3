"""``ov3d_app.cache.shared``: one value per key for the whole server, built once even when several sessions ask at
the same time, and ``keep`` bounds how many values of one kind (a run's box table is large) stay."""

import threading
import time

from ov3d_app import cache


def test_built_once_for_concurrent_sessions():
    calls = []

    def build():
        calls.append(1)
        time.sleep(0.2)
        return object()

    key = ("test_once", "cfg", time.time_ns())
    got = []
    threads = [threading.Thread(target=lambda: got.append(cache.shared(key, build))) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1
    assert len({id(v) for v in got}) == 1


def test_keep_bounds_one_kind_and_leaves_the_others():
    tag = time.time_ns()
    other = cache.shared(("test_other", tag), lambda: "other")
    for k in range(5):
        cache.shared(("test_kept", tag, k), lambda k=k: k, keep=2)
    kept = [k for k in cache._shared.keys() if k[0] == "test_kept" and k[1] == tag]
    assert kept == [("test_kept", tag, 3), ("test_kept", tag, 4)]
    assert cache._shared.peek(("test_other", tag)) == other
    rebuilt = []
    cache.shared(("test_kept", tag, 0), lambda: rebuilt.append(1) or 0, keep=2)  # evicted: built again
    assert rebuilt == [1]
