"""Safe YAML for configs: alias bombs, deep nesting, oversized files, duplicate keys and tags are refused in one
line that names the file (never ``<input>``) and quotes none of its content."""

from __future__ import annotations

import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from ov3d_core.errors import InputError
from ov3d_core.io.config import load_config
from ov3d_core.io.yaml_safe import MAX_ALIAS_NODES, load_yaml_bytes, load_yaml_file

REPO = Path(__file__).resolve().parents[2]


def billion_laughs(levels: int = 9, width: int = 9, key: str = "datasets") -> str:
    """The classic: each level a list of ``width`` aliases of the level below (9 x 9: 9^9 = 387M strings)."""
    lines = [f"a0: &a0 [{', '.join(['lol'] * width)}]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]")
    lines.append(f"{key}: *a{levels - 1}")
    return "\n".join(lines) + "\n"


def one_line_error(call) -> InputError:
    with pytest.raises(InputError) as ei:
        call()
    assert "\n" not in str(ei.value) and "<input>" not in str(ei.value), str(ei.value)
    return ei.value


def test_billion_laughs_is_refused_with_bounded_memory(tmp_path):
    text = billion_laughs()
    assert len(text) < 1024  # the 1 KB file that took 12-16 GB
    p = tmp_path / "bomb.yaml"
    p.write_text(text)
    tracemalloc.start()
    try:
        err = one_line_error(lambda: load_config(p))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200 * 2**20, f"peak {peak / 2**20:.0f} MiB"
    assert str(err).startswith(f"{p}: line ") and "alias" in err.expected
    assert "lol" not in str(err)


def test_aliases_within_the_bound_still_work(tmp_path):
    text = ("cats: &cats [chair, table]\n"
            "datasets:\n  - name: A\n    gt: a.json\n    categories: *cats\n    subsets: {base: *cats}\n"
            "runs:\n  - &run {name: r, dataset: A, predictions: p.json}\n  - {<<: *run, name: s}\n")
    # `cats` is not a key of the schema: aliases are read, then the schema refuses the helper key.
    err = one_line_error(lambda: load_config(_write(tmp_path, text)))
    assert err.field == "cats"
    doc = load_yaml_bytes(text.encode(), file="x.yaml")
    assert doc["datasets"][0]["categories"] == ["chair", "table"] and doc["runs"][1]["predictions"] == "p.json"
    # A small bomb that stays under the bound (5 levels of 6: 7,776 strings) is accepted as YAML.
    small = billion_laughs(levels=5, width=6)
    assert 2 * 6 ** 5 < MAX_ALIAS_NODES
    assert len(load_yaml_bytes(small.encode(), file="x.yaml")["datasets"]) == 6


def test_recursive_and_undefined_aliases(tmp_path):
    err = one_line_error(lambda: load_yaml_bytes(b"a: &x [1, *x]\n", file="r.yaml"))
    assert "recursive" in str(err.got)
    err = one_line_error(lambda: load_yaml_bytes(b"a: *nowhere\n", file="u.yaml"))
    assert "undefined alias" in str(err.got) and "nowhere" not in str(err)


@pytest.mark.parametrize("shape", ["flow", "block"])
def test_deep_nesting_is_refused_not_a_recursion_error(tmp_path, shape):
    n = 100_000
    levels = 300
    block = "".join("  " * i + "- \n" for i in range(levels)) + "  " * levels + "x"
    text = "[" * n + "]" * n if shape == "flow" else block
    p = _write(tmp_path, "datasets: " + text if shape == "flow" else text)
    err = one_line_error(lambda: load_config(p))
    assert "at most 64 nested levels" in err.expected and str(err).startswith(f"{p}: line ")
    assert load_yaml_bytes(("[" * 64 + "]" * 64).encode(), file="ok.yaml") is not None


