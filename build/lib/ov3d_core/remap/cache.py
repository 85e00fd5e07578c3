"""Embedding caches: crop embeddings on disk per (dataset, run, encoder), text embeddings in memory and on disk.

Crop embeddings are the expensive part (one image-encoder pass per predicted box), so they are computed once, in
chunks, and kept as float16. Layout of one entry (``<root>/<dataset>/<run>/<encoder slug>/``)::

    state.json       encoder cache key, inputs hash, n, chunk size, dim, complete flag
    records.npy      (n,) int64 prediction record ids: row i of the embeddings belongs to records[i]
    valid.npy        (n,) bool   rows that had a crop (the others are zero vectors and never encoded)
    chunks/00012.npy float16 rows [12 * chunk, 13 * chunk) while computing (each written atomically)
    embeddings.npy   (n, d) float16 once complete (the chunks are then removed)

Resuming: a restarted computation with the same encoder key and inputs hash keeps the finished chunks and encodes
only the missing ones. A different inputs hash (changed crop boxes, captions, crop parameters) discards the entry.
A different encoder gets its own entry, so switching encoders back and forth costs nothing.

Text embeddings (a class list under one template) are keyed by the encoder key and the exact prompt list, kept in an
in-memory LRU and, when a root is given, as small ``.npy`` files: changing the template or the threshold in the app
never re-runs a slow text tower twice.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ov3d_core.remap.templates import Template, ensemble, prompts_for

FORMAT_VERSION = 1


def hash_inputs(*parts) -> str:
    """A stable hash of arrays, strings, numbers and (nested) lists/dicts of them."""
    h = hashlib.sha1()

    def feed(x):
        if isinstance(x, np.ndarray):
            a = np.ascontiguousarray(x)
            if a.dtype == object:
                feed(a.tolist())
                return
            h.update(f"nd{a.dtype.str}{a.shape}".encode())
            h.update(a.tobytes())
        elif isinstance(x, (list, tuple)):
            h.update(f"L{len(x)}[".encode())
            for y in x:
                feed(y)
            h.update(b"]")
        elif isinstance(x, dict):
            h.update(b"D{")
            for k in sorted(x, key=str):
                feed(str(k))
                feed(x[k])
            h.update(b"}")
        else:
            h.update(f"{type(x).__name__}:{x!r};".encode())

    for p in parts:
        feed(p)
    return h.hexdigest()


def _slug(text: str, limit: int = 48) -> str:
    s = re.sub(r"[^A-Za-z0-9._-]+", "_", str(text)).strip("_") or "x"
    if len(s) > limit or s != str(text):
        s = s[:limit] + "-" + hashlib.sha1(str(text).encode()).hexdigest()[:8]
    return s


def _atomic_save(path: Path, array: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.save(f, array)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _atomic_write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


@dataclass(eq=False)
class CropEmbeddings:
    """Crop embeddings of one (dataset, run, encoder): row i belongs to prediction record ``records[i]``."""

    records: np.ndarray      # (n,) int64
    emb: np.ndarray          # (n, d) float16 (memory-mapped when loaded from disk)
    valid: np.ndarray        # (n,) bool
    encoder_key: str
    inputs_hash: str
    path: Path | None = None
    _f32: np.ndarray | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.records)

    @property
    def dim(self) -> int:
        return int(self.emb.shape[1]) if self.emb.ndim == 2 else 0

    def float32(self) -> np.ndarray:
        """``(n, d)`` float32 rows (converted once and kept: this is what the live re-scoring multiplies)."""
        if self._f32 is None:
            self._f32 = np.asarray(self.emb, dtype=np.float32)
        return self._f32

    def rows_for(self, records: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Row of each given record id and whether it was found (rows of missing ones are 0)."""
        records = np.asarray(records, dtype=np.int64)
        order = np.argsort(self.records, kind="stable")
        srt = self.records[order]
        pos = np.clip(np.searchsorted(srt, records), 0, max(len(srt) - 1, 0))
        found = (srt[pos] == records) if len(srt) else np.zeros(len(records), bool)
        return np.where(found, order[pos] if len(srt) else 0, 0), found


