"""docs/benchmark_yaml.md cannot drift from the schema: its key table is the generated one, and its full example
uses every key and loads."""

from __future__ import annotations

import re
from pathlib import Path

from ov3d_core.io.config import ConfigModel, DatasetModel, RunModel, key_table_markdown, load_config, schema_rows

DOC = Path(__file__).resolve().parents[2] / "docs" / "benchmark_yaml.md"


def test_the_key_table_is_the_generated_one():
    text = DOC.read_text(encoding="utf-8")
    m = re.search(r"<!-- keys:begin -->\n(.*?)\n<!-- keys:end -->", text, re.S)
    assert m, "the key table markers are missing"
    assert m.group(1) == key_table_markdown(), (
        "docs/benchmark_yaml.md's key table is stale: paste the output of "
        "`python -c 'from ov3d_core.io.config import key_table_markdown; print(key_table_markdown())'`")
    documented = set(re.findall(r"^\| `([^`]+)` \|", m.group(1), re.M))
    expected = {*ConfigModel.model_fields, *(f"datasets[].{k}" for k in DatasetModel.model_fields),
                *(f"runs[].{k}" for k in RunModel.model_fields)}
    assert documented == expected
    assert all(meaning for *_, meaning in schema_rows())  # every key says what it means


def test_the_full_example_uses_every_key_and_loads(tmp_path):
    import yaml

    text = DOC.read_text(encoding="utf-8")
    example = re.search(r"## A full example.*?```yaml\n(.*?)```", text, re.S).group(1)
    doc = yaml.safe_load(example)
    assert set(doc) == set(ConfigModel.model_fields)
    assert set().union(*map(set, doc["datasets"])) == set(DatasetModel.model_fields)
    assert set().union(*map(set, doc["runs"])) == set(RunModel.model_fields)
    p = tmp_path / "example.yaml"
    p.write_text(example, encoding="utf-8")
    cfg = load_config(p)
    assert list(cfg.datasets) == ["SUNRGBD_test", "KITTI_val"] and len(cfg.runs) == 4
    ov = cfg.runs[("ovmono3d", "SUNRGBD_test")]
    assert list(ov.per_template) == ["S1", "PB-attributive", "PB-negative"] and ov.predictions == ov.per_template["S1"]
    assert list(cfg.datasets["SUNRGBD_test"].image_subsets) == ["runtime", "prompt_probe"]
