"""Pro-Bench prompt sensitivity across formulations, on known numbers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ov3d_core.diagnostics.prompts import formulation_sensitivity, formulation_type_table

CLASSES = ["car", "truck", "tram"]
# tram has no GT (NaN under every formulation)
TABLE = {"cat": [40.0, 20.0, np.nan], "orig": [30.0, 10.0, np.nan], "wrap": [5.0, 1.0, np.nan],
         "attr": [35.0, 25.0, np.nan]}


def test_run_level_sensitivity_by_hand():
    fs = formulation_sensitivity(TABLE, class_names=CLASSES, categorical="cat", original="orig", wrapped="wrap")
    # mAP = mean over classes with GT: cat 30, orig 20, wrap 3, attr 30
    np.testing.assert_allclose(fs.map, [30.0, 20.0, 3.0, 30.0])
    assert fs.max_delta == pytest.approx(27.0)
    assert fs.best_formulation == "cat"  # tie with attr: the first in input order
    assert fs.worst_formulation == "wrap"
    assert fs.delta_original_minus_categorical == pytest.approx(-10.0)
    assert fs.delta_wrapped_minus_original == pytest.approx(-17.0)
    s = fs.summary()
    assert s["best_mAP"] == 30.0 and s["worst_mAP"] == 3.0 and s["n_formulations"] == 4
    f = fs.to_frame().set_index("formulation")
    assert f.loc["orig", "role"] == "original" and f.loc["attr", "role"] is None
    assert f.loc["wrap", "delta_vs_best"] == pytest.approx(-27.0)
    assert fs.to_dict()["formulations"]["orig"] == 20.0


def test_per_class_sensitivity_by_hand():
    fs = formulation_sensitivity(TABLE, class_names=CLASSES, categorical="cat", original="orig", wrapped="wrap")
    pc = fs.per_class().set_index("class")
    assert pc.loc["car", "spread"] == 35.0 and pc.loc["truck", "spread"] == 24.0  # 40-5, 25-1
    assert pc.loc["car", "best_template"] == "cat" and pc.loc["truck", "best_template"] == "attr"
    assert pc.loc["car", "delta_original_minus_categorical"] == -10.0
    assert pc.loc["car", "delta_wrapped_minus_original"] == -25.0
    assert pc.loc["truck", "delta_wrapped_minus_original"] == -9.0
    assert np.isnan(pc.loc["tram", "spread"]) and np.isnan(pc.loc["tram", "delta_original_minus_categorical"])


def test_given_map_roles_and_errors():
    df = pd.DataFrame(TABLE, index=CLASSES).T
    fs = formulation_sensitivity(df, {"cat": 31.0, "orig": 19.0, "wrap": 4.0, "attr": np.nan}, original="orig")
    assert fs.max_delta == pytest.approx(27.0) and fs.best_formulation == "cat"
    assert np.isnan(fs.delta_original_minus_categorical)  # no categorical role given
    assert np.isnan(fs.per_class()["delta_wrapped_minus_original"]).all()
    one = formulation_sensitivity({"only": [10.0, 20.0, np.nan]}, class_names=CLASSES)
    assert np.isnan(one.max_delta) and one.best_formulation == "only"  # no second formulation to differ from
    none = formulation_sensitivity({"x": [np.nan] * 3}, class_names=CLASSES)
    assert np.isnan(none.max_delta) and none.best_formulation is None
    with pytest.raises(ValueError, match="categorical formulation"):
        formulation_sensitivity(TABLE, class_names=CLASSES, categorical="nope")
    with pytest.raises(ValueError, match="formulation_map"):
        formulation_sensitivity(TABLE, {"cat": 1.0}, class_names=CLASSES)


def test_type_table():
    fmap = {"PB-categorical": 30.0, "PB-attributive": 20.0, "PB-attributive-wrapped": 33.0}
    roles = {"attributive": {"categorical": "PB-categorical", "original": "PB-attributive",
                             "wrapped": "PB-attributive-wrapped"},
             "negative": {"categorical": "PB-categorical", "original": "PB-negative",
                          "wrapped": "PB-negative-wrapped"}}
    t = formulation_type_table(fmap, roles).set_index("type")
    assert t.loc["attributive", "delta_original_minus_categorical"] == -10.0
    assert t.loc["attributive", "delta_wrapped_minus_original"] == 13.0
    assert t.loc["attributive", "max_delta"] == 13.0
    assert t.loc["attributive", "best_formulation"] == "PB-attributive-wrapped"
    # the negative formulations were not scored (e.g. unsupported by the encoder): NaN, not 0
    assert t.loc["negative", "categorical"] == 30.0 and np.isnan(t.loc["negative", "original"])
    assert np.isnan(t.loc["negative", "max_delta"]) and t.loc["negative", "best_formulation"] is None


def test_type_table_without_any_score_says_none():
    t = formulation_type_table({}, {"state": {"categorical": "a", "original": "b", "wrapped": "c"}})
    assert t.loc[0, "best_formulation"] is None and np.isnan(t.loc[0, "max_delta"])
