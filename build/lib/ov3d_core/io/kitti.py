"""KITTI object label_2 files -> ``Dataset`` / ``Run`` in the Omni3D convention (reference/omni3d_protocol.md §6).

Conversion of one object line (h, w, l, location = bottom-face centre in cam0 rectified coordinates, rotation_y):

* ``K = P2[:, :3]``, ``t = K^-1 P2[:, 3]``: the cam0 -> cam2 offset from the **whole** fourth column of P2, so that
  ``K (X + t)`` reproduces ``P2 [X; 1]`` exactly (training frame 000000: ``t = (0.05985, -0.00036, 0.00275)`` m).
  mmdetection3d's KITTI converter keeps only the x part, ``(P2[0, 3] - P0[0, 3]) / P2[0, 0]`` (0.06217 m there):
  2.3 mm further in x and 2.7 mm nearer in z than ours, a quarter of a pixel off the P2 projection for a pedestrian
  8 m away. We keep the whole column on purpose: it projects exactly with the 3x3 K that Omni3D files carry;
* ``dimensions = [w, h, l]``, ``R_cam = rotation_y(ry)``, ``center_cam = location + (0, -h/2, 0) + t``;
* corners with ``corners_from_pose`` (the devkit's corner set shifted by t, in the Omni3D order);
* ``bbox2D_tight`` = the KITTI bbox, ``bbox2D_proj`` / ``bbox2D_trunc`` by projecting the corners; ``truncation``
  = the KITTI field (its semantics differ slightly from Omni3D's), ``visibility`` = -1, ``valid3D`` = true,
  ``behind_camera`` = any corner z <= 0, point counts and depth error -1 (unknown).

Types: Car, Van, Truck, Pedestrian, Cyclist, Tram -> lower case; Person_sitting -> person; DontCare -> dontcare
(an ignore name: dropped like in the Omni3D loader); Misc -> "misc", kept in the GT but out of the vocabulary and
flagged ignore (reason "misc") so that it absorbs detections instead of counting as a miss in class-agnostic views.
Any other type is an ``InputError``. Annotation ids are ``image_id * 10000 + line number`` (1-based), stable
whatever subset of images is loaded.

Files are named by their image id in ASCII digits (``000123.txt``); two names for one id (``01.txt`` beside
``000001.txt``) are refused, as are ids beyond what the annotation ids can hold. Every bad line (token count, type,
a field that is not an ASCII decimal number or not finite, truncation outside [0, 1] other than -1, occlusion other
than -1..3, a 2D box with right < left or bottom < top, non-positive sizes in a result file) and every bad calib
(no P2, two P2 lines, P2 not 12 finite numbers or not a rectified projection) is an ``InputError`` naming the file
and the line. Files must be UTF-8 (ASCII) text.
"""

from __future__ import annotations

import math
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from ov3d_core.errors import InputError
from ov3d_core.geometry.boxes import corners_from_pose, projected_box2d, rotation_y
from ov3d_core.io._validate import check_dir, check_file
from ov3d_core.io.omni3d import OMNI3D_TEST, AnnotationTable, FilterSettings, _vocabulary, gt_boxset
from ov3d_core.model import BoxSet, Dataset, Run
from ov3d_core.taxonomy import OMNI3D_NAME_TO_ID

KITTI_TYPES = {"Car": "car", "Van": "van", "Truck": "truck", "Pedestrian": "pedestrian", "Cyclist": "cyclist",
               "Tram": "tram", "Person_sitting": "person", "DontCare": "dontcare", "Misc": "misc"}

#: Default vocabulary of ``load_kitti_gt``: the mapped evaluable names, in Omni3D id order.
KITTI_VOCABULARY = ("pedestrian", "car", "cyclist", "van", "truck", "tram", "person")

FIELDS = ("type", "truncated", "occluded", "alpha", "bbox_left", "bbox_top", "bbox_right", "bbox_bottom",
          "height", "width", "length", "x", "y", "z", "rotation_y", "score")

_IMAGE_EXTS = (".png", ".jpg", ".jpeg")
_MAX_LINES = 9999


