"""Domain transfer (OV3D-Bench, "Domain Generalization", Tables 4-5) and the three-axis breakdown of Fig. 5.

Pure table logic over numbers computed elsewhere: one row per (run, dataset) with mAP_3D (percent) and 3D
class-agnostic recall (fraction). A run is *in-domain* on a dataset it was trained on (``trained_on``), else
*out-of-domain*. As in the paper, cross-domain comparisons stay within one environment (indoor <-> indoor,
outdoor <-> outdoor), read from a per-dataset attribute (``Dataset.environment``).

Decisions where the paper is silent:

- **Per-run ratio** (``per_run``): for each run and environment, ``mean(out-of-domain) / mean(in-domain)`` over
  the run's datasets of that environment (a ratio of means, robust to a near-zero single dataset). NaN when the
  run has no in-domain or no out-of-domain dataset in that environment, or the in-domain mean is 0.
- **Per-dataset pairs** (``pairs``): on each dataset, every (in-domain run, out-of-domain run) pair where the
  out-of-domain run was trained on at least one dataset of the same environment (a run trained only outdoors is
  not a fair indoor transfer; unknown environments are left out). ratio = out / in.
- Datasets without an environment appear in ``table`` but in no ratio.
- **Fig. 5 axes** (:func:`three_axis_breakdown`): geometric = mean recall, semantic = mean mAP_3D over the
  run's datasets (pass ``datasets`` to compare runs on a common set); prompt robustness = 1 - CV; cross-domain =
  mean over environments of the per-run mAP_3D ratio.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

__all__ = ["TransferTable", "AxisBreakdown", "domain_transfer", "three_axis_breakdown"]

_TABLE_COLUMNS = ["run", "dataset", "environment", "in_domain", "same_environment", "map3d", "recall"]


def _safe_ratio(num, den):
    num, den = np.asarray(num, np.float64), np.asarray(den, np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(np.isfinite(num) & np.isfinite(den) & (den != 0), num / np.where(den == 0, 1, den), np.nan)


@dataclass(frozen=True, eq=False)
class TransferTable:
    """In/out-of-domain numbers and ratios.

    Attributes:
        table: one row per (run, dataset): ``run, dataset, environment, in_domain, same_environment, map3d,
            recall``; ``same_environment``: the run was trained on data of this dataset's environment (None if
            unknown).
        per_run: one row per (run, environment): ``run, environment, n_in, n_out, map3d_in, map3d_out,
            map3d_ratio, recall_in, recall_out, recall_ratio``.
        pairs: one row per (dataset, in-domain run, out-of-domain run): ``dataset, environment, in_run, out_run,
            map3d_in, map3d_out, map3d_ratio, recall_in, recall_out, recall_ratio, favours_in_domain``.
    """

    table: pd.DataFrame
    per_run: pd.DataFrame
    pairs: pd.DataFrame

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def pivot(self, value: str = "map3d") -> pd.DataFrame:
        """Runs x datasets of one value (``map3d`` or ``recall``), as in Tables 2-4."""
        return self.table.pivot(index="run", columns="dataset", values=value)

    def to_dict(self) -> dict:
        return {"table": self.table.to_dict(orient="records"), "per_run": self.per_run.to_dict(orient="records"),
                "pairs": self.pairs.to_dict(orient="records")}


def _normalise_results(results, trained_on, environments) -> pd.DataFrame:
    df = pd.DataFrame(results).copy()
    for col in ("run", "dataset", "map3d"):
        if col not in df.columns:
            raise ValueError(f"Expected `results` to have a `{col}` column, got columns {list(df.columns)}")
    if "recall" not in df.columns:
        df["recall"] = np.nan
    if df.duplicated(["run", "dataset"]).any():
        dup = df.loc[df.duplicated(["run", "dataset"]), ["run", "dataset"]].values.tolist()
        raise ValueError(f"Expected one row per (run, dataset), got duplicates {dup}")
    if trained_on is not None:
        df["in_domain"] = [d in set(trained_on.get(r, ())) for r, d in zip(df["run"], df["dataset"])]
    elif "in_domain" not in df.columns:
        raise ValueError("Expected `trained_on` or an `in_domain` column in `results`")
    if environments is not None:
        df["environment"] = [environments.get(d) for d in df["dataset"]]
    elif "environment" not in df.columns:
        df["environment"] = None
    df["environment"] = df["environment"].astype(object).where(df["environment"].notna(), None)
    df["in_domain"] = df["in_domain"].astype(bool)
    df["map3d"] = df["map3d"].astype(np.float64)
    df["recall"] = df["recall"].astype(np.float64)
    return df


def _training_envs(df: pd.DataFrame, trained_on, environments) -> dict[str, set]:
    """Environments each run was trained in (from trained_on + environments, else from its in-domain rows)."""
    envs: dict[str, set] = {r: set() for r in df["run"].unique()}
    for r in envs:
        if trained_on is not None and environments is not None:
            envs[r] = {environments.get(d) for d in trained_on.get(r, ())} - {None}
        else:
            rows = df[(df["run"] == r) & df["in_domain"]]
            envs[r] = set(rows["environment"].dropna())
    return envs


def domain_transfer(results: pd.DataFrame | Sequence[Mapping], trained_on: Mapping[str, Sequence[str]] | None = None,
                    environments: Mapping[str, str | None] | None = None) -> TransferTable:
    """In-domain vs out-of-domain mAP_3D and recall, restricted to same-environment comparisons.

    Args:
        results: rows with ``run, dataset, map3d`` (percent) and optionally ``recall`` (fraction); may carry
            ``in_domain`` / ``environment`` columns instead of the two mappings.
        trained_on: run -> datasets it was trained on (``RunSpec.trained_on``).
        environments: dataset -> "indoor" | "outdoor" | None (``Dataset.environment``); should also list training
            datasets that are not evaluated, so the out-of-domain runs' training environment is known.

    Returns:
        A :class:`TransferTable`.
    """
    df = _normalise_results(results, trained_on, environments)
    train_env = _training_envs(df, trained_on, environments)
    df["same_environment"] = [None if e is None else (e in train_env[r])
                              for r, e in zip(df["run"], df["environment"])]
    table = df[_TABLE_COLUMNS + [c for c in df.columns if c not in _TABLE_COLUMNS]].reset_index(drop=True)
    return TransferTable(table=table, per_run=_per_run(table), pairs=_pairs(table))


def _per_run(table: pd.DataFrame) -> pd.DataFrame:
    rows = []
    known = table[table["environment"].notna()]
    for (run, env), g in known.groupby(["run", "environment"], sort=False):
        gi, go = g[g["in_domain"]], g[~g["in_domain"]]
        rec = {"run": run, "environment": env, "n_in": len(gi), "n_out": len(go)}
        for v in ("map3d", "recall"):
            vin = float(gi[v].mean()) if len(gi) else np.nan
            vout = float(go[v].mean()) if len(go) else np.nan
            rec.update({f"{v}_in": vin, f"{v}_out": vout, f"{v}_ratio": float(_safe_ratio(vout, vin))})
        rows.append(rec)
    cols = ["run", "environment", "n_in", "n_out", "map3d_in", "map3d_out", "map3d_ratio", "recall_in",
            "recall_out", "recall_ratio"]
    return pd.DataFrame(rows, columns=cols)


def _pairs(table: pd.DataFrame) -> pd.DataFrame:
    known = table[table["environment"].notna()]
    ins = known[known["in_domain"]]
    outs = known[~known["in_domain"] & (known["same_environment"] == True)]  # noqa: E712 (object column)
    m = ins.merge(outs, on=["dataset", "environment"], suffixes=("_in", "_out"))
    out = pd.DataFrame({"dataset": m["dataset"], "environment": m["environment"], "in_run": m["run_in"],
                        "out_run": m["run_out"], "map3d_in": m["map3d_in"], "map3d_out": m["map3d_out"],
                        "map3d_ratio": _safe_ratio(m["map3d_out"], m["map3d_in"]), "recall_in": m["recall_in"],
                        "recall_out": m["recall_out"], "recall_ratio": _safe_ratio(m["recall_out"], m["recall_in"])})
    out["favours_in_domain"] = out["map3d_in"] > out["map3d_out"]
    return out.reset_index(drop=True)


# ---------------------------------------------------------------------------------------------------- Fig. 5
@dataclass(frozen=True, eq=False)
class AxisBreakdown:
    """One row per run along the paper's axes.

    Attributes:
        table: ``run, n_datasets, geometric (mean recall), semantic (mean mAP_3D), semantic_in_domain,
            semantic_out_of_domain, prompt_robustness (1 - CV), cross_domain_ratio, recall_cross_domain_ratio``.
    """

    table: pd.DataFrame

    AXES = ("geometric", "semantic", "prompt_robustness", "cross_domain_ratio")

    def ranks(self) -> pd.DataFrame:
        """Rank of each run per axis (1 = best, NaN where the value is NaN)."""
        r = self.table.set_index("run")[list(self.AXES)].rank(ascending=False, method="min")
        return r.reset_index()

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def to_dict(self) -> dict:
        return {"table": self.table.to_dict(orient="records"), "ranks": self.ranks().to_dict(orient="records")}


def three_axis_breakdown(transfer: TransferTable, prompt_cv: Mapping[str, float] | None = None, *,
                         datasets: Sequence[str] | None = None) -> AxisBreakdown:
    """The Fig. 5 breakdown: geometric accuracy, semantic accuracy, prompt robustness and cross-domain ratio.

    Args:
        transfer: from :func:`domain_transfer`.
        prompt_cv: run -> CV of mAP_3D across templates (``PromptSensitivity.cv``); missing runs get NaN.
        datasets: restrict the geometric/semantic means to these datasets (default: each run's own datasets; the
            ``n_datasets`` column says how many).
    """
    t = transfer.table
    if datasets is not None:
        t = t[t["dataset"].isin(list(datasets))]
    runs = list(dict.fromkeys(transfer.table["run"]))
    g = t.groupby("run", sort=False)
    agg = pd.DataFrame({"n_datasets": g.size(), "geometric": g["recall"].mean(), "semantic": g["map3d"].mean()})
    sem_in = t[t["in_domain"]].groupby("run")["map3d"].mean()
    sem_out = t[~t["in_domain"]].groupby("run")["map3d"].mean()
    pr = transfer.per_run.groupby("run")
    table = pd.DataFrame({"run": runs})
    table["n_datasets"] = table["run"].map(agg["n_datasets"]).fillna(0).astype(np.int64)
    table["geometric"] = table["run"].map(agg["geometric"]).astype(np.float64)
    table["semantic"] = table["run"].map(agg["semantic"]).astype(np.float64)
    table["semantic_in_domain"] = table["run"].map(sem_in).astype(np.float64)
    table["semantic_out_of_domain"] = table["run"].map(sem_out).astype(np.float64)
    cv = pd.Series(dict(prompt_cv or {}), dtype=np.float64)
    table["prompt_robustness"] = 1.0 - table["run"].map(cv).astype(np.float64)
    table["cross_domain_ratio"] = table["run"].map(pr["map3d_ratio"].mean()).astype(np.float64)
    table["recall_cross_domain_ratio"] = table["run"].map(pr["recall_ratio"].mean()).astype(np.float64)
    return AxisBreakdown(table=table)
