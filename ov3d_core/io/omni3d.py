"""Omni3D ground-truth JSON -> ``Dataset``, with Omni3D's test-time filter (reference/omni3d_protocol.md §1.7).

What this loader reproduces from Omni3D's ``Omni3D`` dataset class and ``is_ignore``:

* keep an annotation only if its category name is in the vocabulary (``categories`` minus ignore names) or in the
  ignore names; annotations with an ignore name (``dontcare``, ``ignore``, ``void``) are then **dropped** as well,
  because Omni3D's COCOeval loads GT by category id and those ids are never evaluated: they cannot affect any number.
* the evaluation 2D box: ``bbox2D_trunc`` if not all -1, else ``bbox2D_proj`` if ``[0] != -1``, else
  ``bbox2D_tight`` if ``[0] != -1``, else the annotation is dropped. Stored XYXY in ``BoxSet.box2d``.
* ``ignore`` (kept, flagged) per ``is_ignore`` with the thresholds of :class:`FilterSettings`; the first rule that
  fires is stored in ``data["ignore_reason"]`` ("" when not ignored).

Every raw field stays in ``BoxSet.data``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ov3d_core.errors import InputError
from ov3d_core.geometry.boxes import corners_from_pose
from ov3d_core.io._validate import (
    as_path, first_duplicate, first_false, first_true, index_of, isin_names, warn_corner_mismatch,
)
from ov3d_core.io.columnar import Columns, DictColumns, Field, read_json_document
from ov3d_core.io import progress
from ov3d_core.model import BoxSet, Dataset
from ov3d_core.taxonomy import IGNORE_NAMES, OMNI3D_CATEGORIES, uses_proximity

#: Stored corners may differ from the rebuilt ones by at most this much (metres) before a warning.
CORNER_TOLERANCE = 1e-4


@dataclass(frozen=True)
class FilterSettings:
    """Omni3D's ``filter_settings`` at test time (tools/train_net.py ``do_test`` + configs/Base.yaml)."""

    truncation_thres: float = 0.33333333
    visibility_thres: float = 0.33333333
    min_height_thres: float = 0.0625
    max_height_thres: float = 1.50
    max_depth: float = 1e8
    max_depth_error: float = 0.5
    trunc_2D_boxes: bool = True
    modal_2D_boxes: bool = False
    ignore_names: tuple[str, ...] = IGNORE_NAMES


#: The defaults: Omni3D TEST settings.
OMNI3D_TEST = FilterSettings()

#: ``data["ignore_reason"]`` values, in the order the rules are checked (the first that fires is stored).
IGNORE_REASONS = ("behind_camera", "invalid3D", "dimensions", "max_depth", "lidar_pts", "segmentation_pts",
                  "depth_error", "min_height", "max_height", "truncation", "visibility", "ignore_name")

_BOX_KEYS = ("bbox2D_tight", "bbox2D_proj", "bbox2D_trunc")
_UNKNOWN_BOX = [-1.0, -1.0, -1.0, -1.0]


# --------------------------------------------------------------------------------------------------------------
# The annotation table: every raw field as columns (also built by the KITTI loader).

@dataclass
class AnnotationTable:
    """Raw annotation columns, before the Omni3D filter. ``proj_given`` marks rows whose file had ``bbox2D_proj``
    (Omni3D's height rule falls back to it only when the key exists)."""

    id: np.ndarray
    image_id: np.ndarray
    category: np.ndarray
    category_id: np.ndarray
    center: np.ndarray
    dims: np.ndarray
    R: np.ndarray
    corners: np.ndarray
    valid3D: np.ndarray
    behind_camera: np.ndarray
    bbox2D_tight: np.ndarray
    bbox2D_proj: np.ndarray
    bbox2D_trunc: np.ndarray
    proj_given: np.ndarray
    truncation: np.ndarray
    visibility: np.ndarray
    lidar_pts: np.ndarray
    segmentation_pts: np.ndarray
    depth_error: np.ndarray

    @classmethod
    def concat(cls, parts: list["AnnotationTable"]) -> "AnnotationTable":
        names = list(cls.__dataclass_fields__)
        return cls(**{k: np.concatenate([getattr(p, k) for p in parts]) for k in names})

    def __len__(self) -> int:
        return len(self.id)


