"""Tiny random SigLIP 2 (NaFlex), SigLIP (FixRes) and CLIP checkpoints built from configs, fully offline
(reference/siglip_metrics_prompts.md §1.7). Each is saved with its processor to a directory so tests go through
``AutoModel`` / ``AutoProcessor.from_pretrained`` exactly like a real checkpoint."""

from __future__ import annotations

from pathlib import Path

WORDS = ("a", "an", "photo", "of", "the", "this", "is", "car", "sofa", "chair", "red", "bad", "large", "truck",
         "table", "itap")
LOGIT_SCALE = 2.0  # log scale: exp(2) ~ 7.39
LOGIT_BIAS = -1.5


def _tiny_text(vocab_size: int, max_pos: int) -> dict:
    return dict(vocab_size=vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                max_position_embeddings=max_pos, pad_token_id=0, eos_token_id=1, bos_token_id=2)


def _set_logits(model) -> None:
    import torch

    with torch.no_grad():
        model.logit_scale.fill_(LOGIT_SCALE)
        if hasattr(model, "logit_bias"):
            model.logit_bias.fill_(LOGIT_BIAS)


def siglip2_tokenizer():
    """Option B: a BPE ``Siglip2Tokenizer`` (lowercases), right padding, input_ids only, "$A <eos>"."""
    from tokenizers.processors import TemplateProcessing
    from transformers import Siglip2Tokenizer

    vocab = {"<pad>": 0, "<eos>": 1, "<bos>": 2, "<unk>": 3, "<mask>": 4}
    for ch in sorted(set("".join(WORDS)) | {".", ","}):
        vocab.setdefault(ch, len(vocab))
    vocab.setdefault("▁", len(vocab))
    merges: list[tuple[str, str]] = []
    for w in WORDS:
        for prefix in ("▁", ""):
            cur = prefix or w[0]
            for ch in (w if prefix else w[1:]):
                pair = (cur, ch)
                if pair not in merges:
                    merges.append(pair)
                cur += ch
                vocab.setdefault(cur, len(vocab))
    tok = Siglip2Tokenizer(vocab=vocab, merges=merges, padding_side="right", model_input_names=["input_ids"])
    tok.backend_tokenizer.post_processor = TemplateProcessing(single="$A <eos>", special_tokens=[("<eos>", 1)])
    return tok


def wordlevel_tokenizer(*, lowercase: bool, template: str = "$A <eos>", with_mask: bool = False):
    """Option A: a word-level fast tokenizer (optionally NOT lowercasing, like the hub's Gemma tokenizer)."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
    from tokenizers.processors import TemplateProcessing
    from transformers import PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "<eos>": 1, "<bos>": 2, "<unk>": 3}
    for w in WORDS + (".", ","):
        vocab.setdefault(w, len(vocab))
    t = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    if lowercase:
        t.normalizer = normalizers.Lowercase()
    t.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()])
    t.post_processor = TemplateProcessing(single=template, special_tokens=[("<eos>", 1), ("<bos>", 2)])
    names = ["input_ids", "attention_mask"] if with_mask else ["input_ids"]
    return PreTrainedTokenizerFast(tokenizer_object=t, pad_token="<pad>", eos_token="<eos>", bos_token="<bos>",
                                   unk_token="<unk>", padding_side="right", model_input_names=names)


def make_siglip2(path: Path, *, max_pos: int = 16, seed: int = 0) -> Path:
    """NaFlex ``Siglip2Model`` (model_type siglip2), patch 8, 16 patches (4x4 pos grid)."""
    import torch
    from transformers import Siglip2Config, Siglip2ImageProcessorPil, Siglip2Model, Siglip2Processor

    tok = siglip2_tokenizer()
    cfg = Siglip2Config(text_config=_tiny_text(len(tok), max_pos),
                        vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                           num_attention_heads=2, num_channels=3, patch_size=8, num_patches=16))
    torch.manual_seed(seed)
    model = Siglip2Model(cfg).eval()
    _set_logits(model)
    proc = Siglip2Processor(image_processor=Siglip2ImageProcessorPil(patch_size=8, max_num_patches=16), tokenizer=tok)
    model.save_pretrained(path)
    proc.save_pretrained(path)
    return Path(path)


def make_siglip(path: Path, *, max_pos: int = 16, seed: int = 1) -> Path:
    """FixRes ``SiglipModel`` (model_type siglip, like siglip2-base-patch16-224) with a NON-lowercasing tokenizer."""
    import torch
    from transformers import SiglipConfig, SiglipImageProcessorPil, SiglipModel, SiglipProcessor

    tok = wordlevel_tokenizer(lowercase=False)
    cfg = SiglipConfig(text_config=_tiny_text(len(tok), max_pos),
                       vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                          num_attention_heads=2, image_size=32, patch_size=8))
    torch.manual_seed(seed)
    model = SiglipModel(cfg).eval()
    _set_logits(model)
    proc = SiglipProcessor(image_processor=SiglipImageProcessorPil(size={"height": 32, "width": 32}), tokenizer=tok)
    model.save_pretrained(path)
    proc.save_pretrained(path)
    return Path(path)


def make_clip(path: Path, *, seed: int = 2) -> Path:
    """Tiny ``CLIPModel`` (EOS pooling, attention mask, no logit bias)."""
    import torch
    from transformers import CLIPConfig, CLIPImageProcessorPil, CLIPModel, CLIPProcessor

    tok = wordlevel_tokenizer(lowercase=True, template="<bos> $A <eos>", with_mask=True)
    text = {**_tiny_text(len(tok), 16), "projection_dim": 24}
    cfg = CLIPConfig(text_config=text,
                     vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                        num_attention_heads=2, image_size=32, patch_size=8, projection_dim=24),
                     projection_dim=24)
    torch.manual_seed(seed)
    model = CLIPModel(cfg).eval()
    _set_logits(model)
    proc = CLIPProcessor(image_processor=CLIPImageProcessorPil(size={"shortest_edge": 32},
                                                               crop_size={"height": 32, "width": 32}), tokenizer=tok)
    model.save_pretrained(path)
    proc.save_pretrained(path)
    return Path(path)
