"""The benchmark YAML's `ontology:` (a built-in name or a file relative to the config) and a run's `runtime:`
(declared ms per image by stage): parsed into the config, bad values refused in one line naming file and field."""

from __future__ import annotations

import math

import pytest
import yaml

from ov3d_core.errors import InputError
from ov3d_core.io.config import DeclaredRuntime, load_config
from ov3d_core.ontology import OV3D_BENCH, OV3D_EXPLORER_10


def _write(tmp_path, **top):
    doc = {"datasets": [{"name": "D", "gt": "gt.json"}],
           "runs": [{"name": "r", "dataset": "D", "predictions": "p.json"}], **top}
    p = tmp_path / "bench.yaml"
    p.write_text(yaml.safe_dump(doc))
    return p


def test_ontology_by_name_by_file_and_absent(tmp_path):
    assert load_config(_write(tmp_path)).ontology is None  # not given: callers use the default (ov3d-bench)
    assert load_config(_write(tmp_path, ontology="ov3d-bench")).ontology is OV3D_BENCH
    assert load_config(_write(tmp_path, ontology="ov3d-explorer-10")).ontology is OV3D_EXPLORER_10
    (tmp_path / "onto").mkdir()
    (tmp_path / "onto" / "mine.yaml").write_text("extends: ov3d-bench\nclasses: {banana: table}\n")
    onto = load_config(_write(tmp_path, ontology="onto/mine.yaml")).ontology
    assert onto.name == "mine" and onto.super_category("banana") == "table" and onto.source.endswith("mine.yaml")


def test_bad_ontology_values_are_one_line_errors(tmp_path):
    with pytest.raises(InputError) as e:
        load_config(_write(tmp_path, ontology="paper"))
    assert str(e.value).startswith(f"{tmp_path / 'bench.yaml'}: expected `ontology` to be one of ov3d-bench, "
                                   "ov3d-explorer-10, or the path of an ontology file")
    with pytest.raises(InputError, match="expected `ontology` to be a path"):
        load_config(_write(tmp_path, ontology=5))
    bad = tmp_path / "bad.yaml"
    bad.write_text("super_categories: [a]\nclasses: {chair: b}\n")
    with pytest.raises(InputError) as e:  # the ontology file's own problem names that file and its field
        load_config(_write(tmp_path, ontology="bad.yaml"))
    assert str(e.value).startswith(str(bad)) and "`classes.chair`" in str(e.value) and "\n" not in str(e.value)
    outside = tmp_path.parent / f"{tmp_path.name}_outside.yaml"
    outside.write_text("extends: ov3d-bench\n")
    try:
        with pytest.raises(InputError, match="expected `ontology` to be a path inside the allowed data roots"):
            load_config(_write(tmp_path, ontology=str(outside)), allowed_roots=[tmp_path])
    finally:
        outside.unlink()


def test_declared_runtime_is_parsed(tmp_path):
    p = _write(tmp_path)
    doc = yaml.safe_load(p.read_text())
    doc["runs"][0]["runtime"] = {"semantic_ms": 182.9, "geometry_ms": 400, "device": "H100 NVL", "images": 200,
                                 "source": "paper Table 10"}
    p.write_text(yaml.safe_dump(doc))
    rt = load_config(p).runs[("r", "D")].runtime
    assert rt == DeclaredRuntime(semantic_ms=182.9, geometry_ms=400.0, total_ms=None, device="H100 NVL", images=200,
                                 source="paper Table 10")
    assert load_config(_write(tmp_path)).runs[("r", "D")].runtime is None


@pytest.mark.parametrize("runtime, field, got", [
    ({"semantic_ms": -1.5}, "runtime.semantic_ms", "a number"),
    ({"geometry_ms": math.nan}, "runtime.geometry_ms", "a number"),
    ({"total_ms": math.inf}, "runtime.total_ms", "a number"),
    ({"semantic_ms": "190.6"}, "runtime.semantic_ms", "a string"),
    ({"semantic_ms": True}, "runtime.semantic_ms", "a boolean"),
    ({"semantic_ms": 1.0, "images": 0}, "runtime.images", "an integer"),
    ({"semantic_ms": 1.0, "images": 2.5}, "runtime.images", "a number"),
    ({"device": "H100"}, "runtime", "none of them"),
    ({"semantic_ms": 1.0, "speed": 2}, "runtime.speed", "an unknown key"),
    ("fast", "runtime", "a string"),
])
def test_bad_runtime_entries_are_one_line_errors_naming_file_and_field(tmp_path, runtime, field, got):
    p = _write(tmp_path)
    doc = yaml.safe_load(p.read_text())
    doc["runs"][0]["runtime"] = runtime
    p.write_text(yaml.safe_dump(doc))
    with pytest.raises(InputError) as e:
        load_config(p)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"{p}: runs[0]: expected `{field}` to be ") and msg.endswith(got)