def evaluation_box2d(t: AnnotationTable, settings: FilterSettings = OMNI3D_TEST) -> tuple[np.ndarray, np.ndarray]:
    """Omni3D's evaluation 2D box (XYXY) and a mask of annotations that have one (the others are dropped)."""
    trunc_ok = ~np.all(t.bbox2D_trunc == -1, axis=1) if settings.trunc_2D_boxes else np.zeros(len(t), bool)
    proj_ok = t.bbox2D_proj[:, 0] != -1
    tight_ok = t.bbox2D_tight[:, 0] != -1
    box = np.where(trunc_ok[:, None], t.bbox2D_trunc,
                   np.where(proj_ok[:, None], t.bbox2D_proj, t.bbox2D_tight))
    has = trunc_ok | proj_ok | tight_ok
    if settings.modal_2D_boxes:
        box = np.where(tight_ok[:, None], t.bbox2D_tight, box)
    return box.astype(np.float64), has


def ignore_reasons(t: AnnotationTable, image_height: np.ndarray, box2d: np.ndarray,
                   settings: FilterSettings = OMNI3D_TEST) -> np.ndarray:
    """Omni3D ``is_ignore`` for every row, vectorised: the first rule that fires (``IGNORE_REASONS``) or "".

    ``image_height`` is per row; ``box2d`` is the evaluation box (used for the height only when no trunc/proj box)."""
    H = np.asarray(image_height, np.float64)
    # 2D height: tight (modal only) > trunc (if not all -1) > proj (if the key exists, even if -1) > evaluation box.
    hbox = np.where(t.proj_given[:, None], t.bbox2D_proj, box2d)
    if settings.trunc_2D_boxes:
        hbox = np.where((~np.all(t.bbox2D_trunc == -1, axis=1))[:, None], t.bbox2D_trunc, hbox)
    if settings.modal_2D_boxes:
        hbox = np.where((t.bbox2D_tight[:, 0] != -1)[:, None], t.bbox2D_tight, hbox)
    height = hbox[:, 3] - hbox[:, 1]
    rules = (
        t.behind_camera,
        ~t.valid3D,
        (t.dims <= 0).any(axis=1),
        t.center[:, 2] > settings.max_depth,
        t.lidar_pts == 0,
        t.segmentation_pts == 0,
        t.depth_error > settings.max_depth_error,
        height <= settings.min_height_thres * H,
        height >= settings.max_height_thres * H,
        (t.truncation >= 0) & (t.truncation >= settings.truncation_thres),
        (t.visibility >= 0) & (t.visibility <= settings.visibility_thres),
        isin_names(t.category, settings.ignore_names),
    )
    out = np.full(len(t), "", dtype=object)
    for name, mask in zip(reversed(IGNORE_REASONS), reversed(rules)):
        out[np.asarray(mask, bool)] = name
    return out


def gt_boxset(t: AnnotationTable, image_height: np.ndarray, vocabulary, settings: FilterSettings = OMNI3D_TEST,
              keep_also: tuple[str, ...] = (), extra_ignore: dict[str, str] | None = None) -> BoxSet:
    """Apply the keep/drop filter and the ignore rules; returns the GT ``BoxSet``.

    ``keep_also``: extra category names kept although out of vocabulary; ``extra_ignore`` maps such names to an
    ignore reason (KITTI "misc")."""
    box2d, has_box = evaluation_box2d(t, settings)
    reason = ignore_reasons(t, image_height, box2d, settings)
    for cat, why in (extra_ignore or {}).items():
        reason[(t.category == cat) & (reason == "")] = why
    keep = isin_names(t.category, list(vocabulary) + list(keep_also)) & has_box
    k = np.flatnonzero(keep)
    data = {
        "category_id": t.category_id[k],
        "truncation": t.truncation[k], "visibility": t.visibility[k],
        "valid3D": t.valid3D[k], "behind_camera": t.behind_camera[k],
        "lidar_pts": t.lidar_pts[k], "segmentation_pts": t.segmentation_pts[k], "depth_error": t.depth_error[k],
        "bbox2D_tight": t.bbox2D_tight[k], "bbox2D_proj": t.bbox2D_proj[k], "bbox2D_trunc": t.bbox2D_trunc[k],
        "ignore_reason": reason[k],
    }
    return BoxSet(image_id=t.image_id[k], category=t.category[k], center=t.center[k], dims=t.dims[k], R=t.R[k],
                  corners=t.corners[k], box2d=box2d[k], depth=t.center[k, 2].copy(), score=np.ones(len(k)),
                  ignore=reason[k] != "", record=t.id[k], data=data)


