"""The compiled validity rule (``valid_boxes``) against the array formulas it replaces (``coplanar_residuals``,
``triangle_areas``), box by box, on boxes built to sit at the thresholds."""

import numpy as np
import pytest

from ov3d_core.geometry.boxes import corners_from_pose, rotation_y
from ov3d_core.geometry.validity import COPLANAR_EPS, NONZERO_EPS, coplanar_residuals, triangle_areas, valid_boxes


def array_rule(corners: np.ndarray, rule: str) -> np.ndarray:
    """The rule written with the numpy formulas (what ``valid_boxes`` computed before it was compiled)."""
    res = coplanar_residuals(corners)
    coplanar = (np.abs(res) < COPLANAR_EPS).all(axis=1) if rule == "per_face" else \
        np.abs(res.sum(axis=1)) < COPLANAR_EPS
    nonzero = (triangle_areas(corners) > NONZERO_EPS).all(axis=1)
    return coplanar & nonzero & np.isfinite(corners).all(axis=(1, 2))


def threshold_boxes(n: int, seed: int) -> np.ndarray:
    """Rotated boxes, a third with one corner moved by ~COPLANAR_EPS, a sixth flattened to ~NONZERO_EPS areas, far
    from the origin and near it, plus non-finite and overflowing corners."""
    rng = np.random.default_rng(seed)
    centre = rng.normal(0, 1, (n, 3)) * np.where(rng.random((n, 1)) < 0.2, 1e4, 10)
    dims = np.exp(rng.normal(0, 1, (n, 3)))
    flat = rng.random(n) < 1 / 6
    dims[flat, rng.integers(0, 3, int(flat.sum()))] = 10 ** rng.uniform(-9, -7, int(flat.sum()))
    R = rotation_y(rng.uniform(-np.pi, np.pi, n)) @ rotation_y(rng.uniform(-np.pi, np.pi, n)).transpose(0, 2, 1)
    c = corners_from_pose(centre, dims, R)
    moved = rng.random(n) < 1 / 3
    k = rng.integers(0, 8, n)
    c[moved, k[moved]] += rng.normal(0, 1, (int(moved.sum()), 3)) * COPLANAR_EPS * rng.uniform(0.3, 3, (int(moved.sum()), 1))
    c[:5] = c[5:10]
    c[0, 3, 1] = np.nan
    c[1, 0, 0] = np.inf
    c[2] *= 1e305  # finite corners whose products overflow
    c[3] = 0.0  # a point
    c[4, :, 2] = 7.0  # a flat quad
    return c


@pytest.mark.parametrize("rule", ["per_face", "omni3d"])
def test_compiled_rule_is_the_array_rule_box_by_box(rule):
    c = threshold_boxes(20_000, seed=3)
    want = array_rule(c, rule)
    got = valid_boxes(c, rule=rule)
    assert got.dtype == bool and got.shape == (len(c),)
    np.testing.assert_array_equal(got, want)
    # the set exercises both outcomes of each test, not one side of the thresholds only
    res = np.abs(coplanar_residuals(c[5:]))
    assert 0.2 < want.mean() < 0.8
    assert ((res > 0.5 * COPLANAR_EPS) & (res < 2 * COPLANAR_EPS)).any()
    assert (triangle_areas(c[5:]).min(axis=1) < NONZERO_EPS).any()
    assert not got[:5].any()


def test_compiled_rule_on_odd_layouts():
    c = threshold_boxes(300, seed=4)
    np.testing.assert_array_equal(valid_boxes(c[::-2]), array_rule(c[::-2], "per_face"))  # not contiguous
    c32 = c[5:].astype(np.float32)
    np.testing.assert_array_equal(valid_boxes(c32), array_rule(c32.astype(np.float64), "per_face"))
    assert valid_boxes(c[:1].tolist()).shape == (1,)
    with pytest.raises(ValueError, match="rule"):
        valid_boxes(c, rule="other")
