import json

import numpy as np
import pytest

from ov3d_core.errors import InputError
from ov3d_core.remap.templates import (BUILTIN_TEMPLATES, DEFAULT_PATH, GROUPS, Template, custom_template, ensemble,
                                       load_templates, prompts_for, resolve_templates)


def test_fifteen_templates_in_three_groups_match_the_reference():
    ts = load_templates()
    assert DEFAULT_PATH.exists()
    assert ts == list(BUILTIN_TEMPLATES)  # the asset and the built-in copy agree
    assert len(ts) == 15
    assert [t.id for t in ts] == [f"{g}{i}" for g in "USO" for i in range(1, 6)]
    for g, letter in zip(GROUPS, "USO"):
        assert [t.id for t in ts if t.group == g] == [f"{letter}{i}" for i in range(1, 6)]
    by_id = {t.id: t.text for t in ts}
    assert by_id["U1"] == "{}"
    assert by_id["S3"] == "This is a photo of {}."
    assert by_id["O3"] == "a photo of a {}, a type of road user."
    assert by_id["O5"] == "a close-up photo of the {} seen from the front camera of a self-driving car at night."
    assert all(t.text.count("{}") == 1 for t in ts)


def test_prompts_and_resolution():
    assert prompts_for(resolve_templates("S1")[0], ["car", "traffic cone"]) == ["a photo of a car.",
                                                                                   "a photo of a traffic cone."]
    assert prompts_for("the {} {x}", ["car"]) == ["the car {x}"]  # other braces stay literal
    assert [t.id for t in resolve_templates("standard")] == ["S1", "S2", "S3", "S4", "S5"]
    assert [t.id for t in resolve_templates("s2,U1,S2")] == ["S2", "U1"]
    assert len(resolve_templates("all")) == 15
    lit = resolve_templates("a {} on the road")
    assert len(lit) == 1 and lit[0].group == "custom" and lit[0].id.startswith("custom:")
    assert [t.id for t in resolve_templates(["O1", Template("X", "mine", "x {}")])] == ["O1", "X"]
    with pytest.raises(InputError):
        resolve_templates("nonsense")


@pytest.mark.parametrize("bad", ["no placeholder", "{} and {}", "", 3])
def test_user_templates_need_exactly_one_placeholder(tmp_path, bad):
    p = tmp_path / "t.json"
    p.write_text(json.dumps([{"id": "A", "group": "g", "text": "ok {}"}, {"id": "B", "text": bad}]))
    with pytest.raises(InputError, match=r"t\.json: templates\[1\].*exactly one"):
        load_templates(p)
    with pytest.raises(InputError):
        custom_template("nothing here")


def test_user_template_file(tmp_path):
    p = tmp_path / "mine.yaml"
    p.write_text("templates:\n  - {id: A1, group: mine, text: 'a {} in the rain'}\n  - 'bare {}'\n")
    ts = load_templates(p)
    assert ts == [Template("A1", "mine", "a {} in the rain"), Template("T2", "custom", "bare {}")]
    assert [t.id for t in resolve_templates("mine", ts)] == ["A1"]
    p.write_text("- {id: A, text: 'x {}'}\n- {id: A, text: 'y {}'}\n")
    with pytest.raises(InputError, match="unique"):
        load_templates(p)
    p.write_text("[unclosed")
    with pytest.raises(InputError):
        load_templates(p)


def test_ensemble_is_the_renormalised_mean_of_normalised_embeddings():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(4, 6)), 5 * rng.normal(size=(4, 6))
    an = a / np.linalg.norm(a, axis=1, keepdims=True)
    bn = b / np.linalg.norm(b, axis=1, keepdims=True)
    m = (an + bn) / 2
    np.testing.assert_allclose(ensemble([a, b]), m / np.linalg.norm(m, axis=1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(ensemble([a, b]), axis=1), 1, rtol=1e-6)
    np.testing.assert_allclose(ensemble([a]), an, rtol=1e-5)
