"""Fuzzing the loaders with mutated demo files: truncated, bytes flipped, types swapped, fields dropped, NaN, huge
numbers, deep nesting.

For every mutant: the loader returns a Dataset/Run or raises an ``InputError`` whose message is one line and names
the file; nothing else escapes; the file's bytes are unchanged. JSON mutants are read both ways (dicts and the
kernel), which must agree: the same arrays, or the same message.
"""

from __future__ import annotations

import copy
import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from ov3d_core.errors import InputError
from ov3d_core.io import load_omni3d_gt, load_predictions
from tests.io.factories import file_digest
from tests.io.test_parity import assert_boxsets_equal, assert_datasets_equal

N_JSON = 70  # mutants per JSON file
N_PTH = 40

DEEP = "[" * 3000 + "]" * 3000


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("fuzz") / "demo"
    subprocess.run([sys.executable, "-m", "ov3d_core", "demo", "build", "--annotations-only", "--images", "3",
                    "--out", str(out), "--no-progress"], check=True, capture_output=True, cwd=Path(__file__).parents[2])
    cfg = yaml.safe_load((out / "benchmark.yaml").read_text())
    runs = [r for r in cfg["runs"] if r["dataset"] == "demo_indoor"]
    json_run = next(r for r in runs if r["format"] == "cubercnn-json")
    pth_run = next(r for r in runs if r["format"] == "cubercnn-pth")
    return {"gt": out / "indoor" / "gt.json", "json": out / json_run["predictions"],
            "pth": out / pth_run["predictions"], "category_list": pth_run["category_list"]}


# ------------------------------------------------------------------------------------------------ mutations

def _leaves(value, path=()):
    """Every (path, value) inside a JSON value."""
    yield path, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, path + (i,))


def _set(doc, path, value):
    if not path:
        return value
    node = doc
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return doc


def _drop(doc, path):
    node = doc
    for k in path[:-1]:
        node = node[k]
    del node[path[-1]]
    return doc


_REPLACEMENTS = [True, False, None, "x", "", [], {}, [1.0, 2.0], 0, -0.0, 1.5, 2 ** 63, -(2 ** 63) - 1, 10 ** 30,
                 1e20, float("nan"), float("inf"), float("-inf"), 1e-320, {"a": [None]}]


def mutate_json(text: str, rng: random.Random) -> bytes:
    """One mutant of a JSON document."""
    op = rng.choice(["truncate", "byte", "insert", "replace", "replace", "replace", "drop", "drop", "deep", "digits",
                     "dup"])
    data = text.encode()
    if op == "truncate":
        return data[:rng.randrange(len(data))]
    if op == "byte":
        i = rng.randrange(len(data))
        return data[:i] + bytes([rng.choice([0x00, 0x22, 0x2C, 0x5B, 0x5D, 0x7B, 0x7D, 0xFF, 0xC3, 0x5C, 0x30])]) + \
            data[i + 1:]
    if op == "insert":
        i = rng.randrange(len(data))
        return data[:i] + rng.choice([b",", b"]", b"}", b" NaN ", b"\xe9", b'"', b"-", b"1e999"]) + data[i:]
    if op == "dup":
        i = rng.randrange(len(data))
        j = min(len(data), i + rng.randrange(1, 200))
        return data[:j] + data[i:j] + data[j:]
    doc = json.loads(text)
    leaves = list(_leaves(doc))
    path, _ = rng.choice(leaves)
    if op == "replace":
        doc = _set(doc, path, copy.deepcopy(rng.choice(_REPLACEMENTS)))
        return json.dumps(doc).encode()
    if op == "drop":
        keyed = [p for p, _ in leaves if p and isinstance(p[-1], str)]
        if keyed:
            doc = _drop(doc, rng.choice(keyed))
        return json.dumps(doc).encode()
    text = json.dumps(_set(doc, path, "@@MUTANT@@"))
    if op == "deep":
        return text.replace('"@@MUTANT@@"', DEEP).encode()
    return text.replace('"@@MUTANT@@"', rng.choice(["7" * 5000, "-" + "1" * 4400, "1" * 30, "0." + "3" * 900,
                                                     "1e-999999", "12345678901234567890123"])).encode()


def _outcome(fn, path: Path):
    """("ok", value) or ("error", message); asserts the rules on errors."""
    before = file_digest(path)
    try:
        value = fn()
        kind = "ok"
    except InputError as e:
        msg = str(e)
        assert "\n" not in msg, msg
        assert str(path) in msg, msg
        value, kind = msg, "error"
    assert file_digest(path) == before
    return kind, value


