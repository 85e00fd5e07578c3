"""JSON text of the demo's records without ``json.dumps``: a large annotations-only build writes millions of small
records, and building dicts only to encode them costs as much as producing the text directly.

Every function here returns exactly what ``json.dumps(value, sort_keys=True, separators=(",", ":"),
ensure_ascii=False)`` returns for the same value (tests/demo/test_build.py checks it); anything unusual (NaN,
infinities, numpy scalars inside lists) falls back to ``json.dumps`` itself.
"""

from __future__ import annotations

import json
import re
from json.encoder import encode_basestring

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


__all__ = ["dumps", "jstr", "nums"]


def jbool(value) -> str:
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


__all__ += ["annotation_json", "crop_json", "jbool", "RECORD"]
