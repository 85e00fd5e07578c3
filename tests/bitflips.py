"""Single-bit corruptions of a file's bytes, for the cache tests (every cache must refuse or survive each one)."""

from __future__ import annotations

import numpy as np


def flipped_copies(raw: bytes, n: int, seed: int = 0):
    """Yield ``(position, copy of raw with one bit flipped there)`` at ``n`` evenly spread positions (headers,
    payload and the zip directory at the end) and ``n`` random ones."""
    rng = np.random.default_rng(seed)
    positions = np.unique(np.r_[np.linspace(0, len(raw) - 1, n).astype(int), rng.integers(0, len(raw), n)])
    for pos in positions:
        flipped = bytearray(raw)
        flipped[pos] ^= 1 << int(rng.integers(0, 8))
        yield int(pos), bytes(flipped)
