"""The in-process embedding engine: the run's missing chunks are encoded here, one after the other."""

from __future__ import annotations

import time

from ov3d_core.remap.cache import encode_pending
from ov3d_core.remap.encoders import make_encoder
from ov3d_core.remap.engines.report import EmbedReport
from ov3d_core.remap.sources import crop_source


def embed_local(store, dataset, run, encoder, *, crops_json=None, pad: float = 0.0, min_size: float = 8,
                chunk_size: int = 256, batch_size: int | None = None, device: str | None = None,
                progress: bool = True) -> EmbedReport:
    """Compute (or resume, or load) the run's crop embeddings in this process.

    ``encoder`` is an ``Encoder`` or a spec for ``make_encoder`` (with ``device`` and ``batch_size``). An
    unreadable image raises its ``InputError``; finished chunks stay on disk for the next attempt.
    """
    t0 = time.perf_counter()
    if isinstance(encoder, str):
        encoder = make_encoder(encoder, device=device, batch_size=batch_size)
    src = crop_source(dataset, run, encoder, crops_json=crops_json, pad=pad, min_size=min_size)
    key, name = encoder.cache_key, getattr(encoder, "name", "")
    report = EmbedReport("local", dataset.name, run.name, name, key, n_rows=len(src.records),
                         n_shards=(len(src.records) + chunk_size - 1) // max(int(chunk_size), 1))
    done = store.load(dataset.name, run.name, key, src.inputs_hash)
    if done is not None:
        report.embeddings, report.cached = done, True
        return report
    entry = store.begin(dataset.name, run.name, key, records=src.records, valid=src.valid,
                        inputs_hash=src.inputs_hash, chunk_size=chunk_size, encoder_name=name)
    report.embeddings = encode_pending(entry, encoder, src.load, progress=progress)
    report.written = list(entry.written)
    report.written_at = [t - t0 for t in entry.written_at]
    return report
