"""The demo's own generator (ov3d_core.demo.rng): each transform equals NumPy's ``Generator`` on the same PCG64 words
(today's NumPy, 2.4), its output is pinned by digests that do not involve ``Generator`` at all, the stored ziggurat
tables follow their construction, and a small demo build has the bytes the pre-session code (commit 32167e2, which
drew through ``numpy.random.Generator``) wrote.

If a NumPy release changes a ``Generator`` algorithm, ``test_transforms_are_numpy_generator_today`` fails while the
pinned digests (and the demo's bytes) stay: that is the point of owning the transforms."""

from __future__ import annotations

import hashlib
import json
import math
import struct

import numpy as np
import pytest

from ov3d_core.demo import ziggurat as Z
from ov3d_core.demo.rng import Stream, cdf, pairwise_sum


def _pair(entropy):
    return Stream(entropy), np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy)))


def _same(x, y) -> bool:
    """Equal values and the same text (so -0.0 and 0.0 differ, as they do in the demo's JSON)."""
    return type(x) is type(y) and x == y and repr(x) == repr(y) if isinstance(x, float) else x == y


def _ops(a: Stream, b: np.random.Generator, src: np.random.Generator, steps: int):
    """``steps`` random calls of every transform on both generators: yields (name, ours, numpy's)."""
    for _ in range(steps):
        op = int(src.integers(13))
        if op == 0:
            yield "random", a.random(), b.random()
        elif op == 1:
            yield "standard_normal", a.standard_normal(), b.standard_normal()
        elif op == 2:
            loc, scale = float(src.normal()), float(src.uniform(0, 3)) * (src.random() < 0.9)
            yield "normal", a.normal(loc, scale), b.normal(loc, scale)
        elif op == 3:
            n = int(src.integers(1, 150))
            yield "normal(size)", a.normal(0, 0.5, n).tolist(), b.normal(0, 0.5, n).tolist()
        elif op == 4:
            n = int(src.integers(1, 60))
            yield "integers(n)", a.integers(n), int(b.integers(n))
        elif op == 5:
            lo = int(src.integers(-5, 5))
            hi = lo + int(src.integers(1, 2 ** int(src.integers(1, 63))))
            yield "integers(lo, hi)", a.integers(lo, hi), int(b.integers(lo, hi))
        elif op == 6:
            n = int(src.integers(0, 30))
            yield "permutation", a.permutation(n).tolist(), b.permutation(n).tolist()
        elif op == 7:
            x = list(range(int(src.integers(0, 20))))
            y = list(x)
            a.shuffle(x)
            b.shuffle(y)
            yield "shuffle", x, y
        elif op == 8:
            lam = float(src.uniform(0, 9.99)) if src.random() < 0.9 else 0.0
            yield "poisson", a.poisson(lam), int(b.poisson(lam))
        elif op == 9:
            scale = float(src.uniform(0.1, 30))
            yield "exponential", a.exponential(scale), b.exponential(scale)
        elif op == 10:
            size = tuple(int(v) for v in src.integers(1, 6, 2))
            yield "random(size)", a.random(size).tolist(), b.random(size).tolist()
        elif op == 11:
            lo = float(src.uniform(-5, 5))
            hi = lo + float(src.uniform(0, 5)) * (src.random() < 0.9)
            yield "uniform", a.uniform(lo, hi), b.uniform(lo, hi)
        else:
            seq = [f"s{i}" for i in range(int(src.integers(1, 12)))]
            w = tuple(float(v) for v in src.uniform(0.1, 5.0, len(seq)))
            p = np.asarray(w) / np.asarray(w).sum()
            yield "choice", a.choice(seq), str(b.choice(seq))
            yield "choice_index", a.choice_index(w), int(b.choice(len(w), p=p))
            loc, scale, n = float(src.normal()), float(src.uniform(0, 2)), int(src.integers(1, 20))
            yield "normals", a.normals(loc, scale, n), b.normal(loc, scale, n).tolist()


