"""Tags and notes on images and boxes ("annotation error", "for the talk"), kept in one JSON file beside the benchmark
config (``<config stem>.tags.json`` in the config's folder; ``<cache_dir>/tags.json`` for a benchmark built in code),
never inside an input file.

The file (``version`` 1)::

    {"version": 1, "items": [
      {"dataset": "demo_indoor", "image_id": 100003, "box": null, "tags": ["for the talk"], "note": ""},
      {"dataset": "demo_indoor", "image_id": 100003, "box": {"kind": "pred", "run": "wild_like", "row": 17},
       "tags": ["annotation error"], "note": "the GT chair is a stool"}]}

A box is a GT row (``kind "gt"``, ``run ""``) or a prediction row of a run, as the box tables number them. Writes
are atomic (a temporary file in the same folder, then ``os.replace``) and serialised across processes by an
``flock`` on ``<file>.lock``; every write re-reads the file first, so two app sessions never lose each other's tags.
A file that is not valid JSON or does not follow the schema is an ``InputError`` naming the item and the field; it
is never overwritten.

Exports carry them: :func:`join_tags` adds ``tags`` and ``note`` columns to an image-level or box-level table, and
:func:`views_bundle` puts pinned views and the tags of the datasets they show into one JSON object.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Iterable, Literal, Mapping, Sequence

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ov3d_core.errors import InputError

__all__ = ["BoxRef", "TagItem", "TagStore", "tags_path", "legacy_tags_path", "generated_folder", "join_tags", "views_bundle", "SUGGESTED_TAGS",
           "TAG_COLUMNS"]

#: Tags offered in the app before any is typed.
SUGGESTED_TAGS = ("annotation error", "for the talk", "interesting", "duplicate", "wrong class")
#: Columns of :meth:`TagStore.table`.
TAG_COLUMNS = ["dataset", "image_id", "kind", "run", "row", "tags", "note"]
_VERSION = 1
_lock = threading.Lock()


class BoxRef(BaseModel):
    """A box of an image: a GT row or a prediction row of a run."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["gt", "pred"]
    run: str = ""
    row: int = Field(ge=0)


class TagItem(BaseModel):
    """The tags and note of one image (``box`` None) or one box."""

    model_config = ConfigDict(extra="forbid")
    dataset: str = Field(min_length=1)
    image_id: int
    box: BoxRef | None = None
    tags: list[str] = Field(default_factory=list)
    note: str = ""

    @field_validator("tags")
    @classmethod
    def _clean(cls, v: list[str]) -> list[str]:
        out = [t.strip() for t in v]
        if any(not t for t in out):
            raise ValueError("tags must be non-empty strings")
        return list(dict.fromkeys(out))

    def key(self) -> tuple:
        b = self.box
        return (self.dataset, int(self.image_id), None if b is None else (b.kind, b.run, int(b.row)))


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid")
    version: Literal[1] = 1
    items: list[TagItem] = Field(default_factory=list)


def generated_folder(config_path: str | Path) -> bool:
    """Whether ``config_path`` is the config of a generated demo build (its folder holds the generator's
    ``manifest.json``): a folder that ``ov3d demo build`` / the app's first start replace whole when they rebuild."""
    manifest = Path(config_path).parent / "manifest.json"
    try:
        return "generator_version" in json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError, TypeError):
        return False


def tags_path(config_path: str | Path | None, cache_dir: str | Path) -> Path:
    """Where a benchmark's tags live: ``<config stem>.tags.json`` beside its config, else ``<cache_dir>/tags.json``.

    A generated demo folder is rebuilt whole (its YAML says so), which would delete tags kept inside it: its tags
    live beside the folder instead, ``<folder>.<config stem>.tags.json`` (``data/demo.benchmark.tags.json`` for
    ``data/demo/benchmark.yaml``), and a rebuild keeps them. A file left inside by an earlier version is read until
    the first write (:attr:`TagStore.legacy`)."""
    if config_path:
        p = Path(config_path)
        if generated_folder(p):
            return p.parent.with_name(f"{p.parent.name}.{p.stem}.tags.json")
        return p.with_name(f"{p.stem}.tags.json")
    return Path(cache_dir) / "tags.json"


def legacy_tags_path(config_path: str | Path | None) -> Path | None:
    """Where tags of a generated demo were kept before :func:`tags_path` moved them out of the folder (None for any
    other config)."""
    if config_path and generated_folder(config_path):
        p = Path(config_path)
        return p.with_name(f"{p.stem}.tags.json")
    return None


