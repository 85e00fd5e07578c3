"""The order the suite's files are handed to the xdist workers (tests/conftest.py)."""

from __future__ import annotations

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
