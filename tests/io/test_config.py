"""The benchmark YAML schema: every wrong type, unknown key and duplicate refused up front, in one line that names
the file, the entry, the key path and the expected type, and never the value."""

from __future__ import annotations

import random
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest
import yaml

from ov3d_core.errors import InputError
from ov3d_core.io.config import (BenchmarkConfig, ConfigModel, DatasetModel, DatasetSpec, RunModel, RunSpec,
                                 config_from_files, load_config)

REPO = Path(__file__).resolve().parents[2]

BASE = {"name": "bench", "datasets": [{"name": "A", "gt": "a.json"}],
        "runs": [{"name": "r", "dataset": "A", "predictions": "p.json"}]}


def write(tmp_path, doc, name="bench.yaml") -> Path:
    p = tmp_path / name
    p.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return p


def with_(section: str, **kv) -> dict:
    doc = yaml.safe_load(yaml.safe_dump(BASE))
    doc[section][0].update(kv)
    return doc


def refused(tmp_path, doc) -> InputError:
    p = write(tmp_path, doc)
    with pytest.raises(InputError) as ei:
        load_config(p)
    msg = str(ei.value)
    assert "\n" not in msg and msg.startswith(str(p)), msg
    assert "<input>" not in msg
    return ei.value


# Each: the YAML (text: exactly as a user would type it), the entry, the key path, words of the expected type, the
# kind found.
CASES = [
    ("runs: 5", "datasets: [{name: A, gt: a.json}]\nruns: 5\n", None, "runs", "a list of runs", "an integer"),
    ("subsets int", "datasets: [{name: A, gt: a.json, subsets: {base: 5}}]\n", "datasets[0]", "subsets.base",
     "list of category names", "an integer"),
    ("subsets string", "datasets: [{name: A, gt: a.json, subsets: {base: chair}}]\n", "datasets[0]", "subsets.base",
     "list of category names", "a string"),
    ("images: 5", "datasets: [{name: A, gt: a.json, images: 5}]\n", "datasets[0]", "images", "a path",
     "an integer"),
    ("cache_dir: 5", "cache_dir: 5\ndatasets: [{name: A, gt: a.json}]\n", None, "cache_dir", "a path", "an integer"),
    ("dataset format", "datasets: [{name: A, gt: a.json, format: foo}]\n", "datasets[0]", "format",
     "one of omni3d, kitti", "another string"),
    ("run format", "datasets: [{name: A, gt: a.json}]\nruns: [{name: r, dataset: A, predictions: p.json, "
     "format: foo}]\n", "runs[0]", "format", "one of auto, cubercnn-json", "another string"),
    ("proximity 'no'", "datasets: [{name: A, gt: a.json, proximity: 'no'}]\n", "datasets[0]", "proximity",
     "true or false", "a string"),
    ("trained_on", "datasets: [{name: A, gt: a.json}]\nruns: [{name: r, dataset: A, predictions: p.json, "
     "trained_on: [5, {a: 1}]}]\n", "runs[0]", "trained_on[0]", "a dataset name", "an integer"),
    ("gt: 3", "datasets:\n  - name: x\n    gt: 3\n", "datasets[0]", "gt", "a path or a non-empty list of paths",
     "an integer"),
    ("name: 2024", "datasets: [{name: 2024, gt: a.json}]\n", "datasets[0]", "name", "a non-empty string",
     "an integer"),
    ("categories string", "datasets: [{name: A, gt: a.json, categories: chair}]\n", "datasets[0]", "categories",
     "list of category names", "a string"),
    ("category_list item", "datasets: [{name: A, gt: a.json}]\nruns: [{name: r, dataset: A, predictions: p.pth, "
     "category_list: [car, 7]}]\n", "runs[0]", "category_list[1]", "a category name", "an integer"),
    ("environment", "datasets: [{name: A, gt: a.json, environment: space}]\n", "datasets[0]", "environment",
     "one of indoor, outdoor", "another string"),
    ("description list", "datasets: [{name: A, gt: a.json}]\nruns: [{name: r, dataset: A, predictions: p.json, "
     "description: [a]}]\n", "runs[0]", "description", "a string", "a list"),
    ("missing gt", "datasets: [{name: A}]\n", "datasets[0]", "gt", "(required)", "nothing"),
    ("missing predictions", "datasets: [{name: A, gt: a.json}]\nruns: [{name: r, dataset: A}]\n", "runs[0]",
     "predictions", "(required)", "nothing"),
    ("empty datasets", "datasets: []\n", None, "datasets", "a non-empty list of datasets", "an empty list"),
    ("empty name", "datasets: [{name: '', gt: a.json}]\n", "datasets[0]", "name", "a non-empty string",
     "an empty string"),
    ("depth pattern", "datasets: [{name: A, gt: a.json, depth: 'depth/{id}.png'}]\n", "datasets[0]", "depth",
     "{image_id}", "another field"),
    ("pattern attribute", "datasets: [{name: A, gt: a.json, points: 'p/{image_id.__class__}.ply'}]\n",
     "datasets[0]", "points", "{image_id}", "another field"),
    ("pattern without field", "datasets: [{name: A, gt: a.json, depth: depth.png}]\n", "datasets[0]", "depth",
     "{image_id}", "without {image_id}"),
    ("pattern spec", "datasets: [{name: A, gt: a.json, depth: 'd/{image_id:q}.png'}]\n", "datasets[0]", "depth",
     "{image_id}", "cannot fill"),
    ("subset key", "datasets: [{name: A, gt: a.json, subsets: {1: [chair]}}]\n", "datasets[0]", "subsets",
     "keys are each a non-empty string", "a key that is an integer"),
    ("generator value", "generator: {seed: [1]}\ndatasets: [{name: A, gt: a.json}]\n", None, "generator.seed",
     "a plain value", "a list"),
    ("date as name", "datasets: [{name: 2024-01-02, gt: a.json}]\n", "datasets[0]", "name", "a non-empty string",
     "a date"),
]


