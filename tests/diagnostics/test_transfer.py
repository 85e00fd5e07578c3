"""Domain-transfer ratios with the same-environment restriction, and the Fig. 5 breakdown, on a small table."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ov3d_core.diagnostics.transfer import domain_transfer, three_axis_breakdown

TRAINED_ON = {"A": ["KITTI"], "B": ["nuScenes"], "C": ["SUNRGBD"]}
ENV = {"KITTI": "outdoor", "nuScenes": "outdoor", "AV2": "outdoor", "SUNRGBD": "indoor", "ARKitScenes": "indoor",
       "Objectron": None}
ROWS = [
    ("A", "KITTI", 40.0, .70), ("A", "nuScenes", 14.0, .50), ("A", "AV2", 2.0, .30), ("A", "SUNRGBD", 1.0, .20),
    ("A", "Objectron", 3.0, .25),
    ("B", "nuScenes", 20.0, .55), ("B", "KITTI", 30.0, .65), ("B", "AV2", 25.0, .50),
    ("C", "SUNRGBD", 20.0, .60), ("C", "ARKitScenes", 10.0, .45), ("C", "KITTI", 5.0, .30),
]


@pytest.fixture()
def results() -> pd.DataFrame:
    return pd.DataFrame(ROWS, columns=["run", "dataset", "map3d", "recall"])


def test_table_flags(results):
    tt = domain_transfer(results, TRAINED_ON, ENV)
    t = tt.table.set_index(["run", "dataset"])
    assert bool(t.loc[("A", "KITTI"), "in_domain"]) and not bool(t.loc[("A", "nuScenes"), "in_domain"])
    assert t.loc[("A", "SUNRGBD"), "environment"] == "indoor"
    assert t.loc[("A", "SUNRGBD"), "same_environment"] is False  # outdoor-trained on an indoor set
    assert t.loc[("B", "AV2"), "same_environment"] is True
    assert t.loc[("A", "Objectron"), "environment"] is None and t.loc[("A", "Objectron"), "same_environment"] is None
    assert tt.pivot("map3d").loc["B", "AV2"] == 25.0


def test_per_run_ratio_within_environment(results):
    per = domain_transfer(results, TRAINED_ON, ENV).per_run.set_index(["run", "environment"])
    a_out = per.loc[("A", "outdoor")]
    assert a_out["n_in"] == 1 and a_out["n_out"] == 2
    assert a_out["map3d_ratio"] == pytest.approx(8.0 / 40.0)     # mean(14, 2) / 40; SUNRGBD (indoor) not mixed in
    assert a_out["recall_ratio"] == pytest.approx(0.4 / 0.7)
    assert math.isnan(per.loc[("A", "indoor"), "map3d_ratio"])   # no in-domain indoor data
    assert per.loc[("B", "outdoor"), "map3d_ratio"] == pytest.approx(27.5 / 20.0)
    assert per.loc[("C", "indoor"), "map3d_ratio"] == pytest.approx(0.5)
    assert math.isnan(per.loc[("C", "outdoor"), "map3d_ratio"])
    assert "Objectron" not in set(per.reset_index()["environment"].dropna())


def test_per_dataset_pairs_same_environment_only(results):
    pairs = domain_transfer(results, TRAINED_ON, ENV).pairs
    got = {(r.dataset, r.in_run, r.out_run): r.map3d_ratio for r in pairs.itertuples()}
    # KITTI: B (nuScenes-trained) recovers 75% of A; C is indoor-trained and excluded.
    # nuScenes: A recovers 70% of B. SUNRGBD: A is outdoor-trained, no pair. AV2/ARKitScenes: no in-domain run.
    assert got == {("KITTI", "A", "B"): pytest.approx(0.75), ("nuScenes", "B", "A"): pytest.approx(0.7)}
    assert pairs["favours_in_domain"].all()
    assert pairs.set_index("dataset").loc["KITTI", "recall_ratio"] == pytest.approx(0.65 / 0.70)


def test_in_domain_column_instead_of_mappings(results):
    df = results.copy()
    df["in_domain"] = [(r, d) in {("A", "KITTI"), ("B", "nuScenes"), ("C", "SUNRGBD")}
                       for r, d in zip(df["run"], df["dataset"])]
    df["environment"] = df["dataset"].map(ENV)
    tt = domain_transfer(df)
    ref = domain_transfer(results, TRAINED_ON, ENV)
    pd.testing.assert_frame_equal(tt.per_run, ref.per_run)
    assert len(tt.pairs) == 2
    with pytest.raises(ValueError):
        domain_transfer(results)  # neither trained_on nor in_domain
    with pytest.raises(ValueError):
        domain_transfer(pd.concat([results, results.head(1)]), TRAINED_ON, ENV)  # duplicate (run, dataset)


def test_three_axis_breakdown(results):
    tt = domain_transfer(results, TRAINED_ON, ENV)
    bd = three_axis_breakdown(tt, {"A": 0.1, "C": 0.3}).table.set_index("run")
    assert bd.loc["A", "n_datasets"] == 5
    assert bd.loc["A", "geometric"] == pytest.approx(np.mean([.7, .5, .3, .2, .25]))
    assert bd.loc["A", "semantic"] == pytest.approx(np.mean([40, 14, 2, 1, 3]))
    assert bd.loc["A", "semantic_in_domain"] == 40.0
    assert bd.loc["A", "semantic_out_of_domain"] == pytest.approx(np.mean([14, 2, 1, 3]))
    assert bd.loc["A", "prompt_robustness"] == pytest.approx(0.9)
    assert math.isnan(bd.loc["B", "prompt_robustness"])
    assert bd.loc["A", "cross_domain_ratio"] == pytest.approx(0.2)   # indoor ratio NaN is skipped
    assert bd.loc["B", "cross_domain_ratio"] == pytest.approx(1.375)
    common = three_axis_breakdown(tt, datasets=["KITTI", "nuScenes"]).table.set_index("run")
    assert common.loc["A", "semantic"] == 27.0 and common.loc["C", "n_datasets"] == 1
    ranks = three_axis_breakdown(tt, {"A": 0.1, "B": 0.2, "C": 0.3}).ranks().set_index("run")
    assert ranks.loc["B", "cross_domain_ratio"] == 1 and ranks.loc["A", "prompt_robustness"] == 1
