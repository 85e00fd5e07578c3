"""Embedding caches: crop embeddings on disk per (dataset, run, encoder), text embeddings in memory and on disk.

Crop embeddings are the expensive part (one image-encoder pass per predicted box), so they are computed once, in
chunks, and kept as float16. Layout of one entry (``<root>/<dataset>/<run>/<encoder slug>/``)::

    state.json       encoder cache key, inputs hash, n, chunk size, dim, complete flag
    records.npy      (n,) int64 prediction record ids: row i of the embeddings belongs to records[i]
    valid.npy        (n,) bool   rows that had a crop (the others are zero vectors and never encoded)
    chunks/00012.npy float16 rows [12 * chunk, 13 * chunk) while computing (each written atomically)
    embeddings.npy   (n, d) float16 once complete (the chunks are then removed)
    timing.json      the encoder timing of the chunks computed in this process (see below)

``timing.json``: per chunk the seconds spent reading and cropping its images and encoding its crops (synchronised
with ``torch.cuda.synchronize`` on a CUDA device), then the device, encoder, batch size, crops, images and ms per
image of the whole entry (:func:`timing_summary`). It is the measured semantic stage of a remapped run (OV3D-Bench
Table 10; ``ov3d_core.diagnostics.runtime``). Chunks written by the Ray engine carry no time, so its entries have
no per-image number. It lives beside ``state.json`` (which is the same whichever engine wrote the entry).

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
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ov3d_core.memo import Memo
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

    def _read_timing(self, d: Path) -> dict:
        try:
            t = json.loads((d / "timing.json").read_text())
        except (OSError, ValueError):
            return {}
        return t if isinstance(t, dict) else {}

    def timing(self, dataset: str, run: str, encoder_key: str) -> dict | None:
        """The entry's encoder timing (:func:`timing_summary`), or None when the entry has none."""
        t = self._read_timing(self.directory(dataset, run, encoder_key))
        return t if t.get("chunks") else None

    def annotate_timing(self, dataset: str, run: str, encoder_key: str, *, images: int, **extra) -> dict | None:
        """Add the number of images the run covers (the denominator of ms per image) and ``extra`` fields (e.g.
        ``engine``) to the entry's timing, and return it (None when the entry has no timing)."""
        d = self.directory(dataset, run, encoder_key)
        st, t = self._read_state(d), self._read_timing(d)
        if not st or not t.get("chunks"):
            return None
        fields = {**extra, "images": int(images)}
        if all(t.get(k) == v for k, v in fields.items()) and "ms_per_image" in t:
            return t  # already there: no rewrite on every load
        t = timing_summary({**t, **fields}, st.get("n", 0), st.get("chunk_size", 1))
        _atomic_write_json(d / "timing.json", t)
        return t

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

    def begin(self, dataset: str, run: str, encoder_key: str, *, records: np.ndarray, valid: np.ndarray,
              inputs_hash: str, chunk_size: int = 256, encoder_name: str = "") -> "PendingEntry":
        """Open the entry for computing: keep its finished chunks when it was started with the same encoder key,
        inputs hash, row count and chunk size, else start it afresh. Every engine writes through this."""
        return PendingEntry(self, dataset, run, encoder_key, records=records, valid=valid, inputs_hash=inputs_hash,
                            chunk_size=chunk_size, encoder_name=encoder_name)

    def compute(self, dataset: str, run: str, encoder, *, records: np.ndarray, valid: np.ndarray,
                load_inputs: Callable[[np.ndarray], Sequence], inputs_hash: str, chunk_size: int = 256,
                progress: bool = True, desc: str | None = None) -> CropEmbeddings:
        """Load the entry, or compute what is missing in this process and return it.

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
        entry = self.begin(dataset, run, key, records=records, valid=valid, inputs_hash=inputs_hash,
                           chunk_size=chunk_size, encoder_name=getattr(encoder, "name", ""))
        return encode_pending(entry, encoder, load_inputs, progress=progress, desc=desc)


def encode_pending(entry: "PendingEntry", encoder, load_inputs: Callable[[np.ndarray], Sequence], *,
                   progress: bool = True, desc: str | None = None) -> CropEmbeddings:
    """Encode the entry's missing chunks in this process, one chunk at a time, then merge them. Each chunk's time
    (reading its crops, encoding them; CUDA-synchronised on a GPU) goes into the entry's timing. On a CUDA device
    one crop is encoded first, untimed, so that the first chunk does not carry the device's warm-up (CUDA context,
    kernel loading)."""
    from tqdm.auto import tqdm

    sync = entry.time_with(encoder)
    warm = sync is not _no_sync
    with tqdm(total=entry.n_valid, initial=entry.n_valid_done, disable=not progress, unit="crop",
              desc=desc or f"embed {entry.run} ({getattr(encoder, 'name', entry.encoder_key)})") as bar:
        for c in list(entry.todo):
            rows = entry.rows(c)
            t0 = time.perf_counter()
            inputs = list(load_inputs(rows)) if len(rows) else []
            if warm and inputs:
                encode_rows(encoder, inputs[:1])
                warm = False
            sync()
            t1 = time.perf_counter()
            e = encode_rows(encoder, inputs) if len(rows) else None
            sync()
            t2 = time.perf_counter()
            dim = entry.dim or (e.shape[1] if e is not None else text_dim(encoder))
            entry.write(c, chunk_block(entry.bounds(c), rows, e, dim), seconds=t2 - t1, load_seconds=t1 - t0)
            bar.update(len(rows))
    return entry.finish(entry.dim or text_dim(encoder))


def _no_sync() -> None:
    return None


def encoder_device(encoder) -> tuple[str, str, object]:
    """(device, device name, synchronise callable) of an encoder: ``torch.cuda.synchronize`` for a CUDA device
    (the encoder's ``device`` attribute), a no-op otherwise."""
    dev = getattr(encoder, "device", None)
    if dev is not None and getattr(dev, "type", str(dev).split(":")[0]) == "cuda":
        import torch

        return str(dev), torch.cuda.get_device_name(dev), lambda: torch.cuda.synchronize(dev)
    return str(dev or "cpu"), _cpu_name(), _no_sync


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return "CPU: " + line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return "CPU: " + (platform.processor() or platform.machine() or "unknown")


def timing_summary(timing: dict, n: int, chunk_size: int) -> dict:
    """An entry's timing with its totals recomputed from the per-chunk times: ``crops``, ``encode_seconds``,
    ``load_seconds``, ``seconds`` (their sum: the semantic stage), ``chunks_timed`` of ``chunks_total``,
    ``complete`` (every chunk timed), ``ms_per_crop`` and, once ``images`` is known and every chunk was timed,
    ``ms_per_image`` (``1000 * seconds / images``; None otherwise)."""
    chunks = timing.get("chunks") or {}
    n_chunks = (int(n) + int(chunk_size) - 1) // max(int(chunk_size), 1)
    crops = int(sum(int(c.get("crops", 0)) for c in chunks.values()))
    enc = float(sum(float(c.get("seconds", 0.0)) for c in chunks.values()))
    load = float(sum(float(c.get("load_seconds", 0.0)) for c in chunks.values()))
    complete = len(chunks) == n_chunks
    images = timing.get("images")
    out = {**timing, "crops": crops, "encode_seconds": enc, "load_seconds": load, "seconds": enc + load,
           "chunks_timed": len(chunks), "chunks_total": n_chunks, "complete": complete,
           "ms_per_crop": 1e3 * (enc + load) / crops if crops else None,
           "ms_per_image": 1e3 * (enc + load) / images if complete and images else None}
    return out


def encode_rows(encoder, inputs: list) -> np.ndarray:
    """``encoder.encode_images(inputs)`` as float32, checked to give one row per input."""
    e = np.asarray(encoder.encode_images(inputs), dtype=np.float32)
    if e.ndim != 2 or e.shape[0] != len(inputs):
        raise RuntimeError(f"encoder returned {e.shape[0] if e.ndim else 0} embeddings for {len(inputs)} inputs")
    return e


def text_dim(encoder) -> int:
    """Embedding width learnt from one text embedding (for chunks without any crop)."""
    return int(np.asarray(encoder.encode_text(["object"])).shape[1])


def chunk_block(bounds: tuple[int, int], rows: np.ndarray, emb: np.ndarray | None, dim: int) -> np.ndarray:
    """The float16 block of one chunk: ``emb`` at the encoded ``rows`` (absolute indices), zeros elsewhere."""
    lo, hi = bounds
    block = np.zeros((hi - lo, dim), np.float16)
    if emb is not None and len(rows):
        block[np.asarray(rows) - lo] = emb.astype(np.float16)
    return block


class PendingEntry:
    """A crop-embedding entry being computed: which chunks are left, atomic chunk writes, the final merge.

    Whoever encodes (this process, or workers of a cluster engine) hands finished blocks to :meth:`write`; a chunk
    is either absent or complete on disk, so an interrupted computation resumes at the missing chunks.
    """

    def __init__(self, store: EmbeddingStore, dataset: str, run: str, encoder_key: str, *, records, valid,
                 inputs_hash: str, chunk_size: int, encoder_name: str = ""):
        if int(chunk_size) < 1:
            raise ValueError(f"chunk_size must be a positive integer, got {chunk_size!r}")
        self.store, self.dataset, self.run, self.encoder_key = store, dataset, run, encoder_key
        self.inputs_hash = inputs_hash
        self.records = np.asarray(records, dtype=np.int64)
        self.valid = np.asarray(valid, dtype=bool)
        self.n = n = len(self.records)
        self.chunk_size = cs = int(chunk_size)
        self.dir = d = store.directory(dataset, run, encoder_key)
        self.written: list[int] = []  # chunks written through this object (for reports and tests)
        self.written_at: list[float] = []  # time.perf_counter() of each write (throughput in benchmarks)
        self._state = {"version": FORMAT_VERSION, "encoder_key": encoder_key, "encoder_name": encoder_name,
                       "inputs_hash": inputs_hash, "n": n, "chunk_size": cs, "complete": False,
                       "dataset": dataset, "run": run}
        st = store._read_state(d)
        same = st is not None and all(st.get(k) == self._state[k] for k in ("version", "encoder_key",
                                                                             "inputs_hash", "n", "chunk_size"))
        self.timing = store._read_timing(d) if same else {}  # the times of the chunks kept (a resume)
        if not same and d.exists():
            shutil.rmtree(d)
        if not same:
            _atomic_save(d / "records.npy", self.records)
            _atomic_save(d / "valid.npy", self.valid)
            _atomic_write_json(d / "state.json", self._state)
        self._dim_saved = st.get("dim") if same else None
        self.dim: int | None = self._dim_saved
        self.chunks = d / "chunks"
        self.chunks.mkdir(parents=True, exist_ok=True)
        self.n_chunks = (n + cs - 1) // cs
        self.todo: list[int] = []
        for c in range(self.n_chunks):
            p = self.chunks / f"{c:05d}.npy"
            if p.exists():
                try:
                    a = np.load(p, mmap_mode="r")
                    if a.shape[0] == min(cs, n - c * cs) and (self.dim is None or a.shape[1] == self.dim):
                        self.dim = int(a.shape[1])
                        continue
                except (OSError, ValueError):
                    pass
            self.todo.append(c)

    def bounds(self, c: int) -> tuple[int, int]:
        return c * self.chunk_size, min((c + 1) * self.chunk_size, self.n)

    def rows(self, c: int) -> np.ndarray:
        """Absolute indices of the rows of chunk ``c`` that have a crop (the ones to encode)."""
        lo, hi = self.bounds(c)
        return np.arange(lo, hi)[self.valid[lo:hi]]

    @property
    def n_valid(self) -> int:
        return int(self.valid.sum())

    @property
    def n_valid_done(self) -> int:
        return self.n_valid - sum(len(self.rows(c)) for c in self.todo)

    def time_with(self, encoder):
        """Record the encoder's name, device and batch size in the entry's timing; returns the callable that
        synchronises its device (a no-op off CUDA) for timing a chunk."""
        device, device_name, sync = encoder_device(encoder)
        self.timing.update(encoder=getattr(encoder, "name", self.encoder_key), device=device,
                                     device_name=device_name, batch_size=getattr(encoder, "batch_size", None),
                                     cuda_synchronized=sync is not _no_sync)
        return sync

    def write(self, c: int, block: np.ndarray, *, seconds: float | None = None,
              load_seconds: float | None = None) -> None:
        """Save chunk ``c`` (a ``(rows in chunk, d)`` float16 block) atomically and mark it done; ``seconds`` (the
        encoder's time on it) and ``load_seconds`` (reading its crops), when given, go into the entry's timing."""
        lo, hi = self.bounds(c)
        block = np.asarray(block)
        if block.dtype != np.float16 or block.ndim != 2 or block.shape[0] != hi - lo or \
                (self.dim is not None and block.shape[1] != self.dim):
            raise ValueError(f"chunk {c}: expected a ({hi - lo}, {self.dim or 'd'}) float16 block, got "
                             f"{block.shape} {block.dtype}")
        _atomic_save(self.chunks / f"{c:05d}.npy", block)
        self.dim = int(block.shape[1])
        if seconds is not None:
            self.timing.setdefault("chunks", {})[str(c)] = {
                "seconds": float(seconds), "load_seconds": float(load_seconds or 0.0), "crops": len(self.rows(c))}
            _atomic_write_json(self.dir / "timing.json", self.timing)
        if self._dim_saved != self.dim:
            self._state["dim"] = self.dim
            _atomic_write_json(self.dir / "state.json", self._state)
            self._dim_saved = self.dim
        if c in self.todo:
            self.todo.remove(c)
        self.written.append(c)
        self.written_at.append(time.perf_counter())

    def finish(self, dim: int | None = None) -> CropEmbeddings:
        """Merge the chunks into ``embeddings.npy``, mark the entry complete and return it (``dim``: the width when
        no chunk has rows, i.e. an empty run)."""
        if self.todo:
            raise RuntimeError(f"{self.dir}: chunks {self.todo} are not computed yet")
        dim = self.dim or dim
        if dim is None:
            raise ValueError("finish(): the embedding width is unknown (no chunk written)")
        parts = [np.load(self.chunks / f"{c:05d}.npy") for c in range(self.n_chunks)]
        emb = np.concatenate(parts) if parts else np.zeros((0, dim), np.float16)
        _atomic_save(self.dir / "embeddings.npy", emb)
        self._state.update(dim=int(dim), complete=True)
        if self.timing.get("chunks"):
            self.timing = timing_summary(self.timing, self.n, self.chunk_size)
            _atomic_write_json(self.dir / "timing.json", self.timing)
        _atomic_write_json(self.dir / "state.json", self._state)
        shutil.rmtree(self.chunks, ignore_errors=True)
        out = self.store.load(self.dataset, self.run, self.encoder_key, self.inputs_hash)
        assert out is not None
        return out


class TextEmbeddingCache:
    """Text embeddings per (encoder, exact prompt list): an in-memory LRU, plus ``.npy`` files under ``root``."""

    def __init__(self, root: str | Path | None = None, maxsize: int = 512):
        self.root = None if root is None else Path(root)
        self.maxsize = maxsize
        self._mem: Memo[str, np.ndarray] = Memo(maxsize, read_only=True)
        self.misses = 0  # prompt lists actually sent to an encoder (for tests and benchmarks)

    @staticmethod
    def key(encoder_key: str, prompts: Sequence[str]) -> str:
        return hashlib.sha1((encoder_key + "\x00" + "\x1f".join(prompts)).encode()).hexdigest()

    def get(self, encoder, prompts: Sequence[str]) -> np.ndarray:
        """``(len(prompts), d)`` float32 normalised text embeddings (read-only array)."""
        prompts = [str(p) for p in prompts]
        k = self.key(encoder.cache_key, prompts)

        def load_or_encode() -> np.ndarray:
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
            return np.ascontiguousarray(arr, dtype=np.float32)

        return self._mem.get(k, load_or_encode)


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