# --------------------------------------------------------------------------------------------------------------
# Parsing one file.

#: What the loader reads from each annotation (the kernel of ``columnar`` extracts exactly these).
ANNOTATION_FIELDS = (
    Field("id", "int"), Field("image_id", "int"), Field("category_id", "int"), Field("category_name", "str"),
    Field("center_cam", "float", (3,)), Field("dimensions", "float", (3,)), Field("R_cam", "float", (3, 3)),
    Field("bbox3D_cam", "float", (8, 3)), Field("bbox2D_tight", "float", (4,)), Field("bbox2D_proj", "float", (4,)),
    Field("bbox2D_trunc", "float", (4,)), Field("valid3D", "bool"), Field("behind_camera", "bool"),
    Field("truncation"), Field("visibility"), Field("lidar_pts"), Field("segmentation_pts"), Field("depth_error"),
)


def _record_label(section: str):
    """``label(i, record)`` -> "section[i] (id N)" for error messages naming a record by index and id."""
    def label(i, r):
        rid = r.get("id") if isinstance(r, dict) else None
        return f"{section}[{i}]" + (f" (id {rid})" if isinstance(rid, int) else "")
    return label


def _parse_p2(v):
    """KITTI ``p2`` if present and usable as 3x4 (or 4x4), else None (tolerated, it is optional)."""
    if v is None:
        return None
    try:
        a = np.asarray(v, dtype=np.float64)
    except (ValueError, TypeError):
        return None
    if a.shape in ((3, 4), (4, 4)) and np.isfinite(a).all():
        return a[:3]
    return None


def _parse_images(file: str, doc: dict, info: dict) -> tuple[pd.DataFrame, np.ndarray]:
    recs = DictColumns(file, doc["images"], _record_label("images"), "an image object")
    recs.require_objects()
    ids = recs.column("id", kind="int")
    K = recs.column("K", (3, 3))
    width = recs.column("width", kind="int")
    height = recs.column("height", kind="int")
    for field, arr in (("width", width), ("height", height)):
        i = first_false(arr > 0)
        if i is not None:
            raise recs.error(i, field, "a positive integer", got=int(arr[i]))
    file_path = recs.strings("file_path", default="")
    info_id = info.get("id") if isinstance(info, dict) else None
    default_ds = info_id if isinstance(info_id, int) and not isinstance(info_id, bool) else -1
    dataset_id = recs.column("dataset_id", kind="int", default=default_ds)
    df = pd.DataFrame({"image_id": ids, "width": width, "height": height, "file_path": file_path,
                       "dataset_id": dataset_id})
    if any("p2" in r for r in recs.records):
        p2 = np.empty(len(recs), object)
        p2[:] = [_parse_p2(r.get("p2")) for r in recs.records]
        df["p2"] = p2
    return df, K


def _parse_categories(file: str, doc: dict) -> dict[int, str]:
    recs = DictColumns(file, doc["categories"], lambda i, r: f"categories[{i}]", "a category object")
    recs.require_objects()
    ids = recs.column("id", kind="int")
    names = recs.strings("name")
    table: dict[int, str] = {}
    for i, (cid, nm) in enumerate(zip(ids.tolist(), names.tolist())):
        if table.get(cid, nm) != nm:
            raise recs.error(i, "id", f"unique (id {cid} is already category {table[cid]!r})", got=cid)
        table[cid] = nm
    return table


def _resolve_gt_categories(recs: Columns, file_table: dict[int, str]) -> tuple[np.ndarray, np.ndarray]:
    """Names (``category_name``, else the name of ``category_id``) and ``category_id``, which must be listed in the
    file's ``categories`` or in the Omni3D table for every annotation (else the file is broken: ``InputError``)."""
    cat_id = recs.column("category_id", kind="int")
    codes, names = recs.names("category_name")
    uniq, inv = np.unique(cat_id, return_inverse=True)
    looked = [file_table.get(u, OMNI3D_CATEGORIES.get(u)) for u in uniq.tolist()]
    unknown = np.array([nm is None for nm in looked] + [False], bool)
    i = first_true(unknown[inv]) if len(inv) else None
    if i is not None:
        raise recs.error(i, "category_id", "an id listed in the file's `categories` or in the Omni3D table (0-97)",
                         got=int(cat_id[i]))
    need = codes < 0
    codes[need] = len(names) + inv[need]
    table = np.array(names + looked, object)
    return table[codes], cat_id


