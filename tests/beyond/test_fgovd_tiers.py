"""FG-OVD hard-negative tiers for class names: tier vocabularies, ranks, accuracy, mAP and the curve, by hand."""

import numpy as np
import pandas as pd
import pytest

from ov3d_core.diagnostics.fgovd import (hard_negative_tiers, random_negative_orders, tier_negatives,
                                         tier_object_ranks, tier_vocabulary_curve)
from tests.beyond.conftest import inputs_from_pairs

VOCAB = ("chair", "sofa", "table", "car")
SUPER = ("seating", "seating", "table", "vehicle")
# symmetric text similarity: chair ~ sofa > table > car. Orders of the others: chair (sofa, table, car),
# sofa (chair, table, car), table (chair, sofa, car), car (table, sofa, chair)
SIM = np.array([[1.0, 0.9, 0.5, 0.1],
                [0.9, 1.0, 0.4, 0.2],
                [0.5, 0.4, 1.0, 0.3],
                [0.1, 0.2, 0.3, 1.0]])


def _scene():
    # GT0 chair and GT1 car in image 0, GT2 chair in image 1 (nothing finds it).
    # P0 lies on GT0 (IoU 0.9) and scores sofa 0.6 > chair 0.5 > table 0.4 > car 0.1;
    # P1 lies on GT1 (IoU 0.8) and scores car 0.9 > table 0.3 > chair 0.2 > sofa 0.1.
    inp = inputs_from_pairs([0, 0, 1], [0, 3, 0], [0, 0], [1, 3], [0.6, 0.9], [(0, 0, 0.9), (1, 1, 0.8)])
    S = np.array([[0.5, 0.6, 0.4, 0.1], [0.2, 0.1, 0.3, 0.9]])
    return inp, S


def test_tier_vocabularies():
    assert tier_negatives(SIM, "hard", 1)[:, 0].tolist() == [1, 0, 0, 2]
    assert tier_negatives(SIM, "medium", 1)[:, 0].tolist() == [2, 2, 1, 1]
    assert tier_negatives(SIM, "easy", 1)[:, 0].tolist() == [3, 3, 3, 0]
    assert tier_negatives(SIM, "hard", 2).tolist() == [[1, 2], [0, 2], [0, 1], [2, 1]]
    # easy at N = 2 needs ranks 5..6 of 3 negatives: no class has them
    assert (tier_negatives(SIM, "easy", 2) == -1).all()
    # band 2 at N = 1: medium = the first of ranks 3..4
    assert tier_negatives(SIM, "medium", 1, band=2)[:, 0].tolist() == [3, 3, 3, 0]
    same = tier_negatives(SIM, "same_super", 1, super_of=SUPER)
    assert same[:, 0].tolist() == [1, 0, -1, -1]  # table and car have no other class of their super-category
    other = tier_negatives(SIM, "other_super", 2, super_of=SUPER)
    assert set(other[0]) == {2, 3} and set(other[1]) == {2, 3} and (other[3] >= 0).all()
    assert all(SUPER[j] != SUPER[c] for c in range(4) for j in other[c])
    # random tiers: seeded, per class, nested in N, never the class itself
    orders = random_negative_orders(4, seed=3)
    np.testing.assert_array_equal(orders, random_negative_orders(4, seed=3))
    assert all(c not in orders[c] and sorted(orders[c]) == [j for j in range(4) if j != c] for c in range(4))
    np.testing.assert_array_equal(tier_negatives(SIM, "trivial", 2, seed=3), orders[:, :2])
    assert (tier_negatives(SIM, "trivial", 4) == -1).all()
    with pytest.raises(ValueError, match="super_of"):
        tier_negatives(SIM, "same_super", 1)
    with pytest.raises(ValueError, match="tier"):
        tier_negatives(SIM, "colour", 1)
    with pytest.raises(ValueError, match="band"):
        tier_negatives(SIM, "hard", 3, band=2)


def test_ranks_accuracy_and_map_per_tier_by_hand():
    inp, S = _scene()
    t = hard_negative_tiers(inp, S, SIM, n_categories=4, n_negatives=1, super_of=SUPER,
                            tiers=["hard", "medium", "same_super", "other_super"]).set_index("tier")
    half = 5100 / 101  # one of two chairs found at precision 1: 51 of 101 recall points
    # hard: chair's vocabulary {chair, sofa}: sofa 0.6 >= chair 0.5 -> rank 2, P0 is called a sofa (no sofa GT:
    # not scored) so no chair is found; car's {car, table}: rank 1, AP 100. GT2 is unmatched.
    h = t.loc["hard"]
    assert (h["n_objects"], h["n_matched"], h["n_excluded"]) == (3, 2, 0)
    assert h["accuracy"] == 0.5 and h["median_rank"] == 1.5 and h["mean_rank"] == 1.5
    assert h["median_rank_fgovd"] == 2  # sorted [1, 2, 2 (unmatched = N + 1)][3 // 2 + 1]
    assert h["AP3D"] == pytest.approx((0 + 100) / 2)
    # medium: chair's {chair, table}: 0.5 > 0.4 -> rank 1, P0 is a chair TP; GT2 still missed
    m = t.loc["medium"]
    assert m["accuracy"] == 1.0 and m["median_rank"] == 1
    assert m["AP3D"] == pytest.approx((half + 100) / 2)
    # same_super: only chairs have a same-super negative (sofa); the car and P1 are left out
    s = t.loc["same_super"]
    assert (s["n_classes"], s["n_objects"], s["n_excluded"], s["n_matched"]) == (2, 2, 1, 1)
    assert s["accuracy"] == 0.0 and s["AP3D"] == pytest.approx(0.0)
    # other_super: chair vs table or car, car vs chair, sofa or table: always rank 1
    o = t.loc["other_super"]
    assert o["accuracy"] == 1.0 and o["AP3D"] == pytest.approx((half + 100) / 2) and o["kind"] == "ontology"
    assert h["kind"] == "difficulty" and h["vocabulary_size"] == 2


