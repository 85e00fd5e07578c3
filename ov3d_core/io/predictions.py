"""Predictions of one method on one dataset -> ``Run``.

Formats (reference/omni3d_protocol.md §2, §5.2):

* ``cubercnn-json``: the flat ``omni_instances_results.json`` list; ``category_id`` is an Omni3D global id.
* ``cubercnn-pth``: ``instances_predictions.pth``, a list of per-image records ``{image_id, K, width, height,
  instances: [...]}`` whose ``category_id`` are the model's **contiguous** ids. They are mapped through
  ``category_list`` (index = contiguous id); default: the 50 Omni3D categories sorted by Omni3D id, which is
  Cube R-CNN's ``thing_classes`` for the released Omni3D model.
* ``detany3d-json``: the flat list written by DetAny3D (``train.py``): ``category_id`` is the index of the name in its
  ``data/category_meta.json`` ``thing_classes``, which for 0-97 is the Omni3D table with entry 93 ("fire place")
  replaced by a placeholder ("todo"). So ids 0-92 and 94-97 are Omni3D global ids; 93 is refused (no category).

Category resolution, per record: a ``category_name`` field; else the id through ``category_list`` if given; else, for
``cubercnn-json``, the dataset's own id table (``Dataset.category_ids`` if the model has it, else the id/name pairs
of its GT) and then the built-in 98-id Omni3D table; for ``detany3d-json`` DetAny3D's table above. A ``.pth`` holds
contiguous model ids: without ``category_list`` (and without a ``category_name`` on every instance) it is refused.

Predictions whose class is not in the dataset vocabulary are kept with ``data["in_vocab"] = False`` (AP ignores
them, as Omni3D does) and counted per class in ``run.meta["out_of_vocabulary"]``; an id that names no class at all
is an ``InputError``. An empty file (``[]``, or a ``.pth`` with no instances) is a valid run with no predictions.
"""

from __future__ import annotations

import os

import numpy as np

from ov3d_core.errors import InputError
from ov3d_core.geometry.boxes import corners_from_pose
from ov3d_core.io._validate import check_file, file_size, first_false, first_true, index_of, isin_codes, os_error
from ov3d_core.io import pthfile
from ov3d_core.io.columnar import Columns, DictColumns, Field, read_json_list
from ov3d_core.io import progress
from ov3d_core.io.yaml_safe import Kind
from ov3d_core.model import BoxSet, Dataset, Run
from ov3d_core.taxonomy import OMNI3D_50, OMNI3D_CATEGORIES, OMNI3D_NAME_TO_ID

FORMATS = ("cubercnn-json", "cubercnn-pth", "detany3d-json")

#: DetAny3D's ``category_id`` -> name for ids 0-97 (``thing_classes`` of its ``data/category_meta.json``): the Omni3D
#: table without entry 93, which DetAny3D holds as a placeholder ("todo").
DETANY3D_CATEGORIES: dict[int, str] = {i: n for i, n in OMNI3D_CATEGORIES.items() if i != 93}
#: DetAny3D's placeholder id.
DETANY3D_PLACEHOLDER = 93
#: Kept for callers of the old name: the 97 real names of DetAny3D's table, in id order.
DETANY3D_97: tuple[str, ...] = tuple(DETANY3D_CATEGORIES[i] for i in sorted(DETANY3D_CATEGORIES))

#: Cube R-CNN's contiguous classes for the Omni3D-50 model: the 50 names sorted by Omni3D id (its
#: ``category_meta50.json``); a ``category_list`` for that model's ``.pth``.
CUBERCNN_50: tuple[str, ...] = tuple(sorted(OMNI3D_50, key=OMNI3D_NAME_TO_ID.__getitem__))

#: What the loader reads from each prediction record.
PREDICTION_FIELDS = (
    Field("image_id", "int"), Field("category_id", "int"), Field("category_name", "str"), Field("bbox", "float", (4,)),
    Field("score"), Field("bbox3D", "float", (8, 3)), Field("center_cam", "float", (3,)),
    Field("dimensions", "float", (3,)), Field("pose", "float", (3, 3)), Field("depth"),
    Field("center_2D", "float", (2,)),
)

