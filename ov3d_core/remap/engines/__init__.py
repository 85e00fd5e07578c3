"""Embedding engines: who computes a run's crop embeddings. Both write the same cache (``EmbeddingStore``: the same
directory, keys, chunk files and final ``embeddings.npy``), so the app and ``remap`` read either one unchanged, and
a computation started by one engine can be resumed by the other.

- ``local`` (default): this process, one chunk at a time (:mod:`.local`). Never imports ray.
- ``ray``: Ray Data on a local or remote Ray cluster (:mod:`.ray_data`): crops in CPU tasks, encoding in a pool of
  actors that load the encoder once each (one per GPU, or CPU actors), chunks written by this process as they
  arrive. Needs the optional ``ray`` extra.

A chunk of the cache is the unit of work ("shard"): it is written whole or not at all, so an interrupted or
partly failed computation resumes with the missing shards only.
"""

from __future__ import annotations

from ov3d_core.remap.engines.local import embed_local
from ov3d_core.remap.engines.ray_data import embed_ray
from ov3d_core.remap.engines.report import EmbedReport, ShardFailure

__all__ = ["ENGINES", "EmbedReport", "ShardFailure", "embed"]

ENGINES = ("local", "ray")


def embed(store, dataset, run, encoder, *, engine: str = "local", **kw) -> EmbedReport:
    """Crop embeddings of ``run`` with ``engine`` ("local" or "ray"; see the module doc). ``encoder``: an encoder
    spec (``proxy``, ``hf:...``); the local engine also takes an ``Encoder``. ``kw`` go to
    :func:`.local.embed_local` or :func:`.ray_data.embed_ray`."""
    if engine == "local":
        return embed_local(store, dataset, run, encoder, **kw)
    if engine == "ray":
        return embed_ray(store, dataset, run, encoder, **kw)
    raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
