"""Named image subsets of a dataset (benchmark YAML ``image_subsets``): id-list files (.txt / .json), the seeded rule
(pinned ids, the documented Stream permutation), and the one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from ov3d_core.benchmark import Benchmark
from ov3d_core.demo.rng import Stream
from ov3d_core.errors import InputError
from ov3d_core.io.config import IMAGE_RULE_STREAM, ImageRule, load_config
from ov3d_core.io.image_subsets import rule_subset
from tests.io.factories import make_gt_json, make_image

IDS = [5, 3, 11, 7, 2, 13, 17, 19, 23, 29]  # GT order is not sorted on purpose


def _bench(tmp_path, subsets) -> Path:
    make_gt_json(tmp_path, images=[make_image(i) for i in IDS], annotations=[])
    p = tmp_path / "bench.yaml"
    p.write_text(yaml.safe_dump({"datasets": [{"name": "D", "gt": "gt.json", "image_subsets": subsets}]},
                                sort_keys=False))
    return p


def test_a_txt_list_and_a_json_list(tmp_path):
    (tmp_path / "runtime.txt").write_text("# the runtime subset\n13\n\n2\n5\n13\n")
    (tmp_path / "probe.json").write_text(json.dumps([29, 3]))
    b = Benchmark.from_yaml(_bench(tmp_path, {"runtime": "runtime.txt", "probe": "probe.json"}))
    assert b.image_subsets("D") == ("runtime", "probe")
    got = b.image_subset("D", "runtime")
    assert got.dtype == np.int64 and got.tolist() == [2, 5, 13]  # sorted, a repeat counts once
    assert b.image_subset("D", "probe").tolist() == [3, 29]
    assert b.image_subset("D", "runtime") is got  # computed once


def test_the_seeded_rule_is_the_documented_permutation(tmp_path):
    b = Benchmark.from_yaml(_bench(tmp_path, {"r": {"rule": "random", "n": 4, "seed": 3}}))
    got = b.image_subset("D", "r")
    ids = np.sort(np.asarray(IDS, np.int64))
    order = Stream([3, IMAGE_RULE_STREAM]).permutation(len(ids))
    assert got.tolist() == sorted(ids[order[:4]].tolist())
    # pinned: the same ids on every machine and NumPy release (the Stream's transforms are written out)
    assert got.tolist() == PINNED_SEED3_N4
    assert rule_subset(ImageRule("random", 4, 3), np.asarray(IDS[::-1])).tolist() == got.tolist()  # order-free
    assert rule_subset(ImageRule("random", 4, 4), ids).tolist() != got.tolist()  # the seed matters
    assert rule_subset(ImageRule("random", 10, 0), ids).tolist() == ids.tolist()


PINNED_SEED3_N4 = [3, 17, 19, 23]  # Stream([3, 0x1A6E5]).permutation(10)[:4] of the sorted ids, sorted


def test_unknown_id_in_a_list_names_the_file_and_line(tmp_path):
    (tmp_path / "runtime.txt").write_text("2\n3\n4\n")
    b = Benchmark.from_yaml(_bench(tmp_path, {"runtime": "runtime.txt"}))
    with pytest.raises(InputError) as e:
        b.image_subset("D", "runtime")
    assert (e.value.file, e.value.record) == (str(tmp_path / "runtime.txt"), "line 3") and "\n" not in str(e.value)
    (tmp_path / "runtime.txt").write_text("2\nthree\n")
    b = Benchmark.from_yaml(_bench(tmp_path, {"runtime": "runtime.txt"}))
    with pytest.raises(InputError) as e:
        b.image_subset("D", "runtime")
    assert e.value.record == "line 2"


def test_unknown_id_in_a_json_list_names_the_index(tmp_path):
    (tmp_path / "p.json").write_text("[2, 3, 99]")
    b = Benchmark.from_yaml(_bench(tmp_path, {"p": "p.json"}))
    with pytest.raises(InputError) as e:
        b.image_subset("D", "p")
    assert (e.value.file, e.value.record) == (str(tmp_path / "p.json"), "[2]")


def test_unknown_subset_name_lists_the_known_ones(tmp_path):
    b = Benchmark.from_yaml(_bench(tmp_path, {"a": {"rule": "random", "n": 2}, "b": {"rule": "random", "n": 3}}))
    with pytest.raises(InputError) as e:
        b.image_subset("D", "c")
    assert "['a', 'b']" in str(e.value) and e.value.field == "image_subsets"


def test_missing_list_file_and_too_large_n_name_the_config_field(tmp_path):
    p = _bench(tmp_path, {"gone": "gone.txt", "big": {"rule": "random", "n": 11}})
    b = Benchmark.from_yaml(p)
    with pytest.raises(InputError) as e:
        b.image_subset("D", "gone")
    assert (e.value.file, e.value.record, e.value.field) == (str(p), "datasets[0]", "image_subsets.gone")
    with pytest.raises(InputError) as e:
        b.image_subset("D", "big")
    assert (e.value.record, e.value.field) == ("datasets[0]", "image_subsets.big.n")


@pytest.mark.parametrize("value, expected", [
    ({"rule": "every", "n": 3}, "`rule` is random"),
    ({"rule": "random", "n": 0}, "`n` is a positive integer"),
    ({"rule": "random", "n": 3, "seed": -1}, "`seed` is a whole number"),
    ({"rule": "random"}, "with `n`"),
    ({"rule": "random", "n": 3, "size": 3}, "only `rule`, `n` and `seed`"),
    (7, "an id-list file"),
])
def test_bad_subset_values_are_refused_when_the_config_loads(tmp_path, value, expected):
    p = _bench(tmp_path, {"s": value})
    with pytest.raises(InputError) as e:
        load_config(p)
    assert (e.value.record, e.value.field) == ("datasets[0]", "image_subsets.s"), str(e.value)
    assert expected in e.value.expected