#: How to give a ``.pth`` its category list.
PTH_CATEGORY_HINT = ("the category list of the model that wrote this .pth (its `category_id` are contiguous "
                     "training ids): pass `--category-list FILE` to `evaluate`, or set `category_list: [...]` on the "
                     "run in the benchmark YAML")


def _pred_label(i, r) -> str:
    img = r.get("image_id") if isinstance(r, dict) else None
    return f"[{i}]" + (f" (image_id {img})" if isinstance(img, int) else "")


def load_predictions(path, dataset: Dataset, *, name: str | None = None, format: str = "auto",
                     category_list=None) -> Run:
    """Load a predictions file for ``dataset``.

    Args:
        path: the file (.json or .pth).
        dataset: the dataset the predictions are for; every ``image_id`` must be one of its images.
        name: the run name (default: the file stem).
        format: "auto" (.pth -> cubercnn-pth, .json -> cubercnn-json), or one of ``FORMATS``.
        category_list: names indexed by ``category_id`` (contiguous ids). Required for a .pth (unless every
            instance carries ``category_name``).

    Returns:
        A ``Run`` whose ``pred`` has box2d (XYXY from the file's XYWH ``bbox``), depth (the file's ``depth``, else
        centre z), score, record (0-based index in the file; for .pth a running index over all instances in record
        order) and data ``category_id`` (the source id, -1 if absent), ``in_vocab`` and ``center_2D`` (if any).
        ``meta``: ``format``, ``out_of_vocabulary`` ({class: count} of predictions outside the vocabulary, most
        frequent first), ``category_list`` (if given), ``n_records`` (.pth: per-image records).
        No predictions at all is a valid run: ``len(run.pred) == 0``.
    """
    p = check_file(path)
    file = str(p)
    fmt = _format_of(p, format)
    cat_list = _check_category_list(category_list)
    meta: dict = {}
    if fmt == "cubercnn-pth":
        rs, meta = _read_pth(p)
        table = {} if cat_list is None else dict(enumerate(cat_list))
        id_source = "`category_list`"
        if cat_list is None and len(rs) and not rs.has("category_name").all():
            raise InputError(file, None, "category_list", PTH_CATEGORY_HINT)
    else:
        rs = read_json_list(p, PREDICTION_FIELDS, _pred_label, "a prediction object",
                            "a JSON list of prediction records")
        rs.require_objects()
        if cat_list is not None:
            table, id_source = dict(enumerate(cat_list)), "`category_list`"
        elif fmt == "detany3d-json":
            table = DETANY3D_CATEGORIES
            id_source = (f"DetAny3D's category table (0-97; {DETANY3D_PLACEHOLDER} is its placeholder entry, not a "
                         "category)")
        else:
            table = {**OMNI3D_CATEGORIES, **dataset_category_ids(dataset)}
            id_source = "the dataset's categories or the Omni3D table"
    step = f"convert {p.name}"
    progress.report(step, 0, 1)
    pred, codes, names = _build(rs, dataset, table, id_source)
    progress.report(step, 1, 1)
    meta = {**meta, "format": fmt, "out_of_vocabulary": _out_of_vocabulary(codes, names, pred.data["in_vocab"])}
    if cat_list is not None:
        meta["category_list"] = tuple(cat_list)
    return Run(name=p.stem if name is None else name, dataset=dataset.name, pred=pred, sources=(file,), meta=meta)


def _out_of_vocabulary(codes: np.ndarray, names: list[str], in_vocab: np.ndarray) -> dict[str, int]:
    """{class: number of predictions} for classes outside the vocabulary, most frequent first."""
    counts = np.bincount(codes[~in_vocab], minlength=len(names)) if len(names) else np.zeros(0, np.int64)
    out: dict[str, int] = {}
    for k in np.flatnonzero(counts).tolist():
        out[names[k]] = out.get(names[k], 0) + int(counts[k])
    return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))


def dataset_category_ids(dataset: Dataset) -> dict[int, str]:
    """The dataset's category id -> name table: ``dataset.category_ids`` if the model carries one, else the id/name
    pairs found in its GT (``gt.data["category_id"]``; ids with conflicting names are left out)."""
    table = getattr(dataset, "category_ids", None)
    if isinstance(table, dict) and table:
        return dict(table)
    ids = dataset.gt.data.get("category_id")
    if ids is None or not len(ids):
        return {}
    out: dict[int, str] = {}
    bad: set[int] = set()
    for cid, nm in {(int(c), n) for c, n in zip(np.asarray(ids).tolist(), dataset.gt.category.tolist())}:
        if cid < 0:
            continue
        if cid in out and out[cid] != nm:
            bad.add(cid)
        out[cid] = nm
    return {k: v for k, v in out.items() if k not in bad}