#: An ASCII decimal number as KITTI files write them (no underscores, no other scripts' digits, no hex).
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:nan|inf|infinity)", re.IGNORECASE | re.ASCII)
#: The largest image id whose annotation ids (image_id * 10000 + line) fit in int64.
_MAX_IMAGE_ID = (2**63 - 1 - _MAX_LINES) // 10000


def _read_lines(p: Path) -> list[str]:
    """The lines of a text file; unreadable or non-UTF-8 files are an ``InputError`` (with the line)."""
    try:
        data = p.read_bytes()
    except OSError as e:
        raise InputError(str(p), None, None, f"a readable file ({e.strerror or e})") from None
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise InputError(str(p), f"line {line}", None, "UTF-8 text", got=data[e.start:e.start + 4]) from None


def _number(tok: str) -> float | None:
    """``float(tok)`` for an ASCII decimal number, else None."""
    return float(tok) if _NUMBER.fullmatch(tok) else None


def read_calib_p2(path) -> np.ndarray:
    """The 3x4 ``P2`` matrix of a KITTI calib file (exactly one ``P2:`` line)."""
    p = check_file(path)
    found = None
    for n, line in enumerate(_read_lines(p), start=1):
        if not line.startswith("P2:"):
            continue
        if found is not None:
            raise InputError(str(p), f"line {n}", "P2", f"a single P2 line (another on line {found[0]})")
        vals = [_number(t) for t in line[3:].split()]
        if len(vals) != 12 or any(v is None or not math.isfinite(v) for v in vals):
            raise InputError(str(p), f"line {n}", "P2", "12 finite numbers", got=line[:120])
        P2 = np.array(vals).reshape(3, 4)
        if abs(np.linalg.det(P2[:, :3])) < 1e-12 or np.abs(P2[2, :3] - [0.0, 0.0, 1.0]).max() > 1e-9:
            raise InputError(str(p), f"line {n}", "P2", "a rectified projection K [I | t]: an invertible left 3x3 "
                             "block whose last row is 0 0 1", got=line[:120])
        found = (n, P2)
    if found is None:
        raise InputError(str(p), None, "P2", "a line `P2: ` followed by 12 numbers")
    return found[1]


def _check_values(p: Path, n: int, line: str, vals: list[float], *, prediction: bool) -> None:
    """Range checks of one parsed line (``vals`` = the 14 or 15 numbers after the type)."""
    trunc, occ = vals[0], vals[1]
    if not (trunc == -1 or 0 <= trunc <= 1):
        raise InputError(str(p), f"line {n}", "truncated", "a number in [0, 1] (or -1)", got=trunc)
    if occ not in (-1, 0, 1, 2, 3):
        raise InputError(str(p), f"line {n}", "occluded", "one of -1, 0, 1, 2, 3", got=occ)
    if vals[5] < vals[3] or vals[6] < vals[4]:
        raise InputError(str(p), f"line {n}", "bbox", "left <= right and top <= bottom", got=line[:120])
    if prediction and min(vals[7:10]) <= 0:
        raise InputError(str(p), f"line {n}", "height, width, length", "positive sizes", got=vals[7:10])


def parse_label_file(path, *, with_score: bool) -> tuple[list[str], np.ndarray, list[int]]:
    """Types, ``(n, 15)`` float values (columns 2..16 of the line; score NaN when absent) and 1-based line numbers.

    ``with_score``: a result file (16 values a line, sizes must be positive)."""
    p = check_file(path)
    types, rows, lines = [], [], []
    want = "16 values (type, 14 numbers, score)" if with_score else "15 values (type and 14 numbers; a 16th score " \
                                                                     "is allowed)"
    for n, line in enumerate(_read_lines(p), start=1):
        toks = line.split()
        if not toks:
            continue
        if len(lines) == _MAX_LINES:
            raise InputError(str(p), f"line {n}", None, f"at most {_MAX_LINES} objects per file")
        if len(toks) != 16 and (with_score or len(toks) != 15):
            raise InputError(str(p), f"line {n}", None, want, got=line[:120])
        if toks[0] not in KITTI_TYPES:
            raise InputError(str(p), f"line {n}", "type", f"one of {', '.join(KITTI_TYPES)}", got=toks[0])
        vals = []
        for k, tok in enumerate(toks[1:], start=1):
            v = _number(tok)
            if v is None:
                raise InputError(str(p), f"line {n}", FIELDS[k], "a number", got=tok)
            if not math.isfinite(v):
                raise InputError(str(p), f"line {n}", FIELDS[k], "a finite number", got=tok)
            vals.append(v)
        _check_values(p, n, line, vals, prediction=with_score)
        if len(vals) == 14:
            vals.append(np.nan)
        types.append(toks[0])
        rows.append(vals)
        lines.append(n)
    return types, np.array(rows, np.float64).reshape(-1, 15), lines