class EmbeddingStore:
    """On-disk crop-embedding cache rooted at ``root`` (one entry per dataset, run and encoder)."""

    def __init__(self, root: str | Path):
        self.root = Path(root)

    def directory(self, dataset: str, run: str, encoder_key: str) -> Path:
        return self.root / _slug(dataset) / _slug(run) / _slug(encoder_key, 40)

    def _read_state(self, d: Path) -> dict | None:
        try:
            return json.loads((d / "state.json").read_text())
        except (OSError, ValueError):
            return None

    def load(self, dataset: str, run: str, encoder_key: str, inputs_hash: str | None = None) -> CropEmbeddings | None:
        """The complete entry, or None when missing, incomplete, or made from other inputs (``inputs_hash``)."""
        d = self.directory(dataset, run, encoder_key)
        st = self._read_state(d)
        if (not st or not st.get("complete") or st.get("version") != FORMAT_VERSION
                or st.get("encoder_key") != encoder_key
                or (inputs_hash is not None and st.get("inputs_hash") != inputs_hash)):
            return None
        try:
            emb = np.load(d / "embeddings.npy", mmap_mode="r")
            records = np.load(d / "records.npy")
            valid = np.load(d / "valid.npy")
        except (OSError, ValueError):
            return None
        if emb.shape[0] != len(records) or len(valid) != len(records):
            return None
        return CropEmbeddings(records, emb, valid, encoder_key, st["inputs_hash"], d)

    def status(self, dataset: str, run: str, encoder_key: str) -> dict:
        """``{"complete": bool, "done": rows finished, "n": rows}`` for progress displays."""
        d = self.directory(dataset, run, encoder_key)
        st = self._read_state(d) or {}
        n = int(st.get("n", 0))
        if st.get("complete"):
            return {"complete": True, "done": n, "n": n}
        cs = int(st.get("chunk_size", 1) or 1)
        done = sum(min(cs, n - int(p.stem) * cs) for p in (d / "chunks").glob("*.npy")) if n else 0
        return {"complete": False, "done": done, "n": n}

    def compute(self, dataset: str, run: str, encoder, *, records: np.ndarray, valid: np.ndarray,
                load_inputs: Callable[[np.ndarray], Sequence], inputs_hash: str, chunk_size: int = 256,
                progress: bool = True, desc: str | None = None) -> CropEmbeddings:
        """Load the entry, or compute what is missing and return it.

        Args:
            encoder: an ``Encoder`` (its ``cache_key`` names the entry; ``encode_images`` is called per chunk).
            records: ``(n,)`` record ids, in row order.
            valid: ``(n,)`` rows that have a crop; only these are encoded.
            load_inputs: given row indices (valid ones of one chunk), returns the encoder inputs for them (PIL crops,
                captions, ...). Called lazily per chunk, so crops are read from disk a chunk at a time.
            inputs_hash: identity of everything that determines the inputs (see :func:`hash_inputs`).
        """
        key = encoder.cache_key
        done = self.load(dataset, run, key, inputs_hash)
        if done is not None:
            return done
        records = np.asarray(records, dtype=np.int64)
        valid = np.asarray(valid, dtype=bool)
        n = len(records)
        d = self.directory(dataset, run, key)
        want = {"version": FORMAT_VERSION, "encoder_key": key, "encoder_name": getattr(encoder, "name", ""),
                "inputs_hash": inputs_hash, "n": n, "chunk_size": int(chunk_size), "complete": False,
                "dataset": dataset, "run": run}
        st = self._read_state(d)
        same = st is not None and all(st.get(k) == want[k] for k in ("version", "encoder_key", "inputs_hash", "n",
                                                                     "chunk_size"))
        if not same and d.exists():
            shutil.rmtree(d)
        if not same:
            _atomic_save(d / "records.npy", records)
            _atomic_save(d / "valid.npy", valid)
            _atomic_write_json(d / "state.json", want)
        chunks = d / "chunks"
        chunks.mkdir(parents=True, exist_ok=True)
        n_chunks = (n + chunk_size - 1) // chunk_size
        dim = None if st is None or not same else st.get("dim")
        todo = []
        for c in range(n_chunks):
            p = chunks / f"{c:05d}.npy"
            if p.exists():
                try:
                    a = np.load(p, mmap_mode="r")
                    if a.shape[0] == min(chunk_size, n - c * chunk_size) and (dim is None or a.shape[1] == dim):
                        dim = a.shape[1]
                        continue
                except (OSError, ValueError):
                    pass
            todo.append(c)
        from tqdm.auto import tqdm

        total = int(valid.sum())
        already = total - sum(int(valid[c * chunk_size:(c + 1) * chunk_size].sum()) for c in todo)
        with tqdm(total=total, initial=already, disable=not progress, unit="crop",
                  desc=desc or f"embed {run} ({getattr(encoder, 'name', key)})") as bar:
            for c in todo:
                lo, hi = c * chunk_size, min((c + 1) * chunk_size, n)
                rows = np.arange(lo, hi)[valid[lo:hi]]
                if len(rows):
                    e = np.asarray(encoder.encode_images(list(load_inputs(rows))), dtype=np.float32)
                    if e.shape[0] != len(rows):
                        raise RuntimeError(f"encoder returned {e.shape[0]} embeddings for {len(rows)} inputs")
                    dim = e.shape[1] if dim is None else dim
                else:
                    e = None
                if dim is None:  # an all-invalid first chunk: learn the width from one text embedding
                    dim = int(np.asarray(encoder.encode_text(["object"])).shape[1])
                block = np.zeros((hi - lo, dim), np.float16)
                if e is not None:
                    block[rows - lo] = e.astype(np.float16)
                _atomic_save(chunks / f"{c:05d}.npy", block)
                if st is None or not same or st.get("dim") != dim:
                    want["dim"] = dim
                    _atomic_write_json(d / "state.json", want)
                    st, same = dict(want), True
                bar.update(len(rows))
        if dim is None:
            dim = int(np.asarray(encoder.encode_text(["object"])).shape[1])
        parts = [np.load(chunks / f"{c:05d}.npy") for c in range(n_chunks)]
        emb = np.concatenate(parts) if parts else np.zeros((0, dim), np.float16)
        _atomic_save(d / "embeddings.npy", emb)
        want.update(dim=int(dim), complete=True)
        _atomic_write_json(d / "state.json", want)
        shutil.rmtree(chunks, ignore_errors=True)
        out = self.load(dataset, run, key, inputs_hash)
        assert out is not None
        return out


