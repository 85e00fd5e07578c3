"""The front door: every number of the product is composed here, once, from a frozen :class:`View`.

``Analysis`` wraps a loaded :class:`~ov3d_core.benchmark.Benchmark` (files, lazily parsed; geometry cached on disk)
and answers one question per method for a ``View`` — which dataset, which run, under which protocol, score threshold,
TP/FP IoU, optional SigLIP remapping, class subset and centre-distance mode. The app (through ``ov3d_app.cache``), the
CLI (``evaluate``, ``report``, ``remap``, ...) and notebooks call the same methods, so a number cannot differ between
them; ``ov3d_core.report`` and ``ov3d_core.commands`` only arrange and write what these methods return.

Layout (engine below diagnostics below analysis below surfaces; nothing here is imported by the modules below)::

    view.py         View, RemapSpec, their checks and names
    recipe.py       the view recipe (label view), the score, and ViewContext (dataset, run, pairs, labels)
    tables.py       summaries, per-category AP, statuses, leaderboard, pooled rows, Omni3D subset means, transfer,
                    per-box details, PR curves
    diagnostics.py  confusion (fine, super, pooled, per class), protocol comparison, class splits, TIDE, oracles,
                    centre-distance AP / ODS, semantic confusion
    prompts.py      remapping, template tables (local or Ray), prompt sensitivity, flips, PCR / PLC, FG-OVD,
                    calibration
    stats.py        bootstrap intervals, paired tests, tiers, failure mining, the one-object view
    sweep.py        template / theta sweeps (local or Ray tasks)
    warmup.py       compiles every numba kernel a user can reach (``python -m ov3d_core.analysis.warmup``)
    core.py         the Analysis object (one memo, ``ov3d_core.memo.Memo``)

Results are memoised per ``View`` (one computation per key even when many app sessions ask at once). Units: AP-like
numbers in percent (0-100), recall, shares and ratios as fractions (0-1) (:mod:`ov3d_core.eval.constants`).

Notebook use::

    from ov3d_core import Analysis
    a = Analysis.from_files(gt=["SUNRGBD_test.json"], predictions=["omni_instances_results.json"])
    a.per_category(a.view())                       # DataFrame: category, AP3D (percent), n_gt, n_pred, ...
"""

from ov3d_core.analysis.core import Analysis
from ov3d_core.analysis.view import (DEFAULT_TEMPLATES, DISTANCE_MODES, LEADERBOARD_COLUMNS, MINING_KINDS, RemapSpec,
                                     RunFailure, View)

__all__ = ["Analysis", "View", "RemapSpec", "RunFailure", "DISTANCE_MODES", "DEFAULT_TEMPLATES", "MINING_KINDS",
           "LEADERBOARD_COLUMNS"]