def _format_of(p, fmt: str) -> str:
    if fmt == "auto":
        ext = p.suffix.lower()
        if ext == ".pth":
            return "cubercnn-pth"
        if ext == ".json":
            return "cubercnn-json"
        raise InputError(str(p), None, "format", "a .json or .pth file, or an explicit format "
                         f"({', '.join(FORMATS)})", got=ext or "no extension")
    if fmt not in FORMATS:
        raise InputError(str(p), None, "format", f"'auto' or one of {', '.join(FORMATS)}", got=fmt)
    return fmt


def _check_category_list(cl):
    if cl is None:
        return None
    if isinstance(cl, str) or not all(isinstance(c, str) and c for c in cl):
        raise InputError(None, None, "category_list", "a list of category names (index = category id)", got=cl)
    return list(cl)


# --------------------------------------------------------------------------------------------------------------
# .pth

def _numpy_safe_globals() -> list:
    """numpy globals needed to unpickle plain arrays and scalars under ``weights_only`` (numpy 1 and 2 names)."""
    try:
        from numpy._core import multiarray as ma
    except ImportError:  # numpy 1.x
        from numpy.core import multiarray as ma
    g = [ma._reconstruct, ma.scalar, np.ndarray, np.dtype,
         (ma._reconstruct, "numpy.core.multiarray._reconstruct"), (ma.scalar, "numpy.core.multiarray.scalar")]
    for t in ("f8", "f4", "f2", "i8", "i4", "i2", "i1", "u8", "u4", "u2", "u1", "b1"):
        g.append(type(np.dtype(t)))
    return g


def _read_pth(p) -> tuple[Columns, dict]:
    p, size = file_size(p)
    file = str(p)
    if size == 0:
        raise InputError(file, None, None, "a torch.save file, got an empty file")
    ok, obj, clean = (False, None, False) if os.environ.get("OV3D_PTH_READER") == "torch" else pthfile.read(p)
    if not ok:
        obj = _torch_load(p)
    if not isinstance(obj, (list, tuple)):
        raise InputError(file, None, None, "a list of per-image records {image_id, K, width, height, instances}",
                         got=_type_name(obj))
    flat: list[dict] = []
    where: list[tuple[int, int]] = []
    for r, rec in enumerate(obj):
        if not isinstance(rec, dict):
            raise InputError(file, f"[{r}]", None, "a per-image record (dict)", got=_type_name(rec))
        if "image_id" not in rec:
            raise InputError(file, f"[{r}]", "image_id", "present (an integer)")
        img = _plain(rec["image_id"], file, f"[{r}]", "image_id")
        inst = rec.get("instances")
        if not isinstance(inst, (list, tuple)):
            raise InputError(file, _pred_label(r, {"image_id": img}), "instances", "a list of instance dicts",
                             got=_type_name(inst))
        for j, d in enumerate(inst):
            if not isinstance(d, dict):
                raise InputError(file, f"[{r}].instances[{j}]", None, "an instance dict", got=_type_name(d))
            if clean:  # numpy arrays and plain values only: the column rules take them as they are
                d = dict(d)
            else:
                d = {k: _plain(v, file, f"[{r}].instances[{j}]", k) for k, v in d.items()}
            if "image_id" in d and not _same_value(d["image_id"], img):
                raise InputError(file, f"[{r}].instances[{j}]", "image_id",
                                 f"the record's image_id {_one_line(img)}", got=_one_line(d["image_id"]))
            d["image_id"] = img
            flat.append(d)
            where.append((r, j))

    def label(i, _rec):
        r, j = where[i]
        return f"[{r}].instances[{j}]"

    return DictColumns(file, flat, label, "an instance dict", PREDICTION_FIELDS), {"n_records": len(obj)}


def _same_value(a, b) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except (ValueError, TypeError):  # arrays
        return False


def _one_line(v):
    return v.tolist() if isinstance(v, np.ndarray) else v


