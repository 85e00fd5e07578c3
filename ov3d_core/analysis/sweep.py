"""Template and threshold sweeps over cached crop embeddings: many (dataset, run, encoder, template, theta, protocol)
jobs scored in this process or as Ray tasks, gathered into one table that is the same either way.

Each row is ``Analysis.summary`` of the job's ``View`` (a ``RemapSpec`` over the run's cached crop embeddings;
``ov3d embed`` first), exactly what the remap CLI, the prompt lab and ``report`` show. Jobs are grouped by (dataset,
run, encoder): a group loads the benchmark, the embeddings and the encoder's text side once, and is one Ray task
(:func:`score_group`, which builds its own ``Analysis`` on the worker). Before the Ray tasks start, this process
encodes every group's template texts into the benchmark's text cache, so that no task loads the model for them.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from itertools import product
from typing import Iterable, Sequence

import pandas as pd

from ov3d_core.analysis.core import Analysis
from ov3d_core.analysis.view import RemapSpec, View
from ov3d_core.benchmark import Benchmark
from ov3d_core.errors import InputError
from ov3d_core.eval.constants import PROTOCOLS
from ov3d_core.remap.cache import EmbeddingStore
from ov3d_core.remap.engines import ENGINES
from ov3d_core.remap.sources import crop_source
from ov3d_core.remap.remap import SCORE_MODES
from ov3d_core.remap.templates import load_templates, resolve_templates

__all__ = ["SweepJob", "JOB_FIELDS", "as_job", "grid", "check_jobs", "score_group", "sweep"]

JOB_FIELDS = ("dataset", "run", "encoder", "template", "theta", "protocol", "score_mode")


@dataclass(frozen=True)
class SweepJob:
    """One row of a sweep: a run's remapping under one template spec and theta, scored under one protocol."""

    dataset: str
    run: str
    encoder: str          # encoder spec: proxy, hf:<checkpoint>
    template: str         # template id, group, comma list or literal with one {}
    theta: float
    protocol: str = "dataset-level"
    score_mode: str = "detector"


def as_job(job) -> SweepJob:
    """A :class:`SweepJob` from itself, a tuple in :data:`JOB_FIELDS` order (6 or 7 items) or a mapping."""
    if isinstance(job, SweepJob):
        return job
    if isinstance(job, dict):
        return SweepJob(**job)
    if isinstance(job, (tuple, list)) and len(job) in (6, 7):
        return SweepJob(*job)
    raise InputError(None, "jobs", None, f"a SweepJob, a mapping or a tuple ({', '.join(JOB_FIELDS[:6])}"
                     "[, score_mode])", job)


def grid(runs: Iterable[tuple[str, str]], encoders: Sequence[str], templates: Sequence[str],
         thetas: Sequence[float], protocols: Sequence[str] = ("dataset-level",),
         score_mode: str = "detector") -> list[SweepJob]:
    """Every combination of ``(dataset, run)`` pairs, encoders, templates, thetas and protocols."""
    return [SweepJob(d, r, e, t, float(th), p, score_mode)
            for (d, r), e, t, th, p in product(list(runs), encoders, templates, thetas, protocols)]


def check_jobs(jobs: Sequence[SweepJob], templates=None) -> None:
    """Refuse a bad job before any work starts (unknown protocol, score mode or template, theta not finite)."""
    for i, j in enumerate(jobs):
        where = f"jobs[{i}]"
        if j.protocol not in PROTOCOLS:
            raise InputError(None, where, "protocol", f"one of {', '.join(PROTOCOLS)}", j.protocol)
        if j.score_mode not in SCORE_MODES:
            raise InputError(None, where, "score_mode", f"one of {', '.join(SCORE_MODES)}", j.score_mode)
        if isinstance(j.theta, bool) or not isinstance(j.theta, (int, float)) or not math.isfinite(j.theta):
            raise InputError(None, where, "theta", "a finite number", j.theta)
        resolve_templates(j.template, templates)


def _need_embeddings(a: Analysis, first: SweepJob, config_path: str, pad: float, min_size: float) -> None:
    """An InputError when the run of ``first``'s group has no complete crop embeddings in ``a``'s cache (a sweep
    reads them, it does not compute them)."""
    bench = a.benchmark
    ds, run = bench.dataset(first.dataset), bench.run(first.run, first.dataset)
    spec = bench.run_spec(first.run, first.dataset)
    store = EmbeddingStore(a.embedding_dir)
    encoder = a.encoder(first.encoder)
    src = crop_source(ds, run, encoder, crops_json=spec.crops, pad=pad, min_size=min_size)
    if store.load(ds.name, run.name, encoder.cache_key, src.inputs_hash) is None:
        raise InputError(str(store.root), f"{first.dataset} / {first.run}", "embeddings",
                         f"in the cache: run `ov3d embed --benchmark {config_path} --dataset {first.dataset} --run "
                         f"{first.run} --encoder {first.encoder}` first (with the same --pad/--min-size)",
                         "no complete entry for this encoder and these crops")