def test_transforms_are_numpy_generator_today():
    src = np.random.default_rng(2024)
    counts: dict[str, int] = {}
    for t in range(600):
        a, b = _pair([t, 7])
        for name, ours, theirs in _ops(a, b, src, 40):
            counts[name] = counts.get(name, 0) + 1
            if isinstance(ours, list):
                assert len(ours) == len(theirs) and all(map(_same, ours, theirs)), (t, name)
            else:
                assert _same(ours, theirs), (t, name, ours, theirs)
        assert a.random() == b.random(), t  # both streams are at the same word afterwards
    assert min(counts.values()) > 500, counts


def _slow_words(words: np.ndarray):
    """How many of ``words`` leave the normal ziggurat's one-word step, and how many of those are its tail."""
    idx = (words & np.uint64(0xFF)).astype(np.intp)
    a = (words >> np.uint64(9)) & np.uint64((1 << 52) - 1)
    slow = a >= np.array(Z.NOR_K, dtype=np.uint64)[idx]
    return int(slow.sum()), int((slow & (idx == 0)).sum())


@pytest.mark.parametrize("n", [1, 64, 65, 5000, 400_000])
def test_normal_arrays_with_rejections_and_tails(n):
    # the vectorised path (n > 64) runs the rare steps where they fall and hands unused words back
    a, b = _pair(12345)
    ours, theirs = a.normal(0, 0.8, n), b.normal(0, 0.8, n)
    assert np.array_equal(ours, theirs) and np.array_equal(np.signbit(ours), np.signbit(theirs))
    assert a.random() == b.random() and a.integers(10**6) == b.integers(10**6)
    if n == 400_000:
        slow, tail = _slow_words(np.random.PCG64(np.random.SeedSequence(12345)).random_raw(n))
        assert slow > 2000 and tail > 50  # the test reaches both rare steps


def test_exponential_and_scalar_normal_rare_steps():
    a, b = _pair([5, 5])
    ours = [a.standard_exponential() for _ in range(100_000)]
    theirs = b.standard_exponential(100_000).tolist()
    assert ours == theirs
    ours = [a.standard_normal() for _ in range(100_000)]
    assert ours == b.standard_normal(100_000).tolist()
    # the exponential's rare steps were taken: some words had a >= K[layer] (layer 0 is the tail)
    words = np.random.PCG64(np.random.SeedSequence([5, 5])).random_raw(100_000) >> np.uint64(3)
    idx = (words & np.uint64(0xFF)).astype(np.intp)
    slow = (words >> np.uint64(8)) >= np.array(Z.EXP_K, dtype=np.uint64)[idx]
    assert slow.sum() > 500 and (slow & (idx == 0)).sum() > 5


def test_words_do_not_depend_on_how_they_are_fetched():
    raw = np.random.PCG64(np.random.SeedSequence([1, 2, 3])).random_raw(20_000).tolist()
    s = Stream([1, 2, 3])
    got = [s.next64() for _ in range(100)]
    got += s._take(7).tolist()            # from the kept block
    got += s._take(9000).tolist()         # past it, straight from the bit generator
    s._give_back(np.array(got[-50:], dtype=np.uint64))
    got = got[:-50]
    got += [s.next64() for _ in range(20_000 - len(got))]
    assert got == raw


def test_32_bit_halves_are_kept_across_64_bit_draws():
    raw = np.random.PCG64(np.random.SeedSequence(9)).random_raw(3).tolist()
    s = Stream(9)
    assert s.next32() == raw[0] & 0xFFFFFFFF
    assert s.random() == (raw[1] >> 11) * 2.0 ** -53  # a 64-bit draw in between
    assert s.next32() == raw[0] >> 32                  # the kept high half
    assert s.next32() == raw[2] & 0xFFFFFFFF


def test_integers_by_hand():
    # Lemire on 32-bit words: integers(10) is (low32(w) * 10) >> 32 unless rejected
    raw = np.random.PCG64(np.random.SeedSequence(4)).random_raw(1).tolist()
    assert Stream(4).integers(10) == ((raw[0] & 0xFFFFFFFF) * 10) >> 32
    assert Stream(4).integers(3, 4) == 3 and Stream(4).integers(1) == 0
    with pytest.raises(ValueError):
        Stream(4).integers(5, 5)
    with pytest.raises(ValueError):
        Stream(4).uniform(1.0, 0.5)
    with pytest.raises(ValueError):
        Stream(4).poisson(10.0)
    with pytest.raises(ValueError):
        Stream(4).weighted_choice({"a": 0.0})


