"""Calibrated remap acceptance: learn when to trust a remapped label instead of a fixed similarity threshold θ.

For every remapped detection, features (:func:`remap_features`: top-1 similarity, margin to the top-2, detector
score, log box volume or log 2D crop area) and a label "is TP" = matched at 3D IoU >= ``tp_iou`` (0.25) to a GT of
its remapped class by the evaluator's Omni3D greedy matching on *all* remapped detections (before any θ filter;
detections matched to ignored GT are left out of training). Images — not detections — are split into train and
held-out sets (seeded permutation), so no image contributes to both. A standardised logistic regression
(scikit-learn, L2, ``C``) is fitted on the train images. On the held-out images only (GT and detections of train images
are set aside) the result reports mAP_3D for:

- ``fixed_theta``: the caller's fixed rule (``fixed_keep``, e.g. ``RemapResult.keep``) with the view's scores;
- ``calibrated_p``: keep if p >= ``accept`` (0.5), score = p;
- ``calibrated_p_x_score``: keep if p >= ``accept``, score = p × the view's score;
- ``no_filter``: every remapped detection with the view's scores (reference).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from ov3d_core.eval.ap import APInputs, APParams, map3d, matches_at
from ov3d_core.eval.labels import LabelView

__all__ = ["remap_features", "split_images", "CalibrationResult", "calibrated_acceptance",
           "calibrated_acceptance_from_remap"]

FEATURES = ("top1", "margin", "det_score", "log_size")


def remap_features(top1, margin, det_score, size) -> pd.DataFrame:
    """Feature table ``(n_pred, 4)``: top-1 similarity, margin to the top-2, detector score and ``log(size)`` where
    ``size`` is the box volume (w·h·l) or the 2D crop area (clipped at 1e-12 before the log)."""
    size = np.asarray(size, np.float64)
    with np.errstate(invalid="ignore"):
        log_size = np.log(np.clip(size, 1e-12, None))
    return pd.DataFrame({"top1": np.asarray(top1, np.float64), "margin": np.asarray(margin, np.float64),
                         "det_score": np.asarray(det_score, np.float64), "log_size": log_size})


def split_images(images, test_fraction: float = 0.3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Seeded split of the unique image ids into (train, test); both non-empty when there are >= 2 images."""
    uniq = np.unique(np.asarray(images))
    if len(uniq) < 2:
        raise ValueError(f"split_images: expected at least 2 images, got {len(uniq)}")
    if not 0 < test_fraction < 1:
        raise ValueError(f"split_images: expected 0 < test_fraction < 1, got {test_fraction}")
    perm = np.random.default_rng(seed).permutation(len(uniq))
    n_test = int(np.clip(round(test_fraction * len(uniq)), 1, len(uniq) - 1))
    return np.sort(uniq[perm[n_test:]]), np.sort(uniq[perm[:n_test]])


