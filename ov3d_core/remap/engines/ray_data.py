"""The Ray Data embedding engine: a run's missing shards as a Ray dataset, cropped in CPU tasks and encoded by a pool
of actors that each load the encoder once; this process writes every shard into the cache as it arrives. Several
runs (``embed_ray_many``: a report's remapped views) share one dataset and so one actor pool.

Pipeline (one row per shard, i.e. per chunk of the cache)::

    work list (rows, image paths, crop boxes | captions)
      -> map(cut_shard)                 CPU tasks: open each image once, cut its crops (``load_crops``)
      -> map_batches(ShardEncoder)      actor pool: ``encoder.encode_images`` on the shard's crops
      -> this process                   ``PendingEntry.write``: one atomic chunk file per shard

The crops and the encoder calls are the in-process engine's (same crop function, same batches of one chunk), so
the cache is the same, up to float16 rounding of floating-point differences between machines.

Failures: a shard whose image cannot be read, or whose encoding raises, comes back as a failure naming the images
(each image of the shard is tried on its own to find the one at fault); the other shards are written. A worker
process that dies (killed, out of memory) is restarted by Ray Data and its shard retried; only that shard's work is
lost. A shard that does not come back at all is reported. The entry stays incomplete until every shard is there:
re-running the same command computes the missing shards only.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from pathlib import Path

import numpy as np

from ov3d_core.errors import InputError
from ov3d_core.remap.cache import chunk_block, encode_rows, text_dim
from ov3d_core.remap.crops import load_crops
from ov3d_core.remap.encoders import EncoderInfo, describe_encoder, make_encoder
from ov3d_core.remap.engines.local import embed_local
from ov3d_core.remap.engines.report import EmbedReport, ShardFailure
from ov3d_core.remap.sources import crop_source, uses_captions

#: Logical CPUs one crop task asks for (cropping is light next to encoding; this leaves the cores to the actors).
CROP_CPUS = 0.25

_ADDRESS = re.compile(r"^(ray://)?(\[[0-9A-Fa-f:]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?):(\d{1,5})$")


def check_address(address: str | None) -> str | None:
    """``None`` (start a local Ray instance, or use the one already running in this process), ``auto`` (the
    cluster this machine belongs to), ``HOST:PORT`` (its GCS) or ``ray://HOST:PORT`` (Ray Client)."""
    if address is None:
        return None
    a = str(address).strip()
    m = _ADDRESS.match(a)
    if a == "auto" or (m and 0 < int(m.group(4)) < 65536):
        return a
    raise InputError("command line", None, "--address", "auto, HOST:PORT or ray://HOST:PORT", address)


def connect(address: str | None = None) -> bool:
    """Connect to Ray (see :func:`check_address`); returns True when this call started or joined it (and so should
    shut it down), False when Ray was already initialised in this process."""
    import ray

    if ray.is_initialized():
        return False
    address = check_address(address)
    kw: dict = {"include_dashboard": False, "logging_level": logging.WARNING, "runtime_env": worker_env(address)}
    if address is not None:
        kw["address"] = address
    try:
        ray.init(**kw)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise InputError("command line", None, "--address", "the address of a running Ray cluster (start one with "
                         "`ray start --head`)", f"{address}: {str(exc).splitlines()[0] if str(exc) else exc}") from None
    return True


def worker_env(address: str | None) -> dict:
    """Runtime environment for a Ray job this engine starts or joins: workers import this process's ``ov3d_core``
    (on a local instance from its folder; on a cluster it is uploaded once, cached by content), so they run the
    same code whether or not their own environment has it. Its dependencies must be installed on every node."""
    package = Path(__file__).resolve().parents[2]
    if address is None:
        return {"env_vars": {"PYTHONPATH": str(package.parent)}}
    return {"py_modules": [str(package)], "excludes": ["__pycache__"]}


