import os

import pytest

from tests.remap.fakes import FakeEncoder

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture
def fake_encoder():
    return FakeEncoder()


@pytest.fixture(scope="session")
def tiny_dirs(tmp_path_factory):
    from tests.remap.tiny_models import make_clip, make_siglip, make_siglip2

    root = tmp_path_factory.mktemp("tiny_models")
    return {"siglip2": make_siglip2(root / "siglip2"), "siglip": make_siglip(root / "siglip"),
            "clip": make_clip(root / "clip")}
