"""Run-level glue: crop inputs of a run, embedding with the store, live re-scoring, the remapped Run."""

import json

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from ov3d_core.errors import InputError
from ov3d_core.geometry.boxes import corners_from_pose
from ov3d_core.model import BoxSet, Dataset, Run
from ov3d_core.remap.cache import EmbeddingStore, TextEmbeddingCache
from ov3d_core.remap.crops import FLAG_BEHIND
from ov3d_core.remap.pipeline import LiveRemapper, embed_run, remapped_run
from ov3d_core.remap.sources import crop_source
from ov3d_core.remap.remap import remap, similarities, to_label_view
from tests.remap.fakes import FakeEncoder

K = np.array([[100.0, 0, 50], [0, 100.0, 40], [0, 0, 1]])
VOCAB = ("car", "truck", "sofa")


def boxset(centers, cats, scores):
    n = len(centers)
    c = np.asarray(centers, float)
    dims = np.ones((n, 3))
    R = np.repeat(np.eye(3)[None], n, axis=0)
    return BoxSet(image_id=np.array([1, 1, 2, 2][:n]), category=np.array(cats, dtype=object), center=c, dims=dims,
                  R=R, corners=corners_from_pose(c, dims, R), box2d=np.zeros((n, 4)), depth=c[:, 2],
                  score=np.asarray(scores, float), ignore=np.zeros(n, bool), record=np.arange(n) * 10,
                  data={"in_vocab": np.ones(n, bool)})


@pytest.fixture
def data(tmp_path):
    rng = np.random.default_rng(0)
    for name in ("a.png", "b.png"):
        Image.fromarray(rng.integers(0, 255, (80, 100, 3), dtype=np.uint8)).save(tmp_path / name)
    images = pd.DataFrame({"image_id": [1, 2], "width": [100, 100], "height": [80, 80],
                           "file_path": ["a.png", "b.png"], "dataset_id": [0, 0]})
    ds = Dataset(name="Toy", images=images, K=np.stack([K, K]), vocabulary=VOCAB,
                 gt=boxset([[0, 0, 10]], ["car"], [1.0]), root=str(tmp_path))
    pred = boxset([[0, 0, 10], [1, 0, 8], [0, 0, -5], [-1, 0, 6]], ["car", "car", "car", "van"], [0.9, 0.8, 0.7, 0.6])
    run = Run(name="cubercnn", dataset="Toy", pred=pred)
    return ds, run, tmp_path


def test_pixel_crop_source_and_embedding(data):
    ds, run, tmp = data
    enc = FakeEncoder()
    src = crop_source(ds, run, enc)
    assert src.kind == "pixels" and src.valid.tolist() == [True, True, False, True]
    assert src.flags[2] == FLAG_BEHIND
    crops = src.load(np.array([0, 3]))
    assert all(c.mode == "RGB" for c in crops)
    store = EmbeddingStore(tmp / "cache")
    ce = embed_run(store, ds, run, enc, progress=False)
    assert enc.n_images == 3 and ce.records.tolist() == [0, 10, 20, 30]
    embed_run(store, ds, run, enc, progress=False)
    assert enc.n_images == 3
    moved = Run(name=run.name, dataset=run.dataset, pred=boxset([[0, 0, 10], [1, 0, 8], [0, 0, -5], [-1, 0, 7]],
                                                                ["car"] * 4, [0.9, 0.8, 0.7, 0.6]))
    embed_run(store, ds, moved, enc, progress=False)  # one box moved -> the crops changed -> recomputed
    assert enc.n_images == 6


def test_caption_crop_source(data, tmp_path):
    ds, run, _ = data
    crops = tmp_path / "crops.json"
    crops.write_text(json.dumps([{"record": 0, "image_id": 1, "crop_box": [0, 0, 5, 5], "overlaps": [],
                                  "caption": "a red car"},
                                 {"record": 30, "image_id": 2, "crop_box": [0, 0, 5, 5], "overlaps": [],
                                  "caption": "a big truck"}]))
    enc = FakeEncoder()
    enc.uses_captions = True
    src = crop_source(ds, run, enc, crops_json=crops)
    assert src.kind == "captions" and src.valid.tolist() == [True, False, False, True]
    assert src.load(np.array([0, 3])) == ["a red car", "a big truck"]
    with pytest.raises(InputError, match="crops"):
        crop_source(ds, run, enc)
    crops.write_text(json.dumps([{"record": "x"}]))
    with pytest.raises(InputError, match=r"\[0\]"):
        crop_source(ds, run, enc, crops_json=crops)