@dataclass(frozen=True, eq=False)
class CalibrationResult:
    """Calibrated vs fixed-θ acceptance on held-out images.

    Attributes:
        table: ``rule``, ``AP3D`` (percent, held-out images), ``n_kept`` (held-out detections kept).
        coefficients: ``feature``, ``coef`` (standardised features), ``coef_raw`` (per raw unit); plus a row
            ``intercept`` (standardised model's intercept in ``coef``, the raw-scale intercept in ``coef_raw``).
        proba: ``(n_pred,)`` P(TP) for every detection (NaN where the features are not finite or not remapped).
        is_tp: ``(n_pred,)`` float 1/0 training label, NaN where not used.
        train_images, test_images: the image split.
        n_train, n_train_tp: training detections and positives.
        model: the fitted scikit-learn pipeline.
        held_out: ``(n_pred,)`` bool, detections of the held-out images.
    """

    table: pd.DataFrame
    coefficients: pd.DataFrame
    proba: np.ndarray
    is_tp: np.ndarray
    train_images: np.ndarray
    test_images: np.ndarray
    n_train: int
    n_train_tp: int
    model: object
    held_out: np.ndarray | None = None

    def reliability(self, n_bins: int = 10) -> pd.DataFrame:
        """Reliability curve on the held-out detections: per equal-width bin of P(TP), the mean predicted P(TP), the
        observed TP fraction and the count (bins without a detection are left out)."""
        ok = np.isfinite(self.proba) & np.isfinite(self.is_tp)
        if self.held_out is not None:
            ok &= self.held_out
        p, y = self.proba[ok], self.is_tp[ok]
        edges = np.linspace(0.0, 1.0, int(n_bins) + 1)
        b = np.clip(np.searchsorted(edges, p, side="right") - 1, 0, int(n_bins) - 1)
        rows = [{"bin_lo": edges[k], "bin_hi": edges[k + 1], "mean_p": float(p[b == k].mean()),
                 "observed_tp": float(y[b == k].mean()), "n": int((b == k).sum())}
                for k in range(int(n_bins)) if (b == k).any()]
        return pd.DataFrame(rows, columns=["bin_lo", "bin_hi", "mean_p", "observed_tp", "n"])

    def ap(self, rule: str) -> float:
        return float(self.table.set_index("rule").loc[rule, "AP3D"])


