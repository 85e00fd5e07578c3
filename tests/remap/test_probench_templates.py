"""Pro-Bench's eight prompt types as a template family, and the one check of what an encoder can take."""

import json

import pytest

from ov3d_core.remap.templates import (BUILTIN_TEMPLATES, PROBENCH_TEMPLATES, PROBENCH_TYPES, PROBENCH_WRAPPED,
                                       PromptCapabilities, load_templates, probench_roles, prompt_capabilities,
                                       prompts_for, resolve_templates, supported_templates, template_support,
                                       uses_negation)


def test_eight_types_one_template_each_and_their_wrapped_form():
    assert PROBENCH_TYPES == ("categorical", "attributive", "relational", "affordance", "state", "part-whole",
                              "negative", "compositional")
    assert [t.id for t in PROBENCH_TEMPLATES] == [f"PB-{t}" for t in PROBENCH_TYPES]
    assert [t.group for t in PROBENCH_TEMPLATES] == [f"probench-{t}" for t in PROBENCH_TYPES]
    assert all(t.text.count("{}") == 1 for t in PROBENCH_TEMPLATES + PROBENCH_WRAPPED)
    for orig, wrap in zip(PROBENCH_TEMPLATES, PROBENCH_WRAPPED):
        assert wrap.id == orig.id + "-wrapped" and wrap.text == "a photo of " + orig.text
    assert prompts_for(resolve_templates("PB-categorical")[0], ["car"]) == ["car"]
    # every wording keeps the referent: the class name is in the prompt and no template negates the class itself
    assert all("not a {}" not in t.text for t in PROBENCH_TEMPLATES)


def test_resolution_by_id_group_and_family_keeps_the_15_builtins():
    assert [t.id for t in resolve_templates("probench-state")] == ["PB-state"]
    assert [t.id for t in resolve_templates("pb-negative")] == ["PB-negative"]
    assert [t.id for t in resolve_templates("PB-part-whole-wrapped")] == ["PB-part-whole-wrapped"]
    assert len(resolve_templates("probench")) == 8 and len(resolve_templates("probench-wrapped")) == 8
    assert [t.id for t in resolve_templates("S1,PB-state")] == ["S1", "PB-state"]
    assert len(resolve_templates("all")) == 15 and load_templates() == list(BUILTIN_TEMPLATES)


def test_a_user_template_of_the_same_id_wins(tmp_path):
    p = tmp_path / "t.json"
    p.write_text(json.dumps([{"id": "PB-state", "group": "mine", "text": "my {}"}]))
    assert resolve_templates("PB-state", load_templates(p))[0].text == "my {}"


def test_roles():
    r = probench_roles()
    assert r["state"] == {"categorical": "PB-categorical", "original": "PB-state", "wrapped": "PB-state-wrapped"}
    assert list(r) == list(PROBENCH_TYPES)
    with pytest.raises(ValueError, match="Pro-Bench types"):
        probench_roles(["colour"])


def test_negation_words():
    assert [uses_negation(t) for t in PROBENCH_TEMPLATES] == [t == "negative" for t in PROBENCH_TYPES]
    assert uses_negation("a {} without wheels") and uses_negation("a {} that isn't red")
    assert not uses_negation("nothing but a {}") and not uses_negation("a {} on a knot")
    assert not uses_negation("{}")  # the class name itself (e.g. "no parking sign") is not the template's


def test_no_limit_or_tokenizer_is_reported_not_silent():
    caps = PromptCapabilities(encoder="x", max_tokens=None)
    t = template_support(list(PROBENCH_TEMPLATES), ["car"], caps).set_index("template")
    assert t.loc["PB-state", "supported"] and "not checked" in t.loc["PB-state", "note"]
    assert not t.loc["PB-negative", "supported"] and "negation" in t.loc["PB-negative", "reason"]
    caps = PromptCapabilities(encoder="y", max_tokens=4, negation=True)
    t = template_support(list(PROBENCH_TEMPLATES), ["car"], caps).set_index("template")
    assert t.loc["PB-negative", "supported"] and "no tokenizer" in t.loc["PB-negative", "note"]


def test_real_tiny_siglip_tokenizer_and_length_limit(tiny_dirs):
    from ov3d_core.remap.encoders import HFEncoder

    enc = HFEncoder(str(tiny_dirs["siglip"]), device="cpu")
    caps = prompt_capabilities(enc)
    assert caps.max_tokens == 16 and caps.negation is False  # the tiny model's position table
    ok, t = supported_templates(list(PROBENCH_TEMPLATES + PROBENCH_WRAPPED), ["car", "traffic cone"], caps)
    t = t.set_index("template")
    # word-level tokenizer, lowercased, "<eos>" added: "a photo of a traffic cone with its usual colour , standing
    # next to other objects" is 15 words + "," + "<eos>" = 17 tokens > 16
    assert t.loc["PB-compositional-wrapped", "max_tokens_used"] == 17
    assert t.loc["PB-compositional-wrapped", "longest_class"] == "traffic cone"
    assert "17 tokens for 'traffic cone' > 16" in t.loc["PB-compositional-wrapped", "reason"]
    assert t.loc["PB-compositional", "max_tokens_used"] == 14 and t.loc["PB-compositional", "supported"]
    assert t.loc["PB-categorical", "max_tokens_used"] == 3  # "traffic", "cone", "<eos>"
    assert not t.loc["PB-negative", "supported"] and not t.loc["PB-negative-wrapped", "supported"]
    assert [x.id for x in ok] == [x.id for x in PROBENCH_TEMPLATES + PROBENCH_WRAPPED
                                  if x.id not in ("PB-negative", "PB-negative-wrapped", "PB-compositional-wrapped")]


def test_demo_proxy_encoder_takes_all_but_negation():
    from ov3d_core.remap.encoders import make_encoder

    caps = prompt_capabilities(make_encoder("proxy"))
    assert caps.max_tokens == 128 and not caps.negation
    t = template_support(list(PROBENCH_TEMPLATES), ["car", "traffic cone"], caps)
    assert list(t.loc[~t["supported"], "template"]) == ["PB-negative"]
    assert (t["max_tokens_used"] < 128).all()
