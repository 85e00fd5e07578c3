"""What an embedding computation reports (:class:`EmbedReport`) and each shard it could not compute
(:class:`ShardFailure`): the types both engines return, apart from the engines so that they import no package that
imports them."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["ShardFailure", "EmbedReport"]


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
