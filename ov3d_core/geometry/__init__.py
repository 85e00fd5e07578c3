"""Box conventions, projection and exact 3D IoU (float64)."""

from ov3d_core.geometry.boxes import (  # noqa: F401
    BOX_FACES,
    BOX_EDGES,
    corners_from_pose,
    project_points,
    projected_box2d,
)
