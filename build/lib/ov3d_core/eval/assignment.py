"""One-to-one assignment maximising total IoU over sparse candidate pairs, solved per connected component of the
pair graph (pairs never span images, so each solve is one image or smaller). Used by the Hungarian confusion matrix
(OV3D-Bench) and by the Hungarian variant of class-agnostic recall."""

from __future__ import annotations

import numpy as np

__all__ = ["hungarian_matches"]


def hungarian_matches(gt: np.ndarray, pred: np.ndarray, iou: np.ndarray) -> np.ndarray:
    """One-to-one assignment maximising total IoU over candidate edges.

    Args:
        gt: ``(E,)`` int64 GT rows of the candidate edges (every edge already passes the threshold, IoU > 0).
        pred: ``(E,)`` int64 prediction rows.
        iou: ``(E,)`` float64 edge weights.

    Returns:
        ``(E,)`` bool: which edges are in the assignment.
    """
    from scipy.optimize import linear_sum_assignment
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    e = len(gt)
    chosen = np.zeros(e, bool)
    if e == 0:
        return chosen
    ug, gi = np.unique(gt, return_inverse=True)
    up, pi = np.unique(pred, return_inverse=True)
    ng, n = len(ug), len(ug) + len(up)
    graph = coo_matrix((np.ones(e), (gi, ng + pi)), shape=(n, n))
    _, comp = connected_components(graph, directed=False)
    edge_comp = comp[gi]
    size = np.bincount(edge_comp, minlength=comp.max() + 1)
    chosen[size[edge_comp] == 1] = True  # isolated edge: its own optimum
    multi = np.flatnonzero(size[edge_comp] > 1)
    if len(multi) == 0:
        return chosen
    multi = multi[np.argsort(edge_comp[multi], kind="stable")]
    bounds = np.flatnonzero(np.diff(edge_comp[multi])) + 1
    for block in np.split(multi, bounds):  # one solver call per non-trivial component
        rows, r_inv = np.unique(gi[block], return_inverse=True)
        cols, c_inv = np.unique(pi[block], return_inverse=True)
        weight = np.zeros((len(rows), len(cols)))
        index = np.full((len(rows), len(cols)), -1, np.int64)
        weight[r_inv, c_inv] = iou[block]
        index[r_inv, c_inv] = block
        r, c = linear_sum_assignment(weight, maximize=True)
        picked = index[r, c]
        chosen[picked[picked >= 0]] = True
    return chosen
