import numpy as np
import pytest

from ov3d_core.remap.encoders import Encoder, ProxyEncoder, make_encoder


@pytest.fixture(scope="module")
def proxy():
    return ProxyEncoder()


def test_proxy_is_a_clearly_named_uncalibrated_encoder(proxy):
    assert isinstance(proxy, Encoder)
    assert "stand-in" in proxy.name and "not an image encoder" in proxy.name
    assert "STAND-IN" in ProxyEncoder.__doc__
    assert not proxy.has_calibrated_bias and proxy.probability(np.zeros(3)) is None
    assert proxy.cache_key.startswith("proxy:")
    assert make_encoder("proxy").cache_key == proxy.cache_key


def test_captions_land_near_their_class(proxy):
    classes = ["sofa", "car", "chair", "traffic cone"]
    text = proxy.encode_text([f"a photo of a {c}." for c in classes])
    caps = proxy.encode_images(["a red fabric sofa", {"caption": "a grey sedan parked by the road"},
                                "an orange traffic cone on the asphalt", "a red fabric sofa"])
    np.testing.assert_allclose(np.linalg.norm(caps, axis=1), 1, rtol=1e-5)
    sim = caps @ text.T
    assert sim[0, 0] > sim[0, 1]  # sofa closer to "sofa" than to "car"
    assert sim.argmax(axis=1).tolist() == [0, 1, 3, 0]
    np.testing.assert_array_equal(caps[0], caps[3])
    # case-insensitive on both sides
    np.testing.assert_allclose(proxy.encode_text(["A Photo Of A Sofa."]), proxy.encode_text(["a photo of a sofa."]),
                               atol=1e-6)
    with pytest.raises(TypeError, match="stand-in"):
        proxy.encode_images([np.zeros((4, 4, 3))])
