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

from dataclasses import dataclass, field

ENGINES = ("local", "ray")


@dataclass(frozen=True)
class ShardFailure:
    """One shard that could not be computed (the others are saved): the images (or records) that failed and why.

    ``kind`` is "input" when the failure is bad input (an unreadable image), "error" otherwise (the encoder raised
    for the whole shard, a worker could not start, ...)."""

    chunk: int
    rows: tuple[int, int]       # [lo, hi) prediction rows of the shard
    error: str
    images: tuple[str, ...] = ()
    records: tuple[int, ...] = ()
    kind: str = "error"

    def message(self) -> str:
        what = ", ".join(self.images) or (", ".join(f"record {r}" for r in self.records) if self.records else "")
        return f"shard {self.chunk} (rows {self.rows[0]}-{self.rows[1] - 1}): {what + ': ' if what else ''}{self.error}"


@dataclass
class EmbedReport:
    """Outcome of one embedding computation.

    ``embeddings`` is the complete cache entry, or None when some shards failed (they are listed in ``failures``;
    the entry stays incomplete, so nothing reads a partial cache, and a re-run computes only the missing shards).
    """

    engine: str
    dataset: str
    run: str
    encoder_name: str
    encoder_key: str
    n_rows: int
    n_shards: int
    embeddings: object = None                       # CropEmbeddings | None
    written: list[int] = field(default_factory=list)  # shards written by this call, in order of arrival
    written_at: list[float] = field(default_factory=list)  # seconds after the call began, per written shard
    failures: list[ShardFailure] = field(default_factory=list)
    cached: bool = False                            # the entry was already complete: nothing was computed
    workers: int = 0                                # encoder workers (ray), 0 for the local engine

    @property
    def complete(self) -> bool:
        return self.embeddings is not None


def embed(store, dataset, run, encoder, *, engine: str = "local", **kw) -> EmbedReport:
    """Crop embeddings of ``run`` with ``engine`` ("local" or "ray"; see the module doc). ``encoder``: an encoder
    spec (``proxy``, ``hf:...``); the local engine also takes an ``Encoder``. ``kw`` go to
    :func:`.local.embed_local` or :func:`.ray_data.embed_ray`."""
    if engine == "local":
        from ov3d_core.remap.engines.local import embed_local

        return embed_local(store, dataset, run, encoder, **kw)
    if engine == "ray":
        from ov3d_core.remap.engines.ray_data import embed_ray

        return embed_ray(store, dataset, run, encoder, **kw)
    raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
