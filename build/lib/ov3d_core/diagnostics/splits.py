"""Class-split sensitivity (OV3D-Bench, "Sensitivity to Class Split", Table 9).

Base/novel protocols report AP on a chosen handful of classes. Re-scoring a frozen model's per-class AP over many
random class subsets shows how much the reported number depends on that choice: mean +- std of the subset mAP over
``n_subsets`` random ``subset_size``-class subsets, with the adverse and favourable bounds (mean AP of the bottom-
and top-``subset_size`` classes).

Decisions where the paper is silent:

- The pool is every class with a finite per-class AP (classes without GT have NaN AP and are left out).
- Subsets are drawn independently (with replacement across subsets, without replacement within one): each row of
  a ``(n_subsets, n_classes)`` matrix of uniform keys from ``numpy.random.default_rng(seed)`` is ranked and its
  ``subset_size`` smallest keys pick the classes, i.e. a uniformly random subset per row.
- ``std`` is the population std (ddof=0) of the subset means.
- Fewer pooled classes than ``subset_size``: every statistic is NaN (no subset exists); equal: every subset is the
  whole pool, std 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

__all__ = ["SplitSensitivity", "class_split_sensitivity", "draw_subsets"]

#: Subsets evaluated per block (bounds memory to about 8 * block * n_classes bytes of keys).
_BLOCK = 8192


def draw_subsets(n_classes: int, subset_size: int, n_subsets: int, rng: np.random.Generator) -> np.ndarray:
    """``(n_subsets, subset_size)`` int64 class indices, each row a uniformly random subset.

    Row r consumes ``rng.random(n_classes)`` (the r-th row of the key matrix), so a loop drawing one row of keys
    at a time from the same generator reproduces it exactly.
    """
    if subset_size > n_classes or subset_size < 1:
        raise ValueError(f"Expected 1 <= `subset_size` <= {n_classes}, got {subset_size}")
    out = np.empty((n_subsets, subset_size), np.int64)
    for start in range(0, n_subsets, _BLOCK):
        stop = min(start + _BLOCK, n_subsets)
        keys = rng.random((stop - start, n_classes))
        if subset_size == n_classes:
            out[start:stop] = np.argsort(keys, axis=1)
        else:
            out[start:stop] = np.argpartition(keys, subset_size - 1, axis=1)[:, :subset_size]
    return out


@dataclass(frozen=True, eq=False)
class SplitSensitivity:
    """Statistics of mAP over random class subsets.

    Attributes:
        subset_size: classes per subset.
        n_subsets: number of subsets drawn.
        seed: generator seed.
        class_names: the pooled classes (finite per-class AP), in input order.
        class_ap: ``(n,)`` their per-class AP (percent).
        subset_means: ``(n_subsets,)`` mAP of each subset (empty when no subset exists).
        mean, std, min, max: over ``subset_means`` (NaN when no subset exists).
        adverse: mean AP of the ``subset_size`` lowest-AP classes.
        favourable: mean AP of the ``subset_size`` highest-AP classes.
        full: mean AP over the whole pool.
    """

    subset_size: int
    n_subsets: int
    seed: int | None
    class_names: tuple[str, ...]
    class_ap: np.ndarray
    subset_means: np.ndarray
    mean: float
    std: float
    min: float
    max: float
    adverse: float
    favourable: float
    full: float

    @property
    def n_classes(self) -> int:
        return len(self.class_names)

    def bottom_classes(self) -> list[str]:
        """The classes behind ``adverse`` (lowest AP first; ties by input order)."""
        order = np.argsort(self.class_ap, kind="stable")[: self.subset_size]
        return [self.class_names[i] for i in order] if self.n_classes >= self.subset_size else []

    def top_classes(self) -> list[str]:
        """The classes behind ``favourable`` (highest AP first; ties by input order)."""
        order = np.argsort(-self.class_ap, kind="stable")[: self.subset_size]
        return [self.class_names[i] for i in order] if self.n_classes >= self.subset_size else []

    def to_dict(self) -> dict:
        return {"subset_size": self.subset_size, "n_subsets": self.n_subsets, "seed": self.seed,
                "n_classes": self.n_classes, "mean": self.mean, "std": self.std, "min": self.min, "max": self.max,
                "adverse": self.adverse, "favourable": self.favourable, "full": self.full,
                "bottom_classes": self.bottom_classes(), "top_classes": self.top_classes()}

    def to_frame(self) -> pd.DataFrame:
        """One row: the summary numbers (for stacking runs/datasets into Table 9)."""
        d = self.to_dict()
        d.pop("bottom_classes"), d.pop("top_classes")
        return pd.DataFrame([d])


def _as_pool(per_class_ap, class_names: Sequence[str] | None) -> tuple[tuple[str, ...], np.ndarray]:
    if isinstance(per_class_ap, pd.Series):
        names, ap = [str(x) for x in per_class_ap.index], per_class_ap.to_numpy(np.float64)
    elif isinstance(per_class_ap, Mapping):
        names, ap = [str(x) for x in per_class_ap], np.array(list(per_class_ap.values()), np.float64)
    else:
        ap = np.asarray(per_class_ap, np.float64).ravel()
        names = list(class_names) if class_names is not None else [str(i) for i in range(len(ap))]
        if len(names) != len(ap):
            raise ValueError(f"Expected {len(ap)} class names, got {len(names)}")
    ok = np.isfinite(ap)
    return tuple(n for n, k in zip(names, ok) if k), ap[ok]


def class_split_sensitivity(per_class_ap: Mapping[str, float] | pd.Series | Sequence[float], *,
                            class_names: Sequence[str] | None = None, subset_size: int = 10,
                            n_subsets: int = 5000, seed: int | None = 0) -> SplitSensitivity:
    """Mean +- std of mAP over random class subsets, with adverse/favourable bounds.

    Args:
        per_class_ap: per-class AP (percent; NaN = absent): a mapping or Series name -> AP, or an array with
            ``class_names``.
        class_names: names for an array input.
        subset_size: classes per subset (paper: 10).
        n_subsets: number of random subsets (paper: 5,000).
        seed: seed of ``numpy.random.default_rng``.

    Returns:
        A :class:`SplitSensitivity`.
    """
    if subset_size < 1 or n_subsets < 1:
        raise ValueError(f"Expected positive `subset_size` and `n_subsets`, got {subset_size}, {n_subsets}")
    names, ap = _as_pool(per_class_ap, class_names)
    ap.setflags(write=False)
    nan = float("nan")
    full = float(ap.mean()) if len(ap) else nan
    if len(ap) < subset_size:
        return SplitSensitivity(subset_size, n_subsets, seed, names, ap, np.zeros(0), nan, nan, nan, nan, nan, nan,
                                full)
    idx = draw_subsets(len(ap), subset_size, n_subsets, np.random.default_rng(seed))
    means = ap[idx].mean(axis=1)
    means.setflags(write=False)
    srt = np.sort(ap)
    return SplitSensitivity(subset_size, n_subsets, seed, names, ap, means, float(means.mean()),
                            float(means.std(ddof=0)), float(means.min()), float(means.max()),
                            float(srt[:subset_size].mean()), float(srt[-subset_size:].mean()), full)
