"""Predictions of one method on one dataset -> ``Run``.

Formats (reference/omni3d_protocol.md §2, §5.2):

* ``cubercnn-json``: the flat ``omni_instances_results.json`` list; ``category_id`` is an Omni3D global id.
* ``cubercnn-pth``: ``instances_predictions.pth``, a list of per-image records ``{image_id, K, width, height,
  instances: [...]}`` whose ``category_id`` are the model's **contiguous** ids. They are mapped through
  ``category_list`` (index = contiguous id); default: the 50 Omni3D categories sorted by Omni3D id, which is
  Cube R-CNN's ``thing_classes`` for the released Omni3D model.
* ``detany3d-json``: the flat list written by DetAny3D; ``category_id`` indexes the 97-entry list (Omni3D ids without
  93 "fire place": ids 0-92 unchanged, 94-97 -> 93-96).

Category resolution, per record: a ``category_name`` field; else the id through ``category_list`` if given; else, for
``cubercnn-json``, the dataset's own id table (``Dataset.category_ids`` if the model has it, else the id/name pairs
of its GT) and then the built-in 98-id Omni3D table; for ``detany3d-json`` the 97-entry list; for ``cubercnn-pth``
the default 50-name list. Predictions whose class is not in the dataset vocabulary are kept with
``data["in_vocab"] = False``.
"""

from __future__ import annotations

import numpy as np

from ov3d_core.errors import InputError
from ov3d_core.geometry.boxes import corners_from_pose
from ov3d_core.io._validate import Records, check_file, first_false, index_of, read_json
from ov3d_core.model import BoxSet, Dataset, Run
from ov3d_core.taxonomy import OMNI3D_50, OMNI3D_CATEGORIES, OMNI3D_NAME_TO_ID

FORMATS = ("cubercnn-json", "cubercnn-pth", "detany3d-json")

#: DetAny3D / OVMono3D 97-entry contiguous list (configs/category_meta.json): Omni3D ids without 93.
DETANY3D_97: tuple[str, ...] = tuple(OMNI3D_CATEGORIES[i] for i in sorted(OMNI3D_CATEGORIES) if i != 93)

#: Cube R-CNN's contiguous classes for the Omni3D-50 model: the 50 names sorted by Omni3D id.
CUBERCNN_50: tuple[str, ...] = tuple(sorted(OMNI3D_50, key=OMNI3D_NAME_TO_ID.__getitem__))


def load_predictions(path, dataset: Dataset, *, name: str | None = None, format: str = "auto",
                     category_list=None) -> Run:
    """Load a predictions file for ``dataset``.

    Args:
        path: the file (.json or .pth).
        dataset: the dataset the predictions are for; every ``image_id`` must be one of its images.
        name: the run name (default: the file stem).
        format: "auto" (.pth -> cubercnn-pth, .json -> cubercnn-json), or one of ``FORMATS``.
        category_list: names indexed by ``category_id`` (contiguous ids). Required in practice for a .pth of a model
            not trained on the Omni3D-50 list.

    Returns:
        A ``Run`` whose ``pred`` has box2d (XYXY from the file's XYWH ``bbox``), depth (the file's ``depth``, else
        centre z), score, record (0-based index in the file; for .pth a running index over all instances in record
        order) and data ``category_id`` (the source id, -1 if absent), ``in_vocab`` and ``center_2D`` (if any).
    """
    p = check_file(path)
    file = str(p)
    fmt = _format_of(p, format)
    cat_list = _check_category_list(category_list)
    if fmt == "cubercnn-pth":
        recs, label, meta = _read_pth(p)
        table = dict(enumerate(cat_list if cat_list is not None else CUBERCNN_50))
        id_source = "`category_list`" if cat_list is not None else "the Cube R-CNN Omni3D-50 list (pass category_list)"
    else:
        doc = read_json(p)
        if not isinstance(doc, list):
            raise InputError(file, None, None, "a JSON list of prediction records", got=type(doc).__name__)
        recs = doc

        def label(i):
            r = recs[i]
            img = r.get("image_id") if isinstance(r, dict) else None
            return f"[{i}]" + (f" (image_id {img})" if isinstance(img, int) else "")

        meta = {}
        if cat_list is not None:
            table, id_source = dict(enumerate(cat_list)), "`category_list`"
        elif fmt == "detany3d-json":
            table, id_source = dict(enumerate(DETANY3D_97)), "the 97-entry DetAny3D list"
        else:
            table = {**OMNI3D_CATEGORIES, **dataset_category_ids(dataset)}
            id_source = "the dataset's categories or the Omni3D table"
    rs = Records(file, recs, label, "a prediction object")
    pred = _build(rs, dataset, table, id_source)
    meta = {**meta, "format": fmt}
    if cat_list is not None:
        meta["category_list"] = tuple(cat_list)
    return Run(name=p.stem if name is None else name, dataset=dataset.name, pred=pred, sources=(file,), meta=meta)


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