def _box(box) -> BoxRef | None:
    if box is None or isinstance(box, BoxRef):
        return box
    if isinstance(box, dict):
        return BoxRef(**box)
    kind, run, row = box
    return BoxRef(kind=kind, run=run or "", row=int(row))


class TagStore:
    """Read and write the tags file of one benchmark (see the module docstring)."""

    def __init__(self, path: str | Path, legacy: str | Path | None = None):
        self.path = Path(path)
        #: A file of an earlier location (:func:`legacy_tags_path`), read while ``path`` does not exist yet; the
        #: first write goes to ``path`` and carries its items over.
        self.legacy = None if legacy is None else Path(legacy)

    # ------------------------------------------------------------------ reading
    def load(self) -> list[TagItem]:
        """Every item of the file ([] when there is none yet)."""
        src = self.path
        if not src.exists():
            if self.legacy is None or not self.legacy.exists():
                return []
            src = self.legacy
        try:
            raw = json.loads(src.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputError(str(src), None, None, f"a JSON tags file ({type(exc).__name__}: {exc})") from None
        try:
            return _File.model_validate(raw).items
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = [str(x) for x in err["loc"]]
            record = f"{loc[0]}[{loc[1]}]" if len(loc) > 1 and loc[0] == "items" else None
            field = ".".join(loc[2:] if record else loc) or None
            raise InputError(str(src), record, field, err["msg"].lower(), err.get("input")) from None

    def get(self, dataset: str, image_id: int, box=None) -> TagItem:
        """The item of an image or box (an empty one when it has none)."""
        want = (dataset, int(image_id), None if box is None else tuple(_box(box).model_dump().values()))
        for it in self.load():
            if it.key() == want:
                return it
        return TagItem(dataset=dataset, image_id=int(image_id), box=_box(box))

    def all_tags(self, dataset: str | None = None) -> list[str]:
        """Every tag in use (of one dataset), most used first."""
        counts: dict[str, int] = {}
        for it in self.load():
            if dataset is None or it.dataset == dataset:
                for t in it.tags:
                    counts[t] = counts.get(t, 0) + 1
        return sorted(counts, key=lambda t: (-counts[t], t))

    def images_with(self, dataset: str, tags: Iterable[str]) -> set[int]:
        """Images of ``dataset`` that carry one of ``tags`` themselves or on one of their boxes."""
        want = set(tags)
        return {int(it.image_id) for it in self.load() if it.dataset == dataset and want & set(it.tags)}

    def table(self, dataset: str | None = None) -> pd.DataFrame:
        """One row per tagged image or box (``TAG_COLUMNS``; ``tags`` joined by ", ")."""
        rows = []
        for it in self.load():
            if dataset is not None and it.dataset != dataset:
                continue
            b = it.box
            rows.append({"dataset": it.dataset, "image_id": int(it.image_id), "kind": "image" if b is None else b.kind,
                         "run": None if b is None else b.run, "row": pd.NA if b is None else int(b.row),
                         "tags": ", ".join(it.tags), "note": it.note})
        df = pd.DataFrame(rows, columns=TAG_COLUMNS)
        df["row"] = df["row"].astype("Int64")
        return df

    def to_json(self, dataset: str | None = None) -> str:
        """The file's content (of one dataset) as JSON text, for an export."""
        items = [it for it in self.load() if dataset is None or it.dataset == dataset]
        return _File(items=items).model_dump_json(indent=1)

    # ------------------------------------------------------------------ writing
    @contextlib.contextmanager
    def _locked(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with _lock, open(self.path.with_name(self.path.name + ".lock"), "a") as fh:
            try:
                import fcntl

                fcntl.flock(fh, fcntl.LOCK_EX)
            except (ImportError, OSError):  # no flock (Windows, some network file systems): the thread lock only
                pass
            yield

    def set(self, dataset: str, image_id: int, *, tags: Iterable[str] | None = None, note: str | None = None,
            box=None) -> TagItem:
        """Replace the tags and/or the note of an image or box (items left with neither are removed). Returns the
        item as stored."""
        with self._locked():
            items = self.load()
            key = TagItem(dataset=dataset, image_id=int(image_id), box=_box(box)).key()
            old = next((it for it in items if it.key() == key), None)
            new = TagItem(dataset=dataset, image_id=int(image_id), box=_box(box),
                          tags=list(tags if tags is not None else (old.tags if old else [])),
                          note=(note if note is not None else (old.note if old else "")).strip())
            items = [it for it in items if it.key() != key]
            if new.tags or new.note:
                items.append(new)
            self._write(items)
            return new

    def _write(self, items: list[TagItem]) -> None:
        text = _File(items=sorted(items, key=lambda it: (it.dataset, it.image_id, it.box is not None,
                                                          () if it.box is None else (it.box.kind, it.box.run,
                                                                                     it.box.row))))
        data = text.model_dump_json(indent=1)
        fd, tmp = tempfile.mkstemp(prefix=".tags.", suffix=".json", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


# ---------------------------------------------------------------------------------------------------- exports
_ROW_KINDS = ("image", "gt", "pred")
_IMAGE_ROW = -1   # the ``row`` key of an image item (a box row is >= 0)
_NO_BOX = -2      # the ``row`` key of a table row without a box (e.g. a run with no prediction on the object)


def join_tags(frame: pd.DataFrame, tags: pd.DataFrame, *, kind: str | None = None, run: str | None = None,
              row: str = "row", image_id: int | None = None) -> pd.DataFrame:
    """``frame`` with ``tags`` (joined by ", ") and ``note`` columns from ``tags`` (:meth:`TagStore.table` of the
    frame's dataset); ``""`` on rows that have none. ``frame`` itself is returned when ``tags`` is empty (the dataset
    has no tags: the export does not change).

    Image rows (``kind="image"``) take the tags of their image; box rows take the tags of their box, keyed as the
    store keys it: ``(kind, run, row)``, with run ``""`` for GT boxes. ``kind=None`` reads each row's kind from the
    frame's ``kind`` column ("image", "gt" or "pred"); ``run=None`` reads the run of prediction rows from its ``run``
    column; ``row`` names the column holding the box's row number (a missing value: no box, no tags);
    ``image_id`` gives the image of every row when the frame has no ``image_id`` column. Tags of images or boxes
    that are not in the frame are ignored."""
    if tags is None or not len(tags):
        return frame
    if tags["dataset"].nunique() > 1:
        raise ValueError(f"join_tags takes the tags of one dataset, got {sorted(tags['dataset'].unique())}")
    clash = sorted({"tags", "note"} & set(frame.columns))
    if clash:
        raise ValueError(f"the frame already has column(s) {clash}")
    n = len(frame)
    kinds = (frame["kind"].astype(object).to_numpy() if kind is None else np.full(n, kind, dtype=object))
    bad = sorted(set(kinds.tolist()) - set(_ROW_KINDS))
    if bad:
        raise ValueError(f"row kinds must be one of {_ROW_KINDS}, got {bad}")
    images = (np.full(n, int(image_id), np.int64) if image_id is not None
              else frame["image_id"].to_numpy(np.int64))
    is_box = kinds != "image"
    rows = np.full(n, _IMAGE_ROW, np.int64)
    runs = np.full(n, "", dtype=object)
    if is_box.any():
        r = pd.to_numeric(frame[row]).to_numpy(np.float64, na_value=np.nan)[is_box]
        rows[is_box] = np.where(np.isnan(r), _NO_BOX, np.nan_to_num(r)).astype(np.int64)
        pred = kinds == "pred"
        if pred.any():
            runs[pred] = (frame["run"].astype(object).to_numpy()[pred] if run is None else run)
    left = pd.DataFrame({"image_id": images, "kind": kinds, "run": runs, "row": rows})
    right = pd.DataFrame({"image_id": tags["image_id"].to_numpy(np.int64),
                          "kind": tags["kind"].astype(object).to_numpy(),
                          "run": tags["run"].fillna("").astype(object).to_numpy(),
                          "row": tags["row"].fillna(_IMAGE_ROW).to_numpy(np.int64),
                          "tags": tags["tags"].astype(object).to_numpy(),
                          "note": tags["note"].astype(object).to_numpy()})
    right = right.drop_duplicates(["image_id", "kind", "run", "row"])  # one item per key (the first, as ``get``)
    got = left.merge(right, how="left", on=["image_id", "kind", "run", "row"], validate="many_to_one", sort=False)
    out = frame.copy()
    out["tags"] = got["tags"].fillna("").to_numpy(object)
    out["note"] = got["note"].fillna("").to_numpy(object)
    return out


def views_bundle(views: Sequence[Mapping], items: Iterable[TagItem], datasets: Iterable[str]) -> dict:
    """Pinned views with the annotations behind them, as one JSON-ready object::

        {"views": [<each view as given>...], "tags": {<dataset>: [<TagItem as JSON>...]}}

    ``tags`` holds every item of ``items`` on each of ``datasets`` (a dataset without tags maps to ``[]``, so a
    reader tells "no tags" from "not included")."""
    want = list(dict.fromkeys(datasets))
    out: dict[str, list] = {ds: [] for ds in want}
    for it in items:
        if it.dataset in out:
            out[it.dataset].append(it.model_dump(mode="json"))
    return {"views": [dict(v) for v in views], "tags": out}
