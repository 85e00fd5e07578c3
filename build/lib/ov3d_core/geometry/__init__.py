"""Box conventions, projection and exact 3D IoU (float64)."""

from ov3d_core.geometry.boxes import (  # noqa: F401
    BOX_FACES,
    BOX_EDGES,
    corners_from_pose,
    project_points,
    projected_box2d,
)
from ov3d_core.geometry.iou2d import box_area_2d, box_iou_2d, paired_iou_2d  # noqa: F401,E402
from ov3d_core.geometry.validity import box_volume, valid_boxes  # noqa: F401,E402

_IOU3D_NAMES = ("box_iou_3d", "paired_iou_3d", "candidate_pairs", "bounding_spheres")


def __getattr__(name):
    """Lazy access to the 3D IoU kernels: ``ov3d_core.geometry.iou3d`` imports numba (~0.3 s), which the app should
    not pay at start-up. ``from ov3d_core.geometry import box_iou_3d`` works as usual."""
    if name in _IOU3D_NAMES:
        from ov3d_core.geometry import iou3d
        return getattr(iou3d, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
