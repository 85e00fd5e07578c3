"""Allowed data roots: configs and every path they name must resolve, after symlinks, inside the roots; refusals
name only the basename and read the same whether the path exists or not."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from ov3d_core.errors import InputError
from ov3d_core.io.config import config_paths, load_config
from ov3d_core.io.paths import (DATA_ROOT_ENV, DEMO_DIR_ENV, check_under_roots, default_roots, demo_dir,
                                is_under_roots, split_roots)


@pytest.fixture
def tree(tmp_path):
    """``root/`` (allowed) with a config and data, ``outside/`` (not allowed) with a secret config."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "data").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.yaml").write_text("datasets: s3cr3t\n")
    (root / "data" / "gt.json").write_text("{}")
    return root.resolve(), outside.resolve()


def config(root: Path, name="bench.yaml", **dataset) -> Path:
    ds = {"name": "A", "gt": "data/gt.json", **dataset}
    doc = {"datasets": [ds], "runs": [{"name": "r", "dataset": "A", "predictions": "data/p.json",
                                       "crops": "data/p.crops.json"}]}
    p = root / name
    p.write_text(yaml.safe_dump(doc))
    return p


def test_paths_inside_the_roots_pass_and_resolve(tree):
    root, _ = tree
    assert check_under_roots(root / "data" / "gt.json", [root]) == root / "data" / "gt.json"
    assert check_under_roots(root / "data" / ".." / "data", [root]) == root / "data"
    assert check_under_roots(root, [root]) == root  # the root itself
    assert is_under_roots(root / "not" / "yet" / "there.json", [root])


def test_outside_is_refused_naming_only_the_basename_and_not_telling_whether_it_exists(tree):
    root, outside = tree
    errors = []
    for p in (outside / "secret.yaml", outside / "missing.yaml", root / ".." / "outside" / "secret.yaml"):
        with pytest.raises(InputError) as ei:
            check_under_roots(p, [root], what="a benchmark config")
        errors.append(str(ei.value))
        assert str(outside) not in str(ei.value) and str(root) not in str(ei.value)
        assert str(ei.value).startswith(f"{p.name}: expected a benchmark config inside the allowed data roots")
    assert errors[0].replace("secret", "missing") == errors[1]  # same words for an existing and a missing file


def test_symlinks_escaping_a_root_are_refused(tree):
    root, outside = tree
    (root / "link.yaml").symlink_to(outside / "secret.yaml")
    (root / "linkdir").symlink_to(outside, target_is_directory=True)
    for p in (root / "link.yaml", root / "linkdir" / "secret.yaml", root / "linkdir" / "anything.json"):
        with pytest.raises(InputError) as ei:
            check_under_roots(p, [root])
        assert "s3cr3t" not in str(ei.value) and str(outside) not in str(ei.value)
    # A link that stays inside is fine, and a root given through a symlink is resolved too.
    (root / "inner.json").symlink_to(root / "data" / "gt.json")
    assert check_under_roots(root / "inner.json", [root]) == root / "data" / "gt.json"
    alias = root.parent / "root_alias"
    alias.symlink_to(root, target_is_directory=True)
    assert is_under_roots(root / "data" / "gt.json", [alias])


def test_load_config_checks_the_config_and_every_path_it_names(tree):
    root, outside = tree
    with pytest.raises(InputError) as ei:
        load_config(outside / "secret.yaml", allowed_roots=[root])
    assert "s3cr3t" not in str(ei.value) and str(ei.value).startswith("secret.yaml: ")
    link = root / "escape.yaml"
    link.symlink_to(outside / "secret.yaml")
    with pytest.raises(InputError) as ei:
        load_config(link, allowed_roots=[root])
    assert "s3cr3t" not in str(ei.value) and str(ei.value).startswith("escape.yaml: ")
    ok = config(root, depth="data/depth/{image_id}.png")
    assert list(load_config(ok, allowed_roots=[root]).datasets) == ["A"]
    assert list(load_config(ok).datasets) == ["A"]  # without roots: no check (the CLI's default)


@pytest.mark.parametrize("where, key, value", [
    ("datasets[0]", "gt", None), ("datasets[0]", "images", None), ("datasets[0]", "calib", None),
    ("datasets[0]", "depth", "{image_id}.png"), ("datasets[0]", "points", "{image_id}.ply"),
    ("runs[0]", "predictions", None), ("runs[0]", "crops", None), (None, "cache_dir", None)])
def test_each_path_key_outside_the_roots_is_refused(tree, where, key, value):
    root, outside = tree
    target = str(outside / (value or "x"))
    doc = {"datasets": [{"name": "A", "gt": "data/gt.json"}],
           "runs": [{"name": "r", "dataset": "A", "predictions": "data/p.json"}]}
    if where is None:
        doc[key] = target
    else:
        doc[where[:-3]][0][key] = target
    if key == "calib":
        doc["datasets"][0]["format"] = "kitti"
    p = root / "bench.yaml"
    p.write_text(yaml.safe_dump(doc))
    with pytest.raises(InputError) as ei:
        load_config(p, allowed_roots=[root])
    err = ei.value
    assert (err.record, err.field) == (where, key) and str(outside) not in str(err)
    # Relative escapes and symlinked folders are caught the same way.
    (root / "up").symlink_to(outside, target_is_directory=True)
    rel = "up/" + (value or "x")
    if where is None:
        doc[key] = rel
    else:
        doc[where[:-3]][0][key] = rel
    p.write_text(yaml.safe_dump(doc))
    with pytest.raises(InputError):
        load_config(p, allowed_roots=[root])


def test_config_paths_lists_every_path_key(tree):
    root, _ = tree
    cfg = load_config(config(root, images="data/img", depth="data/d/{image_id:06d}.png",
                             points="data/p/{image_id}.ply"))
    keys = {(rec, key) for rec, key, _ in config_paths(cfg)}
    assert keys == {("datasets[0]", "gt"), ("datasets[0]", "images"), ("datasets[0]", "depth"),
                    ("datasets[0]", "points"), ("runs[0]", "predictions"), ("runs[0]", "crops"), (None, "cache_dir")}
    depth = next(p for rec, key, p in config_paths(cfg) if key == "depth")
    assert depth == root / "data" / "d" / "000000.png"


def test_default_roots(tmp_path, monkeypatch):
    a, b, demo = tmp_path / "a", tmp_path / "b", tmp_path / "demo"
    for d in (a, b, demo):
        d.mkdir()
    env = {DEMO_DIR_ENV: str(demo)}
    # Nothing given: the working directory and the demo.
    assert default_roots(environ=env, cwd=a) == (demo.resolve(), a.resolve())
    # --data-root (a path, a pathsep string or a list) and $OV3D_DATA_ROOT replace the working directory.
    assert default_roots(b, environ=env, cwd=a) == (demo.resolve(), b.resolve())
    assert default_roots(f"{a}{os.pathsep}{b}", environ=env, cwd=tmp_path) == (demo.resolve(), a.resolve(),
                                                                             b.resolve())
    assert default_roots(None, environ={**env, DATA_ROOT_ENV: f"{b}{os.pathsep}"}, cwd=a) == (demo.resolve(),
                                                                                             b.resolve())
    assert default_roots([a], environ={**env, DATA_ROOT_ENV: str(b)}, cwd=tmp_path) == (demo.resolve(), a.resolve(),
                                                                                      b.resolve())
    monkeypatch.delenv(DEMO_DIR_ENV, raising=False)
    assert demo_dir() == Path(__file__).resolve().parents[2] / "data" / "demo"
    assert split_roots(None) == [] and split_roots(["x", Path("y")]) == [Path("x"), Path("y")]