def score_group(config_path: str, jobs: Sequence[SweepJob], *, cache_dir: str | None = None,
                templates_file: str | None = None, pad: float = 0.0, min_size: float = 8) -> list[dict]:
    """Rows of jobs that share (dataset, run, encoder), in order: each is ``Analysis.summary`` of the job's
    ``View`` (the number the prompt lab and ``report`` show). Needs the run's embeddings in the cache."""
    a = Analysis(Benchmark.from_yaml(config_path), embedding_dir=cache_dir)
    _need_embeddings(a, jobs[0], config_path, pad, min_size)
    rows = []
    for job in jobs:
        view = View(dataset=job.dataset, run=job.run, protocol=job.protocol,
                    remap=RemapSpec(encoder=job.encoder, template=job.template, theta=job.theta,
                                    score_mode=job.score_mode, templates_file=templates_file, pad=pad,
                                    min_size=min_size))
        res = a.remap_result(view)
        rows.append({**asdict(job), **{k: float(v) for k, v in a.summary(view).items()},
                     "n_kept": int(res.keep.sum()), "n_evaluated": int(a.label_view(view).evaluated.sum()),
                     "n_pred": len(res)})
    return rows


def sweep(config_path, jobs, engine: str = "local", *, cache_dir=None, templates_file=None, pad: float = 0.0,
          min_size: float = 8, address: str | None = None) -> pd.DataFrame:
    """Score every job and return one ``pandas.DataFrame``, a row per job in the given order: the job's fields, the
    summary numbers (AP3D, AP3D@15, ..., recall3D@15), ``n_kept`` / ``n_pred`` (boxes kept by remapping, of all) and
    ``n_evaluated`` (kept boxes still scored after the protocol filter).

    ``engine="ray"`` runs each (dataset, run, encoder) group as a Ray task (on the instance this process already
    has, else on ``address`` or a local one, as ``ov3d embed --engine ray``); the table is the same as
    ``engine="local"``.
    """
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    config_path = str(config_path)
    jobs = [as_job(j) for j in jobs]
    check_jobs(jobs, load_templates(templates_file) if templates_file else None)
    groups: dict[tuple, list[int]] = {}
    for i, j in enumerate(jobs):
        groups.setdefault((j.dataset, j.run, j.encoder), []).append(i)
    kw = {"cache_dir": None if cache_dir is None else str(cache_dir), "templates_file": templates_file, "pad": pad,
          "min_size": min_size}
    parts = [[jobs[i] for i in idx] for idx in groups.values()]
    if engine == "local":
        results = [score_group(config_path, part, **kw) for part in parts]
    else:
        _encode_template_texts(config_path, parts, **kw)
        results = _ray_groups(config_path, parts, kw, address)
    rows: list = [None] * len(jobs)
    for idx, res in zip(groups.values(), results):
        for i, row in zip(idx, res):
            rows[i] = row
    return pd.DataFrame(rows)


def _encode_template_texts(config_path: str, parts: list, *, cache_dir: str | None, templates_file: str | None,
                           pad: float, min_size: float) -> None:
    """Encode each group's template texts here, once, into the benchmark's text cache: the Ray tasks read them there
    instead of each loading the model to encode them again (``LazyEncoder``). Only the texts: the runs' predictions
    and crop embeddings are the tasks' to load."""
    a = Analysis(Benchmark.from_yaml(config_path), embedding_dir=cache_dir)
    for part in parts:
        first = part[0]
        _need_embeddings(a, first, config_path, pad, min_size)
        for template in dict.fromkeys(j.template for j in part):
            a.class_text_embeddings(View(dataset=first.dataset, run=first.run, remap=RemapSpec(
                encoder=first.encoder, template=template, templates_file=templates_file, pad=pad, min_size=min_size)))


def _ray_groups(config_path: str, parts: list, kw: dict, address: str | None) -> list:
    import ray  # the optional `ray` extra: imported only for engine="ray"

    from ov3d_core.remap.engines.ray_data import connect

    started = connect(address)
    try:
        task = ray.remote(num_cpus=1)(score_group)
        refs = [task.remote(config_path, part, **kw) for part in parts]
        try:
            return ray.get(refs)
        except ray.exceptions.RayTaskError as exc:
            if isinstance(exc.cause, InputError):  # one line, as in-process
                raise exc.cause from None
            raise
    finally:
        if started:
            ray.shutdown()