@pytest.mark.parametrize("text, record, key, expected, got", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_wrong_types_are_refused_naming_entry_key_and_expected_type(tmp_path, text, record, key, expected, got):
    err = refused(tmp_path, text)
    assert err.record == record and err.field == key, str(err)
    assert expected in err.expected, str(err)
    assert got in str(err.got), str(err)


def test_a_string_is_never_split_into_letters_and_no_is_never_true(tmp_path):
    # Today's failure modes: `subsets: {base: chair}` became ('c', 'h', 'a', 'i', 'r'); `proximity: 'no'` became True.
    for doc in (with_("datasets", subsets={"base": "chair"}), with_("datasets", proximity="no"),
                with_("datasets", proximity="false"), with_("datasets", proximity=1)):
        refused(tmp_path, doc)
    ok = load_config(write(tmp_path, with_("datasets", subsets={"base": ["chair"]}, proximity=False)))
    assert ok.datasets["A"].subsets == {"base": ("chair",)} and ok.datasets["A"].proximity is False


def test_unknown_keys_are_refused_with_a_did_you_mean(tmp_path):
    err = refused(tmp_path, with_("datasets", enviroment="indoor"))
    assert (err.record, err.field) == ("datasets[0]", "enviroment")
    assert "did you mean `environment`" in str(err)
    err = refused(tmp_path, with_("runs", predictons="p.json"))
    assert "did you mean `predictions`" in str(err)
    doc = dict(BASE, run=[])
    err = refused(tmp_path, doc)
    assert err.field == "run" and "did you mean `runs`" in str(err)
    err = refused(tmp_path, with_("runs", zzz=1))  # nothing close: the known keys are listed
    assert "one of: name, dataset, predictions" in str(err)
    err = refused(tmp_path, with_("runs", format="Cubercnn-json"))
    assert "did you mean `cubercnn-json`" in str(err)


def test_wrong_top_level_type_and_empty_file(tmp_path):
    for text, got in (("- a\n- b\n", "a list"), ("just text\n", "a string"), ("", "an empty document"),
                      ("42\n", "an integer")):
        err = refused(tmp_path, text)
        assert "a mapping with `datasets`" in err.expected and str(err.got) == got


def test_duplicate_names_and_dangling_references(tmp_path):
    doc = yaml.safe_load(yaml.safe_dump(BASE))
    doc["datasets"].append({"name": "A", "gt": "b.json"})
    err = refused(tmp_path, doc)
    assert (err.record, err.field) == ("datasets[1]", "name") and "datasets[0]" in str(err.got)
    doc = yaml.safe_load(yaml.safe_dump(BASE))
    doc["runs"].append({"name": "r", "dataset": "A", "predictions": "q.json"})
    err = refused(tmp_path, doc)
    assert (err.record, err.field) == ("runs[1]", "name") and "runs[0]" in str(err.got)
    err = refused(tmp_path, with_("runs", dataset="a"))
    assert (err.record, err.field) == ("runs[0]", "dataset") and "closest: the name of datasets[0]" in str(err)
    # The same run name on two datasets is one method on two datasets: fine.
    doc = yaml.safe_load(yaml.safe_dump(BASE))
    doc["datasets"].append({"name": "B", "gt": "b.json"})
    doc["runs"].append({"name": "r", "dataset": "B", "predictions": "q.json"})
    assert set(load_config(write(tmp_path, doc)).runs) == {("r", "A"), ("r", "B")}


def test_kitti_datasets_need_calib_and_one_label_folder(tmp_path):
    err = refused(tmp_path, with_("datasets", gt="label_2", format="kitti"))
    assert (err.record, err.field) == ("datasets[0]", "calib")
    err = refused(tmp_path, with_("datasets", gt=["a", "b"], format="kitti", calib="calib"))
    assert (err.record, err.field) == ("datasets[0]", "gt")
    cfg = load_config(write(tmp_path, with_("datasets", gt="label_2", format="kitti", calib="calib")))
    assert cfg.datasets["A"].calib == tmp_path / "calib"


def test_non_utf8_text_is_one_line_naming_the_line(tmp_path):
    p = tmp_path / "latin1.yaml"
    p.write_bytes("datasets:\n  - name: caf\u00e9\n    gt: a.json\n".encode("latin-1"))
    with pytest.raises(InputError) as ei:
        load_config(p)
    assert str(ei.value).startswith(f"{p}: line 2: expected UTF-8 text") and "\n" not in str(ei.value)


def test_errors_name_the_kind_of_a_value_never_the_value(tmp_path):
    # Issue 16: `datasets: s3cr3t` came back as "got 's3cr3t'".
    secret = "s3cr3t-\u00e9-token"
    docs = [{"datasets": secret}, with_("datasets", images=[secret]), with_("datasets", proximity=secret),
            with_("datasets", format=secret), with_("runs", format=secret), with_("runs", dataset=secret),
            with_("datasets", subsets={"base": secret}), with_("runs", trained_on=secret),
            with_("datasets", depth=secret), {"name": [secret], **{k: v for k, v in BASE.items() if k != "name"}}]
    for doc in docs:
        err = refused(tmp_path, doc)
        assert secret not in str(err) and "s3cr3t" not in str(err), str(err)


def test_the_demo_config_and_the_public_api(tmp_path):
    doc = {"name": "full", "cache_dir": "cache", "generator": {"version": "1.0.0", "seed": 0},
           "datasets": [{"name": "A", "gt": ["a1.json", "/abs/a2.json"], "images": "img", "environment": "indoor",
                         "categories": ["chair", "table"], "proximity": True, "depth": "d/{image_id:06d}.png",
                         "points": "p/{image_id}.ply", "subsets": {"base": ["chair"], "novel": ["table"]}},
                        {"name": "K", "gt": "label_2", "format": "kitti", "calib": "calib", "images": "image_2"}],
           "runs": [{"name": "m", "dataset": "A", "predictions": "m.pth", "format": "cubercnn-pth",
                     "category_list": ["chair", "table"], "trained_on": ["A", "external"],
                     "closed_vocabulary": ["chair"], "crops": "m.crops.json", "description": "one line"},
                    {"name": "m", "dataset": "K", "predictions": "res", "format": "kitti"}],
           }
    cfg = load_config(write(tmp_path, doc))
    assert isinstance(cfg, BenchmarkConfig) and cfg.name == "full" and cfg.cache_dir == tmp_path / "cache"
    a = cfg.datasets["A"]
    assert isinstance(a, DatasetSpec)
    assert a.gt == (tmp_path / "a1.json", Path("/abs/a2.json")) and a.images == tmp_path / "img"
    assert a.categories == ("chair", "table") and a.subsets == {"base": ("chair",), "novel": ("table",)}
    assert a.depth == "d/{image_id:06d}.png" and a.environment == "indoor" and a.proximity is True
    m = cfg.runs[("m", "A")]
    assert isinstance(m, RunSpec) and m.category_list == ("chair", "table") and m.trained_on == ("A", "external")
    assert m.in_domain and m.crops == tmp_path / "m.crops.json" and m.description == "one line"
    assert cfg.runs[("m", "K")].format == "kitti" and cfg.run_names == ["m"]
    # Defaults, and `runs:` left empty (null) is a benchmark without runs.
    bare = load_config(write(tmp_path, "datasets:\n  - name: A\n    gt: a.json\nruns:\n", "bare.yaml"))
    assert bare.name == "bare" and bare.cache_dir == tmp_path / ".ov3d_cache" and bare.runs == {}
    assert bare.datasets["A"] == DatasetSpec(name="A", gt=(tmp_path / "a.json",))
    # config_from_files keeps its behaviour (the CLI's --gt/--pred).
    c = config_from_files(["x/SUN.json"], ["out/exp1/omni_instances_results.json"])
    assert list(c.runs) == [("exp1", "SUN")] and c.datasets["SUN"].name_from_file


def test_every_yaml_key_of_the_models_reaches_the_specs():
    # A key added to the schema must land somewhere in the frozen specs (or be documented as not read).
    not_read = {"generator"}
    spec_fields = {f.name for f in fields(DatasetSpec)} | {f.name for f in fields(RunSpec)} | \
        {f.name for f in fields(BenchmarkConfig)}
    keys = set(DatasetModel.model_fields) | set(RunModel.model_fields) | set(ConfigModel.model_fields)
    assert keys - not_read - {"runs", "datasets"} <= spec_fields


def test_the_demo_build_config_loads():
    # data/demo's generator writes exactly what the schema accepts (tests/demo builds and loads it too).
    from ov3d_core.demo.build import _benchmark_yaml

    doc = yaml.safe_load(_benchmark_yaml(0, annotations_only=False))
    from ov3d_core.io.config import parse_config

    cfg = parse_config(doc, file="benchmark.yaml", base=Path("/demo"))
    assert len(cfg.datasets) == 3 and len(cfg.runs) == 18  # 6 runs x 3 datasets


def _mutations(doc, rng: random.Random, secret: str):
    """Paths to every value of ``doc`` and a mutated copy per path (another type, or the secret as a value)."""
    def paths(node, prefix=()):
        yield prefix
        if isinstance(node, dict):
            for k, v in node.items():
                yield from paths(v, prefix + (k,))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                yield from paths(v, prefix + (i,))
    replacements = [5, 2.5, True, None, [], {}, [secret], {"k": secret}, secret, [5], {secret: 1}]
    for path in list(paths(doc))[1:]:
        new = yaml.safe_load(yaml.safe_dump(doc))
        node = new
        for part in path[:-1]:
            node = node[part]
        value = rng.choice(replacements)
        node[path[-1]] = value
        yield new, isinstance(value, dict) and secret in value


def test_fuzz_mutated_demo_configs_are_one_line_errors_that_never_echo_values(tmp_path):
    from ov3d_core.demo.build import _benchmark_yaml

    demo = yaml.safe_load(_benchmark_yaml(0, annotations_only=False))
    demo["runs"] = demo["runs"][:3]
    secret = "VALUE-9f2c"
    rng = random.Random(0)
    refusals = 0
    for i, (doc, secret_is_a_key) in enumerate(_mutations(demo, rng, secret)):
        p = write(tmp_path, doc, f"m{i}.yaml")
        before = p.read_bytes()
        try:
            load_config(p)
        except InputError as exc:
            refusals += 1
            msg = str(exc)
            assert "\n" not in msg and msg.startswith(str(p)), msg
            assert "a valid value" not in msg, msg  # the schema walk named what was expected
            # A secret that became a *key* may be named in the key path; a value never.
            if secret_is_a_key:
                assert secret not in msg.replace(f"{secret}`", ""), msg
            else:
                assert secret not in msg, msg
        assert p.read_bytes() == before
    assert refusals > 100


def test_cli_exits_2_with_one_line_on_a_bad_config(tmp_path):
    p = write(tmp_path, "datasets: s3cr3t\n")
    res = subprocess.run([sys.executable, "-m", "ov3d_core", "evaluate", "--benchmark", str(p)], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr and "s3cr3t" not in res.stderr
    assert lines[0] == f"error: {p}: expected `datasets` to be a non-empty list of datasets, got a string"