@pytest.mark.parametrize("depth", [100, 5_000])
def test_both_nesting_guards_read_the_same(depth):
    """Deep flow nesting meets this module's composer bound (64 levels) or, beyond libyaml's own limit (1,000 levels,
    PyYAML >= 6.0.4, the version requirements.txt installs), libyaml's guard in the C parser first: the refusal
    reads the same either way, with the line and column of the level that went too deep."""
    err = one_line_error(lambda: load_yaml_bytes(("datasets: " + "[" * depth + "]" * depth).encode(),
                                                 file="deep.yaml"))
    assert err.expected == "at most 64 nested levels of lists and mappings" and str(err.got) == "deeper nesting"
    assert str(err).startswith("deep.yaml: line 1, column ")


def test_oversized_files_are_refused_before_parsing(tmp_path):
    p = tmp_path / "big.yaml"
    p.write_text("datasets: []\n" + "# padding\n" * 120_000)
    err = one_line_error(lambda: load_config(p))
    assert "at most 1.0 MiB" in err.expected and str(err.got).endswith("MiB")
    assert load_yaml_file(p, max_bytes=2 << 20) == {"datasets": []}


def test_duplicate_keys_are_refused(tmp_path):
    p = _write(tmp_path, "datasets:\n  - name: A\n    gt: a.json\n    gt: b.json\n")
    err = one_line_error(lambda: load_config(p))
    assert str(err).startswith(f"{p}: line 4, column 5:") and "twice" in str(err.got)
    # Merge keys may be overridden: that is what they are for.
    assert load_yaml_bytes(b"base: &b {x: 1, y: 2}\nc: {<<: *b, x: 3}\n", file="m.yaml")["c"] == {"x": 3, "y": 2}


@pytest.mark.parametrize("text, words", [
    ("datasets: [1, 2\n", "did not find expected ',' or ']'"),
    ("a: b: c\n", "mapping values are not allowed"),
    ("datasets:\n\t- x\n", "cannot start any token"),
    ("x: !!python/object/apply:os.system [echo hi]\n", "no !tags"),
    ("x: !secret_tag value\n", "no !tags"),
    ('x: "\\q-secret"\n', "unknown escape character"),
    ("--- a\n--- b\n", "single document"),
    ("a: 1\nb: 'x\x07'\n", "printable characters"),
])
def test_pyyaml_errors_are_one_line_naming_the_file_and_line(tmp_path, text, words):
    p = _write(tmp_path, text)
    err = one_line_error(lambda: load_config(p))
    msg = str(err)
    assert msg.startswith(f"{p}: line "), msg
    assert words in msg, msg
    assert "secret" not in msg and "os.system" not in msg, msg


def test_folders_missing_and_unreadable_files(tmp_path):
    err = one_line_error(lambda: load_config(tmp_path))
    assert str(err.got) == "a folder"
    err = one_line_error(lambda: load_config(tmp_path / "missing.yaml"))
    assert "no such file" in str(err)
    p = _write(tmp_path, "datasets: []\n")
    p.chmod(0)
    try:
        if not _readable(p):  # root reads anything: the check is only meaningful as a normal user
            err = one_line_error(lambda: load_config(p))
            assert "permission denied" in str(err)
    finally:
        p.chmod(0o644)


def _readable(p: Path) -> bool:
    try:
        p.read_bytes()
        return True
    except PermissionError:
        return False


def test_a_utf8_bom_is_accepted(tmp_path):
    p = tmp_path / "bom.yaml"
    p.write_bytes(b"\xef\xbb\xbfdatasets:\n  - name: A\n    gt: a.json\n")
    assert list(load_config(p).datasets) == ["A"]


def test_cli_refuses_a_bomb_with_exit_2_and_one_line(tmp_path):
    p = _write(tmp_path, billion_laughs())
    res = subprocess.run([sys.executable, "-m", "ov3d_core", "report", "--config", str(p), "--out",
                          str(tmp_path / "out")], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and str(p) in res.stderr
    assert not (tmp_path / "out").exists()


def _write(tmp_path: Path, text: str, name: str = "c.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_input_files_are_never_modified(tmp_path):
    p = _write(tmp_path, billion_laughs())
    before = p.read_bytes(), p.stat().st_mtime_ns
    with pytest.raises(InputError):
        load_config(p)
    assert (p.read_bytes(), p.stat().st_mtime_ns) == before
