"""HFEncoder against tiny random checkpoints saved to disk and loaded back (no downloads)."""

import numpy as np
import pytest

import torch  # noqa: E402
from PIL import Image  # noqa: E402

from ov3d_core.errors import InputError  # noqa: E402
from ov3d_core.remap.encoders import HFEncoder, make_encoder  # noqa: E402
from tests.remap.tiny_models import LOGIT_BIAS, LOGIT_SCALE  # noqa: E402

PROMPTS = ["A Photo Of The CAR.", "a photo of the car.", "THIS IS A RED SOFA", "the chair"]


def images():
    rng = np.random.default_rng(0)
    return [Image.fromarray(rng.integers(0, 255, (h, w, 3), dtype=np.uint8)) for h, w in [(48, 96), (30, 20), (9, 9)]]


@pytest.fixture(scope="module", params=["siglip2", "siglip"])
def siglip_enc(request, tiny_dirs):
    return HFEncoder(str(tiny_dirs[request.param]), device="cpu", batch_size=2)


def _manual_text(enc, prompts, **extra):
    tok = enc.tokenizer([p.lower() for p in prompts], padding="max_length", max_length=enc.max_length,
                        truncation=True, return_tensors="pt")
    with torch.no_grad():
        out = enc.model.get_text_features(input_ids=tok["input_ids"], **extra)
    out = out.pooler_output if hasattr(out, "pooler_output") else out
    return torch.nn.functional.normalize(out, dim=-1).numpy(), tok


def test_siglip_text_lowercase_fixed_length_input_ids_only(siglip_enc):
    enc = siglip_enc
    assert enc.is_siglip and enc.has_calibrated_bias
    assert enc.max_length == 16  # min(64, the tiny model's 16 positions)
    tok = enc.tokenize(PROMPTS)
    assert set(tok) == {"input_ids"}  # no attention mask for the SigLIP text tower
    assert tok["input_ids"].shape == (4, 16)
    assert (tok["input_ids"][:, -1] == 0).all()  # right-padded with <pad> = 0
    e = enc.encode_text(PROMPTS)
    assert e.shape == (4, 32) and e.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(e, axis=1), 1, rtol=1e-5)
    np.testing.assert_array_equal(e[0], e[1])  # case does not matter
    manual, t = _manual_text(enc, PROMPTS)
    np.testing.assert_allclose(e, manual, atol=1e-5)
    # ... and the mask would have mattered (so "input_ids only" is really what was fed)
    masked, _ = _manual_text(enc, PROMPTS, attention_mask=(t["input_ids"] != 0).long())
    assert np.abs(masked - e).max() > 1e-3


def test_fixres_checkpoint_tokenizer_does_not_lowercase_but_encoder_does(tiny_dirs):
    enc = HFEncoder(str(tiny_dirs["siglip"]), device="cpu")
    assert enc.model_type == "siglip" and not enc.is_naflex
    raw = enc.tokenizer(["CAR", "car"])["input_ids"]
    assert raw[0] != raw[1]  # the saved tokenizer is case-sensitive, like the hub's Gemma tokenizer
    e = enc.encode_text(["CAR", "car"])
    np.testing.assert_array_equal(e[0], e[1])


def test_probability_matches_model_forward(siglip_enc):
    enc = siglip_enc
    assert enc.logit_scale == pytest.approx(LOGIT_SCALE) and enc.logit_bias == pytest.approx(LOGIT_BIAS)
    ims = images()
    img = enc.encode_images(ims)
    txt = enc.encode_text(PROMPTS)
    np.testing.assert_allclose(np.linalg.norm(img, axis=1), 1, rtol=1e-5)
    p = enc.probability(img @ txt.T)
    pix = enc.preprocess(ims)
    kw = {k: v for k, v in pix.items() if k in ("pixel_values", "pixel_attention_mask", "spatial_shapes")}
    with torch.no_grad():
        out = enc.model(input_ids=enc.tokenize(PROMPTS)["input_ids"], **kw)
    np.testing.assert_allclose(p, torch.sigmoid(out.logits_per_image).numpy(), atol=1e-5)
    cut = enc.cosine_for_probability(0.5)
    assert enc.probability(np.array([cut]))[0] == pytest.approx(0.5)


def test_naflex_patch_settings_are_passed_through(tiny_dirs):
    enc = HFEncoder(str(tiny_dirs["siglip2"]), device="cpu")
    assert enc.is_naflex and enc.patch_size == 8 and enc.max_num_patches == 16
    pix = enc.preprocess(images())
    assert tuple(pix["pixel_values"].shape) == (3, 16, 3 * 8 * 8)  # not the class defaults (256, 768)
    assert pix["spatial_shapes"].tolist()[0] == [3, 5]  # 48x96 keeps its aspect ratio
    assert enc.encode_images(images()).shape == (3, 32)
    smaller = HFEncoder(str(tiny_dirs["siglip2"]), device="cpu", max_num_patches=4)
    assert tuple(smaller.preprocess(images())["pixel_values"].shape) == (3, 4, 192)
    assert smaller.cache_key != enc.cache_key


def test_clip_uses_attention_mask_and_cosine(tiny_dirs):
    enc = make_encoder(f"hf:{tiny_dirs['clip']}", device="cpu")
    assert enc.model_type == "clip" and not enc.has_calibrated_bias and enc.probability(np.zeros(2)) is None
    tok = enc.tokenize(PROMPTS)
    assert set(tok) == {"input_ids", "attention_mask"}
    e = enc.encode_text(PROMPTS)
    with torch.no_grad():
        out = enc.model.get_text_features(**tok)
    out = out.pooler_output if hasattr(out, "pooler_output") else out
    np.testing.assert_allclose(e, torch.nn.functional.normalize(out, dim=-1).numpy(), atol=1e-5)
    np.testing.assert_array_equal(e[0], e[1])
    img = enc.encode_images(images())
    assert img.shape == (3, 24) and "cosine" in enc.name


def test_identity_follows_weights_and_errors(tiny_dirs, tmp_path):
    from tests.remap.tiny_models import make_siglip2

    a = make_siglip2(tmp_path / "x" / "model", seed=5)
    b = make_siglip2(tmp_path / "y" / "model", seed=6)
    assert HFEncoder(str(a), device="cpu").cache_key != HFEncoder(str(b), device="cpu").cache_key
    assert HFEncoder(str(a), device="cpu").cache_key == HFEncoder(str(a), device="cpu").cache_key
    with pytest.raises(InputError):
        HFEncoder(str(tmp_path / "nope"), device="cpu", local_files_only=True)
    with pytest.raises(InputError):
        make_encoder("siglip")


def test_from_model_caps_text_length_at_64():
    from transformers import SiglipConfig, SiglipModel

    from tests.remap.tiny_models import _tiny_text, wordlevel_tokenizer

    tok = wordlevel_tokenizer(lowercase=False)
    cfg = SiglipConfig(text_config=_tiny_text(len(tok), 80),
                       vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                          num_attention_heads=2, image_size=16, patch_size=8))
    enc = HFEncoder.from_model(SiglipModel(cfg), tok, name="tiny-80", device="cpu")
    assert enc.max_length == 64
    assert enc.tokenize(["a car"])["input_ids"].shape == (1, 64)