def _read_pth(p) -> tuple[list, object, dict]:
    import pickle

    import torch

    file = str(p)
    if p.stat().st_size == 0:
        raise InputError(file, None, None, "a torch.save file, got an empty file")
    try:
        with torch.serialization.safe_globals(_numpy_safe_globals()):
            obj = torch.load(p, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        lines = str(e).strip().splitlines()
        detail = next((ln.strip() for ln in lines if "Unsupported global" in ln), "")
        if not detail:
            raise InputError(file, None, None, "a file written by torch.save (it could not be unpickled)") from None
        detail = detail.split(" was not an allowed")[0].replace("WeightsUnpickler error: ", "")
        raise InputError(file, None, None, "plain data (lists, dicts, numbers, strings, tensors) loadable with "
                         f"torch.load(weights_only=True); found {detail[:160]}") from None
    except Exception as e:  # noqa: BLE001 - torch raises many types for corrupt files
        raise InputError(file, None, None, "a file written by torch.save "
                         f"({type(e).__name__}: {str(e).splitlines()[0][:100] if str(e) else ''})") from None
    if not isinstance(obj, (list, tuple)):
        raise InputError(file, None, None, "a list of per-image records {image_id, K, width, height, instances}",
                         got=type(obj).__name__)
    flat: list[dict] = []
    where: list[tuple[int, int]] = []
    for r, rec in enumerate(obj):
        if not isinstance(rec, dict):
            raise InputError(file, f"[{r}]", None, "a per-image record (dict)", got=type(rec).__name__)
        if "image_id" not in rec:
            raise InputError(file, f"[{r}]", "image_id", "present (an integer)")
        img = _plain(rec["image_id"])
        inst = rec.get("instances")
        if not isinstance(inst, (list, tuple)):
            raise InputError(file, f"[{r}] (image_id {img!r})", "instances", "a list of instance dicts",
                             got=type(inst).__name__)
        for j, d in enumerate(inst):
            if not isinstance(d, dict):
                raise InputError(file, f"[{r}].instances[{j}]", None, "an instance dict", got=type(d).__name__)
            d = {k: _plain(v) for k, v in d.items()}
            if "image_id" in d and d["image_id"] != img:
                raise InputError(file, f"[{r}].instances[{j}]", "image_id",
                                 f"the record's image_id {img!r}", got=d["image_id"])
            d["image_id"] = img
            flat.append(d)
            where.append((r, j))

    def label(i):
        r, j = where[i]
        return f"[{r}].instances[{j}]"

    return flat, label, {"n_records": len(obj)}


def _plain(v):
    """Tensors -> numpy (0-d -> Python scalar); other values unchanged (checked later by the column extraction)."""
    import torch

    if isinstance(v, torch.Tensor):
        t = v.detach().cpu()
        if t.dtype.is_floating_point and t.dtype not in (torch.float16, torch.float32, torch.float64):
            t = t.to(torch.float32)  # bfloat16 / float8 (a model saved in low precision): exact in float32
        a = t.numpy()
        return a.item() if a.ndim == 0 else a
    if isinstance(v, np.ndarray) and v.ndim == 0:
        return v.item()
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, (list, tuple)) and v and isinstance(v[0], (torch.Tensor, list, tuple)):
        return [_plain(x) for x in v]
    return v


# --------------------------------------------------------------------------------------------------------------
# Shared column building.

def _resolve_names(rs: Records, table: dict[int, str], id_source: str) -> tuple[np.ndarray, np.ndarray]:
    n = len(rs)
    has_name = rs.has("category_name")
    names = np.empty(n, object)
    cat_id, has_id = rs.optional("category_id", kind="int", fill=-1)
    if has_name.any():
        rows = np.flatnonzero(has_name)
        vals = [rs.records[i]["category_name"] for i in rows]
        bad = next((j for j, v in enumerate(vals) if not isinstance(v, str) or not v), None)
        if bad is not None:
            raise rs.error(int(rows[bad]), "category_name", "a non-empty string", got=vals[bad])
        names[rows] = vals
    need = np.flatnonzero(~has_name)
    if len(need):
        missing = first_false(has_id[need])
        if missing is not None:
            raise rs.error(int(need[missing]), "category_id", "present (an integer id, or give `category_name`)")
        uniq, inv = np.unique(cat_id[need], return_inverse=True)
        looked = [table.get(u) for u in uniq.tolist()]
        for j, nm in enumerate(looked):
            if nm is None:
                i = int(need[np.flatnonzero(inv == j)[0]])
                raise rs.error(i, "category_id", f"an id of {id_source}", got=int(uniq[j]))
        names[need] = np.array(looked, object)[inv]
    return names, cat_id


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


def _build(rs: Records, dataset: Dataset, table: dict[int, str], id_source: str) -> BoxSet:
    n = len(rs)
    image_id = rs.column("image_id", kind="int")
    row = index_of(dataset.images["image_id"].to_numpy(), image_id)
    bad = first_false(row >= 0)
    if bad is not None:
        raise rs.error(bad, "image_id", f"the id of an image of dataset {dataset.name!r}", got=int(image_id[bad]))
    names, cat_id = _resolve_names(rs, table, id_source)
    xywh = rs.column("bbox", (4,))
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
    depth = np.where(has_depth, depth, center[:, 2])
    box2d = xywh.copy()
    box2d[:, 2:] += box2d[:, :2]
    data = {"category_id": cat_id, "in_vocab": np.isin(names, np.array(dataset.vocabulary, object))}
    c2d, has_c2d = rs.optional("center_2D", (2,))
    if has_c2d.any():
        data["center_2D"] = c2d
    return BoxSet(image_id=image_id, category=names, center=center, dims=dims, R=R, corners=corners, box2d=box2d,
                  depth=depth, score=score, ignore=np.zeros(n, bool), record=np.arange(n, dtype=np.int64), data=data)


__all__ = ["load_predictions", "pose_from_corners", "dataset_category_ids", "DETANY3D_97", "CUBERCNN_50", "FORMATS"]