def test_trivial_tier_follows_its_random_draw():
    inp, S = _scene()
    for seed in range(6):
        neg = tier_negatives(SIM, "trivial", 1, seed=seed)
        row = hard_negative_tiers(inp, S, SIM, n_categories=4, n_negatives=1, tiers=["trivial"], seed=seed).iloc[0]
        sofa_drawn = neg[0, 0] == 1  # only a sofa beats the chair; nothing beats the car
        assert row["accuracy"] == (0.5 if sofa_drawn else 1.0)


def test_object_ranks_table():
    inp, S = _scene()
    r = tier_object_ranks(inp, S, tier_negatives(SIM, "hard", 2), vocabulary=VOCAB)
    assert r["gt"].tolist() == [0, 1, 2] and r["category"].tolist() == ["chair", "car", "chair"]
    assert r["rank"].tolist()[:2] == [2, 1] and r["rank"].isna().tolist() == [False, False, True]
    assert r["pred"].tolist()[:2] == [0, 1]


def test_curve_over_n():
    inp, S = _scene()
    c = tier_vocabulary_curve(inp, S, SIM, n_categories=4, ns=[1, 2, 3], tiers=["hard", "easy"])
    hard = c[c["tier"] == "hard"].set_index("n_negatives")
    # chair: {chair, sofa}, then + table, then + car: rank 2 each time; car: rank 1
    assert hard["median_rank"].tolist() == [1.5, 1.5, 1.5] and hard["accuracy"].tolist() == [0.5, 0.5, 0.5]
    assert hard["vocabulary_size"].tolist() == [2, 3, 4]
    easy = c[c["tier"] == "easy"].set_index("n_negatives")
    assert easy.loc[1, "n_objects"] == 3 and easy.loc[1, "accuracy"] == 1.0
    assert easy.loc[2, "n_objects"] == 0 and easy.loc[2, "n_excluded"] == 3
    assert np.isnan(easy.loc[2, "AP3D"]) and np.isnan(easy.loc[2, "accuracy"])
    # without super_of the default tiers are the four difficulty tiers
    d = tier_vocabulary_curve(inp, S, SIM, n_categories=4, ns=[1])
    assert d["tier"].tolist() == ["hard", "medium", "easy", "trivial"]
    with pytest.raises(ValueError, match="score_matrix"):
        tier_vocabulary_curve(inp, S[:, :3], SIM, n_categories=4)


def _random_case(seed):
    from ov3d_core.eval.ap import APInputs
    from ov3d_core.eval.labels import label_view_from_names
    from ov3d_core.eval.pairs import compute_pairs
    from tests.eval.factories import random_scene

    rng = np.random.default_rng(seed)
    cats = ("car", "chair", "table", "lamp", "sofa", "bed")
    gt, pred = random_scene(rng, n_images=24, categories=cats)
    inp = APInputs.from_view(gt, pred, compute_pairs(gt, pred), label_view_from_names(pred.category, pred.score,
                                                                                      cats))
    S = rng.random((len(pred), len(cats)))
    emb = rng.normal(size=(len(cats), 5))
    from ov3d_core.diagnostics.semantic import cosine_similarity_matrix

    return inp, S, cosine_similarity_matrix(emb), len(cats)


@pytest.mark.parametrize("seed", range(3))
def test_hard_tier_map_equals_the_vocabulary_size_curve(seed):
    from ov3d_core.diagnostics.fgovd import vocabulary_size_curve

    inp, S, sim, V = _random_case(seed)
    tiers = tier_vocabulary_curve(inp, S, sim, n_categories=V, ns=[1, 2, 3], tiers=["hard"])
    curve = vocabulary_size_curve(inp, S, sim, n_categories=V, ks=[1, 2, 3])
    np.testing.assert_allclose(tiers["AP3D"].to_numpy(), curve["AP3D"].to_numpy(), rtol=0, atol=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_ranks_equal_a_plain_loop(seed):
    inp, S, sim, V = _random_case(seed)
    sup = ("vehicle", "seating", "table", "other", "seating", "bed")
    for tier in ("hard", "medium", "easy", "trivial", "same_super", "other_super"):
        neg = tier_negatives(sim, tier, 1, super_of=sup, seed=seed)
        r = tier_object_ranks(inp, S, neg)
        expected = {}
        for g in range(len(inp.gt_label)):
            c = int(inp.gt_label[g])
            if c < 0 or inp.gt_ignore[g] or (neg[c] < 0).any():
                continue
            best, best_score = -1, -np.inf
            for p, q, iou in zip(inp.pair_gt, inp.pair_pred, inp.pair_iou):
                if p == g and iou > 0.5 and (inp.pred_score[q] > best_score
                                             or (inp.pred_score[q] == best_score and q < best)):
                    best, best_score = q, inp.pred_score[q]
            vocab = [c] + list(neg[c])
            expected[g] = None if best < 0 else sum(S[best, v] >= S[best, c] for v in vocab)
        got = {int(g): (None if pd.isna(k) else int(k)) for g, k in zip(r["gt"], r["rank"])}
        assert got == expected, tier
        if tier == "hard":
            assert sum(v is not None for v in expected.values()) >= 5  # the case has matched objects to rank