def test_pairwise_sum_by_hand_and_against_numpy():
    w = [1e16, 1.0, 1.0, 1.0, -1e16, 1.0, 1.0, 1.0]
    # 8 running sums combined in pairs: ((1e16 + 1) + (1 + 1)) + ((-1e16 + 1) + (1 + 1)) = (1e16 + 2) + (-1e16 + 2)
    assert pairwise_sum(w) == 4.0
    assert math.fsum(w) == 6.0 and sum(w) == 3.0  # neither the exact nor the left-to-right sum
    assert pairwise_sum([0.1] * 7) == sum([0.1] * 7)  # below 8 values: left to right
    src = np.random.default_rng(11)
    for n in list(range(1, 140)) + [255, 256, 257, 600, 1031]:
        v = src.uniform(-3, 7, n) * 10.0 ** src.integers(-8, 8, n)
        assert pairwise_sum(v.tolist()) == float(v.sum()), n  # NumPy's add.reduce today
    assert cdf((1.0, 3.0))[-1] == 1.0 and cdf((1.0, 3.0))[0] == 0.25


def test_weighted_choice_is_cumsum_over_sum_searched():
    def reference(rng, weights):
        names = sorted(weights)
        w = np.array([weights[n] for n in names], float)
        c = np.cumsum(w) / w.sum()
        return names[int(np.searchsorted(c, rng.random(), side="right").clip(0, len(names) - 1))]

    src = np.random.default_rng(3)
    for t in range(2000):
        n = int(src.integers(1, 40))
        weights = {f"c{i:02d}": (float(src.uniform(0.01, 5)) if src.random() < 0.7 else int(src.integers(1, 5)))
                   for i in range(n)}
        a, b = _pair(t)
        assert a.weighted_choice(weights) == reference(b, weights)


def _stream_digest() -> str:
    """sha256 of a fixed sequence of every transform's output (floats as IEEE bytes): the generator's own pin."""
    s = Stream([2026, 24])
    h = hashlib.sha256()
    for k in range(3000):
        vals = [s.random(), s.uniform(-2.0, 5.0), s.standard_normal(), s.normal(1.0, 0.25),
                s.exponential(3.0), s.standard_exponential()]
        h.update(struct.pack("<6d", *vals))
        h.update(struct.pack("<4q", s.integers(7), s.integers(-3, 2 ** 40), s.poisson(k % 10 + 0.5),
                             s.choice_index((1.0, 2.0, 0.5))))
        order = list(range(k % 13))
        s.shuffle(order)
        h.update(bytes(order))
    h.update(s.normal(0.0, 0.8, 100_000).tobytes())
    return h.hexdigest()


def test_pinned_output_of_the_generator():
    # computed once with this module; NumPy 2.4.6's Generator gives the same digest for the same calls. A change
    # here changes the demo's bytes.
    assert _stream_digest() == "8cb3eb781bfc73c97500757d0447bc19d262bd951769af199c9b50225c0a4044"