def _parse_annotations(file: str, recs: Columns, file_table: dict[int, str]) -> AnnotationTable:
    recs.require_objects()
    n = len(recs)
    ann_id = recs.column("id", kind="int")
    image_id = recs.column("image_id", kind="int")
    names, cat_id = _resolve_gt_categories(recs, file_table)
    center = recs.column("center_cam", (3,))
    dims = recs.column("dimensions", (3,))
    R = recs.column("R_cam", (3, 3))
    rebuilt = corners_from_pose(center, dims, R) if n else np.zeros((0, 8, 3))
    stored, has_corners = recs.optional("bbox3D_cam", (8, 3))
    if has_corners.any():
        err = np.abs(stored[has_corners] - rebuilt[has_corners]).max(axis=(1, 2))
        warn_corner_mismatch(file, ann_id[has_corners], err, CORNER_TOLERANCE)
        rebuilt[has_corners] = stored[has_corners]
    del stored
    boxes = {k: recs.column(k, (4,), default=_UNKNOWN_BOX) for k in _BOX_KEYS}
    return AnnotationTable(
        id=ann_id, image_id=image_id, category=names, category_id=cat_id, center=center, dims=dims, R=R,
        corners=rebuilt,
        valid3D=recs.column("valid3D", kind="bool", default=True),
        behind_camera=recs.column("behind_camera", kind="bool", default=False),
        bbox2D_tight=boxes["bbox2D_tight"], bbox2D_proj=boxes["bbox2D_proj"], bbox2D_trunc=boxes["bbox2D_trunc"],
        proj_given=recs.has("bbox2D_proj"),
        truncation=recs.column("truncation", default=-1.0),
        visibility=recs.column("visibility", default=-1.0),
        lidar_pts=recs.column("lidar_pts", default=-1.0),
        segmentation_pts=recs.column("segmentation_pts", default=-1.0),
        depth_error=recs.column("depth_error", default=-1.0),
    )


def _read_gt_file(path: Path) -> dict:
    file = str(path)
    doc = read_json_document(path, {"annotations": (ANNOTATION_FIELDS, _record_label("annotations"),
                                                    "an annotation object")})
    if not isinstance(doc, dict):
        raise InputError(file, None, None, "a JSON object with `images`, `categories` and `annotations` lists",
                         got=type(doc).__name__)
    for key in ("images", "categories", "annotations"):
        if key not in doc:
            raise InputError(file, None, key, "present (a list)")
        if not isinstance(doc[key], (list, Columns)):
            raise InputError(file, None, key, "a list", got=type(doc[key]).__name__)
    return doc


def _first_info(doc: dict) -> dict:
    info = doc.get("info")
    if isinstance(info, list):
        info = info[0] if info else None
    return info if isinstance(info, dict) else {}


