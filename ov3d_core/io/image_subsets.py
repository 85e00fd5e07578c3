"""Named image subsets of a dataset (the benchmark YAML's ``image_subsets``): an id-list file or a seeded rule.

- An id-list file: ``.json``, a list of image ids (integers); anything else is text with one image id a line (blank
  lines and lines starting with ``#`` are skipped). Every id must be an image of the dataset: the first one that is
  not is an ``InputError`` naming the list file and the line (``runtime.txt: line 7: ...``; for JSON the list
  index, ``[6]``). A repeated id counts once.
- A rule ``{rule: random, n, seed}``: the dataset's image ids sorted ascending, permuted by
  ``ov3d_core.demo.rng.Stream([seed, IMAGE_RULE_STREAM]).permutation`` (Fisher-Yates on documented transforms of
  PCG64's raw words, so the draw is the same on every machine and NumPy release), the first ``n`` kept. ``n`` larger
  than the dataset's images is an ``InputError`` naming the config and ``datasets[i].image_subsets.<name>.n``.

Either way the subset is returned as sorted unique ``int64`` image ids.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ov3d_core.errors import InputError
from ov3d_core.io.config import IMAGE_RULE_STREAM, ImageRule


def rule_subset(rule: ImageRule, image_ids: np.ndarray) -> np.ndarray:
    """The sorted ids a rule picks from ``image_ids`` (``n`` must not exceed their number)."""
    # demo.rng is pure numpy, but importing it runs ov3d_core.demo's __init__ (the whole generator, 1-2 s): paid
    # only by a benchmark with a rule subset
    from ov3d_core.demo.rng import Stream

    ids = np.unique(np.asarray(image_ids, np.int64))
    if rule.n > len(ids):
        raise ValueError(f"n={rule.n} > {len(ids)} images")
    order = Stream([int(rule.seed), IMAGE_RULE_STREAM]).permutation(len(ids))
    return np.sort(ids[order[:rule.n]])


def read_id_list(path: Path, image_ids: np.ndarray, *, config: str, record: str, field: str) -> np.ndarray:
    """The sorted unique ids of an id-list file, each checked against ``image_ids``."""
    path = Path(path)
    if not path.is_file():
        raise InputError(config, record, field, "an existing id-list file (.txt one id a line, or .json list)",
                         "no such file")
    known = set(np.asarray(image_ids, np.int64).tolist())
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(str(path), None, None, "a readable UTF-8 id-list file", type(exc).__name__) from None
    out: list[int] = []
    if path.suffix.lower() == ".json":
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(str(path), f"line {exc.lineno}", None, "a JSON list of image ids") from None
        if not isinstance(doc, list):
            raise InputError(str(path), None, None, "a JSON list of image ids", f"a {type(doc).__name__}")
        for i, v in enumerate(doc):
            if type(v) is not int:
                raise InputError(str(path), f"[{i}]", None, "an image id (an integer)", f"a {type(v).__name__}")
            if v not in known:
                raise InputError(str(path), f"[{i}]", None, "an image id of the dataset", "an id it does not have")
            out.append(v)
    else:
        for n, line in enumerate(text.splitlines(), 1):
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            try:
                v = int(s)
            except ValueError:
                raise InputError(str(path), f"line {n}", None, "an image id (an integer)", "other text") from None
            if v not in known:
                raise InputError(str(path), f"line {n}", None, "an image id of the dataset", "an id it does not have")
            out.append(v)
    return np.unique(np.asarray(out, np.int64))


def resolve_image_subset(value, image_ids: np.ndarray, *, config: str, record: str, field: str) -> np.ndarray:
    """An ``image_subsets`` value (a ``Path`` or an ``ImageRule``) as sorted unique int64 ids."""
    if isinstance(value, ImageRule):
        ids = np.unique(np.asarray(image_ids, np.int64))
        if value.n > len(ids):
            raise InputError(config, record, f"{field}.n", f"at most the dataset's {len(ids)} images",
                             f"{value.n}")
        return rule_subset(value, ids)
    return read_id_list(Path(value), image_ids, config=config, record=record, field=field)


__all__ = ["read_id_list", "resolve_image_subset", "rule_subset"]
