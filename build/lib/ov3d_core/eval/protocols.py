"""Evaluation protocols as label-view filters (OV3D-Bench, "Comparison with the Target-Aware Protocol", Table 7).

- **Dataset-level** (the paper's protocol): every vocabulary class is scored on every image; that is the
  ``LabelView`` as it comes from the run (or the remap). Nothing to filter.
- **Target-aware oracle** (OVMono3D / DetAny3D): each image is prompted only with the classes annotated in it.
  From cached predictions this is approximated by an evaluation-side filter (reference/omni3d_protocol.md §5.3 (b)):
  drop every prediction whose class is not among the GT classes present in its image. True target-aware prompting
  would also change the detector's scores; the filter cannot reproduce that, and says so.

The core AP is unchanged (§5.3): a protocol is a new ``LabelView`` and nothing else.
:func:`ov3d_core.diagnostics.protocol_comparison.compare_protocols` scores the same predictions under both and lists what the oracle removed, flagging the removed predictions that
sit on a GT of another class: the cross-class false positives the oracle hides.

Decisions where the paper and references are silent:

- **Present classes** (§5.3 (a)): the vocabulary classes (``gt_label >= 0``) of the image's GT, ignored GT
  included by default (DetAny3D builds its caption from all GT objects); ``count_ignored_as_present=False``
  uses non-ignored GT only.
- **Images with GT** (§5.3 (c), OVMono3D's oracle files): an image "has GT" when it has at least one GT of the
  vocabulary, ignored or not (OVMono3D drops images "without any annotation" of the evaluated set). In
  :func:`target_aware_view` this flag removes nothing more (an image without vocabulary GT has no present class);
  in :func:`compare_protocols` it is applied to *both* protocols, so the comparison isolates the class filter
  on the same images. No GT needs excluding: such images have no GT of the vocabulary by definition.
- **Cross-class overlap threshold**: 3D IoU >= 0.15 (``CROSS_CLASS_IOU``), the paper's class-agnostic recall
  criterion for "well localised regardless of category": a flagged prediction is exactly one that class-agnostic
  recall would credit to a GT of another class. Other-class GT are vocabulary GT (``gt_label >= 0``) with a label
  different from the prediction's, ignored GT included (their flag is reported).
- **Relative delta** = ``(AP_target_aware - AP_dataset_level) / AP_dataset_level``; NaN when the dataset-level AP
  is 0 or NaN.
"""

from __future__ import annotations

import numpy as np

from ov3d_core.eval.constants import CROSS_CLASS_IOU
from ov3d_core.eval.grouping import dense_image_keys

__all__ = ["CROSS_CLASS_IOU", "present_class_mask", "images_with_gt_mask", "target_aware_view",
           "images_with_gt_view"]



def present_class_mask(pred_image: np.ndarray, pred_label: np.ndarray, gt_image: np.ndarray, gt_label: np.ndarray,
                       gt_ignore: np.ndarray, *, count_ignored_as_present: bool = True) -> np.ndarray:
    """``(n_pred,)`` bool: the prediction's class is among the vocabulary GT classes of its image.

    Args:
        pred_image: ``(n_pred,)`` int64 image ids of the predictions.
        pred_label: ``(n_pred,)`` int64 codes (-1 = not evaluated, never present).
        gt_image: ``(n_gt,)`` int64 image ids of the GT.
        gt_label: ``(n_gt,)`` int64 codes in the same vocabulary (-1 = not in it).
        gt_ignore: ``(n_gt,)`` bool Omni3D ignore flags.
        count_ignored_as_present: ignored GT make their class present (DetAny3D behaviour).

    >>> present_class_mask(np.array([1, 1, 2]), np.array([0, 1, 0]), np.array([1, 2]), np.array([0, 1]),
    ...                    np.array([False, False])).tolist()
    [True, False, False]
    """
    pred_label = np.asarray(pred_label, np.int64)
    gt_label = np.asarray(gt_label, np.int64)
    g = gt_label >= 0
    if not count_ignored_as_present:
        g &= ~np.asarray(gt_ignore, bool)
    k = int(max(gt_label.max(initial=-1), pred_label.max(initial=-1))) + 1
    g_img, p_img, _ = dense_image_keys(np.asarray(gt_image)[g], np.asarray(pred_image))
    present = np.isin(p_img * k + pred_label, g_img * k + gt_label[g])
    return present & (pred_label >= 0)


def images_with_gt_mask(pred_image: np.ndarray, gt_image: np.ndarray, gt_label: np.ndarray) -> np.ndarray:
    """``(n_pred,)`` bool: the prediction's image has at least one GT of the vocabulary (ignored or not)."""
    g_img, p_img, _ = dense_image_keys(np.asarray(gt_image)[np.asarray(gt_label) >= 0], np.asarray(pred_image))
    return np.isin(p_img, g_img)


def target_aware_view(view, pred_image: np.ndarray, gt_image: np.ndarray, gt_label: np.ndarray,
                      gt_ignore: np.ndarray, *, count_ignored_as_present: bool = True,
                      only_images_with_gt: bool = False):
    """The target-aware oracle as a label view: keep only predictions whose class is present in their image.

    Args:
        view: the dataset-level ``LabelView``.
        pred_image: ``(n_pred,)`` int64 image ids of the predictions.
        gt_image: ``(n_gt,)`` int64 GT image ids.
        gt_label: ``(n_gt,)`` int64 GT codes into ``view.vocabulary`` (``labels.gt_codes``).
        gt_ignore: ``(n_gt,)`` bool Omni3D ignore flags.
        count_ignored_as_present: ignored GT make their class present (default True, DetAny3D).
        only_images_with_gt: also drop every prediction of images with no vocabulary GT (OVMono3D's oracle
            files; implied by the class filter, kept for symmetry with :func:`compare_protocols`).

    Returns:
        A new ``LabelView`` with a narrower ``keep``; labels and scores unchanged.
    """
    mask = present_class_mask(pred_image, view.label, gt_image, gt_label, gt_ignore,
                              count_ignored_as_present=count_ignored_as_present)
    if only_images_with_gt:
        mask &= images_with_gt_mask(pred_image, gt_image, gt_label)
    return view.filtered(mask)


def images_with_gt_view(view, pred_image: np.ndarray, gt_image: np.ndarray, gt_label: np.ndarray):
    """The dataset-level view restricted to images with at least one vocabulary GT (§5.3 (c))."""
    return view.filtered(images_with_gt_mask(pred_image, gt_image, gt_label))


# ------------------------------------------------------------------------------------------ removed predictions