def kitti_to_omni3d(values: np.ndarray, P2: np.ndarray) -> dict[str, np.ndarray]:
    """Convert ``(n, 15)`` label values (as from ``parse_label_file``) with the image's ``P2`` to Omni3D columns:
    ``center``, ``dims``, ``R``, ``corners``, ``bbox2D_tight``, ``K``, ``t``."""
    values = np.asarray(values, np.float64).reshape(-1, 15)
    K = P2[:, :3]
    t = np.linalg.solve(K, P2[:, 3])
    h, w, l = values[:, 7], values[:, 8], values[:, 9]
    loc = values[:, 10:13]
    dims = np.stack([w, h, l], axis=1)
    R = rotation_y(values[:, 13])
    center = loc + np.stack([np.zeros_like(h), -h / 2, np.zeros_like(h)], axis=1) + t
    corners = corners_from_pose(center, dims, R)
    return {"center": center, "dims": dims, "R": R, "corners": corners, "bbox2D_tight": values[:, 3:7].copy(),
            "K": K, "t": t}


def _stem_files(folder: Path, what: str) -> dict[int, Path]:
    """``{image id: file}`` of the ``*.txt`` files, named by ASCII digits; two names for one id are refused."""
    out: dict[int, Path] = {}
    for f in sorted(folder.glob("*.txt")):
        stem = f.stem
        if not (stem.isascii() and stem.isdigit()):
            raise InputError(str(f), None, None, f"a {what} file named by its integer image id in ASCII digits "
                             "(e.g. 000123.txt)")
        iid = int(stem)
        if iid > _MAX_IMAGE_ID:
            raise InputError(str(f), None, "image_id", f"an image id of at most {_MAX_IMAGE_ID} (from the file "
                             "name)", got=iid)
        if iid in out:
            raise InputError(str(f), None, "image_id", f"one {what} file per image id ({out[iid].name} has the "
                             f"same id {iid})")
        out[iid] = f
    return out


def _image_id(i, folder: Path) -> int:
    """An ``image_ids`` entry as int: integers (not bools) and strings of ASCII digits."""
    if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer, str)):
        raise InputError(str(folder), None, "image_ids", "integer image ids", got=i)
    if isinstance(i, str) and not (i.isascii() and i.isdigit()):
        raise InputError(str(folder), None, "image_ids", "integer image ids", got=i)
    return int(i)


class MissingImageWarning(UserWarning):
    """Images of ``image_dir`` not found: their size is the ``image_size`` default."""


def _image_size(image_dir: Path | None, stem: str, default: tuple[int, int]) -> tuple[int, int, str]:
    """(width, height, file name) of the image ``<stem>.png|jpg|jpeg``; the default and "" when there is none.
    An image that exists but cannot be read is an ``InputError``."""
    if image_dir is None:
        return default[0], default[1], ""
    for ext in _IMAGE_EXTS:
        f = image_dir / (stem + ext)
        if f.is_file():
            from PIL import Image, UnidentifiedImageError

            try:
                with Image.open(f) as im:
                    w, h = im.size
            except (OSError, UnidentifiedImageError, ValueError) as e:
                raise InputError(str(f), None, None, "an image file Pillow can read (its size sets the height "
                                 "filter)", got=str(e)[:120]) from None
            return int(w), int(h), f.name
    return default[0], default[1], ""