# ------------------------------------------------------------------------------------------------ work list
def work_items(src, entry, job: int = 0) -> list[dict]:
    """One row per missing shard: its rows and what to crop (flat bytes and JSON, so Arrow carries them as is);
    ``job`` names the run among those of one dataset (``embed_ray_many``)."""
    items = []
    for c in entry.todo:
        lo, hi = entry.bounds(c)
        rows = entry.rows(c)
        item = {"job": int(job), "chunk": int(c), "lo": int(lo), "hi": int(hi), "rows": rows.astype(np.int64).tobytes(),
                "kind": src.kind, "size": int(src.size or 0), "captions": "", "paths": "[]", "path_of_row": b"",
                "boxes": b""}
        if src.kind == "captions":
            item["captions"] = json.dumps([str(src.captions[i]) for i in rows])
        else:
            paths = [src.paths[i] for i in rows]
            uniq = list(dict.fromkeys(paths))
            index = {p: j for j, p in enumerate(uniq)}
            item["paths"] = json.dumps(uniq)
            item["path_of_row"] = np.array([index[p] for p in paths], np.int32).tobytes()
            item["boxes"] = np.ascontiguousarray(src.boxes[rows], np.float64).tobytes()
        items.append(item)
    return items


def _error(kind: str, error: str, images=(), rows=()) -> str:
    return json.dumps({"kind": kind, "error": error, "images": list(images), "rows": [int(r) for r in rows]})


