"""tests/conftest.py: the order the suite's files are handed to the xdist workers, the garbage collector's freeze at
each file's start, and the demo copies."""

from __future__ import annotations

import gc
import hashlib
from pathlib import Path
from types import SimpleNamespace

from tests.conftest import LONGEST_FIRST, pytest_collection_modifyitems

REPO = Path(__file__).resolve().parents[1]

#: Alive (and tracked by the garbage collector) since this module was imported, before its first test set up.
ALIVE_BEFORE_THE_FILE = [["a list in a list"]]


def test_every_listed_file_exists_once():
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)
    assert [p for p in LONGEST_FIRST if not (REPO / p).is_file()] == []


def test_listed_files_go_first_longest_first_and_the_rest_keep_their_order():
    ids = ["tests/a/test_x.py::t1", f"{LONGEST_FIRST[1]}::t1", "tests/b/test_y.py::t1", f"{LONGEST_FIRST[0]}::t1",
           f"{LONGEST_FIRST[1]}::t2", "tests/a/test_x.py::t2"]
    items = [SimpleNamespace(nodeid=i) for i in ids]
    pytest_collection_modifyitems(None, items)
    assert [i.nodeid for i in items] == [f"{LONGEST_FIRST[0]}::t1", f"{LONGEST_FIRST[1]}::t1",
                                         f"{LONGEST_FIRST[1]}::t2", "tests/a/test_x.py::t1", "tests/b/test_y.py::t1",
                                         "tests/a/test_x.py::t2"]


def test_what_is_alive_when_a_file_starts_is_left_out_of_later_collections():
    assert gc.get_freeze_count() > 0
    made_here = [["a list in a list"]]
    ids = {id(o) for o in gc.get_objects()}  # every generation's objects; frozen ones are in none of them
    assert id(ALIVE_BEFORE_THE_FILE) not in ids
    assert id(made_here) in ids


def test_a_demo_copy_holds_every_file_of_the_build_it_was_copied_from(copied_demo, tmp_path):
    from ov3d_core.demo.build import read_manifest

    a = copied_demo(tmp_path / "a", images=3, seed=0)
    b = copied_demo(tmp_path / "b", images=3, seed=0)
    m = read_manifest(a)
    assert (m["images_per_dataset"], m["seed"], m["annotations_only"]) == (3, 0, False) and read_manifest(b) == m
    for folder in (a, b):
        files = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
        assert set(m["sha256"]) <= files
        for rel, digest in m["sha256"].items():
            assert hashlib.sha256((folder / rel).read_bytes()).hexdigest() == digest, (folder, rel)
