"""OV3D Explorer analysis core: loaders, exact 3D geometry, Omni3D-protocol evaluation and diagnostics.

Heavy dependencies (torch, transformers, open3d) are imported inside the functions that need them.
"""

__version__ = "0.1.0"
