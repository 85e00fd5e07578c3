"""Runtime (OV3D-Bench Table 10) and the accuracy-latency plot: pure functions of declared and measured timings.

Table 10 splits each pipeline's time per image into a **semantic stage** (GroundingDINO for OVMono3D / DetAny3D,
the SigLIP crop encoder of a remapped run) and a **geometry stage** (the 3D detector), and adds them up. Two
sources feed it:

- **declared**: a run's ``runtime:`` entry in the benchmark YAML (``ov3d_core.io.config.DeclaredRuntime``), the
  authors' own numbers (e.g. "paper Table 10").
- **measured**: the encoder timing ``ov3d embed`` keeps with the cached crop embeddings of a run
  (``ov3d_core.remap.cache.timing_summary``: reading and cropping the images plus encoding the crops, synchronised
  on CUDA, divided by the dataset's images): :class:`MeasuredStage`. Text prompts are encoded once per template
  and cached, so they are not part of it.

Rules of :func:`runtime_table`:

- A declared run: its stages as declared; ``total_ms`` as declared, else the sum of the stages it declares
  (``total_from`` = "sum"; a closed-vocabulary detector declaring only ``geometry_ms`` has that as its total);
  NaN where nothing is declared.
- A remapped run ``X*`` (``remapped_from[X*] = X``): semantic = the measured stage of ``X*``'s encoder, geometry =
  ``X``'s declared geometry stage (the frozen detector runs unchanged), total = their sum. A missing part leaves
  the total NaN, with a note (``X`` declares no geometry stage, or ``X*`` was not embedded with timing). When the
  two stages come from different devices the note says so: the sum is then not one machine's time.
- ``how``: "declared", "measured" or "declared + measured"; ``semantic_from`` / ``geometry_from`` / ``total_from``
  per number ("declared", "measured", "sum", or "" where there is none).

:func:`accuracy_latency` joins the table with leaderboard rows (AP3D per run) for the scatter of Fig. "accuracy vs
latency"; ``ov3d_core.viz.runtime.accuracy_latency_figure`` draws it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import pandas as pd

__all__ = ["MeasuredStage", "RUNTIME_COLUMNS", "accuracy_latency", "runtime_table"]

RUNTIME_COLUMNS = ("run", "semantic_ms", "geometry_ms", "total_ms", "device", "how", "semantic_from",
                   "geometry_from", "total_from", "images", "source", "note")


@dataclass(frozen=True)
class MeasuredStage:
    """A semantic stage measured by ``ov3d embed`` (one cached crop-embedding entry)."""

    ms_per_image: float
    images: int
    crops: int
    seconds: float
    device: str
    device_name: str = ""
    encoder: str = ""
    batch_size: int | None = None
    cuda_synchronized: bool = False

    @property
    def on_cpu(self) -> bool:
        return not str(self.device).startswith("cuda")

    @property
    def device_label(self) -> str:
        """``cuda:0 (NVIDIA H200)``, or ``cpu (CPU numbers)``."""
        if self.on_cpu:
            return f"{self.device} (CPU numbers)"
        return f"{self.device} ({self.device_name})" if self.device_name else str(self.device)

    @classmethod
    def from_timing(cls, timing: Mapping[str, Any] | None) -> "MeasuredStage | None":
        """From an entry's timing (``EmbeddingStore.timing``); None when it has no ms per image (not annotated with
        the dataset's images, or some chunks were computed without timing)."""
        if not timing or timing.get("ms_per_image") is None:
            return None
        return cls(ms_per_image=float(timing["ms_per_image"]), images=int(timing.get("images") or 0),
                   crops=int(timing.get("crops") or 0), seconds=float(timing.get("seconds") or 0.0),
                   device=str(timing.get("device") or "cpu"), device_name=str(timing.get("device_name") or ""),
                   encoder=str(timing.get("encoder") or ""), batch_size=timing.get("batch_size"),
                   cuda_synchronized=bool(timing.get("cuda_synchronized", False)))

    def describe(self) -> str:
        """One line for the CLI: ms per image, what was timed, where."""
        return (f"{self.ms_per_image:.1f} ms/image over {self.images} images ({self.crops} crops, "
                f"{self.seconds:.2f} s; {self.encoder}, batch {self.batch_size}) on {self.device_label}"
                + ("" if self.on_cpu else (", CUDA-synchronised" if self.cuda_synchronized else "")))


def _num(v) -> float:
    return float("nan") if v is None else float(v)


def _declared_row(run: str, d) -> dict:
    sem, geo, tot = _num(d.semantic_ms), _num(d.geometry_ms), _num(d.total_ms)
    total_from = "declared" if d.total_ms is not None else ""
    if d.total_ms is None and (d.semantic_ms is not None or d.geometry_ms is not None):
        tot = float(np.nansum([sem, geo]))
        total_from = "sum"
    return {"run": run, "semantic_ms": sem, "geometry_ms": geo, "total_ms": tot, "device": d.device or "",
            "how": "declared", "semantic_from": "declared" if d.semantic_ms is not None else "",
            "geometry_from": "declared" if d.geometry_ms is not None else "", "total_from": total_from,
            "images": d.images, "source": d.source or "", "note": ""}


