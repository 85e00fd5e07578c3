"""OV3D Explorer analysis core: loaders, exact 3D geometry, Omni3D-protocol evaluation and diagnostics.

The front door is :class:`ov3d_core.Analysis` with a frozen :class:`ov3d_core.View` (``ov3d_core.analysis``).
Heavy dependencies (torch, transformers, open3d) are imported inside the functions that need them.
"""

from __future__ import annotations

__version__ = "0.2.0"
__all__ = ["Analysis", "View", "RemapSpec", "__version__"]


def __getattr__(name: str):
    if name in ("Analysis", "View", "RemapSpec"):
        from ov3d_core import analysis

        return getattr(analysis, name)
    raise AttributeError(f"module 'ov3d_core' has no attribute {name!r}")
