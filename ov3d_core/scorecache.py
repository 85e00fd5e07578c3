"""A disk cache of the small results a page opens on (leaderboard rows, per-category tables), so that a new process
shows the Overview of a benchmark of many large runs without loading them.

Trust rules (as the load cache's: an entry is data, never code, and never stale):

* **Key**: the kind of result, the score key of the view, the code version (an xxh3 digest of every ``ov3d_core``
  source file: any edit to the package misses every entry), the config entries of the dataset and the run, and the
  resolved path and content digest of each of their input files (``ov3d_core.io.loadcache.file_digest``: read once
  per process, then memoised by device, inode, size, mtime and ctime). Inputs that are folders (KITTI label
  folders) or absent are not cached.
* **Format**: one JSON file per entry (``scores/<key>.json`` under the benchmark's cache folder), holding its key and
  an xxh3 digest of its payload; written to a temporary name and renamed.
* **On read**: JSON only (nothing is unpickled or imported); the key and the digest must match and the payload must
  decode to the expected shape. Anything else is logged and recomputed.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import xxhash

from ov3d_core.tables import json_scalar

log = logging.getLogger(__name__)

__all__ = ["ScoreCache", "code_version", "encode_row", "encode_frame", "decode_frame"]

FORMAT = "ov3d-scores-1"
_PACKAGE = Path(__file__).resolve().parent


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """Digest of every ``ov3d_core`` source file (path and bytes)."""
    h = xxhash.xxh3_128()
    for p in sorted(_PACKAGE.rglob("*.py")):
        h.update(str(p.relative_to(_PACKAGE)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def encode_row(row: dict) -> dict:
    """A result row (str keys, plain values) as JSON."""
    if any(not isinstance(k, str) for k in row):
        raise TypeError("only rows with string keys are cached")
    return {k: json_scalar(v) for k, v in row.items()}


def encode_frame(df: pd.DataFrame) -> dict:
    """A DataFrame of plain columns as JSON: column names, dtype names and values (floats exactly, by repr)."""
    if not isinstance(df.index, pd.RangeIndex) or df.index.start != 0 or df.index.step != 1:
        raise TypeError("only frames with a default index are cached")
    cols = [str(c) for c in df.columns]
    if len(set(cols)) != len(cols) or any(not isinstance(c, str) for c in df.columns):
        raise TypeError("only frames with distinct string column names are cached")
    return {"columns": cols, "dtypes": [str(df[c].dtype) for c in cols],
            "data": [[json_scalar(v) for v in df[c].tolist()] for c in cols]}


_DTYPES = {"int64", "float64", "bool", "object", "str", "string", "Int64", "boolean"}


def decode_frame(obj: dict) -> pd.DataFrame:
    cols, dtypes, data = obj["columns"], obj["dtypes"], obj["data"]
    if not (len(cols) == len(dtypes) == len(data)) or any(d not in _DTYPES for d in dtypes):
        raise ValueError("malformed frame")
    if len({len(col) for col in data}) > 1:
        raise ValueError("columns of different lengths")
    out = {}
    for c, d, values in zip(cols, dtypes, data):
        if d == "object":
            arr = np.empty(len(values), object)
            arr[:] = values
            out[c] = pd.Series(arr, dtype=object)
        else:
            out[c] = pd.Series(values, dtype=d)
    return pd.DataFrame(out, columns=cols)


class ScoreCache:
    """``get(kind, key_parts, compute, encode, decode)``: the decoded entry when one is on disk under the key of
    ``key_parts`` (a JSON-able dict, or None: not cacheable), else ``compute()``, stored (encoded) and returned."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self.hits = 0
        self.misses = 0

    def key(self, kind: str, key_parts: dict) -> str:
        body = json.dumps([FORMAT, kind, code_version(), key_parts], sort_keys=True, default=str)
        return xxhash.xxh3_128(body.encode()).hexdigest()

    def get(self, kind: str, key_parts: dict | None, compute: Callable[[], Any], encode: Callable[[Any], Any],
            decode: Callable[[Any], Any]) -> Any:
        if key_parts is None:
            return compute()
        key = self.key(kind, key_parts)
        path = self.root / f"{key}.json"
        hit = self._read(path, key, decode)
        if hit is not None:
            self.hits += 1
            return hit[0]
        self.misses += 1
        value = compute()
        try:
            payload = json.dumps(encode(value), allow_nan=True)
        except (TypeError, ValueError) as exc:  # a value outside the plain types: served, not stored
            log.warning("score cache: %s is not stored (%s)", kind, exc)
            return value
        self._write(path, key, payload)
        return value

    @staticmethod
    def _read(path: Path, key: str, decode) -> tuple | None:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        try:
            entry = json.loads(text)
            if entry.get("format") != FORMAT or entry.get("key") != key:
                raise ValueError("another entry under this name")
            if xxhash.xxh3_128(entry["payload"].encode()).hexdigest() != entry.get("digest"):
                raise ValueError("payload digest mismatch")
            return (decode(json.loads(entry["payload"])),)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("score cache: ignoring %s (%s); recomputing", path, exc)
            return None

    def _write(self, path: Path, key: str, payload: str) -> None:
        entry = {"format": FORMAT, "key": key, "digest": xxhash.xxh3_128(payload.encode()).hexdigest(),
                 "payload": payload}
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(entry, f)
            os.replace(tmp, path)
        except OSError as exc:  # a read-only or full cache folder: the result is still returned
            log.warning("score cache: could not write %s (%s)", path, exc)