def _type_name(v) -> str:
    """A value's type for messages; tensors read by torch or by ``pthfile`` (numpy) are both "tensor"."""
    if isinstance(v, (np.ndarray, pthfile.Unsupported)) or type(v).__module__.startswith("torch"):
        return "tensor"
    return type(v).__name__


def _torch_load(p):
    """``torch.load(weights_only=True)``: the authority for what ``pthfile`` does not read itself."""
    import pickle

    import torch

    file = str(p)
    try:
        with torch.serialization.safe_globals(_numpy_safe_globals()):
            return torch.load(p, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        lines = str(e).strip().splitlines()
        detail = next((ln.strip() for ln in lines if "Unsupported global" in ln), "")
        if not detail:
            raise InputError(file, None, None, "a file written by torch.save (it could not be unpickled)") from None
        detail = detail.split(" was not an allowed")[0].replace("WeightsUnpickler error: ", "")
        raise InputError(file, None, None, "plain data (lists, dicts, numbers, strings, tensors) loadable with "
                         f"torch.load(weights_only=True); found {detail[:160]}") from None
    except OSError as e:
        raise os_error(p, e) from None
    except Exception as e:  # noqa: BLE001 - torch raises many types for corrupt files
        raise InputError(file, None, None, "a file written by torch.save "
                         f"({type(e).__name__}: {str(e).splitlines()[0][:100] if str(e) else ''})") from None


def _tensor_kind(v) -> str:
    """What kind of tensor numpy cannot hold, in the words ``pthfile.Unsupported`` uses."""
    import torch

    if v.is_quantized:
        return "quantized tensor"
    if v.layout != torch.strided:
        return "sparse tensor"
    if v.device.type == "meta":
        return "meta tensor"
    return f"tensor of {str(v.dtype).replace('torch.', '')}"


_UNSUPPORTED_TENSOR = "a dense CPU tensor of a numpy dtype (float, int or bool)"


def _plain(v, file: str, record: str, field: str):
    """Tensors -> numpy (0-d -> Python scalar); other values unchanged (checked later by the column rules).
    A tensor numpy cannot hold (bfloat16, quantized, sparse, on the meta device, ...) is an ``InputError``."""
    if type(v) in (float, int, str, bool) or v is None:
        return v
    if isinstance(v, pthfile.Unsupported):
        raise InputError(file, record, field, _UNSUPPORTED_TENSOR, got=Kind(v.what))  # a kind: the app shows it
    if type(v).__module__.startswith("torch"):
        import torch

        if isinstance(v, torch.Tensor):
            try:
                a = v.detach().cpu().numpy()
            except (TypeError, RuntimeError, NotImplementedError, ValueError):
                raise InputError(file, record, field, _UNSUPPORTED_TENSOR, got=Kind(_tensor_kind(v))) from None
            return a.item() if a.ndim == 0 else a
    if isinstance(v, np.ndarray) and v.ndim == 0:
        return v.item()
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, (list, tuple)) and v:
        types = set(map(type, v))
        if types <= _NUMBERS or (types <= {list} and all(set(map(type, x)) <= _NUMBERS for x in v)):
            return v  # plain numbers (the rules judge them later)
        return [_plain(x, file, record, field) for x in v]
    return v


_NUMBERS = {float, int}


# --------------------------------------------------------------------------------------------------------------
# Shared column building.

def _resolve_names(rs: Columns, table: dict[int, str], id_source: str) -> tuple[np.ndarray, list[str], np.ndarray]:
    """``(codes, names, category_id)``: record i's class is ``names[codes[i]]`` (its ``category_name``, else its
    ``category_id`` through ``table``)."""
    cat_id, has_id = rs.optional("category_id", kind="int", fill=-1)
    codes, names = rs.names("category_name")
    need = np.flatnonzero(codes < 0)
    if len(need):
        missing = first_false(has_id[need])
        if missing is not None:
            raise rs.error(int(need[missing]), "category_id", "present (an integer id, or give `category_name`)")
        uniq, inv = np.unique(cat_id[need], return_inverse=True)
        looked = [table.get(u) for u in uniq.tolist()]
        unknown = np.array([nm is None for nm in looked], bool)
        j = first_true(unknown[inv])
        if j is not None:
            i = int(need[j])
            raise rs.error(i, "category_id", f"an id of {id_source}", got=int(cat_id[i]))
        codes[need] = len(names) + inv
        names = names + looked
    return codes, names, cat_id


