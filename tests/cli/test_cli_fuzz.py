"""``ov3d evaluate`` on mutated demo files (issue 11): every mutant either scores (exit 0) or exits 2 with one line
on stderr that names the file at fault, no traceback, and every input file byte for byte as it was.

The loaders' own fuzz (tests/io/test_fuzz.py) checks the ``InputError`` of each mutant; this one goes through the
command line: in-process ``main()`` for many mutants (an exception other than ``InputError`` escapes and fails the
test), and a fresh ``python -m ov3d_core`` process for a few, where a traceback would show on stderr.
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from ov3d_core.cli import main
from tests.io.factories import file_digest
from tests.io.test_fuzz import mutate_json, write_pth_mutant

REPO = Path(__file__).resolve().parents[2]
N_JSON = 18  # mutants per JSON file, in-process
N_PTH = 12
N_YAML = 16
N_PROCESS = 2  # refused mutants per kind run again in a fresh process


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("clifuzz") / "demo"
    subprocess.run([sys.executable, "-m", "ov3d_core", "demo", "build", "--annotations-only", "--images", "3",
                    "--out", str(out), "--no-progress"], check=True, capture_output=True, cwd=REPO)
    cfg = yaml.safe_load((out / "benchmark.yaml").read_text())
    runs = [r for r in cfg["runs"] if r["dataset"] == "demo_indoor"]
    json_run = next(r for r in runs if r["format"] == "cubercnn-json")
    pth_run = next(r for r in runs if r["format"] == "cubercnn-pth")
    names = out / "category_list.txt"
    names.write_text("\n".join(pth_run["category_list"]) + "\n")
    small = dict(cfg, datasets=[d for d in cfg["datasets"] if d["name"] == "demo_indoor"], runs=[json_run, pth_run])
    return {"root": out, "gt": out / "indoor" / "gt.json", "json": out / json_run["predictions"],
            "pth": out / pth_run["predictions"], "category_list": names, "config": yaml.safe_dump(small)}


def _inputs(demo) -> list[Path]:
    return [demo["gt"], demo["json"], demo["pth"], demo["category_list"]]


def _check_outcome(rc: int, err: str, mutant: Path, inputs: dict[Path, str]) -> str:
    """The rules for one run: exit 0, or exit 2 with one line naming ``mutant``; inputs unchanged."""
    assert "Traceback" not in err, err
    assert rc in (0, 2), (rc, err)
    if rc == 2:
        lines = [ln for ln in err.splitlines() if ln.startswith("error: ")]
        assert len(lines) == 1, err
        assert str(mutant) in lines[0], lines[0]
    for p, digest in inputs.items():
        assert file_digest(p) == digest, p
    return "ok" if rc == 0 else "error"


def _in_process(argv: list[str], capsys) -> tuple[int, str]:
    capsys.readouterr()
    rc = main(argv)
    return rc, capsys.readouterr().err


def _in_a_process(argv: list[str]) -> tuple[int, str]:
    res = subprocess.run([sys.executable, "-m", "ov3d_core", *argv], cwd=REPO, capture_output=True, text=True,
                         timeout=300, check=False)
    return res.returncode, res.stderr


def _evaluate_args(demo, tmp_path, gt: Path, pred: Path, cl: bool) -> list[str]:
    return ["evaluate", "--gt", str(gt), "--pred", str(pred), "--cache-dir", str(tmp_path / "cache"),
            *(["--category-list", str(demo["category_list"])] if cl else [])]


def _fuzz(mutants, argv_of, demo, tmp_path, capsys) -> list[str]:
    """Each mutant (a path) in-process, the first ``N_PROCESS`` refused ones again in a fresh process."""
    kinds, in_process = [], 0
    for path in mutants:
        inputs = {p: file_digest(p) for p in {*_inputs(demo), path}}
        kind = _check_outcome(*_in_process(argv_of(path), capsys), path, inputs)
        kinds.append(kind)
        if kind == "error" and in_process < N_PROCESS:
            in_process += 1
            assert _check_outcome(*_in_a_process(argv_of(path)), path, inputs) == "error"
    assert kinds.count("error") >= len(kinds) // 3 and kinds.count("ok") >= 1, kinds  # mutations break and spare
    return kinds


def _json_mutants(text: str, seed: int, folder: Path, name: str, n: int):
    rng = random.Random(seed)
    folder.mkdir()
    for k in range(n):
        path = folder / f"{name}_{k}.json"
        path.write_bytes(mutate_json(text, rng))
        yield path


def test_mutated_gt(demo, tmp_path, capsys):
    mutants = _json_mutants(demo["gt"].read_text(), 21, tmp_path / "gt", "gt", N_JSON)
    _fuzz(mutants, lambda p: _evaluate_args(demo, tmp_path, p, demo["json"], False), demo, tmp_path, capsys)


def test_mutated_predictions(demo, tmp_path, capsys):
    mutants = _json_mutants(demo["json"].read_text(), 22, tmp_path / "pred", "preds", N_JSON)
    _fuzz(mutants, lambda p: _evaluate_args(demo, tmp_path, demo["gt"], p, False), demo, tmp_path, capsys)


def _pth_mutants(demo, folder: Path):
    records = torch.load(demo["pth"], weights_only=True)
    raw = demo["pth"].read_bytes()
    rng = random.Random(23)
    folder.mkdir()
    for k in range(N_PTH):
        path = folder / f"p_{k}.pth"
        write_pth_mutant(records, raw, rng, path, ops=("truncate", "byte", "value", "value", "drop", "record"))
        yield path


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_mutated_pth(demo, tmp_path, capsys):
    _fuzz(_pth_mutants(demo, tmp_path / "pth"), lambda p: _evaluate_args(demo, tmp_path, demo["gt"], p, True), demo,
          tmp_path, capsys)


def _yaml_mutants(demo, seed: int):
    """Byte-level mutants of a two-run benchmark YAML written beside the demo's (its relative paths resolve)."""
    text = demo["config"].encode()
    rng = random.Random(seed)
    for k in range(N_YAML):
        op = rng.choice(["truncate", "byte", "byte", "insert", "dup"])
        i = rng.randrange(len(text))
        if op == "truncate":
            data = text[:i]
        elif op == "byte":
            data = text[:i] + bytes([rng.choice(b"\x00\xff\xe9:-[]{}&*!|>'\" \t\n5")]) + text[i + 1:]
        elif op == "insert":
            data = text[:i] + rng.choice([b": ", b"\n  - ", b"&a ", b"*a", b"!!python/object:os.system ", b"\t",
                                          b"[" * 200, b"\xc3"]) + text[i:]
        else:
            j = min(len(text), i + rng.randrange(1, 120))
            data = text[:j] + text[i:j] + text[j:]
        path = demo["root"] / f"mutant_{seed}_{k}.yaml"
        path.write_bytes(data)
        yield path


def test_mutated_benchmark_yaml(demo, tmp_path, capsys):
    """A refused config names itself, or the file it points to that is at fault (a mutated path, a field the
    config now gives the loader)."""
    kinds, in_process = [], 0
    for path in _yaml_mutants(demo, 24):
        inputs = {p: file_digest(p) for p in {*_inputs(demo), path}}
        argv = ["evaluate", "--benchmark", str(path)]
        rc, err = _in_process(argv, capsys)
        named = str(path) if str(path) in err else str(demo["root"])  # a path the config names lies under it
        kinds.append(_check_outcome(rc, err, Path(named), inputs))
        if kinds[-1] == "error" and in_process < N_PROCESS:
            in_process += 1
            rc, err = _in_a_process(argv)
            _check_outcome(rc, err, Path(named), inputs)
    assert kinds.count("error") >= len(kinds) // 3 and kinds.count("ok") >= 1, kinds
