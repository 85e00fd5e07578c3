"""The built-in synthetic demo benchmark: ray-cast scenes (open3d), Omni3D GT, simulated detectors.

``ensure_demo(out, progress=...)`` builds ``out`` (e.g. ``data/demo``) when it is missing or stale and returns it;
``build_demo`` always builds. Modules: ``shapes`` (objects from mesh primitives), ``scenes`` (layouts and the three
datasets), ``render`` (RaycastingScene depth / instances / normals -> RGB, point clouds), ``annotate`` (GT fields),
``detectors`` (the runs and every error-model parameter), ``crops`` (crop descriptors), ``build`` (orchestration),
``rng`` (the random streams: documented transforms of PCG64's raw words; ``ziggurat`` holds its tables).
"""

from ov3d_core.demo.build import DEFAULT_IMAGES, GENERATOR_VERSION, build_demo, ensure_demo, read_manifest

__all__ = ["DEFAULT_IMAGES", "GENERATOR_VERSION", "build_demo", "ensure_demo", "read_manifest"]
