"""Fake encoders for the remapping tests: deterministic, no model. Kept in a module of their own that imports only
numpy, because a Ray actor that builds one (``tests/remap/test_ray.py``) imports the module its class comes from:
from a test module that would be torch, pandas and the CLI (~3 s of CPU per actor)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np


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


class CaptionFake(FakeEncoder):
    uses_captions = True  # reads the demo's crop captions, like the proxy


class DiesOnce(CaptionFake):
    """Its worker process exits (as if killed) inside its first encoding call while ``marker`` does not exist."""

    def __init__(self, marker):
        super().__init__()
        self.marker = marker

    def encode_images(self, images):
        if not os.path.exists(self.marker):
            Path(self.marker).write_text(str(os.getpid()))
            os._exit(1)
        return super().encode_images(images)


class RaisesOn(CaptionFake):
    """Raises for any batch that holds ``bad`` (a caption)."""

    def __init__(self, bad):
        super().__init__()
        self.bad = bad

    def encode_images(self, images):
        if self.bad in list(images):
            raise ValueError("cannot encode this one")
        return super().encode_images(images)