def cut_shard(item: dict) -> dict:
    """CPU task: the shard's crops as one uint8 buffer (``pixels``) and their shapes; captions pass through. An
    image that cannot be read makes the shard a failure naming it (every image of the shard is tried)."""
    out = dict(item)
    out.update(pixels=b"", shapes=b"", error="")
    if item["kind"] != "pixels":
        return out

    paths = json.loads(item["paths"])
    which = np.frombuffer(item["path_of_row"], np.int32)
    boxes = np.frombuffer(item["boxes"], np.float64).reshape(-1, 4)
    crops: list = [None] * len(which)
    bad, reasons = [], []
    for j, path in enumerate(paths):
        sel = np.flatnonzero(which == j)
        try:
            got = load_crops([path] * len(sel), boxes[sel], size=item["size"] or None)
        except Exception as exc:  # noqa: BLE001 - reported with the image, the other shards go on
            bad.append(path)
            reasons.append(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
            continue
        for s, im in zip(sel, got):
            crops[s] = None if im is None else np.asarray(im, dtype=np.uint8)
    if not bad and any(c is None for c in crops):
        bad = sorted({paths[which[i]] for i, c in enumerate(crops) if c is None})
        reasons = ["no crop could be cut"]
    if bad:
        out["error"] = _error("input", "; ".join(dict.fromkeys(reasons)), images=bad)
        return out
    out["pixels"] = b"".join(c.tobytes() for c in crops)
    out["shapes"] = np.array([c.shape for c in crops], np.int32).reshape(-1, 3).tobytes()
    return out


def shard_inputs(row: dict) -> tuple[list, list[str]]:
    """The encoder inputs of a cut shard (PIL crops or captions) and, for pixels, the image of each input."""
    if row["kind"] != "pixels":
        captions = json.loads(row["captions"])
        return captions, []
    from PIL import Image

    shapes = np.frombuffer(row["shapes"], np.int32).reshape(-1, 3)
    buf = np.frombuffer(row["pixels"], np.uint8)
    crops, off = [], 0
    for h, w, ch in shapes:
        n = int(h) * int(w) * int(ch)
        crops.append(Image.fromarray(buf[off:off + n].reshape(int(h), int(w), int(ch))))
        off += n
    paths = json.loads(row["paths"])
    return crops, [paths[j] for j in np.frombuffer(row["path_of_row"], np.int32)]


class ShardEncoder:
    """Actor: loads the encoder once, then encodes whole shards (Ray Data ``map_batches`` with ``batch_size=1``)."""

    def __init__(self, encoder, expect_key: str, device: str, batch_size: int | None, threads: int | None = None):
        if isinstance(encoder, str):
            self.encoder = make_encoder(encoder, device=device, batch_size=batch_size)
        else:  # a factory (custom encoders, tests)
            self.encoder = encoder()
        if threads and device == "cpu" and "torch" in sys.modules:  # one intra-op thread per CPU of the actor
            sys.modules["torch"].set_num_threads(int(threads))
        if self.encoder.cache_key != expect_key:
            raise RuntimeError(f"the worker's encoder is {self.encoder.cache_key!r}, the coordinator expected "
                               f"{expect_key!r}: the workers see another checkpoint (or another version of it)")
        self._dim: int | None = None

    def dim(self) -> int:
        if self._dim is None:
            self._dim = text_dim(self.encoder)
        return self._dim

    def encode(self, row: dict) -> tuple[bytes, int, str]:
        """``(float16 block bytes, width, error JSON or "")`` of one cut shard."""
        if row["error"]:
            return b"", 0, row["error"]
        lo, hi = int(row["lo"]), int(row["hi"])
        rows = np.frombuffer(row["rows"], np.int64)
        inputs, images = shard_inputs(row)
        try:
            e = encode_rows(self.encoder, inputs) if len(rows) else None
        except Exception as exc:  # noqa: BLE001 - find the inputs at fault, report, go on
            return b"", 0, self._blame(exc, inputs, images, rows)
        dim = e.shape[1] if e is not None else self.dim()
        self._dim = self._dim or dim
        return chunk_block((lo, hi), rows, e, dim).tobytes(), int(dim), ""

    def _blame(self, exc: Exception, inputs: list, images: list[str], rows: np.ndarray) -> str:
        """Error JSON naming the images (or, for captions, the rows) that fail when encoded on their own."""
        groups = {}
        for i, key in enumerate(images or range(len(inputs))):
            groups.setdefault(key, []).append(i)
        culprits = []
        for key, idx in groups.items():
            try:
                encode_rows(self.encoder, [inputs[i] for i in idx])
            except Exception:  # noqa: BLE001
                culprits.append(key)
        msg = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")
        if images:
            return _error("error", msg, images=culprits)
        return _error("error", msg, rows=[int(rows[i]) for i in culprits])

    def __call__(self, batch: dict) -> dict:
        keys = list(batch)
        out: dict[str, list] = {"job": [], "chunk": [], "block": [], "dim": [], "error": []}
        for i in range(len(batch["chunk"])):
            row = {k: batch[k][i] for k in keys}
            block, dim, err = self.encode(row)
            out["job"].append(int(row["job"]))
            out["chunk"].append(int(row["chunk"]))
            out["block"].append(block)
            out["dim"].append(dim)
            out["error"].append(err)
        return {"job": np.array(out["job"], np.int64), "chunk": np.array(out["chunk"], np.int64),
                "block": np.array(out["block"], dtype=object), "dim": np.array(out["dim"], np.int64),
                "error": np.array(out["error"], dtype=object)}


# ------------------------------------------------------------------------------------------------ driver
def _describe(encoder):
    """Key, name and input kind of the encoder, without loading its weights here (a spec) or by building it once
    here (a factory)."""
    if isinstance(encoder, str):
        return describe_encoder(encoder)

    enc = encoder()
    return EncoderInfo(enc.cache_key, getattr(enc, "name", ""), uses_captions(enc),
                       bool(getattr(enc, "has_calibrated_bias", False)))


def plan_workers(resources: dict, n_shards: int, *, gpus_per_worker: float | None, workers: int | None
                 ) -> dict:
    """Actor count and resources: one actor per ``gpus_per_worker`` GPUs when the cluster has GPUs (default 1),
    else one CPU actor per CPU; never more actors than shards. Crop tasks keep ``CROP_CPUS`` each."""
    n_gpu, n_cpu = float(resources.get("GPU", 0)), float(resources.get("CPU", 1))
    gpus = (1.0 if n_gpu >= 1 else 0.0) if gpus_per_worker is None else float(gpus_per_worker)
    if gpus > 0 and gpus > n_gpu:
        raise InputError("command line", None, "--gpus-per-worker", f"at most the cluster's {n_gpu:g} GPUs "
                         "(0 for CPU workers)", gpus)
    n = int(workers) if workers else (int(n_gpu // gpus) if gpus > 0 else max(1, int(n_cpu)))
    n = max(1, min(n, max(n_shards, 1)))
    crop_tasks = min(max(2, 2 * n), max(n_shards, 1))  # more tasks than shards: Ray Data warns, nothing gained
    cpus = min(1.0, (n_cpu - CROP_CPUS * crop_tasks) / n)
    if cpus <= 0:
        cpus = min(1.0, n_cpu / (2 * n))
        crop_tasks = 1
    return {"workers": n, "gpus": gpus, "cpus": round(cpus, 4), "crop_tasks": crop_tasks,
            "device": "cuda" if gpus > 0 else "cpu", "threads": max(1, round(cpus))}


def embed_ray(store, dataset, run, encoder, *, crops_json=None, pad: float = 0.0, min_size: float = 8,
              chunk_size: int = 256, batch_size: int | None = None, address: str | None = None,
              gpus_per_worker: float | None = None, workers: int | None = None, progress: bool = True
              ) -> EmbedReport:
    """Compute the run's missing shards on Ray and write them into ``store``; see the module doc.

    Args:
        encoder: a spec (``proxy``, ``hf:<checkpoint>``; every worker must see the same checkpoint) or a zero-argument
            callable returning an ``Encoder`` (called once here for its key and once per worker).
        address: ``None`` (a local Ray instance, or the one this process already has), ``auto``, ``HOST:PORT``,
            ``ray://HOST:PORT``.
        gpus_per_worker: GPUs per encoder actor (default 1 when the cluster has GPUs, else CPU actors; 0 forces CPU).
        workers: number of encoder actors (default: one per GPU share, else one per CPU).
    """
    return embed_ray_many(store, [(dataset, run, crops_json)], encoder, pad=pad, min_size=min_size,
                          chunk_size=chunk_size, batch_size=batch_size, address=address,
                          gpus_per_worker=gpus_per_worker, workers=workers, progress=progress)[0]


def embed_ray_many(store, jobs, encoder, *, pad: float = 0.0, min_size: float = 8, chunk_size: int = 256,
                   batch_size: int | None = None, address: str | None = None, gpus_per_worker: float | None = None,
                   workers: int | None = None, progress: bool = True) -> list[EmbedReport]:
    """:func:`embed_ray` for several runs at once, one report per job in order: ``jobs`` are ``(dataset, run,
    crops_json)``. The missing shards of every run go through one Ray dataset, so one pool of encoder actors (each
    loading the encoder once) serves them all, instead of a pool started and torn down per run. A run listed twice
    is computed once (both entries get the same report)."""
    t0 = time.perf_counter()
    address = check_address(address)
    info = _describe(encoder)
    reports: list[EmbedReport] = []
    todo: list[tuple] = []  # (entry, src, report) of the runs with shards to compute
    first: dict[tuple[str, str], EmbedReport] = {}
    for dataset, run, crops_json in jobs:
        key = (dataset.name, run.name)
        if key in first:
            reports.append(first[key])
            continue
        src = crop_source(dataset, run, info, crops_json=crops_json, pad=pad, min_size=min_size)
        n = len(src.records)
        report = EmbedReport("ray", dataset.name, run.name, info.name, info.cache_key, n_rows=n,
                             n_shards=(n + chunk_size - 1) // max(int(chunk_size), 1))
        first[key] = report
        reports.append(report)
        done = store.load(dataset.name, run.name, info.cache_key, src.inputs_hash)
        if done is not None:
            report.embeddings, report.cached = done, True
            continue
        if n == 0:  # nothing to distribute; the local engine learns the width from the text side
            local = embed_local(store, dataset, run, encoder if isinstance(encoder, str) else encoder(),
                                crops_json=crops_json, pad=pad, min_size=min_size, chunk_size=chunk_size,
                                batch_size=batch_size, progress=False)
            report.embeddings = local.embeddings
            continue
        entry = store.begin(dataset.name, run.name, info.cache_key, records=src.records, valid=src.valid,
                            inputs_hash=src.inputs_hash, chunk_size=chunk_size, encoder_name=info.name)
        todo.append((entry, src, report))
    pending = [t for t in todo if t[0].todo]
    if pending:
        started = connect(address)
        try:
            _run_pipeline(pending, encoder, info, batch_size=batch_size, gpus_per_worker=gpus_per_worker,
                          workers=workers, progress=progress)
        finally:
            if started:
                import ray

                ray.shutdown()
    for entry, _, report in todo:
        report.written = list(entry.written)
        report.written_at = [t - t0 for t in entry.written_at]
        if not report.failures and not entry.todo:
            report.embeddings = entry.finish()
    return reports


def _run_pipeline(todo, encoder, info, *, batch_size, gpus_per_worker, workers, progress: bool) -> None:
    """The missing shards of every ``(entry, src, report)`` in ``todo`` through one Ray dataset and one actor
    pool; each shard is written into its run's entry as it arrives, each failure reported on its run's report."""
    import ray
    import ray.data as rd
    from tqdm.auto import tqdm

    items = [it for job, (entry, src, _) in enumerate(todo) for it in work_items(src, entry, job)]
    plan = plan_workers(ray.cluster_resources(), len(items), gpus_per_worker=gpus_per_worker, workers=workers)
    for _, _, report in todo:
        report.workers = plan["workers"]
    ctx = rd.DataContext.get_current()
    saved = {k: getattr(ctx, k) for k in ("enable_progress_bars", "max_errored_blocks", "print_on_execution_start")}
    # A block that errors (its task could not be run) is skipped, not fatal: its shard is reported below.
    ctx.enable_progress_bars, ctx.max_errored_blocks, ctx.print_on_execution_start = False, -1, False
    data_log = logging.getLogger("ray.data")
    saved_level = data_log.level
    data_log.setLevel(logging.ERROR)  # our own progress bar and report replace Ray Data's notices
    bounds = {(it["job"], it["chunk"]): (it["lo"], it["hi"]) for it in items}
    pending = set(bounds)
    what = todo[0][0].run if len(todo) == 1 else f"{len(todo)} runs"
    try:
        ds = rd.from_items(items, override_num_blocks=len(items))
        ds = ds.map(cut_shard, num_cpus=CROP_CPUS, compute=rd.TaskPoolStrategy(size=plan["crop_tasks"]))
        ds = ds.map_batches(ShardEncoder, batch_size=1, batch_format="numpy",
                            fn_constructor_kwargs={"encoder": encoder, "expect_key": info.cache_key,
                                                   "device": plan["device"], "batch_size": batch_size,
                                                   "threads": plan["threads"]},
                            compute=rd.ActorPoolStrategy(size=plan["workers"]), num_cpus=plan["cpus"],
                            num_gpus=plan["gpus"] or None)
        with tqdm(total=sum(e.n_valid for e, _, _ in todo), initial=sum(e.n_valid_done for e, _, _ in todo),
                  disable=not progress, unit="crop",
                  desc=f"embed {what} on ray ({plan['workers']} {plan['device']} workers)") as bar:
            for row in ds.iter_rows():
                job, c = int(row["job"]), int(row["chunk"])
                entry, _, report = todo[job]
                lo, hi = bounds[job, c]
                pending.discard((job, c))
                if row["error"]:
                    e = json.loads(row["error"])
                    records = tuple(int(entry.records[r]) for r in e["rows"])
                    report.failures.append(ShardFailure(c, (lo, hi), e["error"], tuple(e["images"]), records,
                                                        e["kind"]))
                    continue
                block = np.frombuffer(row["block"], np.float16).reshape(hi - lo, int(row["dim"]))
                entry.write(c, block.copy())
                bar.update(len(entry.rows(c)))
    except Exception as exc:  # noqa: BLE001 - e.g. no worker could start: every shard not back is reported
        reason = f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1] if str(exc).strip() else ''}"
        for job, c in sorted(pending):
            todo[job][2].failures.append(ShardFailure(c, bounds[job, c], reason))
        pending.clear()
    finally:
        for k, v in saved.items():
            setattr(ctx, k, v)
        data_log.setLevel(saved_level)
    for job, c in sorted(pending):  # skipped blocks
        todo[job][2].failures.append(ShardFailure(c, bounds[job, c], "the shard's task failed (see the Ray logs)"))
