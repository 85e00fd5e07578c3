"""The demo's random numbers: one documented generator, built only on the raw output of NumPy's PCG64 bit generator.

Why: NumPy guarantees the integer stream of a bit generator ("``PCG64`` makes a guarantee that a fixed seed will
always produce the same random integer stream", its docstring; ``SeedSequence`` is the documented seeding) but lets
``Generator``'s distributions change in feature releases (NumPy's "Compatibility policy" page, NEP 19). The demo's
bytes must not depend on a NumPy release, so every transform from raw 64-bit words to numbers is written out here.
Each one is the algorithm NumPy 2.4's ``Generator`` uses (so the builds are byte-identical to the ones made with
``Generator`` before; tests/demo/test_rng.py checks each transform against ``Generator`` and pins digests of its own
output), but it is this module's now: no NumPy function but ``SeedSequence``, ``PCG64`` and ``random_raw`` is used.

A :class:`Stream` reads 64-bit words ``w`` from ``PCG64(SeedSequence(entropy)).random_raw`` in order (it fetches them
in blocks and keeps the unused ones; fetching never changes the sequence). The transforms:

``next32()``
    32-bit words come in pairs from one 64-bit word: the low half first, the high half kept for the next
    ``next32()`` call (and kept across 64-bit draws in between, which never touch it).
``random()``
    ``(w >> 11) * 2**-53``: a double in [0, 1) on the 2**-53 grid.
``uniform(lo, hi)``
    ``lo + (hi - lo) * random()`` (``hi < lo`` is a ``ValueError``).
``standard_normal()``
    The 256-layer ziggurat (Marsaglia & Tsang 2000; tables in :mod:`ov3d_core.demo.ziggurat`): from one word,
    ``i = w & 0xff`` (layer), ``s = (w >> 8) & 1`` (sign), ``a = (w >> 9) & (2**52 - 1)``; ``x = a * W[i]`` with the
    sign applied. Accept ``x`` when ``a < K[i]``. Otherwise: for ``i == 0`` (the tail) draw ``xx = -log1p(-random())
    / R`` and ``yy = -log1p(-random())`` until ``2 * yy > xx * xx`` and return ``R + xx``, negated when bit 8 of ``a``
    is set; for ``i > 0`` accept ``x`` when ``(F[i-1] - F[i]) * random() + F[i] < exp(-x*x/2)``; a rejected ``x``
    starts over with a new word.
``normal(loc, scale)``
    ``loc + scale * standard_normal()`` (so ``normal(0, 1)`` turns a -0.0 into +0.0, as written).
``standard_exponential()`` / ``exponential(scale)``
    The exponential ziggurat: ``w >>= 3``, ``i = w & 0xff``, ``a = w >> 8`` (53 bits), ``x = a * W[i]``; accept when
    ``a < K[i]``; else for ``i == 0`` return ``R - log1p(-random())``, for ``i > 0`` accept ``x`` when ``(F[i-1] -
    F[i]) * random() + F[i] < exp(-x)``, else start over. ``exponential(scale) = scale * standard_exponential()``.
``integers(low, high)``
    ``low + bounded(high - low - 1)`` for ``high > low`` (``low`` when the range holds one value). ``bounded(r)``
    for ``r < 2**32 - 1`` is Lemire's multiply-shift with rejection on 32-bit words: ``m = next32() * (r + 1)``;
    while ``m mod 2**32 < (2**32 - (r + 1)) mod (r + 1)`` draw again; return ``m >> 32``. Wider ranges use the same
    method on 64-bit words (``m = w * (r + 1)``, threshold ``(2**64 - (r + 1)) mod (r + 1)``, return ``m >> 64``);
    ``r = 2**32 - 1`` is ``next32()`` and ``r = 2**64 - 1`` is ``w``.
``interval(n)``
    A value in [0, n] by masking: ``mask`` = the smallest ``2**k - 1 >= n``; draw ``next32() & mask`` (64-bit words
    when ``n >= 2**32``) until it is ``<= n``.
``shuffle(x)`` / ``permutation(n)``
    Fisher-Yates from the end: for ``i = len(x) - 1 .. 1`` swap ``x[i]`` with ``x[interval(i)]``; ``permutation(n)``
    shuffles ``arange(n)``.
``poisson(lam)``
    ``0`` for ``lam == 0``; for ``0 < lam < 10`` the multiplication method: multiply ``random()`` draws until the
    product is ``<= exp(-lam)`` and return how many were ``> exp(-lam)`` first. ``lam >= 10`` is not used by the
    demo and is refused.
``choice(seq)``
    ``seq[integers(0, len(seq))]``.
``choice_index(weights)``
    One ``random()`` searched (``bisect_right``, clamped to the last index) in ``cdf``: ``cdf(weights)`` is the
    cumulative sum (left to right) of ``w / total`` divided by its last entry, ``total = pairwise_sum(w)``.
``weighted_choice(weights)``
    ``names = sorted(weights)``; one ``random()`` searched (``bisect_right``, clamped to the last name) in the
    cumulative sums of the weights divided one by one by ``pairwise_sum`` of the weights.

``pairwise_sum(values)`` (a float sum whose rounding is part of the definition): below 8 values a left-to-right sum;
up to 128 values 8 running sums ``r[j] += v[8k + j]``, combined as ``((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 +
r7))``, then the last ``n mod 8`` values added one by one; above 128 values the sum of the first ``m`` values plus
the sum of the rest, ``m = n // 2`` rounded down to a multiple of 8 (recursively). (NumPy's ``add.reduce`` sums
float64 arrays this way today; the demo's cumulative weights were defined by it.)

``exp`` and ``log1p`` are the platform C library's (``math.exp`` / ``math.log1p``): they decide only the rare
rejection steps of the two ziggurats.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from functools import lru_cache
from itertools import accumulate, islice

import numpy as np

from ov3d_core.demo import ziggurat as Z

__all__ = ["Stream", "pairwise_sum", "cdf"]

_U53 = 1.0 / 9007199254740992.0  # 2**-53
_M32 = 0xFFFFFFFF
_M52 = (1 << 52) - 1
_NOR_K, _NOR_W, _NOR_F = Z.NOR_K, Z.NOR_W, Z.NOR_F
_EXP_K, _EXP_W, _EXP_F = Z.EXP_K, Z.EXP_W, Z.EXP_F
_FIRST_BLOCK, _MAX_BLOCK = 64, 4096


def pairwise_sum(values) -> float:
    """The float sum of ``values`` by the pairwise rule of the module docstring."""
    w = [float(v) for v in values]
    return _pairwise(w, 0, len(w))


def _pairwise(w: list, start: int, n: int) -> float:
    if n < 8:
        res = 0.0
        for v in w[start:start + n]:
            res += v
        return res
    if n <= 128:
        r = w[start:start + 8]
        i = 8
        last = n - n % 8
        while i < last:
            for j in range(8):
                r[j] += w[start + i + j]
            i += 8
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        for v in w[start + i:start + n]:
            res += v
        return res
    m = n // 2
    m -= m % 8
    return _pairwise(w, start, m) + _pairwise(w, start + m, n - m)


@lru_cache(maxsize=256)
def cdf(weights: tuple) -> tuple:
    """The cumulative distribution :meth:`Stream.choice_index` searches (module docstring)."""
    w = [float(v) for v in weights]
    total = pairwise_sum(w)
    c = list(accumulate(v / total for v in w))
    last = c[-1]
    return tuple(v / last for v in c)


class Stream:
    """One random stream: ``Stream(entropy)`` reads ``PCG64(SeedSequence(entropy)).random_raw()``; the draws are the
    module docstring's transforms. ``entropy``: an int or a sequence of ints (SeedSequence's entropy)."""

    __slots__ = ("_bits", "_next", "_block", "_has32", "_hi32")

    def __init__(self, entropy):
        self._bits = np.random.PCG64(np.random.SeedSequence(entropy))
        self._next = iter(()).__next__
        self._block = _FIRST_BLOCK
        self._has32 = False
        self._hi32 = 0

    # ---------------------------------------------------------------- raw words
    def _refill(self) -> int:
        """Fetch the next block of words; returns the first one (the caller's draw)."""
        block = self._bits.random_raw(self._block).tolist()
        self._block = min(self._block * 2, _MAX_BLOCK)
        it = iter(block)
        self._next = it.__next__
        return next(it)

    def next64(self) -> int:
        """The next 64-bit word."""
        try:
            return self._next()
        except StopIteration:
            return self._refill()

    def _take(self, n: int) -> np.ndarray:
        """The next ``n`` words as a uint64 array (the kept words first, then straight from the bit generator)."""
        kept = list(islice(_CallIter(self._next), n))
        if len(kept) == n:
            return np.array(kept, dtype=np.uint64)
        self._next = iter(()).__next__
        rest = self._bits.random_raw(n - len(kept))
        return np.concatenate([np.array(kept, dtype=np.uint64), rest]) if kept else rest

    def _give_back(self, words: np.ndarray) -> None:
        """Put words taken by :meth:`_take` but not used back in front of the kept ones (order kept)."""
        if len(words):
            rest = list(_CallIter(self._next))
            it = iter(words.tolist() + rest)
            self._next = it.__next__

    def next32(self) -> int:
        """The next 32-bit word (low half of a new 64-bit word, then its high half)."""
        if self._has32:
            self._has32 = False
            return self._hi32
        try:
            w = self._next()
        except StopIteration:
            w = self._refill()
        self._has32 = True
        self._hi32 = w >> 32
        return w & _M32

    # ---------------------------------------------------------------- uniform
    def random(self, size=None):
        """A double in [0, 1) (``size``: an array of them, in draw order)."""
        if size is None:
            try:
                w = self._next()
            except StopIteration:
                w = self._refill()
            return (w >> 11) * _U53
        n = int(np.prod(size))
        return ((self._take(n) >> np.uint64(11)).astype(np.float64) * _U53).reshape(size)

    def uniform(self, lo, hi) -> float:
        """``lo + (hi - lo) * random()`` for scalars."""
        lo = float(lo)
        span = float(hi) - lo
        if not span >= 0:
            raise ValueError("high - low < 0")
        try:
            w = self._next()
        except StopIteration:
            w = self._refill()
        return lo + span * ((w >> 11) * _U53)

    # ---------------------------------------------------------------- normal
    def standard_normal(self) -> float:
        """One standard normal draw (the ziggurat of the module docstring)."""
        while True:
            try:
                w = self._next()
            except StopIteration:
                w = self._refill()
            i = w & 0xFF
            w >>= 8
            a = (w >> 1) & _M52
            x = a * _NOR_W[i]
            if w & 1:
                x = -x
            if a < _NOR_K[i]:
                return x
            y = self._normal_slow(i, a, x)
            if y is not None:
                return y

    def _normal_slow(self, i: int, a: int, x: float):
        """The rare steps of :meth:`standard_normal` for layer ``i``: the value, or None to start over."""
        if i == 0:
            while True:
                xx = -Z.NOR_INV_R * math.log1p(-self.random())
                yy = -math.log1p(-self.random())
                if yy + yy > xx * xx:
                    return -(Z.NOR_R + xx) if (a >> 8) & 1 else Z.NOR_R + xx
        if (_NOR_F[i - 1] - _NOR_F[i]) * self.random() + _NOR_F[i] < math.exp(-0.5 * x * x):
            return x
        return None

    def normal(self, loc=0.0, scale=1.0, size=None):
        """``loc + scale * standard_normal()`` (``size``: an array of them, in draw order)."""
        loc, scale = float(loc), float(scale)
        if size is None:
            return loc + scale * self.standard_normal()
        n = int(np.prod(size))
        if n <= 64:
            return np.array(self.normals(loc, scale, n), dtype=np.float64).reshape(size)
        return (loc + scale * self._standard_normal_array(n)).reshape(size)

    def normals(self, loc: float, scale: float, n: int) -> list:
        """``[loc + scale * standard_normal() for _ in range(n)]`` as a list (the ziggurat's one-word step inlined:
        the demo perturbs every detected box with 11 of these)."""
        out = []
        nxt = self._next
        for _ in range(n):
            try:
                w = nxt()
            except StopIteration:
                w = self._refill()
                nxt = self._next
            i = w & 0xFF
            w >>= 8
            a = (w >> 1) & _M52
            x = a * _NOR_W[i]
            if w & 1:
                x = -x
            if a >= _NOR_K[i]:
                x = self._normal_slow(i, a, x)
                if x is None:
                    x = self.standard_normal()
                nxt = self._next
            out.append(loc + scale * x)
        return out

    def _standard_normal_array(self, n: int) -> np.ndarray:
        """``n`` standard normal draws, vectorised: the one-word acceptance of every word is computed at once, the
        rare slow steps run one by one where they fall (they read the words after theirs)."""
        out = np.empty(n, dtype=np.float64)
        k_tab = np.array(_NOR_K, dtype=np.uint64)
        w_tab = np.array(_NOR_W, dtype=np.float64)
        done = 0
        while done < n:
            words = self._take(n - done)
            idx = (words & np.uint64(0xFF)).astype(np.intp)
            r = words >> np.uint64(8)
            a = (r >> np.uint64(1)) & np.uint64(_M52)
            x = a.astype(np.float64) * w_tab[idx]
            x = np.where((r & np.uint64(1)).astype(bool), -x, x)
            slow = np.flatnonzero(a >= k_tab[idx]).tolist()
            pos, m = 0, len(words)
            reader = _BlockReader(words, self)
            for b in slow:
                if b < pos:
                    continue  # this word was read by an earlier slow step
                take = min(b - pos, n - done)
                out[done:done + take] = x[pos:pos + take]
                done += take
                pos += take
                if done == n:
                    break
                # word b starts a slow draw
                reader.pos = b + 1
                y = self._normal_slow_from(reader, int(idx[b]), int(a[b]), float(x[b]))
                if y is not None:
                    out[done] = y
                    done += 1
                pos = reader.pos
                if pos > m:  # the slow step read past this block (from the stream itself)
                    break
                if done == n:
                    break
            else:
                take = min(m - pos, n - done)
                out[done:done + take] = x[pos:pos + take]
                done += take
                pos += take
            if done == n and pos < m:
                self._give_back(words[pos:])
        return out

    def _normal_slow_from(self, reader: "_BlockReader", i: int, a: int, x: float):
        """:meth:`_normal_slow` reading its uniforms from ``reader``; a rejection finishes the draw with
        :meth:`standard_normal` on the following words (returns its value)."""
        if i == 0:
            while True:
                xx = -Z.NOR_INV_R * math.log1p(-reader.random())
                yy = -math.log1p(-reader.random())
                if yy + yy > xx * xx:
                    return -(Z.NOR_R + xx) if (a >> 8) & 1 else Z.NOR_R + xx
        if (_NOR_F[i - 1] - _NOR_F[i]) * reader.random() + _NOR_F[i] < math.exp(-0.5 * x * x):
            return x
        return reader.standard_normal()

    # ---------------------------------------------------------------- exponential
    def standard_exponential(self) -> float:
        """One standard exponential draw (the exponential ziggurat of the module docstring)."""
        while True:
            w = self.next64() >> 3
            i = w & 0xFF
            a = w >> 8
            x = a * _EXP_W[i]
            if a < _EXP_K[i]:
                return x
            if i == 0:
                return Z.EXP_R - math.log1p(-self.random())
            if (_EXP_F[i - 1] - _EXP_F[i]) * self.random() + _EXP_F[i] < math.exp(-x):
                return x

    def exponential(self, scale=1.0) -> float:
        """``scale * standard_exponential()``."""
        return float(scale) * self.standard_exponential()

    # ---------------------------------------------------------------- integers
    def integers(self, low, high=None) -> int:
        """An int in [low, high) (``integers(n)``: in [0, n))."""
        if high is None:
            low, high = 0, low
        low, high = int(low), int(high)
        if high <= low:
            raise ValueError("low >= high")
        r = high - low - 1
        if r == 0:
            return low
        if r < _M32:
            excl = r + 1
            m = self.next32() * excl
            left = m & _M32
            if left < excl:
                threshold = ((1 << 32) - excl) % excl
                while left < threshold:
                    m = self.next32() * excl
                    left = m & _M32
            return low + (m >> 32)
        if r == _M32:
            return low + self.next32()
        if r == (1 << 64) - 1:
            return low + self.next64()
        if r > (1 << 64) - 1:
            raise ValueError("a range of more than 2**64 values")
        excl = r + 1
        m = self.next64() * excl
        left = m & ((1 << 64) - 1)
        if left < excl:
            threshold = ((1 << 64) - excl) % excl
            while left < threshold:
                m = self.next64() * excl
                left = m & ((1 << 64) - 1)
        return low + (m >> 64)

    def interval(self, n: int) -> int:
        """An int in [0, n] by masked rejection (what :meth:`shuffle` draws)."""
        if n == 0:
            return 0
        mask = (1 << n.bit_length()) - 1
        draw = self.next32 if n <= _M32 else self.next64
        while True:
            v = draw() & mask
            if v <= n:
                return v

    def shuffle(self, x) -> None:
        """Shuffle the list (or 1-d array) ``x`` in place (Fisher-Yates from the end)."""
        for i in range(len(x) - 1, 0, -1):
            j = self.interval(i)
            x[i], x[j] = x[j], x[i]

    def permutation(self, n: int) -> np.ndarray:
        """``arange(n)`` shuffled."""
        arr = np.arange(int(n))
        order = arr.tolist()
        self.shuffle(order)
        return np.array(order, dtype=arr.dtype)

    def poisson(self, lam) -> int:
        """A Poisson draw for ``0 <= lam < 10`` (the multiplication method)."""
        lam = float(lam)
        if not 0 <= lam < 10:
            raise ValueError("poisson: the demo's generator draws only 0 <= lam < 10")
        if lam == 0:
            return 0
        enlam = math.exp(-lam)
        k, prod = 0, 1.0
        while True:
            prod *= self.random()
            if prod > enlam:
                k += 1
            else:
                return k

    # ---------------------------------------------------------------- choices
    def choice(self, seq):
        """An element of ``seq``, uniformly (``seq[integers(len(seq))]``)."""
        return seq[self.integers(len(seq))]

    def choice_index(self, weights: tuple) -> int:
        """An index drawn with probability proportional to ``weights`` (a tuple; see :func:`cdf`)."""
        c = cdf(weights)
        return min(bisect_right(c, self.random()), len(c) - 1)

    def weighted_choice(self, weights: dict) -> str:
        """A key of ``weights`` drawn with probability proportional to its (positive) weight."""
        names = sorted(weights)
        w = [float(weights[n]) for n in names]
        total = pairwise_sum(w)
        if not total > 0:
            raise ValueError("weighted_choice needs a positive total weight")
        u = self.random()
        c = [v / total for v in accumulate(w)]
        return names[min(bisect_right(c, u), len(names) - 1)]


class _CallIter:
    """An iterator over a ``__next__`` callable (``islice`` needs an iterator)."""

    __slots__ = ("f",)

    def __init__(self, f):
        self.f = f

    def __iter__(self):
        return self

    def __next__(self):
        return self.f()


class _BlockReader:
    """Words of a taken block from ``pos`` on, then the stream's own words: what a slow normal step reads."""

    __slots__ = ("words", "pos", "stream", "m")

    def __init__(self, words: np.ndarray, stream: Stream):
        self.words, self.pos, self.stream, self.m = words, 0, stream, len(words)

    def next64(self) -> int:
        p = self.pos
        self.pos = p + 1
        if p < self.m:
            return int(self.words[p])
        return self.stream.next64()

    def random(self) -> float:
        return (self.next64() >> 11) * _U53

    def standard_normal(self) -> float:
        while True:
            w = self.next64()
            i = w & 0xFF
            w >>= 8
            a = (w >> 1) & _M52
            x = a * _NOR_W[i]
            if w & 1:
                x = -x
            if a < _NOR_K[i]:
                return x
            y = self.stream._normal_slow_from(self, i, a, x)
            if y is not None:
                return y
