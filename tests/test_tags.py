"""The tags file (``ov3d_core.tags``): round trip, atomic and serialised writes (threads and processes), removal,
and bad files refused with the item and field named, never overwritten."""

from __future__ import annotations

import json
import multiprocessing as mp
import threading

import pytest

from ov3d_core.errors import InputError
from ov3d_core.tags import TagStore, tags_path


def test_path_is_beside_the_config(tmp_path):
    assert tags_path(tmp_path / "bench.yaml", tmp_path / "cache") == tmp_path / "bench.tags.json"
    assert tags_path(None, tmp_path / "cache") == tmp_path / "cache" / "tags.json"


def test_round_trip_and_removal(tmp_path):
    s = TagStore(tmp_path / "t.json")
    assert s.load() == [] and s.get("d", 1).tags == []
    s.set("d", 1, tags=["for the talk", " for the talk", "odd"])
    s.set("d", 1, box=("pred", "run_a", 4), tags=["annotation error"], note=" stool, not chair ")
    s.set("e", 2, note="other dataset")
    assert s.get("d", 1).tags == ["for the talk", "odd"]  # stripped, de-duplicated, order kept
    box = s.get("d", 1, box=("pred", "run_a", 4))
    assert box.tags == ["annotation error"] and box.note == "stool, not chair"
    assert s.images_with("d", ["annotation error"]) == {1} and s.images_with("d", ["nothing"]) == set()
    assert s.all_tags("d") == ["annotation error", "for the talk", "odd"]
    t = s.table("d")
    assert t["kind"].tolist() == ["image", "pred"] and t["row"].tolist()[1] == 4
    s.set("d", 1, note="kept")  # the note changes, the tags stay
    assert s.get("d", 1).tags == ["for the talk", "odd"] and s.get("d", 1).note == "kept"
    s.set("d", 1, tags=[], note="")  # nothing left: the item goes
    assert [it.image_id for it in s.load() if it.dataset == "d" and it.box is None] == []
    assert json.loads(s.to_json("e"))["items"][0]["note"] == "other dataset"
    assert not list(tmp_path.glob(".tags.*"))


def test_threads_do_not_lose_each_others_tags(tmp_path):
    s = TagStore(tmp_path / "t.json")
    threads = [threading.Thread(target=lambda i=i: s.set("d", i, tags=[f"t{i}"])) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(it.image_id for it in s.load()) == list(range(20))


def _writer(path: str, start: int) -> None:
    s = TagStore(path)
    for i in range(start, start + 10):
        s.set("d", i, tags=["x"])


def test_processes_do_not_lose_each_others_tags(tmp_path):
    path = str(tmp_path / "t.json")
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, 10 * k)) for k in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    assert sorted(it.image_id for it in TagStore(path).load()) == list(range(30))


@pytest.mark.parametrize("content, where", [
    ("{not json", "a JSON tags file"),
    (json.dumps({"version": 1, "items": [{"dataset": "d", "image_id": "x"}]}), "items[0]: expected `image_id`"),
    (json.dumps({"version": 1, "items": [{"dataset": "d", "image_id": 1, "tags": [""]}]}), "items[0]: expected `tags`"),
    (json.dumps({"version": 1, "items": [{"dataset": "d", "image_id": 1, "box": {"kind": "box", "row": 1}}]}),
     "items[0]: expected `box.kind`"),
    (json.dumps({"version": 2, "items": []}), "expected `version`"),
])
def test_a_bad_file_is_refused_and_left_alone(tmp_path, content, where):
    p = tmp_path / "t.json"
    p.write_text(content)
    s = TagStore(p)
    with pytest.raises(InputError, match=where.replace("[", r"\[").replace("]", r"\]")) as exc:
        s.load()
    assert str(p) in str(exc.value)
    with pytest.raises(InputError):
        s.set("d", 1, tags=["x"])
    assert p.read_text() == content
