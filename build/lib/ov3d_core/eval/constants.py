"""The protocol names, summary keys and IoU thresholds every part of the product shares (one owner each).

Units everywhere: AP-like numbers (AP3D and its slices, ODS, ΔAP) are percent (0-100); recall, shares, fractions,
ratios and IoUs are fractions (0-1).
"""

from __future__ import annotations

#: The evaluation protocols: every class on every image (OV3D-Bench), or the per-image GT-class oracle.
PROTOCOLS = ("dataset-level", "target-aware")

#: 3D IoU of 3D class-agnostic recall (OV3D-Bench: "matched ... at IoU >= 0.15").
RECALL_IOU = 0.15
#: 3D IoU of the one-to-one Hungarian confusion assignment (OV3D-Bench: "IoU >= 0.5").
CONFUSION_IOU = 0.5
#: 3D IoU at which a prediction removed by the target-aware oracle counts as sitting on a GT of another class
#: (the recall criterion: "well localised regardless of category").
CROSS_CLASS_IOU = 0.15
#: Default 3D IoU at which boxes are marked TP / FP / FN in tables and the inspector (one of Omni3D's 10 thresholds).
STATUS_IOU = 0.25

#: The headline numbers of one (dataset, run, view), in display order: Omni3D's AP3D summary (percent) and
#: 3D class-agnostic recall at ``RECALL_IOU`` (fraction).
AP_KEYS = ("AP3D", "AP3D@15", "AP3D@25", "AP3D@50", "AP3D-N", "AP3D-M", "AP3D-F")
RECALL_KEY = f"recall3D@{round(RECALL_IOU * 100)}"
SUMMARY_KEYS = (*AP_KEYS, RECALL_KEY)
