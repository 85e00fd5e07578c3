"""Diagnostics built on the evaluation engine (``ov3d_core.eval``): confusion matrices, 3D TIDE, monocular oracles,
centre-distance AP / ODS, protocol comparison, class splits, domain transfer, prompt sensitivity, FG-OVD ranks,
PCR/PLC, calibrated remap acceptance and semantic-distance-weighted confusion.

Each module is a pure function of cached pairs and label views; ``ov3d_core.analysis.Analysis`` composes them.
Submodules are imported on use (``import ov3d_core.diagnostics.tide``).
"""