def test_ziggurat_tables_follow_their_construction():
    for K, W, F, R, V, bits, f in ((Z.NOR_K, Z.NOR_W, Z.NOR_F, Z.NOR_R, Z.NOR_V, 52, lambda x: math.exp(-0.5 * x * x)),
                                   (Z.EXP_K, Z.EXP_W, Z.EXP_F, Z.EXP_R, Z.EXP_V, 53, lambda x: math.exp(-x))):
        assert len(K) == len(W) == len(F) == 256
        x = [w * 2.0 ** bits for w in W]
        assert x[255] == R and F[0] == 1.0 and K[1] == 0
        for i in range(1, 255):
            assert x[i + 1] * (F[i] - F[i + 1]) == pytest.approx(V, rel=1e-12)  # every layer has area V
        for i in range(1, 256):
            assert F[i] == pytest.approx(f(x[i]), rel=1e-15)
        for i in range(2, 256):
            assert K[i] == pytest.approx(2.0 ** bits * x[i - 1] / x[i], rel=1e-15)
        assert W[0] == pytest.approx(V / F[255] / 2.0 ** bits, rel=1e-15)
        assert K[0] == pytest.approx(2.0 ** bits * R * F[255] / V, rel=1e-15)
    r = Z.NOR_R  # V is the area under f from the layer edge R plus the tail
    assert Z.NOR_V == pytest.approx(r * math.exp(-r * r / 2) + math.sqrt(math.pi / 2) * math.erfc(r / math.sqrt(2)),
                                    rel=1e-15)
    assert Z.EXP_V == pytest.approx((Z.EXP_R + 1) * math.exp(-Z.EXP_R), rel=1e-15)
    assert Z.NOR_INV_R == 1 / Z.NOR_R


# ------------------------------------------------------------------------------------------------ the demo's bytes
#: Runs of the pre-session build (files of runs added since are new files, not pinned here).
PRE_SESSION_RUNS = ("cubercnn_star", "ovmono_like", "detany_like", "wild_like", "weak_mono")
#: Folders of files added since (generator 1.1.0: the image subsets' id lists), not pinned here either.
NEW_FOLDERS = ("subsets/",)


def group_digests(folder) -> dict:
    """sha256 per kind of file (gt, runs, images, depth, points) over "<path> <sha256 of the file>" lines. The GT's
    ``categories[].supercategory`` is left out (it comes from ``ov3d_core.taxonomy`` / the ontology, not from the
    generator), so the GT is its JSON with those keys dropped, written back the way the build writes JSON."""
    groups: dict = {}
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder).as_posix()
        if not p.is_file() or "/" not in rel:
            continue  # benchmark.yaml and manifest.json: the config and the build's record, not generator output
        if rel.startswith("runs/") and rel.split("/")[1].split("__")[0] not in PRE_SESSION_RUNS:
            continue
        if rel.startswith(NEW_FOLDERS) or any(part.startswith(".") for part in rel.split("/")):
            continue  # new files, and caches a Benchmark over the build writes (.ov3d_cache/): not generator output
        data = p.read_bytes()
        if rel.endswith("/gt.json"):
            doc = json.loads(data)
            for c in doc["categories"]:
                c.pop("supercategory")
            data = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        kind = "gt" if rel.endswith("/gt.json") else rel.split("/")[-2]
        groups.setdefault(kind, []).append(f"{rel} {hashlib.sha256(data).hexdigest()}")
    return {k: hashlib.sha256("\n".join(v).encode()).hexdigest() for k, v in sorted(groups.items())}


#: ``group_digests`` of ``build_demo(out, images=3, seed=0, workers=1)`` made with the pre-session code (commit
#: 32167e2, numpy 2.4.6, Pillow / open3d / torch 2.13.0 of requirements.txt). Images, depth PNGs, point clouds and
#: .pth files also depend on their encoders; the GT, prediction and crop JSON files only on the generator.
PRE_SESSION_DIGESTS = {
    "depth": "2e5ef88df8562abee2d21d82de5d6f7aeaf02c3609ed32213d9c42533d29b87c",
    "gt": "ce50d8fe731d84a67a37de6c552e4ac4dc1d813306e5fc1b7d046889d8cb5f8d",
    "images": "91f68e47020b819e9b2750c5f7c219f9badb89510f7e3dfd44d795e8aa5eab0b",
    "points": "67376c86e48e1473c7900897e259e214330faedbf83737f42ee50495dbef84f9",
    "runs": "27b637808de9ae6375fcc11b8041b4b8c12cd152c6cad817599e2ff94c2fa72d",
}


def test_a_small_build_has_the_pre_session_bytes(tiny_build):
    from .conftest import TINY_IMAGES

    assert TINY_IMAGES == 3
    assert group_digests(tiny_build[0]) == PRE_SESSION_DIGESTS
