"""Prompt sensitivity on known numbers."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ov3d_core.diagnostics.prompts import (
    coefficient_of_variation,
    label_flips,
    per_class_prompt_spread,
    prompt_sensitivity,
)

# WildDet3D-like: under 18.6 on average, standard a bit higher, over collapses.
AP = {"u1": 18.0, "u2": 19.2, "s1": 20.0, "s2": 22.0, "s3": 24.0, "o1": 5.0, "o2": 5.8}
GROUP = {"u1": "underdetailed", "u2": "underdetailed", "s1": "standard", "s2": "standard", "s3": "standard",
         "o1": "overdetailed", "o2": "overdetailed"}


def test_group_means_and_drops():
    ps = prompt_sensitivity(AP, GROUP)
    assert ps.group_mean == pytest.approx({"underdetailed": 18.6, "standard": 22.0, "overdetailed": 5.4})
    assert ps.drop_standard_to_overdetailed == pytest.approx(16.6)
    assert ps.drop_underdetailed_to_overdetailed == pytest.approx(13.2)  # the paper's 18.6 -> 5.4
    assert ps.best_group == "standard"
    g = ps.group_frame().set_index("group")
    assert g.loc["standard", "n_templates"] == 3 and g.loc["overdetailed", "max_ap"] == 5.8


def test_cv_population_std():
    # [10, 20, 30]: mean 20, population std sqrt(200/3) -> CV 0.408248...
    assert coefficient_of_variation([10, 20, 30]) == pytest.approx(math.sqrt(200 / 3) / 20)
    ps = prompt_sensitivity({"a": 10.0, "b": 20.0, "c": 30.0, "d": float("nan")},
                            {"a": "standard", "b": "standard", "c": "overdetailed", "d": "underdetailed"})
    assert ps.cv == pytest.approx(0.4082482904638631)
    assert ps.mean == pytest.approx(20.0) and ps.std == pytest.approx(math.sqrt(200 / 3))
    assert ps.robustness == pytest.approx(1 - 0.4082482904638631)
    assert math.isnan(ps.group_mean["underdetailed"])  # only a NaN template: absent
    assert ps.drop_standard_to_overdetailed == pytest.approx(-15.0)
    assert math.isnan(coefficient_of_variation([0.0, 0.0])) and math.isnan(coefficient_of_variation([]))
    assert ps.to_dict()["cv"] == pytest.approx(ps.cv)
    assert list(ps.to_frame()["template"]) == ["a", "b", "c", "d"]


def test_groups_from_template_objects():
    from ov3d_core.remap.templates import BUILTIN_TEMPLATES

    ap = {t.id: 10.0 + i for i, t in enumerate(BUILTIN_TEMPLATES)}
    ps = prompt_sensitivity(ap, BUILTIN_TEMPLATES)
    for group in ("underdetailed", "standard", "overdetailed"):
        expected = np.mean([ap[t.id] for t in BUILTIN_TEMPLATES if t.group == group])
        assert ps.group_mean[group] == pytest.approx(expected)


def test_missing_group_is_an_error():
    with pytest.raises(ValueError, match="group"):
        prompt_sensitivity({"a": 1.0}, {})


def test_per_class_spread():
    table = {"t0": [10.0, 40.0, np.nan], "t1": [30.0, 35.0, np.nan], "t2": [20.0, 50.0, np.nan]}
    spread = per_class_prompt_spread(table, ["car", "truck", "tram"]).to_frame().set_index("class")
    assert spread.loc["car", "spread"] == 20.0 and spread.loc["truck", "spread"] == 15.0
    assert spread.loc["car", "worst_template"] == "t0" and spread.loc["car", "best_template"] == "t1"
    assert spread.loc["truck", "best_template"] == "t2" and spread.loc["truck", "mean_ap"] == pytest.approx(125 / 3)
    assert np.isnan(spread.loc["tram", "spread"]) and spread.loc["tram", "n_templates"] == 0
    df = pd.DataFrame(table, index=["car", "truck", "tram"]).T
    again = per_class_prompt_spread(df).to_frame()
    assert again["spread"].tolist()[:2] == [20.0, 15.0]
    with pytest.raises(ValueError):
        per_class_prompt_spread({"t0": [1.0]}, ["a", "b"])


def test_label_flips():
    names = ("car", "truck", "van")
    top1 = {"t0": [0, 0, 1, 2, -1],
            "t1": [0, 1, 1, 2, -1],    # P1 car->truck
            "t2": [2, 1, 1, -1, 0]}    # P0 car->van, P1 car->truck, P3 van dropped, P4 gained
    lf = label_flips(top1, "t0", names)
    flips = lf.flips()
    assert list(zip(flips["pred_row"], flips["template"], flips["from_class"], flips["to_class"])) == [
        (0, "t2", "car", "van"), (1, "t1", "car", "truck"), (1, "t2", "car", "truck")]
    per = lf.per_class().set_index("class")
    assert per.loc["car", "n_predictions"] == 2 and per.loc["car", "n_flips"] == 3
    assert per.loc["car", "n_flipped_predictions"] == 2 and per.loc["car", "flip_rate"] == 1.0
    assert per.loc["truck", "n_flips"] == 0 and per.loc["truck", "flip_rate"] == 0.0
    assert per.loc["van", "n_drops"] == 1 and per.loc["van", "n_flips"] == 0
    kinds = lf.events["kind"].value_counts().to_dict()
    assert kinds == {"flip": 3, "drop": 1, "gain": 1}
    pp = lf.per_prediction().set_index("pred_row")
    assert pp.loc[0, "templates"] == ("t2",) and pp.loc[1, "templates"] == ("t1", "t2")
    assert pp.loc[1, "n_flips"] == 2
    # names instead of codes, and a keep mask
    named = {t: [names[c] if c >= 0 else None for c in v] for t, v in top1.items()}
    lf2 = label_flips(named, "t0", names, keep=np.array([False, True, True, True, True]))
    assert lf2.flips()["pred_row"].tolist() == [1, 1]
    assert lf2.per_class().set_index("class").loc["car", "n_predictions"] == 1
    with pytest.raises(ValueError):
        label_flips(top1, "nope", names)


def test_label_flips_no_change():
    lf = label_flips({"a": [0, 1], "b": [0, 1]}, "a", ("x", "y"))
    assert lf.events.empty and lf.per_prediction().empty
    assert lf.per_class()["n_flips"].tolist() == [0, 0]
