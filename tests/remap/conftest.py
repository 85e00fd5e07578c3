import hashlib
import os

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


class FakeEncoder:
    """Deterministic, dependency-free encoder: embeddings from a hash of each input string; counts calls."""

    has_calibrated_bias = False

    def __init__(self, key="fake:v1", dim=8):
        self.name = f"fake ({key})"
        self.cache_key = key
        self.dim = dim
        self.n_images = 0
        self.n_texts = 0
        self.fail_after = None  # raise once this many images have been encoded

    def _vec(self, s):
        data = s.tobytes() if hasattr(s, "tobytes") else str(s).encode()  # PIL crops: by pixels
        rng = np.random.default_rng(int(hashlib.sha1(data).hexdigest()[:8], 16))
        v = rng.normal(size=self.dim).astype(np.float32)
        return v / np.linalg.norm(v)

    def encode_text(self, texts):
        self.n_texts += len(texts)
        return np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def encode_images(self, images):
        images = list(images)
        if self.fail_after is not None and self.n_images + len(images) > self.fail_after:
            raise KeyboardInterrupt("simulated interruption")
        self.n_images += len(images)
        return np.stack([self._vec(x) for x in images]) if images else np.zeros((0, self.dim), np.float32)

    def probability(self, cos):
        return None


@pytest.fixture
def fake_encoder():
    return FakeEncoder()


@pytest.fixture(scope="session")
def tiny_dirs(tmp_path_factory):
    from tests.remap.tiny_models import make_clip, make_siglip, make_siglip2

    root = tmp_path_factory.mktemp("tiny_models")
    return {"siglip2": make_siglip2(root / "siglip2"), "siglip": make_siglip(root / "siglip"),
            "clip": make_clip(root / "clip")}