def _remapped_row(run: str, base: str, d, m: MeasuredStage | None) -> dict:
    geo = _num(getattr(d, "geometry_ms", None)) if d is not None else float("nan")
    sem = m.ms_per_image if m is not None else float("nan")
    notes = []
    if m is None:
        notes.append(f"{run} has no measured semantic stage (run `ov3d embed` with the local engine)")
    if not np.isfinite(geo):
        notes.append(f"{base} declares no geometry stage (`runtime: geometry_ms` in the benchmark YAML)")
    devices = [x for x in ((d.device if d is not None else None), (m.device_label if m is not None else None)) if x]
    if m is not None and d is not None and d.device and np.isfinite(geo) and \
            str(d.device).lower() not in f"{m.device} {m.device_name}".lower():
        notes.append(f"stages from different machines: geometry on {d.device}, semantic on {m.device_label}")
    both = np.isfinite(sem) and np.isfinite(geo)
    src = ["semantic: ov3d embed" if m is not None else "",
           f"geometry: {d.source}" if d is not None and d.source and np.isfinite(geo) else ""]
    return {"run": run, "semantic_ms": sem, "geometry_ms": geo, "total_ms": sem + geo if both else float("nan"),
            "device": " + ".join(dict.fromkeys(devices)),
            "how": "declared + measured" if (m is not None and np.isfinite(geo)) else
                   ("measured" if m is not None else ("declared" if np.isfinite(geo) else "")),
            "semantic_from": "measured" if m is not None else "",
            "geometry_from": "declared" if np.isfinite(geo) else "", "total_from": "sum" if both else "",
            "images": m.images if m is not None else None, "source": "; ".join(s for s in src if s),
            "note": "; ".join(notes)}


def runtime_table(declared: Mapping[str, Any], measured: Mapping[str, Any] | None = None,
                  remapped_from: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Table 10: one row per run (module docstring for the rules).

    Args:
        declared: run name -> ``DeclaredRuntime`` (or None: the run declares nothing and gets no row of its own).
        measured: remapped run name (``X*``) -> :class:`MeasuredStage` or an entry's timing dict.
        remapped_from: remapped run name -> the run it was remapped from (``X*`` -> ``X``).

    Returns:
        DataFrame with :data:`RUNTIME_COLUMNS`; a remapped run follows the run it comes from.
    """
    measured = {k: (v if isinstance(v, MeasuredStage) or v is None else MeasuredStage.from_timing(v))
                for k, v in (measured or {}).items()}
    remapped_from = dict(remapped_from or {})
    for star in measured:
        if star not in remapped_from:
            raise ValueError(f"runtime_table: measured stage for {star!r}, which is in no `remapped_from` entry")
    rows: list[dict] = []
    placed: set[str] = set()
    children: dict[str, list[str]] = {}
    for star, base in remapped_from.items():
        children.setdefault(base, []).append(star)
    for run, d in declared.items():
        if d is not None:
            rows.append(_declared_row(run, d))
        for star in children.get(run, ()):
            rows.append(_remapped_row(star, run, d, measured.get(star)))
            placed.add(star)
    for star, base in remapped_from.items():
        if star not in placed:
            rows.append(_remapped_row(star, base, declared.get(base), measured.get(star)))
    df = pd.DataFrame(rows, columns=list(RUNTIME_COLUMNS))
    df["images"] = df["images"].astype("Int64")
    return df


def accuracy_latency(runtime: pd.DataFrame, leaderboard: pd.DataFrame, *, metric: str = "AP3D",
                     run_column: str = "run") -> pd.DataFrame:
    """Scatter data: each run's ``metric`` (from ``leaderboard``: one row per run, e.g. one dataset's rows or the
    pooled ones) against its total ms per image (from :func:`runtime_table`).

    Returns:
        One row per run in either table: ``run``, ``metric``, ``total_ms``, ``device``, ``how``, ``plotted`` (both
        numbers finite) and ``reason`` (why a run is not plotted).
    """
    lb = leaderboard.reset_index() if run_column not in leaderboard.columns else leaderboard
    if run_column not in lb.columns or metric not in lb.columns:
        raise ValueError(f"accuracy_latency: leaderboard needs `{run_column}` and `{metric}` columns")
    dup = lb[run_column][lb[run_column].duplicated()].tolist()
    if dup:
        raise ValueError(f"accuracy_latency: one leaderboard row per run expected (pass one dataset's rows or the "
                         f"pooled ones), got {sorted(set(map(str, dup)))} more than once")
    acc = dict(zip(lb[run_column].astype(str), lb[metric].astype(float)))
    rt = {str(r["run"]): r for _, r in runtime.iterrows()}
    rows = []
    for run in dict.fromkeys([*rt, *acc]):
        a = acc.get(run, float("nan"))
        r = rt.get(run)
        t = float(r["total_ms"]) if r is not None else float("nan")
        reason = ("no leaderboard row" if run not in acc else
                  f"no {metric}" if not np.isfinite(a) else
                  "no runtime" if r is None else "no total ms/image" if not np.isfinite(t) else "")
        rows.append({"run": run, "metric": a, "total_ms": t, "device": r["device"] if r is not None else "",
                     "how": r["how"] if r is not None else "", "plotted": not reason, "reason": reason})
    return pd.DataFrame(rows, columns=["run", "metric", "total_ms", "device", "how", "plotted", "reason"])
