"""Evaluation over cached geometry: sparse GT x prediction pairs, label views, Omni3D/COCO AP, class-agnostic recall.

Geometry (``pairs``) is computed once per (dataset, run) and cached; every protocol, template, subset or threshold
change builds a new ``LabelView`` and re-runs only matching and accumulation (``ap``, ``recall``).

Submodules are imported lazily so ``import ov3d_core.eval`` stays cheap (numba kernels compile on first use).
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "Pairs": "pairs", "compute_pairs": "pairs", "PairCache": "pairs", "GEOMETRY_VERSION": "pairs",
    "geometry_key": "pairs",
    "LabelView": "labels", "label_view_from_names": "labels", "gt_codes": "labels",
    "APParams": "ap", "APInputs": "ap", "evaluate_ap": "ap", "evaluate_ap_pooled": "ap", "evaluate_view": "ap",
    "class_agnostic_recall": "recall", "recall_for_view": "recall",
    "APResult": "results", "Matches": "results", "RecallResult": "results",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"ov3d_core.eval.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'ov3d_core.eval' has no attribute {name!r}")
