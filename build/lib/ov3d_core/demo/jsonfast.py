"""JSON text of the demo's records without ``json.dumps``: a large annotations-only build writes millions of small
records, and building dicts only to encode them costs about as much as writing the text directly.

Every function here returns exactly what ``json.dumps(value, sort_keys=True, separators=(",", ":"),
ensure_ascii=False)`` returns for the same value (tests/demo/test_fast_paths.py checks it); anything unusual (NaN,
infinities, numpy scalars inside lists, unexpected keys) falls back to ``json.dumps`` itself. The ``%``-templates
(``ANN_TEMPLATE``, ``PRED_TEMPLATE``) take finite Python floats and ints (``%s`` of a float is its ``repr``, which is
what json writes); their callers check finiteness first.
"""

from __future__ import annotations

import json
import math
import re
from json.encoder import encode_basestring

__all__ = ["ANN_TEMPLATE", "PRED_TEMPLATE", "PRED_TEMPLATE_NO_NAME", "RECORD", "annotation_json", "crop_json",
           "crop_text", "dumps", "jbool", "jstr", "nums"]


#: Characters of the JSON text of a (nested) list of finite Python floats and ints, as ``str()`` writes it once its
#: ", " separators are squeezed (no "inf", "nan" or "np.float64(...)").
_NUMERIC = re.compile(r"[-+0-9.,\[\]e]*\Z")


def dumps(value) -> str:
    """The reference encoder: sorted keys, no spaces, UTF-8 text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def nums(value) -> str:
    """JSON of a float, an int or a (nested) list of them: ``str`` (``float.__repr__`` per element, as json uses)
    without the spaces."""
    text = str(value).replace(" ", "")
    if _NUMERIC.match(text) is None or type(value) is bool:
        return dumps(value)
    return text


def jstr(text: str) -> str:
    """JSON of a string (``ensure_ascii=False``)."""
    if type(text) is not str:
        return dumps(text)
    return encode_basestring(text)


def jbool(value) -> str:
    """JSON of a bool."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    return dumps(value)


_ANN_KEYS = frozenset(("R_cam", "bbox2D_proj", "bbox2D_tight", "bbox2D_trunc", "bbox3D_cam", "behind_camera",
                       "category_id", "category_name", "center_cam", "dataset_id", "depth_error", "dimensions", "id",
                       "image_id", "lidar_pts", "segmentation_pts", "truncation", "valid3D", "visibility"))


def annotation_json(a: dict) -> str:
    """One GT annotation record of ``ov3d_core.demo.annotate`` (keys in sorted order)."""
    if a.keys() != _ANN_KEYS:
        return dumps(a)
    return (f'{{"R_cam":{nums(a["R_cam"])},"bbox2D_proj":{nums(a["bbox2D_proj"])},'
            f'"bbox2D_tight":{nums(a["bbox2D_tight"])},"bbox2D_trunc":{nums(a["bbox2D_trunc"])},'
            f'"bbox3D_cam":{nums(a["bbox3D_cam"])},"behind_camera":{jbool(a["behind_camera"])},'
            f'"category_id":{nums(a["category_id"])},"category_name":{jstr(a["category_name"])},'
            f'"center_cam":{nums(a["center_cam"])},"dataset_id":{nums(a["dataset_id"])},'
            f'"depth_error":{nums(a["depth_error"])},"dimensions":{nums(a["dimensions"])},"id":{nums(a["id"])},'
            f'"image_id":{nums(a["image_id"])},"lidar_pts":{nums(a["lidar_pts"])},'
            f'"segmentation_pts":{nums(a["segmentation_pts"])},"truncation":{nums(a["truncation"])},'
            f'"valid3D":{jbool(a["valid3D"])},"visibility":{nums(a["visibility"])}}}')


#: Stands for the running record index of a crop descriptor (the parent fills it in; raw control characters never
#: occur in JSON text, where json escapes them).
RECORD = "\x00"
_CROP_KEYS = frozenset(("caption", "crop_box", "image_id", "overlaps"))
_OVERLAP_KEYS = frozenset(("ann_id", "category", "fraction"))


