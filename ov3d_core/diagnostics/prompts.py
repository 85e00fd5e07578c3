"""Prompt sensitivity (OV3D-Bench, "Semantic Robustness" and Table 8): mAP_3D by prompt type, the coefficient of
variation across templates, per-class spread, and which detections change their top-1 label between templates.

Inputs are already computed numbers (one mAP_3D per template, per-class AP per template, per-template top-1 labels
per prediction), so the app and the CLI ``report`` share one implementation. Template groups follow the paper:
``underdetailed`` (class name only), ``standard`` (CLIP-style, "a photo of a {name}") and ``overdetailed``
(attribute-rich); other group names are accepted and reported as they are.

Decisions where the paper is silent:

- **CV** = population standard deviation (``ddof=0``) / mean, over every template with a finite mAP_3D (the paper
  calls it sigma/mu across all templates; with a fixed, complete set of templates the population form is the
  descriptive one). NaN when the mean is 0 or fewer than one finite template exists.
- **Group means** are plain means over the group's templates with finite mAP_3D (NaN for an absent group).
- **Drops** are differences of group means in mAP_3D points, positive when the second group is worse:
  ``drop_standard_to_overdetailed = mean(standard) - mean(overdetailed)``.
- **Formulation sensitivity** (Pro-Bench §D, :func:`formulation_sensitivity`): from a table of per-formulation
  per-class AP, the largest ΔmAP across formulations (max − min over the formulations with a finite mAP; NaN with
  fewer than two), the best and worst formulation (ties: the first in input order), and Pro-Bench's two named
  differences, ``original − categorical`` and ``template-wrapped − original``, for the formulations the caller names
  in those roles (NaN for a role not given). A formulation's mAP is the mean of its per-class AP over the classes with
  a finite AP (the Omni3D mean over categories with GT, which are the same for every formulation of one run), unless
  the caller passes the mAP. The per-class largest ΔAP is :class:`ClassPromptSpread`'s ``spread`` (0 for a class with
  one finite template, as it always was). The metric is the
  caller's: Pro-Bench uses mAP.5 (2D); Analysis feeds AP3D. :func:`formulation_type_table` gives one row per Pro-Bench
  prompt type (its categorical / original / wrapped triple).
- **Label flips** compare each template's top-1 label of a prediction with the reference template's. A *flip* is
  a change between two valid labels; a prediction losing its label (code -1: below the remap threshold) is a
  *drop*, one gaining a label is a *gain*. Per-class counts are by the reference label.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

__all__ = ["PROMPT_GROUPS", "PromptSensitivity", "ClassPromptSpread", "LabelFlips", "prompt_sensitivity",
           "per_class_prompt_spread", "label_flips", "coefficient_of_variation", "FORMULATION_ROLES",
           "FormulationSensitivity", "formulation_sensitivity", "formulation_type_table"]

PROMPT_GROUPS = ("underdetailed", "standard", "overdetailed")


def coefficient_of_variation(values: Sequence[float]) -> float:
    """Population std (ddof=0) / mean over the finite values; NaN if none or if the mean is 0.

    >>> round(coefficient_of_variation([10.0, 20.0, 30.0]), 6)
    0.408248
    """
    v = np.asarray(values, np.float64)
    v = v[np.isfinite(v)]
    if len(v) == 0:
        return float("nan")
    mu = v.mean()
    return float(v.std(ddof=0) / mu) if mu != 0 else float("nan")


@dataclass(frozen=True, eq=False)
class PromptSensitivity:
    """mAP_3D per template and its summaries.

    Attributes:
        templates: template ids in input order.
        groups: group of each template.
        ap: ``(T,)`` float64 mAP_3D per template (percent; NaN = not available).
        group_mean: mean mAP_3D per group (``PROMPT_GROUPS`` first, then other groups; NaN for an absent group).
        mean: mean mAP_3D over finite templates.
        std: population std over finite templates.
        cv: ``std / mean``.
    """

    templates: tuple[str, ...]
    groups: tuple[str, ...]
    ap: np.ndarray
    group_mean: dict
    mean: float
    std: float
    cv: float

    def drop(self, from_group: str = "standard", to_group: str = "overdetailed") -> float:
        """``mean(from_group) - mean(to_group)`` in mAP_3D points (positive = ``to_group`` is worse)."""
        return float(self.group_mean.get(from_group, np.nan) - self.group_mean.get(to_group, np.nan))

    @property
    def drop_standard_to_overdetailed(self) -> float:
        return self.drop("standard", "overdetailed")

    @property
    def drop_underdetailed_to_overdetailed(self) -> float:
        return self.drop("underdetailed", "overdetailed")

    @property
    def robustness(self) -> float:
        """``1 - CV`` (the prompt-robustness axis of the paper's Fig. 5)."""
        return 1.0 - self.cv

    @property
    def best_group(self) -> str | None:
        finite = {g: m for g, m in self.group_mean.items() if np.isfinite(m)}
        return max(finite, key=finite.get) if finite else None

    def to_frame(self) -> pd.DataFrame:
        """One row per template: ``template, group, ap``."""
        return pd.DataFrame({"template": list(self.templates), "group": list(self.groups), "ap": self.ap})

    def group_frame(self) -> pd.DataFrame:
        """One row per group: ``group, n_templates, mean_ap, min_ap, max_ap``."""
        df = self.to_frame()
        rows = []
        for g, m in self.group_mean.items():
            vals = df.loc[(df["group"] == g) & np.isfinite(df["ap"]), "ap"]
            rows.append({"group": g, "n_templates": int(len(vals)), "mean_ap": m,
                         "min_ap": float(vals.min()) if len(vals) else np.nan,
                         "max_ap": float(vals.max()) if len(vals) else np.nan})
        return pd.DataFrame(rows, columns=["group", "n_templates", "mean_ap", "min_ap", "max_ap"])

    def to_dict(self) -> dict:
        return {"templates": dict(zip(self.templates, map(float, self.ap))),
                "groups": dict(zip(self.templates, self.groups)), "group_mean": dict(self.group_mean),
                "mean": self.mean, "std": self.std, "cv": self.cv, "robustness": self.robustness,
                "drop_standard_to_overdetailed": self.drop_standard_to_overdetailed,
                "drop_underdetailed_to_overdetailed": self.drop_underdetailed_to_overdetailed,
                "best_group": self.best_group}


def prompt_sensitivity(template_ap: Mapping[str, float], template_group) -> PromptSensitivity:
    """Summaries of mAP_3D across prompt templates.

    Args:
        template_ap: template id -> mAP_3D (percent). NaN marks a template without a result.
        template_group: template id -> group (``underdetailed`` / ``standard`` / ``overdetailed`` or another name),
            or an iterable of ``ov3d_core.remap.templates.Template`` (anything with ``id`` and ``group``).

    Returns:
        A :class:`PromptSensitivity`.

    Raises:
        ValueError: a template has no group.
    """
    if not isinstance(template_group, Mapping):
        template_group = {t.id: t.group for t in template_group}
    templates = tuple(template_ap)
    missing = [t for t in templates if t not in template_group]
    if missing:
        raise ValueError(f"Expected every template to have a group in `template_group`, missing {missing}")
    ap = np.array([float(template_ap[t]) for t in templates], np.float64)
    groups = tuple(str(template_group[t]) for t in templates)
    order = list(PROMPT_GROUPS) + [g for g in dict.fromkeys(groups) if g not in PROMPT_GROUPS]
    g_arr = np.array(groups, dtype=object)
    group_mean = {}
    for g in order:
        vals = ap[(g_arr == g) & np.isfinite(ap)]
        group_mean[g] = float(vals.mean()) if len(vals) else float("nan")
    finite = ap[np.isfinite(ap)]
    mean = float(finite.mean()) if len(finite) else float("nan")
    std = float(finite.std(ddof=0)) if len(finite) else float("nan")
    ap.setflags(write=False)
    return PromptSensitivity(templates=templates, groups=groups, ap=ap, group_mean=group_mean, mean=mean, std=std,
                             cv=coefficient_of_variation(finite))


# ------------------------------------------------------------------------------------------------ per class
@dataclass(frozen=True, eq=False)
class ClassPromptSpread:
    """Per-class AP across templates.

    Attributes:
        table: DataFrame, index = template ids, columns = class names, values = AP (percent, NaN = absent).
    """

    table: pd.DataFrame

    def to_frame(self) -> pd.DataFrame:
        """One row per class: ``class, n_templates, mean_ap, min_ap, max_ap, spread, worst_template,
        best_template, cv``; spread = max - min over templates with finite AP (NaN if none)."""
        t = self.table.astype(np.float64)
        finite = np.isfinite(t.to_numpy())
        has = finite.any(axis=0)
        vals = t.to_numpy()
        lo = np.where(finite, vals, np.inf).min(axis=0)
        hi = np.where(finite, vals, -np.inf).max(axis=0)
        idx = t.index.to_numpy()
        worst = np.where(has, idx[np.where(finite, vals, np.inf).argmin(axis=0)], None)
        best = np.where(has, idx[np.where(finite, vals, -np.inf).argmax(axis=0)], None)
        n = finite.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(has, np.where(finite, vals, 0).sum(axis=0) / np.maximum(n, 1), np.nan)
            var = np.where(finite, (vals - mean) ** 2, 0).sum(axis=0) / np.maximum(n, 1)
            cv = np.where(has & (mean != 0), np.sqrt(var) / mean, np.nan)
        return pd.DataFrame({"class": list(t.columns), "n_templates": n, "mean_ap": mean,
                             "min_ap": np.where(has, lo, np.nan), "max_ap": np.where(has, hi, np.nan),
                             "spread": np.where(has, hi - lo, np.nan), "worst_template": worst,
                             "best_template": best, "cv": cv})

    def to_dict(self) -> dict:
        return {"table": self.table.to_dict(), "per_class": self.to_frame().to_dict(orient="records")}


def per_class_prompt_spread(per_class_ap: Mapping[str, Sequence[float]] | pd.DataFrame,
                            class_names: Sequence[str] | None = None) -> ClassPromptSpread:
    """Per-class AP spread across templates.

    Args:
        per_class_ap: template id -> ``(K,)`` per-class AP (percent, NaN absent), or a DataFrame with one row per
            template and one column per class.
        class_names: the K class names (required with a mapping, ignored with a DataFrame).
    """
    if isinstance(per_class_ap, pd.DataFrame):
        table = per_class_ap.copy()
    else:
        if class_names is None:
            raise ValueError("Expected `class_names` when `per_class_ap` is a mapping")
        rows = {t: np.asarray(v, np.float64) for t, v in per_class_ap.items()}
        bad = {t: v.shape for t, v in rows.items() if v.shape != (len(class_names),)}
        if bad:
            raise ValueError(f"Expected per-class AP of shape ({len(class_names)},) per template, got {bad}")
        table = pd.DataFrame.from_dict(rows, orient="index", columns=list(class_names))
    table.index.name = "template"
    return ClassPromptSpread(table=table)


# ------------------------------------------------------------------------------- formulations (Pro-Bench)
#: Pro-Bench's three target-preserving formulations of a query: the class-level noun phrase, the free-form query,
#: and the query wrapped in "a photo of ...".
FORMULATION_ROLES = ("categorical", "original", "wrapped")


def _finite_argext(values: np.ndarray, largest: bool) -> int | None:
    finite = np.isfinite(values)
    if not finite.any():
        return None
    v = np.where(finite, values, -np.inf if largest else np.inf)
    return int(np.argmax(v) if largest else np.argmin(v))  # first of equal values


@dataclass(frozen=True, eq=False)
class FormulationSensitivity:
    """mAP across prompt formulations of one run, and per class (Pro-Bench's prompt sensitivity).

    Attributes:
        formulations: formulation (template) ids in input order.
        map: ``(F,)`` mAP per formulation (percent; NaN = not available).
        roles: role (``categorical`` / ``original`` / ``wrapped``) -> formulation id, for the roles given.
        spread: the per-class table (:class:`ClassPromptSpread`).
    """

    formulations: tuple[str, ...]
    map: np.ndarray
    roles: dict
    spread: ClassPromptSpread

    def _map_of(self, role: str) -> float:
        f = self.roles.get(role)
        return float(self.map[self.formulations.index(f)]) if f is not None else float("nan")

    @property
    def max_delta(self) -> float:
        """max − min of mAP over the formulations with a finite mAP (NaN with fewer than two)."""
        v = self.map[np.isfinite(self.map)]
        return float(v.max() - v.min()) if v.size >= 2 else float("nan")

    @property
    def best_formulation(self) -> str | None:
        i = _finite_argext(self.map, True)
        return None if i is None else self.formulations[i]

    @property
    def worst_formulation(self) -> str | None:
        i = _finite_argext(self.map, False)
        return None if i is None else self.formulations[i]

    @property
    def delta_original_minus_categorical(self) -> float:
        """mAP(original) − mAP(categorical), percent points (negative: the free-form query is worse)."""
        return self._map_of("original") - self._map_of("categorical")

    @property
    def delta_wrapped_minus_original(self) -> float:
        """mAP(template-wrapped) − mAP(original), percent points."""
        return self._map_of("wrapped") - self._map_of("original")

    def summary(self) -> dict:
        """``max_delta``, ``best_formulation``, ``best_mAP``, ``worst_formulation``, ``worst_mAP``,
        ``delta_original_minus_categorical``, ``delta_wrapped_minus_original``, ``n_formulations`` (finite)."""
        b, w = _finite_argext(self.map, True), _finite_argext(self.map, False)
        return {"max_delta": self.max_delta, "best_formulation": self.best_formulation,
                "best_mAP": float(self.map[b]) if b is not None else float("nan"),
                "worst_formulation": self.worst_formulation,
                "worst_mAP": float(self.map[w]) if w is not None else float("nan"),
                "delta_original_minus_categorical": self.delta_original_minus_categorical,
                "delta_wrapped_minus_original": self.delta_wrapped_minus_original,
                "n_formulations": int(np.isfinite(self.map).sum())}

    def to_frame(self) -> pd.DataFrame:
        """One row per formulation: ``formulation``, ``role`` (or None), ``mAP``, ``delta_vs_best``."""
        role_of = {f: r for r, f in self.roles.items()}
        best = np.nanmax(self.map) if np.isfinite(self.map).any() else np.nan
        return pd.DataFrame({"formulation": list(self.formulations),
                             "role": pd.Series([role_of.get(f) for f in self.formulations], dtype=object),
                             "mAP": self.map,
                             "delta_vs_best": self.map - best})

    def per_class(self) -> pd.DataFrame:
        """:meth:`ClassPromptSpread.to_frame` (``spread`` = the class's largest ΔAP across formulations) plus
        ``delta_original_minus_categorical`` and ``delta_wrapped_minus_original`` per class (NaN where a role is
        not given or the class has no AP)."""
        out = self.spread.to_frame()
        t = self.spread.table.astype(np.float64)

        def row(role):
            f = self.roles.get(role)
            return t.loc[f].to_numpy() if f is not None else np.full(t.shape[1], np.nan)

        out["delta_original_minus_categorical"] = row("original") - row("categorical")
        out["delta_wrapped_minus_original"] = row("wrapped") - row("original")
        return out

    def to_dict(self) -> dict:
        return {"formulations": dict(zip(self.formulations, map(float, self.map))), "roles": dict(self.roles),
                **self.summary()}


def formulation_sensitivity(per_class_ap: Mapping[str, Sequence[float]] | pd.DataFrame,
                            formulation_map: Mapping[str, float] | None = None, *,
                            class_names: Sequence[str] | None = None, categorical: str | None = None,
                            original: str | None = None, wrapped: str | None = None) -> FormulationSensitivity:
    """Pro-Bench prompt sensitivity of one run (module docstring).

    Args:
        per_class_ap: formulation id -> ``(K,)`` per-class AP (percent, NaN = class without GT), or a DataFrame with
            one row per formulation and one column per class (as :func:`per_class_prompt_spread` takes).
        formulation_map: formulation id -> mAP (percent); default: the mean of each row's finite per-class AP.
            Its keys must be the table's formulations.
        class_names: the K class names (required with a mapping).
        categorical, original, wrapped: the formulation ids that play Pro-Bench's roles (each optional).

    Raises:
        ValueError: a role names a formulation not in the table, or ``formulation_map`` has other keys.
    """
    spread = per_class_prompt_spread(per_class_ap, class_names)
    t = spread.table.astype(np.float64)
    formulations = tuple(str(f) for f in t.index)
    if formulation_map is None:
        vals = t.to_numpy()
        fin = np.isfinite(vals)
        with np.errstate(invalid="ignore", divide="ignore"):
            m = np.where(fin.any(axis=1), np.where(fin, vals, 0).sum(axis=1) / np.maximum(fin.sum(axis=1), 1),
                         np.nan)
    else:
        if set(map(str, formulation_map)) != set(formulations):
            raise ValueError(f"Expected `formulation_map` to have the formulations {list(formulations)}, got "
                             f"{list(formulation_map)}")
        fm = {str(k): float(v) for k, v in formulation_map.items()}
        m = np.array([fm[f] for f in formulations], np.float64)
    roles = {}
    for role, f in (("categorical", categorical), ("original", original), ("wrapped", wrapped)):
        if f is None:
            continue
        if str(f) not in formulations:
            raise ValueError(f"Expected the {role} formulation to be one of {list(formulations)}, got {f!r}")
        roles[role] = str(f)
    m.setflags(write=False)
    return FormulationSensitivity(formulations=formulations, map=m, roles=roles, spread=spread)


def formulation_type_table(formulation_map: Mapping[str, float],
                           role_sets: Mapping[str, Mapping[str, str]]) -> pd.DataFrame:
    """One row per prompt type of its (categorical, original, wrapped) triple of formulations.

    Args:
        formulation_map: formulation id -> mAP (percent; NaN = not scored).
        role_sets: prompt type -> {role: formulation id} (e.g. ``templates.probench_roles()``); a formulation absent
            from ``formulation_map`` (e.g. not supported by the encoder) counts as NaN.

    Returns:
        ``type``, ``categorical``, ``original``, ``wrapped`` (mAP), ``delta_original_minus_categorical``,
        ``delta_wrapped_minus_original``, ``max_delta`` (over the finite ones of the three) and ``best_formulation``
        (None and NaN when fewer than two of the three have an mAP: a type whose original is not scored has no
        sensitivity to report).
    """
    rows = []
    for ptype, roles in role_sets.items():
        ids = {r: roles.get(r) for r in FORMULATION_ROLES}
        val = {r: float(formulation_map.get(f, np.nan)) if f is not None else float("nan") for r, f in ids.items()}
        v = np.array([val[r] for r in FORMULATION_ROLES])
        fin = v[np.isfinite(v)]
        i = _finite_argext(v, True) if fin.size >= 2 else None
        rows.append({"type": ptype, **val, "delta_original_minus_categorical": val["original"] - val["categorical"],
                     "delta_wrapped_minus_original": val["wrapped"] - val["original"],
                     "max_delta": float(fin.max() - fin.min()) if fin.size >= 2 else float("nan"),
                     "best_formulation": None if i is None else ids[FORMULATION_ROLES[i]]})
    out = pd.DataFrame(rows, columns=["type", *FORMULATION_ROLES, "delta_original_minus_categorical",
                                      "delta_wrapped_minus_original", "max_delta", "best_formulation"])
    out["best_formulation"] = pd.Series([r["best_formulation"] for r in rows], dtype=object)  # None stays None
    return out


# ---------------------------------------------------------------------------------------------- label flips
_EVENT_COLUMNS = ["pred_row", "template", "kind", "from_code", "to_code", "from_class", "to_class"]


@dataclass(frozen=True, eq=False)
class LabelFlips:
    """Top-1 label changes of each prediction relative to a reference template.

    Attributes:
        reference: the reference template id.
        templates: the compared templates (all but the reference), in input order.
        class_names: the vocabulary the codes refer to.
        ref_label: ``(N,)`` int64 reference labels (-1 = no label).
        events: one row per (prediction, template) whose label differs from the reference: ``pred_row, template,
            kind ("flip" | "drop" | "gain"), from_code, to_code, from_class, to_class``.
    """

    reference: str
    templates: tuple[str, ...]
    class_names: tuple[str, ...]
    ref_label: np.ndarray
    events: pd.DataFrame

    def flips(self) -> pd.DataFrame:
        """Only the label-to-label changes."""
        return self.events[self.events["kind"] == "flip"].reset_index(drop=True)

    def per_class(self) -> pd.DataFrame:
        """One row per class (by reference label): ``class, n_predictions, n_flips, n_flipped_predictions,
        flip_rate, n_drops``; flip_rate = flipped predictions / predictions (NaN when the class has none)."""
        k = len(self.class_names)
        valid = self.ref_label >= 0
        n_pred = np.bincount(self.ref_label[valid], minlength=k)
        ev = self.events
        fl = ev[ev["kind"] == "flip"]
        n_flips = np.bincount(fl["from_code"].to_numpy(np.int64), minlength=k)
        uniq = fl.drop_duplicates("pred_row")
        n_flipped = np.bincount(uniq["from_code"].to_numpy(np.int64), minlength=k)
        n_drops = np.bincount(ev.loc[ev["kind"] == "drop", "from_code"].to_numpy(np.int64), minlength=k)
        with np.errstate(invalid="ignore", divide="ignore"):
            rate = np.where(n_pred > 0, n_flipped / np.maximum(n_pred, 1), np.nan)
        return pd.DataFrame({"class": list(self.class_names), "n_predictions": n_pred, "n_flips": n_flips,
                             "n_flipped_predictions": n_flipped, "flip_rate": rate, "n_drops": n_drops})

    def per_prediction(self) -> pd.DataFrame:
        """Predictions with at least one flip: ``pred_row, ref_class, n_flips, templates`` (tuple of template ids
        at which the label flips, in template order)."""
        fl = self.flips()
        if fl.empty:
            return pd.DataFrame({"pred_row": pd.Series([], dtype=np.int64), "ref_class": [], "n_flips": [],
                                 "templates": []})
        grouped = fl.groupby("pred_row", sort=True)
        out = grouped.agg(ref_class=("from_class", "first"), n_flips=("template", "size"),
                          templates=("template", tuple)).reset_index()
        return out

    def to_frame(self) -> pd.DataFrame:
        return self.per_class()

    def to_dict(self) -> dict:
        return {"reference": self.reference, "templates": list(self.templates),
                "per_class": self.per_class().to_dict(orient="records"),
                "n_flips": int((self.events["kind"] == "flip").sum())}


def _codes(labels, class_names: Sequence[str]) -> np.ndarray:
    arr = np.asarray(labels)
    if arr.dtype.kind in "OUS":
        return pd.Categorical(arr, categories=list(class_names)).codes.astype(np.int64)
    return arr.astype(np.int64)


def label_flips(top1: Mapping[str, Sequence], reference: str, class_names: Sequence[str], *,
                keep: np.ndarray | None = None) -> LabelFlips:
    """Which detections change their top-1 label, and at which templates, relative to ``reference``.

    Args:
        top1: template id -> ``(N,)`` top-1 label of every prediction under that template: int codes into
            ``class_names`` (-1 = no label) or class names (unknown names/None = no label).
        reference: the reference template id (a key of ``top1``).
        class_names: the vocabulary.
        keep: optional ``(N,)`` bool; only these predictions are compared.

    Returns:
        A :class:`LabelFlips`.
    """
    if reference not in top1:
        raise ValueError(f"Expected `reference` to be one of the templates {list(top1)}, got {reference!r}")
    ref = _codes(top1[reference], class_names)
    others = tuple(t for t in top1 if t != reference)
    n = len(ref)
    mat = np.stack([_codes(top1[t], class_names) for t in others]) if others else np.zeros((0, n), np.int64)
    if mat.shape[1:] != (n,):
        raise ValueError(f"Expected every template's labels to have shape ({n},), got {mat.shape[1:]}")
    sel = np.ones(n, bool) if keep is None else np.asarray(keep, bool)
    diff = (mat != ref[None, :]) & sel[None, :]
    t_idx, p_idx = np.nonzero(diff)
    order = np.lexsort((t_idx, p_idx))  # by prediction, then template order
    t_idx, p_idx = t_idx[order], p_idx[order]
    frm, to = ref[p_idx], mat[t_idx, p_idx]
    kind = np.where((frm >= 0) & (to >= 0), "flip", np.where(frm >= 0, "drop", "gain"))
    names = np.array(list(class_names) + [None], dtype=object)  # index -1 -> None
    events = pd.DataFrame({"pred_row": p_idx.astype(np.int64), "template": np.array(others, dtype=object)[t_idx]
                           if len(t_idx) else np.zeros(0, object), "kind": kind, "from_code": frm, "to_code": to,
                           "from_class": names[frm], "to_class": names[to]}, columns=_EVENT_COLUMNS)
    ref_masked = np.where(sel, ref, -1)
    ref_masked.setflags(write=False)
    return LabelFlips(reference=reference, templates=others, class_names=tuple(class_names), ref_label=ref_masked,
                      events=events)
