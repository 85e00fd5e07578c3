"""``embed`` option checks (one line, exit 2, before anything is loaded), the fast failure of an ``hf:`` checkpoint
that is not on disk, and the default engine staying in-process without importing ray."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ov3d_core.cli import main
from tests.remap.test_cli import build

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def bench(tmp_path):
    return build(tmp_path)


def _args(bench, *extra):
    return ["embed", "--benchmark", str(bench), "--dataset", "Toy", "--run", "closed", "--no-progress", *extra]


@pytest.mark.parametrize("extra, option", [
    (["--chunk-size", "0"], "--chunk-size"),
    (["--batch-size", "-3"], "--batch-size"),
    (["--pad", "nan"], "--pad"),
    (["--min-size", "-1"], "--min-size"),
    (["--encoder", "siglip"], "--encoder"),
    (["--encoder", "hf:"], "--encoder"),
    (["--engine", "ray", "--address", "nowhere"], "--address"),
    (["--engine", "ray", "--address", "head:70000"], "--address"),
    (["--engine", "ray", "--workers", "0"], "--workers"),
    (["--engine", "ray", "--gpus-per-worker", "-1"], "--gpus-per-worker"),
    (["--engine", "ray", "--device", "cuda"], "--device"),
    (["--address", "auto"], "--address"),  # a Ray option without --engine ray
    (["--workers", "2"], "--workers"),
])
def test_bad_options_are_one_line_errors(bench, capsys, extra, option):
    assert main(_args(bench, *extra)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: command line: expected `" + option + "`")
    assert not (bench.parent / "cache" / "embeddings").exists()  # refused before anything was computed


def _run(code: str, env: dict) -> subprocess.CompletedProcess:
    full = {**os.environ, "PYTHONPATH": str(REPO), **env}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=full,
                          timeout=300)


PROBE = """
import json, sys
from ov3d_core.cli import main
rc = main({argv!r})
print(json.dumps({{"rc": rc, "torch": "torch" in sys.modules, "ray": "ray" in sys.modules}}))
"""


@pytest.mark.parametrize("env, reason", [
    ({"HF_HUB_OFFLINE": "1"}, "HF_HUB_OFFLINE is set"),
    ({"HF_HUB_OFFLINE": "0", "TRANSFORMERS_OFFLINE": "0", "HF_ENDPOINT": "http://127.0.0.1:9"},
     "is unreachable"),  # nothing listens on port 9
])
def test_missing_hub_checkpoint_fails_at_once_without_loading_torch(bench, tmp_path, env, reason):
    argv = _args(bench, "--encoder", "hf:google/siglip2-base-patch16-224")
    p = _run(PROBE.format(argv=argv), {**env, "HF_HOME": str(tmp_path / "hf_home")})  # an empty HF cache
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out == {"rc": 2, "torch": False, "ray": False}  # no model code ran, so no minutes of retries either
    err = p.stderr.strip().splitlines()
    assert len(err) == 1 and "hf:/path/to/dir" in err[0] and reason in err[0] and "Traceback" not in p.stderr
    assert err[0].startswith("error: hf:google/siglip2-base-patch16-224: expected `encoder`")


def test_local_checkpoint_dir_problems(bench, tmp_path, capsys):
    empty = tmp_path / "not_a_model"
    empty.mkdir()
    assert main(_args(bench, "--encoder", f"hf:{empty}")) == 2
    assert "no config.json" in capsys.readouterr().err
    assert main(_args(bench, "--encoder", f"hf:{tmp_path / 'missing' / 'dir'}")) == 2
    assert "no such directory" in capsys.readouterr().err


def test_default_engine_is_in_process_and_never_imports_ray(bench, capsys):
    p = _run(PROBE.format(argv=_args(bench, "--encoder", "proxy", "--chunk-size", "4")), {})
    assert json.loads(p.stdout.strip().splitlines()[-1]) == {"rc": 0, "torch": True, "ray": False}
    assert "shards:  3 of 3 computed now (local)" in p.stdout
    assert main(_args(bench, "--encoder", "proxy", "--chunk-size", "4")) == 0
    out = capsys.readouterr().out
    assert "shards:  already complete" in out and "9 crops embedded" in out


def test_an_unreadable_image_is_one_line_with_the_local_engine(bench, tmp_path, tiny_dirs, capsys):
    (tmp_path / "img" / "11.png").write_bytes(b"broken")
    assert main(_args(bench, "--encoder", f"hf:{tiny_dirs['siglip2']}", "--device", "cpu", "--chunk-size", "3")) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("error:")]  # (transformers prints progress bars)
    assert len(lines) == 1 and "11.png" in lines[0] and "readable image" in lines[0] and "Traceback" not in err