def calibrated_acceptance(inputs: APInputs, features, fixed_keep, *, n_categories: int, test_fraction: float = 0.3,
                          seed: int = 0, tp_iou: float = 0.25, accept: float = 0.5, C: float = 1.0,
                          params: APParams | None = None) -> CalibrationResult:
    """Fit a logistic acceptance model on train images and compare it with the fixed-θ rule on held-out images.

    Args:
        inputs: evaluation arrays of the remapped run *before* the θ filter: ``pred_label`` = remapped top-1 (−1 where
            no remap), ``pred_score`` = the score the fixed rule uses; ``pair_iou`` = 3D IoU.
        features: ``(n_pred, F)`` array or DataFrame (e.g. :func:`remap_features`).
        fixed_keep: ``(n_pred,)`` bool, the fixed-θ acceptance (e.g. ``RemapResult.keep``).
        n_categories: vocabulary size.
        test_fraction, seed: image split.
        tp_iou: IoU threshold of the TP label.
        accept: probability threshold of the calibrated rule.
        C: inverse L2 strength of the logistic regression.
        params: AP parameters (default Omni3D 3D).
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    params = params or APParams()
    K = int(n_categories)
    if isinstance(features, pd.DataFrame):
        names = [str(c) for c in features.columns]
        X = features.to_numpy(np.float64)
    else:
        X = np.asarray(features, np.float64)
        X = X.reshape(len(X), -1)
        names = [f"f{i}" for i in range(X.shape[1])]
    n_pred = len(inputs.pred_label)
    if len(X) != n_pred:
        raise ValueError(f"calibrated_acceptance: expected {n_pred} feature rows, got {len(X)}")
    fixed_keep = np.asarray(fixed_keep, bool).reshape(-1)
    if len(fixed_keep) != n_pred:
        raise ValueError(f"calibrated_acceptance: expected fixed_keep of length {n_pred}, got {len(fixed_keep)}")
    label = np.asarray(inputs.pred_label, np.int64)
    score = np.asarray(inputs.pred_score, np.float64)
    pred_image = np.asarray(inputs.pred_image)
    gt_image = np.asarray(inputs.gt_image)

    m = matches_at(inputs, tp_iou, K, params)
    finite = np.isfinite(X).all(axis=1)
    usable = m.dt_evaluated & ~m.dt_ignore[0] & finite & (label >= 0)
    tp = m.dt_evaluated & (m.dt_match[0] >= 0) & ~m.dt_ignore[0]
    train_img, test_img = split_images(np.concatenate([gt_image.reshape(-1), pred_image.reshape(-1)]),
                                       test_fraction, seed)
    p_test = np.isin(pred_image, test_img)
    g_test = np.isin(gt_image, test_img)
    train = usable & ~p_test
    y = tp[train].astype(int)
    if len(np.unique(y)) < 2:
        raise ValueError(f"calibrated_acceptance: the train images hold {int(y.sum())} TP and {int((1 - y).sum())} "
                         "FP detections; both are needed to fit the acceptance model")
    model = make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=1000))
    model.fit(X[train], y)
    proba = np.full(n_pred, np.nan)
    ok = finite & (label >= 0)
    if ok.any():
        proba[ok] = model.predict_proba(X[ok])[:, 1]
    is_tp = np.full(n_pred, np.nan)
    is_tp[usable] = tp[usable].astype(float)

    gl_test = np.where(g_test, np.asarray(inputs.gt_label, np.int64), -1)
    base_lab = np.where(p_test, label, -1)

    def ap_of(keep, sc):
        lab = np.where(keep, base_lab, -1)
        mod = replace(inputs, gt_label=gl_test, pred_label=lab, pred_score=sc)
        return map3d(mod, n_categories=K, params=params), int((lab >= 0).sum())

    acc = np.nan_to_num(proba, nan=-1.0) >= accept
    rows = []
    for rule, keep, sc in (("fixed_theta", fixed_keep, score),
                           ("calibrated_p", acc, np.nan_to_num(proba, nan=0.0)),
                           ("calibrated_p_x_score", acc, np.nan_to_num(proba, nan=0.0) * score),
                           ("no_filter", np.ones(n_pred, bool), score)):
        ap, n = ap_of(keep, sc)
        rows.append({"rule": rule, "AP3D": ap, "n_kept": n})
    scaler, lr = model[0], model[-1]
    coef = lr.coef_[0]
    scale = np.where(scaler.scale_ > 0, scaler.scale_, 1.0)
    coef_raw = coef / scale
    icpt_raw = float(lr.intercept_[0] - np.sum(coef * scaler.mean_ / scale))
    coefficients = pd.DataFrame({"feature": names + ["intercept"], "coef": np.r_[coef, lr.intercept_[0]],
                                 "coef_raw": np.r_[coef_raw, icpt_raw]})
    return CalibrationResult(table=pd.DataFrame(rows), coefficients=coefficients, proba=proba, is_tp=is_tp,
                             train_images=train_img, test_images=test_img, n_train=int(train.sum()),
                             n_train_tp=int(y.sum()), model=model, held_out=p_test)


def calibrated_acceptance_from_remap(gt, pred, pairs, remap, vocabulary, *, size: str = "volume",
                                     params: APParams | None = None, proximity: bool | None = None,
                                     **kw) -> CalibrationResult:
    """:func:`calibrated_acceptance` for a remapped run: GT / prediction ``BoxSet``s, their cached ``Pairs`` and a
    ``RemapResult`` (label = top-1 before θ, score = fused score, keep = the fixed-θ rule, top1, margin).

    ``size`` = "volume" (w·h·l of the predicted box) or "area" (2D crop area). Other keywords go to
    :func:`calibrated_acceptance`."""
    params = params or APParams()
    view = LabelView(np.asarray(remap.label, np.int64), np.nan_to_num(np.asarray(remap.score, np.float64)),
                     np.ones(len(pred), bool), tuple(vocabulary))
    inputs = APInputs.from_view(gt, pred, pairs, view, params, proximity=proximity)
    if size == "volume":
        sz = np.prod(pred.dims, axis=1)
    elif size == "area":
        sz = pred.box2d_area
    else:
        raise ValueError(f"size: expected 'volume' or 'area', got {size!r}")
    feats = remap_features(remap.top1, remap.margin, pred.score, sz)
    return calibrated_acceptance(inputs, feats, np.asarray(remap.keep, bool), n_categories=len(vocabulary),
                                 params=params, **kw)
