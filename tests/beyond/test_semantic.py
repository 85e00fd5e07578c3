"""Semantic-distance-weighted confusion cost."""

import numpy as np
import pytest

from ov3d_core.diagnostics.confusion import ConfusionMatrix
from ov3d_core.diagnostics.semantic import embedding_cost, semantic_confusion_cost, tree_cost

NAMES = ("chair", "sofa", "toilet")
# sofa is close to chair in this toy embedding, toilet is far
EMB = np.array([[1.0, 0.2, 0.0], [0.9, 0.4, 0.0], [0.1, 0.0, 1.0]])


def test_sofa_to_chair_cheaper_than_toilet_to_chair():
    for cost in (embedding_cost(EMB), tree_cost(NAMES)):
        assert cost[1, 0] < cost[2, 0]
        assert np.all(np.diag(cost) == 0)
    t = tree_cost(NAMES)
    assert t[1, 0] == 0.5 and t[2, 0] == 1.0
    # two "other" classes are not siblings (the 10-bucket ontology; the paper's maps neither name)
    assert tree_cost(["widget", "gizmo"], "ov3d-explorer-10")[0, 1] == 1.0


def test_weighted_error_by_hand():
    # rows = GT class; sofa GT: 6 matched, 2 called chair; toilet GT: 4 matched, 2 called chair
    counts = np.array([[5, 0, 0], [2, 4, 0], [2, 0, 2]])
    cost = embedding_cost(EMB)
    res = semantic_confusion_cost(counts, cost, NAMES)
    pc = res.per_class.set_index("category")
    assert pc.loc["sofa", "off_diagonal_share"] == pytest.approx(2 / 6)
    assert pc.loc["toilet", "off_diagonal_share"] == pytest.approx(2 / 4)
    assert pc.loc["sofa", "weighted_error"] == pytest.approx(cost[1, 0])
    assert pc.loc["toilet", "weighted_error"] == pytest.approx(cost[2, 0])
    assert pc.loc["sofa", "weighted_error"] < pc.loc["toilet", "weighted_error"]
    assert np.isnan(pc.loc["chair", "weighted_error"]) and pc.loc["chair", "off_diagonal_share"] == 0
    o = res.overall
    assert o["off_diagonal_share"] == pytest.approx(4 / 15)
    assert o["weighted_error"] == pytest.approx((2 * cost[1, 0] + 2 * cost[2, 0]) / 4)
    assert o["cost_per_match"] == pytest.approx((2 * cost[1, 0] + 2 * cost[2, 0]) / 15)
    # same unweighted share, different weighted error: the point of the weighting
    a = semantic_confusion_cost(np.array([[0, 0, 0], [3, 0, 0], [0, 0, 0]]), cost, NAMES).overall
    b = semantic_confusion_cost(np.array([[0, 0, 0], [0, 0, 0], [3, 0, 0]]), cost, NAMES).overall
    assert a["off_diagonal_share"] == b["off_diagonal_share"] == 1.0
    assert a["weighted_error"] < b["weighted_error"]


def test_accepts_confusion_matrix_object():
    cm = ConfusionMatrix(counts=np.array([[1, 1], [0, 2]]), class_names=("chair", "sofa"), threshold=0.5)
    res = semantic_confusion_cost(cm, tree_cost(cm.class_names))
    assert res.per_class["category"].tolist() == ["chair", "sofa"]
    assert res.overall["weighted_error"] == pytest.approx(0.5)