def load_kitti_gt(label_dir, calib_dir, *, image_dir=None, image_ids=None, name: str = "KITTI",
                  image_size: tuple[int, int] = (1242, 375), categories=None,
                  settings: FilterSettings = OMNI3D_TEST) -> Dataset:
    """Load KITTI ``label_2`` files (one ``<image id>.txt`` each) and ``calib`` files into a ``Dataset``.

    Args:
        label_dir: folder of label files; image id = int(file stem).
        calib_dir: folder of calib files with the same stems (``P2`` is used).
        image_dir: folder of the images (``<stem>.png``); their size is read with Pillow (an unreadable image is an
            ``InputError``). Without it ``image_size`` (width, height) is used, and for images missing from it
            too, with one ``MissingImageWarning``.
        image_ids: restrict to these image ids (default: every label file).
        categories: vocabulary (default ``KITTI_VOCABULARY``).
        settings: Omni3D filter settings applied to the converted annotations (default Omni3D TEST).
    """
    ldir, cdir = check_dir(label_dir), check_dir(calib_dir)
    idir = None if image_dir is None else check_dir(image_dir)
    files = _stem_files(ldir, "label")
    if image_ids is None:
        ids = sorted(files)
        if not ids:
            raise InputError(str(ldir), None, None, "KITTI label files (<image id>.txt)")
    else:
        ids, seen = [], set()
        for i in image_ids:
            iid = _image_id(i, ldir)
            if iid not in files:
                raise InputError(str(ldir), None, "image_ids", "ids that have a label file", got=i)
            if iid in seen:
                raise InputError(str(ldir), None, "image_ids", "unique image ids", got=i)
            seen.add(iid)
            ids.append(iid)
    img_rows, Ks, p2s, parts = [], [], [], []
    for iid in ids:
        f = files[iid]
        P2 = read_calib_p2(cdir / f.name)
        W, H, fname = _image_size(idir, f.stem, image_size)
        img_rows.append((iid, W, H, fname))
        Ks.append(P2[:, :3])
        p2s.append(P2)
        types, vals, lines = parse_label_file(f, with_score=False)
        conv = kitti_to_omni3d(vals, P2)
        proj, trunc = projected_box2d(conv["corners"], conv["K"], W, H)
        n = len(types)
        names = np.array([KITTI_TYPES[t] for t in types], object)
        parts.append(AnnotationTable(
            id=iid * 10000 + np.asarray(lines, np.int64), image_id=np.full(n, iid, np.int64), category=names,
            category_id=np.array([OMNI3D_NAME_TO_ID.get(c, -1) for c in names], np.int64),
            center=conv["center"], dims=conv["dims"], R=conv["R"], corners=conv["corners"],
            valid3D=np.ones(n, bool), behind_camera=(conv["corners"][:, :, 2] <= 0).any(axis=1),
            bbox2D_tight=conv["bbox2D_tight"], bbox2D_proj=proj, bbox2D_trunc=trunc, proj_given=np.ones(n, bool),
            truncation=vals[:, 0].copy(), visibility=np.full(n, -1.0), lidar_pts=np.full(n, -1.0),
            segmentation_pts=np.full(n, -1.0), depth_error=np.full(n, -1.0)))
    missing = [r[0] for r in img_rows if not r[3]]
    if idir is not None and missing:
        warnings.warn(f"{idir}: {len(missing)} of {len(img_rows)} images not found (first: image id {missing[0]}); "
                      f"their size is taken as {image_size[0]}x{image_size[1]} (image_size), which sets the "
                      "Omni3D height filter", MissingImageWarning, stacklevel=2)
    table = AnnotationTable.concat(parts)
    images = pd.DataFrame(img_rows, columns=["image_id", "width", "height", "file_path"]).astype(
        {"image_id": np.int64, "width": np.int64, "height": np.int64})
    images["dataset_id"] = np.full(len(images), -1, np.int64)
    p2col = np.empty(len(images), object)
    p2col[:] = p2s
    images["p2"] = p2col
    vocabulary = _vocabulary(categories if categories is not None else KITTI_VOCABULARY, list(KITTI_VOCABULARY),
                             set(KITTI_TYPES.values()), settings)
    heights = images.set_index("image_id").loc[table.image_id, "height"].to_numpy(np.float64)
    gt = gt_boxset(table, heights, vocabulary, settings, keep_also=("misc",), extra_ignore={"misc": "misc"})
    return Dataset(name=name, images=images, K=np.array(Ks).reshape(-1, 3, 3), vocabulary=vocabulary, gt=gt,
                   sources=(str(ldir), str(cdir)), environment="outdoor", proximity=False,
                   root=None if idir is None else str(idir))


