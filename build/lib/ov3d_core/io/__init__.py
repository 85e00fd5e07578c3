"""Loaders: Omni3D GT JSON, Cube R-CNN / DetAny3D predictions (.json / .pth), KITTI label files, point clouds.

Every loader validates its input and raises ``ov3d_core.errors.InputError`` naming the file, the record and the
field; input files are only read. Heavy imports (torch, open3d, PIL) happen inside the functions that need them.
"""

from ov3d_core.io._validate import CornerMismatchWarning
from ov3d_core.io.columnar import warm as warm_json_kernel
from ov3d_core.io.kitti import KITTI_TYPES, KITTI_VOCABULARY, load_kitti_gt, load_kitti_predictions
from ov3d_core.io.omni3d import IGNORE_REASONS, OMNI3D_TEST, FilterSettings, load_omni3d_gt
from ov3d_core.io.pointcloud import depth_to_points, load_depth, load_point_cloud, voxel_downsample
from ov3d_core.io.predictions import CUBERCNN_50, DETANY3D_97, DETANY3D_CATEGORIES, FORMATS, load_predictions
from ov3d_core.io.writers import write_cubercnn_json

__all__ = [
    "CornerMismatchWarning", "warm_json_kernel", "FilterSettings", "OMNI3D_TEST", "IGNORE_REASONS", "load_omni3d_gt",
    "load_predictions", "FORMATS", "DETANY3D_CATEGORIES", "DETANY3D_97", "CUBERCNN_50", "write_cubercnn_json",
    "load_kitti_gt", "load_kitti_predictions", "KITTI_TYPES", "KITTI_VOCABULARY",
    "load_point_cloud", "load_depth", "depth_to_points", "voxel_downsample",
]