def pose_from_corners(corners: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(centre, dims [w,h,l], R) of ``(N, 8, 3)`` corners in the Omni3D order, from the edges v0->v1 (l), v0->v3 (h),
    v0->v4 (w). R is the nearest rotation to the edge directions (well defined for degenerate boxes too)."""
    corners = np.asarray(corners, np.float64).reshape(-1, 8, 3)
    center = corners.mean(axis=1)
    e = np.stack([corners[:, 1] - corners[:, 0], corners[:, 3] - corners[:, 0], corners[:, 4] - corners[:, 0]],
                 axis=2)  # columns: local x (l), y (h), z (w)
    lengths = np.linalg.norm(e, axis=1)  # (N, 3): l, h, w
    with np.errstate(invalid="ignore", divide="ignore"):
        unit = np.where(lengths[:, None, :] > 0, e / np.where(lengths > 0, lengths, 1)[:, None, :], 0.0)
    U, _, Vt = np.linalg.svd(unit)
    d = np.sign(np.linalg.det(U @ Vt))
    d[d == 0] = 1.0
    U[:, :, 2] *= d[:, None]
    R = U @ Vt
    dims = lengths[:, [2, 1, 0]]
    return center, dims, R


def _build(rs: Columns, dataset: Dataset, table: dict[int, str], id_source: str):
    """The prediction ``BoxSet`` and its class codes (``names[codes]`` is the category column)."""
    n = len(rs)
    image_id = rs.column("image_id", kind="int")
    row = index_of(dataset.images["image_id"].to_numpy(), image_id)
    bad = first_false(row >= 0)
    if bad is not None:
        raise rs.error(bad, "image_id", f"the id of an image of dataset {dataset.name!r}", got=int(image_id[bad]))
    codes, names, cat_id = _resolve_names(rs, table, id_source)
    box2d = rs.column("bbox", (4,))
    score = rs.column("score")
    corners, has_corners = rs.optional("bbox3D", (8, 3))
    center, has_center = rs.optional("center_cam", (3,))
    dims, has_dims = rs.optional("dimensions", (3,))
    R, has_pose = rs.optional("pose", (3, 3))
    # Rows without corners need the full pose.
    no_c = np.flatnonzero(~has_corners)
    if len(no_c):
        for field, has in (("center_cam", has_center), ("dimensions", has_dims), ("pose", has_pose)):
            i = first_false(has[no_c])
            if i is not None:
                raise rs.error(int(no_c[i]), "bbox3D", f"8x3 corners (or all of center_cam, dimensions and pose; "
                               f"`{field}` is missing too)")
        corners[no_c] = corners_from_pose(center[no_c], dims[no_c], R[no_c])
    # Rows with corners but without some pose field: derive from the corners.
    derive = has_corners & ~(has_center & has_dims & has_pose)
    if derive.any():
        dc, dd, dR = pose_from_corners(corners[derive])
        center[derive & ~has_center] = dc[~has_center[derive]]
        dims[derive & ~has_dims] = dd[~has_dims[derive]]
        R[derive & ~has_pose] = dR[~has_pose[derive]]
    depth, has_depth = rs.optional("depth")
    if not has_depth.all():
        depth[~has_depth] = center[~has_depth, 2]
    box2d[:, 2:] += box2d[:, :2]  # XYWH -> XYXY, in place
    in_vocab = isin_codes(codes, names, dataset.vocabulary)
    data = {"category_id": cat_id, "in_vocab": in_vocab}
    c2d, has_c2d = rs.optional("center_2D", (2,))
    if has_c2d.any():
        data["center_2D"] = c2d
    category = np.array(names + [None], object)[codes] if n else np.zeros(0, object)
    pred = BoxSet(image_id=image_id, category=category, center=center, dims=dims, R=R, corners=corners,
                  box2d=box2d, depth=depth, score=score, ignore=np.zeros(n, bool),
                  record=np.arange(n, dtype=np.int64), data=data)
    return pred, codes, names


__all__ = ["load_predictions", "pose_from_corners", "dataset_category_ids", "DETANY3D_CATEGORIES", "DETANY3D_97",
           "CUBERCNN_50", "FORMATS", "PREDICTION_FIELDS"]
