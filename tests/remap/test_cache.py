import numpy as np
import pytest

from ov3d_core.remap.cache import EmbeddingStore, TextEmbeddingCache, class_text_embeddings, hash_inputs
from ov3d_core.remap.templates import resolve_templates
from tests.remap.fakes import FakeEncoder

N = 23


def inputs(tag="v1"):
    return [f"{tag}-crop-{i}" for i in range(N)]


def compute(store, enc, items, valid=None, **kw):
    valid = np.ones(N, bool) if valid is None else valid
    return store.compute("DS", "run/1", enc, records=np.arange(100, 100 + N), valid=valid,
                         load_inputs=lambda rows: [items[i] for i in rows], inputs_hash=hash_inputs(items),
                         chunk_size=5, progress=False, **kw)


def test_compute_then_load_without_encoding(tmp_path):
    store, enc = EmbeddingStore(tmp_path), FakeEncoder()
    items = inputs()
    valid = np.ones(N, bool)
    valid[[3, 17]] = False
    ce = compute(store, enc, items, valid)
    assert enc.n_images == N - 2
    assert ce.emb.dtype == np.float16 and ce.emb.shape == (N, enc.dim)
    np.testing.assert_allclose(ce.float32()[0], enc._vec(items[0]), atol=1e-3)
    assert (ce.float32()[3] == 0).all() and not ce.valid[3]
    rows, found = ce.rows_for(np.array([105, 100, 7]))
    assert rows[:2].tolist() == [5, 0] and found.tolist() == [True, True, False]
    assert not (ce.path / "chunks").exists()
    again = compute(store, enc, items, valid)
    assert enc.n_images == N - 2  # nothing re-encoded
    np.testing.assert_array_equal(again.emb, ce.emb)
    assert store.status("DS", "run/1", enc.cache_key)["complete"]


def test_changed_inputs_recompute_and_other_encoders_get_their_own_entry(tmp_path):
    store, enc = EmbeddingStore(tmp_path), FakeEncoder()
    compute(store, enc, inputs("v1"))
    compute(store, enc, inputs("v2"))  # e.g. crop boxes changed -> new inputs hash
    assert enc.n_images == 2 * N
    assert store.load("DS", "run/1", enc.cache_key, hash_inputs(inputs("v1"))) is None
    other = FakeEncoder(key="fake:v2")
    compute(store, other, inputs("v2"))
    assert other.n_images == N
    compute(store, enc, inputs("v2"))
    assert enc.n_images == 2 * N  # the first encoder's entry survived


def test_interrupted_run_resumes_from_finished_chunks(tmp_path):
    store, enc = EmbeddingStore(tmp_path), FakeEncoder()
    enc.fail_after = 12  # chunks of 5: two finish, the third raises
    with pytest.raises(KeyboardInterrupt):
        compute(store, enc, inputs())
    assert enc.n_images == 10
    st = store.status("DS", "run/1", enc.cache_key)
    assert st == {"complete": False, "done": 10, "n": N}
    enc.fail_after = None
    ce = compute(store, enc, inputs())
    assert enc.n_images == N  # only the 13 missing ones were encoded
    ref = compute(EmbeddingStore(tmp_path / "fresh"), FakeEncoder(), inputs())
    np.testing.assert_array_equal(ce.emb, ref.emb)


def test_partial_chunk_files_are_ignored(tmp_path):
    store, enc = EmbeddingStore(tmp_path), FakeEncoder()
    enc.fail_after = 7
    with pytest.raises(KeyboardInterrupt):
        compute(store, enc, inputs())
    d = store.directory("DS", "run/1", enc.cache_key)
    (d / "chunks" / "00001.npy").write_bytes(b"garbage")  # a torn write from some other tool
    enc.fail_after = None
    compute(store, enc, inputs())
    assert enc.n_images == 5 + N - 5


def test_text_cache_memory_and_disk(tmp_path):
    enc = FakeEncoder()
    cache = TextEmbeddingCache(tmp_path)
    a = cache.get(enc, ["a car", "a sofa"])
    b = cache.get(enc, ["a car", "a sofa"])
    assert a is b and enc.n_texts == 2 and cache.misses == 1
    fresh = TextEmbeddingCache(tmp_path)  # a new process: served from disk
    np.testing.assert_array_equal(fresh.get(enc, ["a car", "a sofa"]), a)
    assert enc.n_texts == 2 and fresh.misses == 0
    fresh.get(FakeEncoder(key="other"), ["a car", "a sofa"])
    assert fresh.misses == 1
    small = TextEmbeddingCache(maxsize=2)
    for p in ("x", "y", "z"):
        small.get(enc, [p])
    assert len(small._mem) == 2


def test_class_text_embeddings_single_and_ensemble():
    enc, cache = FakeEncoder(), TextEmbeddingCache()
    classes = ["car", "truck"]
    s1 = class_text_embeddings(enc, resolve_templates("S1"), classes, cache)
    np.testing.assert_allclose(s1, enc.encode_text(["a photo of a car.", "a photo of a truck."]), atol=1e-6)
    group = class_text_embeddings(enc, resolve_templates("standard"), classes, cache)
    per = np.stack([enc.encode_text([t.format(c) for c in classes]) for t in resolve_templates("standard")])
    m = per.mean(axis=0)
    np.testing.assert_allclose(group, m / np.linalg.norm(m, axis=1, keepdims=True), atol=1e-6)
    n = cache.misses
    class_text_embeddings(enc, resolve_templates("standard"), classes, cache)
    assert cache.misses == n