def load_omni3d_gt(paths, *, categories=None, name: str | None = None, environment: str | None = None,
                   proximity: bool | None = None, root=None, settings: FilterSettings = OMNI3D_TEST) -> Dataset:
    """Load one or several Omni3D GT JSON files (concatenated, as Omni3D does) into a ``Dataset``.

    Args:
        paths: a path or a list of paths. Image ids and annotation ids must be unique across all files.
        categories: the evaluated vocabulary (names). Default: every category name of the file(s) ``categories``
            lists, minus the ignore names, in file order. A name must occur in a file's categories, in an
            annotation's ``category_name`` or in the Omni3D table (so the 50-name Omni3D list works on a single
            source file); ignore names are removed from it.
        name: default ``info.name`` of the first file, else its stem.
        environment: "indoor", "outdoor" or None, passed through.
        proximity: default ``taxonomy.uses_proximity(name)``.
        root: folder that image ``file_path`` values are relative to; default the first file's folder.
        settings: filter thresholds (default Omni3D TEST).

    Raises:
        InputError: for any malformed input (naming file, record and field).

    Warns:
        CornerMismatchWarning: once per file whose stored corners disagree with (centre, dims, R) by > 1e-4 m.
    """
    plist = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    if not plist:
        raise InputError(None, None, "paths", "at least one GT file")
    plist = [as_path(p) for p in plist]

    frames, Ks, tables, file_names = [], [], [], []
    seen_cat: dict[int, str] = {}
    vocab_default: list[str] = []
    first_info: dict = {}
    known_image_ids: list[np.ndarray] = []
    for fi, p in enumerate(plist):
        file = str(p)
        doc = _read_gt_file(p)
        info = _first_info(doc)
        if fi == 0:
            first_info = info
        file_table = _parse_categories(file, doc)
        for cid, nm in file_table.items():
            if seen_cat.get(cid, nm) != nm:
                raise InputError(file, f"categories (id {cid})", "name",
                                 f"the same name as in an earlier file ({seen_cat[cid]!r})", got=nm)
            seen_cat[cid] = nm
            if nm not in vocab_default and nm not in settings.ignore_names:
                vocab_default.append(nm)
        df, K = _parse_images(file, doc, info)
        frames.append(df)
        Ks.append(K)
        known_image_ids.append(df["image_id"].to_numpy())
        step = f"convert {p.name}"
        progress.report(step, 0, 1)
        tables.append(_parse_annotations(file, doc["annotations"], file_table))
        progress.report(step, 1, 1)
        file_names.append(file)

    # Uniqueness across files, naming the file and record of the first duplicate.
    all_img = np.concatenate(known_image_ids)
    dup = first_duplicate(all_img)
    if dup is not None:
        fi, i = _locate(dup, [len(x) for x in known_image_ids])
        raise InputError(file_names[fi], f"images[{i}]", "id", "unique across the GT file(s)", got=int(all_img[dup]))
    all_ann = np.concatenate([t.id for t in tables])
    dup = first_duplicate(all_ann)
    if dup is not None:
        fi, i = _locate(dup, [len(t) for t in tables])
        raise InputError(file_names[fi], f"annotations[{i}]", "id", "unique across the GT file(s)",
                         got=int(all_ann[dup]))
    table = AnnotationTable.concat(tables)
    images = pd.concat(frames, ignore_index=True)
    if "p2" in images.columns:
        p2 = np.empty(len(images), object)
        p2[:] = [v if isinstance(v, np.ndarray) else None for v in images["p2"]]
        images["p2"] = p2
    K = np.concatenate(Ks)

    row = index_of(all_img, table.image_id)
    bad = first_false(row >= 0)
    if bad is not None:
        fi, i = _locate(bad, [len(t) for t in tables])
        raise InputError(file_names[fi], f"annotations[{i}] (id {int(table.id[bad])})", "image_id",
                         "the id of an image in the GT file(s)", got=int(table.image_id[bad]))

    vocabulary = _vocabulary(categories, vocab_default, set(seen_cat.values()) | set(table.category.tolist()),
                             settings)
    heights = images["height"].to_numpy(np.float64)[row]
    gt = gt_boxset(table, heights, vocabulary, settings)

    if name is None:
        nm = first_info.get("name")
        name = nm if isinstance(nm, str) and nm else plist[0].stem
    return Dataset(name=name, images=images, K=K, vocabulary=vocabulary, gt=gt,
                   sources=tuple(file_names), environment=environment,
                   proximity=uses_proximity(name) if proximity is None else bool(proximity),
                   root=str(plist[0].parent) if root is None else os.fspath(root),
                   category_ids=dict(seen_cat))


def _locate(flat_index: int, sizes: list[int]) -> tuple[int, int]:
    """(file index, index within the file) of a row of concatenated per-file arrays."""
    start = 0
    for fi, n in enumerate(sizes):
        if flat_index < start + n:
            return fi, flat_index - start
        start += n
    raise IndexError(flat_index)


def _vocabulary(categories, default: list[str], known: set[str], settings: FilterSettings) -> tuple[str, ...]:
    if categories is None:
        return tuple(default)
    if isinstance(categories, str):
        raise InputError(None, None, "categories", "a list of category names, not a single string", got=categories)
    known = known | set(OMNI3D_CATEGORIES.values())
    out: list[str] = []
    for i, c in enumerate(categories):
        if not isinstance(c, str):
            raise InputError(None, f"categories[{i}]", "categories", "category names (strings)", got=c)
        if c not in known:
            raise InputError(None, f"categories[{i}]", "categories",
                             "a category name of the GT file(s) or of the Omni3D table", got=c)
        if c not in out and c not in settings.ignore_names:
            out.append(c)
    return tuple(out)