class TextEmbeddingCache:
    """Text embeddings per (encoder, exact prompt list): an in-memory LRU, plus ``.npy`` files under ``root``."""

    def __init__(self, root: str | Path | None = None, maxsize: int = 512):
        self.root = None if root is None else Path(root)
        self.maxsize = maxsize
        self._mem: OrderedDict[str, np.ndarray] = OrderedDict()
        self.misses = 0  # prompt lists actually sent to an encoder (for tests and benchmarks)

    @staticmethod
    def key(encoder_key: str, prompts: Sequence[str]) -> str:
        return hashlib.sha1((encoder_key + "\x00" + "\x1f".join(prompts)).encode()).hexdigest()

    def get(self, encoder, prompts: Sequence[str]) -> np.ndarray:
        """``(len(prompts), d)`` float32 normalised text embeddings (read-only array)."""
        prompts = [str(p) for p in prompts]
        k = self.key(encoder.cache_key, prompts)
        hit = self._mem.get(k)
        if hit is not None:
            self._mem.move_to_end(k)
            return hit
        arr = None
        path = None if self.root is None else self.root / "text" / _slug(encoder.cache_key, 40) / f"{k}.npy"
        if path is not None and path.exists():
            try:
                arr = np.load(path)
                if arr.shape[0] != len(prompts):
                    arr = None
            except (OSError, ValueError):
                arr = None
        if arr is None:
            self.misses += 1
            arr = np.asarray(encoder.encode_text(prompts), dtype=np.float32)
            if path is not None:
                _atomic_save(path, arr)
        arr = np.ascontiguousarray(arr, dtype=np.float32)
        arr.setflags(write=False)
        self._mem[k] = arr
        while len(self._mem) > self.maxsize:
            self._mem.popitem(last=False)
        return arr


#: Process-wide in-memory text cache used when none is passed.
DEFAULT_TEXT_CACHE = TextEmbeddingCache()


def class_text_embeddings(encoder, templates: Template | Sequence[Template], class_names: Sequence[str],
                          cache: TextEmbeddingCache | None = None) -> np.ndarray:
    """``(C, d)`` class embeddings for one template, or the ensemble (normalised mean) over several."""
    cache = DEFAULT_TEXT_CACHE if cache is None else cache
    if isinstance(templates, Template):
        templates = [templates]
    per = [cache.get(encoder, prompts_for(t, class_names)) for t in templates]
    if len(per) == 1:
        return per[0]
    return ensemble(per)