def _readers_agree(fn, path: Path, monkeypatch, same, env: str = "OV3D_JSON_READER",
                   readers=("dicts", "scan")) -> str:
    """Run ``fn`` under each reader: the same outcome kind, and ``same(a, b)`` values or identical messages."""
    results = []
    for reader in readers:
        monkeypatch.setenv(env, reader)
        results.append(_outcome(fn, path))
    (ka, a), (kb, b) = results
    assert ka == kb, (results, path.read_bytes()[:300])
    if ka == "ok":
        same(a, b)
    else:
        assert a == b
    return ka


def _same_runs(a, b) -> None:
    assert_boxsets_equal(a.pred, b.pred)
    assert a.meta == b.meta


def _fuzz_json(text: str, seed: int, name: str, load, same, tmp_path, monkeypatch) -> list[str]:
    rng = random.Random(seed)
    kinds = []
    for k in range(N_JSON):
        path = tmp_path / f"{name}_{k}.json"
        path.write_bytes(mutate_json(text, rng))
        kinds.append(_readers_agree(lambda: load(path), path, monkeypatch, same))
    assert kinds.count("error") > N_JSON // 3 and kinds.count("ok") > 3  # the mutations do break and spare
    return kinds


# ------------------------------------------------------------------------------------------------ tests

def test_fuzz_gt(demo, tmp_path, monkeypatch):
    _fuzz_json(demo["gt"].read_text(), 11, "gt", load_omni3d_gt, assert_datasets_equal, tmp_path, monkeypatch)


def test_fuzz_predictions(demo, tmp_path, monkeypatch):
    monkeypatch.setenv("OV3D_JSON_READER", "dicts")
    ds = load_omni3d_gt(demo["gt"])
    _fuzz_json(demo["json"].read_text(), 12, "preds", lambda p: load_predictions(p, ds), _same_runs, tmp_path,
               monkeypatch)


_TENSORS = [lambda: torch.zeros(8, 3, dtype=torch.bfloat16), lambda: torch.ones(3, dtype=torch.bool),
            lambda: torch.zeros(2, 2), lambda: torch.tensor(float("nan")), lambda: torch.tensor(True),
            lambda: torch.zeros(8, 3).to_sparse(), lambda: torch.empty(3, device="meta"),
            lambda: torch.tensor(2 ** 62), lambda: np.zeros((8, 3), np.float16), lambda: "chair", lambda: None,
            lambda: [[1.0] * 3] * 8, lambda: {"a": 1}]


def write_pth_mutant(records: list, raw: bytes, rng: random.Random, path: Path,
                     ops=("truncate", "value", "value", "drop", "record")) -> None:
    """One mutant of a .pth (``records`` as torch.load gives them, ``raw`` its bytes) written to ``path``: truncated,
    one byte inverted, a value swapped for an odd tensor or type, a field dropped, or a record field swapped."""
    op = rng.choice(ops)
    if op == "truncate":
        path.write_bytes(raw[:rng.randrange(len(raw))])
    elif op == "byte":
        i = rng.randrange(len(raw))
        path.write_bytes(raw[:i] + bytes([raw[i] ^ 0xFF]) + raw[i + 1:])
    else:
        recs = copy.deepcopy(records)
        rec = rng.choice([r for r in recs if r["instances"]])
        inst = rng.choice(rec["instances"])
        if op == "value":
            inst[rng.choice(list(inst))] = rng.choice(_TENSORS)()
        elif op == "drop":
            del inst[rng.choice(list(inst))]
        else:
            rec[rng.choice(["image_id", "instances"])] = rng.choice(_TENSORS)()
        torch.save(recs, path)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_fuzz_pth(demo, tmp_path, monkeypatch):
    ds = load_omni3d_gt(demo["gt"])
    records = torch.load(demo["pth"], weights_only=True)
    raw = demo["pth"].read_bytes()
    rng = random.Random(13)
    kinds = []
    for k in range(N_PTH):
        path = tmp_path / f"p_{k}.pth"
        write_pth_mutant(records, raw, rng, path)
        # torch.load, then the restricted reader of ov3d_core.io.pthfile
        kind = _readers_agree(lambda: load_predictions(path, ds, category_list=demo["category_list"]), path,
                              monkeypatch, _same_runs, env="OV3D_PTH_READER", readers=("torch", "auto"))
        kinds.append(kind)
    assert kinds.count("error") > N_PTH // 3 and kinds.count("ok") > 1