def test_live_remapper_matches_the_pure_functions_and_caches(data):
    ds, run, tmp = data
    enc = FakeEncoder()
    ce = embed_run(EmbeddingStore(tmp / "cache"), ds, run, enc, progress=False)
    cache = TextEmbeddingCache()
    live = LiveRemapper(ce, run.pred.record, run.pred.score, enc, VOCAB, text_cache=cache)
    res = live.result("S1", theta=-1.0, score_mode="product")
    text = enc.encode_text([f"a photo of a {c}." for c in VOCAB])
    ref = remap(similarities(ce.float32(), text), run.pred.score, theta=-1.0, score_mode="product", valid=ce.valid)
    np.testing.assert_array_equal(res.label, ref.label)
    np.testing.assert_allclose(res.score, ref.score, atol=1e-6)
    assert res.keep.tolist() == [True, True, False, True]
    n_text = enc.n_texts
    live.result("S1", theta=0.3)  # threshold change: no text encoding
    live.result("standard", theta=0.3)
    live.result("standard", theta=0.1)
    assert enc.n_texts == n_text + 4 * len(VOCAB)  # S2..S5 only (S1 came from the cache)
    view = live.label_view("S1", theta=-1.0)
    assert view.vocabulary == VOCAB and view.label.tolist() == res.label.tolist()
    # records in another order than the embeddings: rows follow the records
    flipped = LiveRemapper(ce, run.pred.record[::-1], run.pred.score[::-1], enc, VOCAB, text_cache=cache)
    np.testing.assert_array_equal(flipped.result("S1", theta=-1).label, res.label[::-1])
    with pytest.raises(ValueError):
        LiveRemapper(ce, run.pred.record, run.pred.score, FakeEncoder(key="other"), VOCAB)


def test_remapped_run_round_trips_through_the_cubercnn_writer(data):
    from ov3d_core.io.predictions import load_predictions
    from ov3d_core.io.writers import write_cubercnn_json

    ds, run, tmp = data
    sim = np.array([[0.9, 0.1, 0.0], [0.2, 0.7, 0.1], [0, 0, 0], [0.1, 0.2, 0.3]], np.float32)
    res = remap(sim, run.pred.score, theta=0.5, score_mode="product", valid=np.array([1, 1, 0, 1], bool))
    out = remapped_run(run, res, VOCAB)
    assert out.name == "cubercnn*" and len(out.pred) == 2
    assert out.pred.category.tolist() == ["car", "truck"]
    np.testing.assert_allclose(out.pred.score, [0.9 * 0.9, 0.8 * 0.7])
    np.testing.assert_array_equal(out.pred.corners, run.pred.corners[:2])  # geometry untouched
    path = write_cubercnn_json(out, tmp / "remapped.json")
    back = load_predictions(path, ds)
    assert back.pred.category.tolist() == ["car", "truck"]
    np.testing.assert_allclose(back.pred.score, out.pred.score)
    full = remapped_run(run, res, VOCAB, keep_discarded=True)
    assert len(full.pred) == 4 and full.pred.data["remap_keep"].tolist() == [True, True, False, False]
    assert to_label_view(res, VOCAB).keep.tolist() == [True, True, False, False]


def test_warm_precomputes_rankings(data):
    ds, run, tmp = data
    enc = FakeEncoder()
    ce = embed_run(EmbeddingStore(tmp / "cache"), ds, run, enc, progress=False)
    live = LiveRemapper(ce, run.pred.record, run.pred.score, enc, VOCAB, text_cache=TextEmbeddingCache())
    live.warm(["S1", "O4", "standard"])
    n = enc.n_texts
    for spec in ("S1", "O4", "standard"):
        live.result(spec, theta=0.2)
    assert enc.n_texts == n and len(live._rankings) == 3