def crop_json(c: dict) -> str:
    """One crop descriptor of ``ov3d_core.demo.crops.describe`` plus a last key ``"record"`` whose value is
    :data:`RECORD` (``dumps(c | {"record": n})`` once it is replaced by ``n``)."""
    if c.keys() != _CROP_KEYS or any(o.keys() != _OVERLAP_KEYS for o in c["overlaps"]):
        return dumps(c)[:-1] + ',"record":' + RECORD + "}"
    overlaps = ",".join(f'{{"ann_id":{nums(o["ann_id"])},"category":{jstr(o["category"])},'
                        f'"fraction":{nums(o["fraction"])}}}' for o in c["overlaps"])
    return (f'{{"caption":{jstr(c["caption"])},"crop_box":{nums(c["crop_box"])},"image_id":{nums(c["image_id"])},'
            f'"overlaps":[{overlaps}],"record":{RECORD}}}')


def crop_text(caption: str, crop_box: list[float], image_id: int, overlaps: list[tuple[int, str, float]]) -> str:
    """:func:`crop_json` of ``{"caption": caption, "crop_box": crop_box, "image_id": image_id, "overlaps": [{"ann_id",
    "category", "fraction"}, ...]}`` from its values, without the dicts."""
    if not all(math.isfinite(v) for v in crop_box) or not all(math.isfinite(o[2]) for o in overlaps):
        return crop_json({"caption": caption, "crop_box": crop_box, "image_id": image_id,
                          "overlaps": [{"ann_id": a, "category": c, "fraction": f} for a, c, f in overlaps]})
    ov = ",".join(f'{{"ann_id":{int(a)},"category":{jstr(c)},"fraction":{f!r}}}' for a, c, f in overlaps)
    return '{"caption":%s,"crop_box":[%r,%r,%r,%r],"image_id":%d,"overlaps":[%s],"record":%s}' % (
        jstr(caption), *crop_box, image_id, ov, RECORD)


def _slots(shape: tuple[int, ...]) -> str:
    """A %-template of a nested list of numbers: (2, 3) -> "[[%s,%s,%s],[%s,%s,%s]]" (``%s`` of a float is its
    ``repr``, as json writes it)."""
    if len(shape) == 1:
        return "[" + ",".join(["%s"] * shape[0]) + "]"
    return "[" + ",".join([_slots(shape[1:])] * shape[0]) + "]"


def _template(fields: list[tuple[str, str]]) -> str:
    keys = [k for k, _ in fields]
    assert keys == sorted(keys), keys  # json.dumps(sort_keys=True) order
    return "{" + ",".join(f'"{k}":{v}' for k, v in fields) + "}"


#: A GT annotation record; values: R_cam (9 floats), bbox2D_proj, bbox2D_tight, bbox2D_trunc (4 each), bbox3D_cam
#: (24), behind_camera (JSON), category_id, category_name (JSON), center_cam (3), dataset_id, depth_error (JSON),
#: dimensions (3), id, image_id, lidar_pts, segmentation_pts, truncation, visibility.
ANN_TEMPLATE = _template([
    ("R_cam", _slots((3, 3))), ("bbox2D_proj", _slots((4,))), ("bbox2D_tight", _slots((4,))),
    ("bbox2D_trunc", _slots((4,))), ("bbox3D_cam", _slots((8, 3))), ("behind_camera", "%s"), ("category_id", "%s"),
    ("category_name", "%s"), ("center_cam", _slots((3,))), ("dataset_id", "%s"), ("depth_error", "%s"),
    ("dimensions", _slots((3,))), ("id", "%s"), ("image_id", "%s"), ("lidar_pts", "%s"), ("segmentation_pts", "%s"),
    ("truncation", "%s"), ("valid3D", "true"), ("visibility", "%s")])

_PRED_FIELDS = [("bbox", _slots((4,))), ("bbox3D", _slots((8, 3))), ("category_id", "%s"), ("category_name", "%s"),
                ("center_2D", _slots((2,))), ("center_cam", _slots((3,))), ("depth", "%s"),
                ("dimensions", _slots((3,))), ("image_id", "%s"), ("pose", _slots((3, 3))), ("score", "%s")]
#: A prediction record (Cube R-CNN instance), with and without category_name; values: bbox (4 floats), bbox3D (24),
#: category_id, [category_name (JSON)], center_2D (2), center_cam (3), depth, dimensions (3), image_id, pose (9),
#: score.
PRED_TEMPLATE = _template(_PRED_FIELDS)
PRED_TEMPLATE_NO_NAME = _template([f for f in _PRED_FIELDS if f[0] != "category_name"])