def _cameras(dataset: Dataset, calib_dir, files: dict[int, Path]) -> dict[int, np.ndarray]:
    """P2 (3x4) per image id: from ``calib_dir`` (same file names) if given, else the dataset's ``p2`` column, else
    ``[K | 0]`` (t = 0)."""
    ids = list(files)
    rows = dataset.image_index(np.asarray(ids, np.int64))
    cdir = None if calib_dir is None else check_dir(calib_dir)
    has_p2 = "p2" in dataset.images.columns
    out = {}
    for iid, r in zip(ids, rows):
        if cdir is not None:
            out[iid] = read_calib_p2(cdir / files[iid].name)
        elif has_p2 and isinstance(dataset.images["p2"].iat[r], np.ndarray):
            out[iid] = np.asarray(dataset.images["p2"].iat[r], np.float64)[:3]
        else:
            out[iid] = np.concatenate([dataset.K[r], np.zeros((3, 1))], axis=1)
    return out


def load_kitti_predictions(result_dir, dataset: Dataset, *, name: str | None = None, calib_dir=None) -> Run:
    """Load KITTI-format results (one ``<image id>.txt`` per image, 16 values per line with the score).

    The cam0 -> cam2 offset t uses ``calib_dir`` when given, else the dataset's ``p2`` image column (set by
    ``load_kitti_gt``, or an Omni3D KITTI file's ``p2``), else t = 0. ``box2d`` = the KITTI bbox, ``depth`` = the
    centre z, ``record`` = running index over lines in file-name order; data: ``category_id`` (Omni3D id or -1),
    ``in_vocab``, ``line`` (1-based line number in its file).
    """
    rdir = check_dir(result_dir)
    files = _stem_files(rdir, "result")
    known = set(dataset.images["image_id"].tolist())
    for iid, f in files.items():
        if iid not in known:
            raise InputError(str(f), None, "image_id", f"the id of an image of dataset {dataset.name!r} "
                             "(from the file name)", got=iid)
    cams = _cameras(dataset, calib_dir, files)
    parts = []
    for iid, f in files.items():
        types, vals, lines = parse_label_file(f, with_score=True)
        n = len(types)
        if not n:
            continue
        conv = kitti_to_omni3d(vals, cams[iid])
        names = np.array([KITTI_TYPES[t] for t in types], object)
        parts.append(BoxSet(
            image_id=np.full(n, iid, np.int64), category=names, center=conv["center"], dims=conv["dims"],
            R=conv["R"], corners=conv["corners"], box2d=conv["bbox2D_tight"], depth=conv["center"][:, 2].copy(),
            score=vals[:, 14].copy(), ignore=np.zeros(n, bool), record=np.zeros(n, np.int64),
            data={"category_id": np.array([OMNI3D_NAME_TO_ID.get(c, -1) for c in names], np.int64),
                  "in_vocab": np.isin(names, np.array(dataset.vocabulary, object)),
                  "line": np.asarray(lines, np.int64)}))
    pred = BoxSet.concat(parts) if parts else BoxSet.empty().with_(
        data={"category_id": np.zeros(0, np.int64), "in_vocab": np.zeros(0, bool), "line": np.zeros(0, np.int64)})
    pred = pred.with_(record=np.arange(len(pred), dtype=np.int64))
    return Run(name=rdir.name if name is None else name, dataset=dataset.name, pred=pred, sources=(str(rdir),),
               meta={"format": "kitti"})
