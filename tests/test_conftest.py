"""tests/conftest.py: the order the suite's files are handed to the xdist workers, and the demo copies."""

from __future__ import annotations

import hashlib
from pathlib import Path
from types import SimpleNamespace

from tests.conftest import LONGEST_FIRST, pytest_collection_modifyitems

REPO = Path(__file__).resolve().parents[1]


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
