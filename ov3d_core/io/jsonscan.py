"""A numba kernel that reads a JSON array of objects straight into numpy columns.

Why: a Cube R-CNN predictions file holds ~46 numbers per record; parsing 4M records into Python dicts, lists and
floats costs ~10 GiB and ~40 s before any conversion (measured in bench/bench_load.py). This kernel tokenises the
bytes once and writes each declared field into a preallocated matrix: no Python object per value.

It is an optimistic fast path, never the authority:

* Values it reads are exact: numbers follow the JSON grammar strictly and are converted with correct rounding
  (Clinger's fast path, else the Eisel-Lemire algorithm with a 128-bit table of powers of five, which needs no
  fallback for up to 19 significant digits (Mushtak & Lemire, 2023)). Anything else (more digits, |exponent| too
  large, a bool or string or null in a numeric field, a wrong shape, a duplicated key, a key with escapes) marks the
  (record, field) ``EXACT``: the caller re-reads that record with Python's ``json`` and decides there.
* Syntax is validated as the standard library does (its extensions ``NaN``/``Infinity`` included, so a record with
  them is re-read exactly); on invalid JSON it stops with the byte offset.

The kernel is resumable: it returns when its output block is full or its input buffer ends inside a record, and is
called again with the same state (see ``ov3d_core.io.columnar``).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

# ------------------------------------------------------------------------------------------------- codes

#: Per (record, field) status.
ABSENT, OK, NULL, EXACT = 0, 1, 2, 3
#: Field kinds.
K_FLOAT, K_INT, K_BOOL, K_STR = 0, 1, 2, 3
#: Kernel results.
DONE, NEED, FULL, SYNTAX, TOO_DEEP = 0, 1, 2, 3, 4
#: Resumption states of the top-level array.
EXPECT_FIRST, EXPECT_ITEM, EXPECT_SEP = 0, 1, 2
#: Record kinds.
REC_OBJECT, REC_OTHER, REC_EXACT = 0, 1, 2

#: Deepest nesting accepted anywhere in a document (the standard library's own limit is the recursion limit, ~1000).
MAX_DEPTH = 1000

_R_NEED = -1
_R_SYNTAX = -2
_R_DEEP = -3

_U64 = np.uint64
_M32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_TOP = np.uint64(1) << np.uint64(63)
_HID = np.uint64(1) << np.uint64(52)
_TWO53 = np.uint64(1) << np.uint64(53)


def _pow5_table() -> np.ndarray:
    """128-bit approximations of 5**q for q in [-342, 308] (hi, lo pairs), as the Eisel-Lemire algorithm uses:
    the 128 most significant bits of 5**q for q >= 0 (truncated) and of 2**b / 5**-q for q < 0 (rounded up)."""
    out = []
    for q in range(-342, 0):
        p5 = 5 ** -q
        z = p5.bit_length()
        if q >= -27:
            c = (1 << (z + 127)) // p5 + 1
        else:
            c = (1 << (2 * z + 128)) // p5 + 1
            while c >= 1 << 128:
                c //= 2
        out += [c >> 64, c & (2 ** 64 - 1)]
    for q in range(0, 309):
        p5 = 5 ** q
        while p5 < 1 << 127:
            p5 *= 2
        while p5 >= 1 << 128:
            p5 //= 2
        out += [p5 >> 64, p5 & (2 ** 64 - 1)]
    return np.array(out, dtype=np.uint64)


POW5 = _pow5_table()
POW10 = np.array([10.0 ** i for i in range(23)], dtype=np.float64)


# ------------------------------------------------------------------------------------------------- numbers

@njit(cache=True, _nrt=False)
def _mul128(a, b):
    """Full 64x64 -> 128-bit product of two uint64, as (hi, lo)."""
    a_lo = a & _M32
    a_hi = a >> _S32
    b_lo = b & _M32
    b_hi = b >> _S32
    p0 = a_lo * b_lo
    p1 = a_lo * b_hi
    p2 = a_hi * b_lo
    p3 = a_hi * b_hi
    mid = (p0 >> _S32) + (p1 & _M32) + (p2 & _M32)
    lo = (p0 & _M32) | (mid << _S32)
    hi = p3 + (p1 >> _S32) + (p2 >> _S32) + (mid >> _S32)
    return hi, lo


@njit(cache=True, _nrt=False)
def _clz(x):
    n = 0
    if x <= _U64(0x00000000FFFFFFFF):
        n += 32
        x <<= _U64(32)
    if x <= _U64(0x0000FFFFFFFFFFFF):
        n += 16
        x <<= _U64(16)
    if x <= _U64(0x00FFFFFFFFFFFFFF):
        n += 8
        x <<= _U64(8)
    if x <= _U64(0x0FFFFFFFFFFFFFFF):
        n += 4
        x <<= _U64(4)
    if x <= _U64(0x3FFFFFFFFFFFFFFF):
        n += 2
        x <<= _U64(2)
    if x <= _U64(0x7FFFFFFFFFFFFFFF):
        n += 1
    return n


@njit(cache=True, _nrt=False)
def to_double(w, q, neg, pow10, pow5):
    """``(value, ok)``: the double nearest to ``w * 10**q`` (ties to even), for ``w`` < 10**19 (uint64).

    ``ok`` is False outside the domain handled here (|q| large enough to reach subnormals or overflow); the caller
    then converts the text with Python."""
    if w == _U64(0):
        return (-0.0 if neg else 0.0), True
    if q >= -22 and q <= 22 and w <= _TWO53:  # Clinger: both operands exact, one rounding
        v = float(w)
        if q >= 0:
            v = v * pow10[q]
        else:
            v = v / pow10[-q]
        return (-v if neg else v), True
    if q < -300 or q > 288:  # 10**19 * 10**288 < DBL_MAX; 10**-300 is far from the subnormals
        return 0.0, False
    lz = _clz(w)
    w = w << _U64(lz)
    idx = 2 * (q + 342)
    hi, lo = _mul128(w, pow5[idx])
    if (hi & _U64(0x1FF)) == _U64(0x1FF):
        hi2, lo2 = _mul128(w, pow5[idx + 1])
        lo = lo + hi2
        if hi2 > lo:
            hi = hi + _U64(1)
    upper = np.int64(hi >> _U64(63))
    shift = _U64(upper + 9)
    m = hi >> shift
    power2 = ((217706 * q) >> 16) + 63 + upper - lz + 1023
    if lo <= _U64(1) and q >= -4 and q <= 23 and (m & _U64(3)) == _U64(1):
        if (m << shift) == hi:
            m = m & ~_U64(1)
    m = m + (m & _U64(1))
    m = m >> _U64(1)
    if m >= (_HID << _U64(1)):
        m = _HID
        power2 += 1
    v = math.ldexp(float(m), power2 - 1075)
    return (-v if neg else v), True


@njit(cache=True, _nrt=False)
def scan_number(buf, p, end, eof):
    """Parse the JSON number at ``buf[p]``.

    Returns ``(pos after it, code, w, q, neg, is_int)``; code 0: ok (value ``w * 10**q``), 1: more than 19
    significant digits (w, q unusable), ``_R_NEED``: the buffer ends inside it, ``_R_SYNTAX``: not a number (at pos).
    """
    w = _U64(0)
    nd = 0
    q = 0
    many = False
    neg = False
    if buf[p] == 45:  # '-'
        neg = True
        p += 1
        if p >= end:
            return p, (_R_SYNTAX if eof else _R_NEED), w, q, neg, True
    c = buf[p]
    if c == 48:  # a single leading '0'
        p += 1
    elif 49 <= c <= 57:
        while p < end:
            c = buf[p]
            if c < 48 or c > 57:
                break
            if nd < 19:
                w = w * _U64(10) + _U64(c - 48)
                nd += 1
            else:
                many = True
                q += 1
            p += 1
    else:
        return p, _R_SYNTAX, w, q, neg, True
    is_int = True
    if p < end and buf[p] == 46:  # '.'
        is_int = False
        p += 1
        if p >= end:
            return p, (_R_SYNTAX if eof else _R_NEED), w, q, neg, False
        c = buf[p]
        if c < 48 or c > 57:
            return p, _R_SYNTAX, w, q, neg, False
        while p < end:
            c = buf[p]
            if c < 48 or c > 57:
                break
            if nd == 0 and c == 48:
                q -= 1
            elif nd < 19:
                w = w * _U64(10) + _U64(c - 48)
                nd += 1
                q -= 1
            else:
                many = True
            p += 1
    if p < end and (buf[p] == 101 or buf[p] == 69):  # 'e' / 'E'
        is_int = False
        p += 1
        if p >= end:
            return p, (_R_SYNTAX if eof else _R_NEED), w, q, neg, False
        eneg = False
        if buf[p] == 43 or buf[p] == 45:
            eneg = buf[p] == 45
            p += 1
            if p >= end:
                return p, (_R_SYNTAX if eof else _R_NEED), w, q, neg, False
        c = buf[p]
        if c < 48 or c > 57:
            return p, _R_SYNTAX, w, q, neg, False
        e = 0
        while p < end:
            c = buf[p]
            if c < 48 or c > 57:
                break
            if e < 100000:
                e = e * 10 + (c - 48)
            p += 1
        q += -e if eneg else e
    if p >= end and not eof:
        return p, _R_NEED, w, q, neg, is_int
    return p, (1 if many else 0), w, q, neg, is_int


# ------------------------------------------------------------------------------------------------- tokens

@njit(cache=True, _nrt=False)
def _ws(buf, p, end):
    while p < end:
        c = buf[p]
        if c != 32 and c != 10 and c != 13 and c != 9:
            break
        p += 1
    return p


@njit(cache=True, _nrt=False)
def _is_hex(c):
    return (48 <= c <= 57) or (65 <= c <= 70) or (97 <= c <= 102)


@njit(cache=True, _nrt=False)
def scan_string(buf, p, end, eof, state):
    """The JSON string opening at ``buf[p]`` (a quote). Returns ``(pos after the closing quote, flags)``, flags bit 1:
    has escapes, bit 2: has non-ASCII bytes; or a negative code with ``state[1]`` the error offset."""
    p += 1
    flags = 0
    while p < end:
        c = buf[p]
        if c == 34:
            return p + 1, flags
        if c == 92:  # backslash
            flags |= 1
            if p + 1 >= end:
                break
            e = buf[p + 1]
            if e == 117:  # \uXXXX
                if p + 6 > end:
                    break
                for k in range(2, 6):
                    if not _is_hex(buf[p + k]):
                        state[1] = p
                        return _R_SYNTAX, flags
                p += 6
                continue
            if e == 34 or e == 92 or e == 47 or e == 98 or e == 102 or e == 110 or e == 114 or e == 116:
                p += 2
                continue
            state[1] = p
            return _R_SYNTAX, flags
        if c < 32:
            state[1] = p
            return _R_SYNTAX, flags
        if c >= 128:
            flags |= 2
        p += 1
    if eof:
        state[1] = p
        return _R_SYNTAX, flags
    return _R_NEED, flags


@njit(cache=True, _nrt=False)
def _literal(buf, p, end, eof, lit):
    """Match ``lit`` (bytes as uint8 array) at p: new pos, or a negative code."""
    n = len(lit)
    for k in range(n):
        if p + k >= end:
            return _R_SYNTAX if eof else _R_NEED
        if buf[p + k] != lit[k]:
            return _R_SYNTAX
    return p + n


_TRUE = np.frombuffer(b"true", np.uint8).copy()
_FALSE = np.frombuffer(b"false", np.uint8).copy()
_NULL = np.frombuffer(b"null", np.uint8).copy()
_NAN = np.frombuffer(b"NaN", np.uint8).copy()
_INF = np.frombuffer(b"Infinity", np.uint8).copy()


@njit(cache=True, _nrt=False)
def _scalar_token(buf, p, end, eof, state, lits):
    """Skip one non-container value at p (string, number, literal). Returns new pos or a negative code. Flags in
    ``state[3]``: 2 non-ASCII string bytes, 4 an integer literal of more than ``state[5]`` digits."""
    c = buf[p]
    if c == 34:
        r, flags = scan_string(buf, p, end, eof, state)
        if r >= 0 and flags & 2:
            state[3] |= 2
        return r
    if c == 45 or (48 <= c <= 57):
        if c == 45 and p + 1 < end and buf[p + 1] == 73:  # -Infinity
            r = _literal(buf, p + 1, end, eof, lits[4])
        else:
            r, code, w, q, neg, is_int = scan_number(buf, p, end, eof)
            if code == _R_SYNTAX:
                state[1] = r
                return _R_SYNTAX
            if code == _R_NEED:
                return _R_NEED
            if is_int and state[5] > 0 and r - p - (1 if neg else 0) > state[5]:
                state[3] |= 4  # an integer longer than Python converts (sys.get_int_max_str_digits())
            return r
    elif c == 116:
        r = _literal(buf, p, end, eof, lits[0])
    elif c == 102:
        r = _literal(buf, p, end, eof, lits[1])
    elif c == 110:
        r = _literal(buf, p, end, eof, lits[2])
    elif c == 78:
        r = _literal(buf, p, end, eof, lits[3])
    elif c == 73:
        r = _literal(buf, p, end, eof, lits[4])
    else:
        state[1] = p
        return _R_SYNTAX
    if r == _R_SYNTAX:
        state[1] = p
    return r


@njit(cache=True, _nrt=False)
def _end(eof, state, p):
    """The code for input that ends at p: invalid JSON if it is the real end, else more is needed."""
    if eof:
        state[1] = p
        return _R_SYNTAX
    return _R_NEED


@njit(cache=True, _nrt=False)
def _member_key(buf, p, end, eof, state):
    """An object member's ``"key" :`` at p (after whitespace): the position after the colon, or a negative code."""
    if p >= end:
        return _end(eof, state, p)
    if buf[p] != 34:
        state[1] = p
        return _R_SYNTAX
    r, flags = scan_string(buf, p, end, eof, state)
    if r < 0:
        return r
    if flags & 2:
        state[3] |= 2
    p = _ws(buf, r, end)
    if p >= end:
        return _end(eof, state, p)
    if buf[p] != 58:
        state[1] = p
        return _R_SYNTAX
    return p + 1


@njit(cache=True, _nrt=False)
def skip_value(buf, p, end, eof, depth0, stack, state, lits):
    """Skip one JSON value starting at p (after whitespace), validating it. ``depth0``: nesting depth of the value's
    container. Returns the position after it or a negative code (error offset in ``state[1]``)."""
    d = 0
    while True:
        # a value is expected at p
        p = _ws(buf, p, end)
        if p >= end:
            return _end(eof, state, p)
        c = buf[p]
        if c == 123 or c == 91:  # '{' '['
            if depth0 + d + 1 > MAX_DEPTH:
                state[1] = p
                return _R_DEEP
            stack[d] = c
            d += 1
            p = _ws(buf, p + 1, end)
            if p >= end:
                return _end(eof, state, p)
            if (c == 123 and buf[p] == 125) or (c == 91 and buf[p] == 93):
                d -= 1
                p += 1
            elif c == 123:
                p = _member_key(buf, p, end, eof, state)
                if p < 0:
                    return p
                continue
            else:
                continue
        else:
            r = _scalar_token(buf, p, end, eof, state, lits)
            if r < 0:
                return r
            p = r
        # after a value: close containers or move to the next item
        while True:
            if d == 0:
                return p
            p = _ws(buf, p, end)
            if p >= end:
                return _end(eof, state, p)
            c = buf[p]
            top = stack[d - 1]
            if c == 44:  # ','
                p = _ws(buf, p + 1, end)
                if top == 123:
                    p = _member_key(buf, p, end, eof, state)
                    if p < 0:
                        return p
                break
            if (c == 93 and top == 91) or (c == 125 and top == 123):
                d -= 1
                p += 1
                continue
            state[1] = p
            return _R_SYNTAX


# ------------------------------------------------------------------------------------------------- fields

@njit(cache=True, _nrt=False)
def _field_of(buf, ks, ke, keys, key_off, key_hash):
    """Index of the declared field whose key is ``buf[ks:ke]`` (raw bytes, no escapes), else -1."""
    n = ke - ks
    if n == 0:
        return -1
    h = (n * 131 + buf[ks] * 7 + buf[ke - 1] * 3 + buf[ks + n // 2]) & 255
    for _ in range(len(key_hash)):
        f = key_hash[h]
        if f < 0:
            return -1
        s = key_off[f]
        if key_off[f + 1] - s == n:
            same = True
            for k in range(n):
                if keys[s + k] != buf[ks + k]:
                    same = False
                    break
            if same:
                return f
        h = (h + 1) & 255
    return -1


@njit(cache=True, _nrt=False)
def _intern(buf, s, e, state, tab, names, name_off):
    """Id of the raw string ``buf[s:e]`` in the name table (added if new); -1 if the table is full."""
    h = np.uint64(14695981039346656037)
    for k in range(s, e):
        h = (h ^ np.uint64(buf[k])) * np.uint64(1099511628211)
    size = len(tab)
    slot = np.int64(h & np.uint64(size - 1))
    n = e - s
    for _ in range(size):
        idx = tab[slot]
        if idx < 0:
            break
        a = name_off[idx]
        if name_off[idx + 1] - a == n:
            same = True
            for k in range(n):
                if names[a + k] != buf[s + k]:
                    same = False
                    break
            if same:
                return idx
        slot = (slot + 1) & (size - 1)
    else:
        return -1
    count = state[4]
    used = name_off[count]
    if count + 1 >= len(name_off) or used + n > len(names) or count * 2 >= size:
        return -1
    for k in range(n):
        names[used + k] = buf[s + k]
    name_off[count + 1] = used + n
    tab[slot] = count
    state[4] = count + 1
    return count


@njit(cache=True, _nrt=False)
def _numeric(buf, p, end, eof, kind, rows, cols, out_f, out_i, out_b, i, slot, pow10, pow5, lits, state):
    """Read the value of a numeric/bool field at p into the outputs. Returns ``(pos, status)``: status OK or EXACT
    (then pos is still the value start: the caller skips it), NULL; or (negative code, 0)."""
    c = buf[p]
    if c == 110:  # null
        r = _literal(buf, p, end, eof, lits[2])
        if r < 0:
            if r == _R_SYNTAX:
                state[1] = p
            return r, 0
        return r, NULL
    if rows == 0 and cols == 0:
        if kind == K_BOOL:
            if c == 116:
                r = _literal(buf, p, end, eof, lits[0])
                if r >= 0:
                    out_b[i, slot] = 1
                    return r, OK
            elif c == 102:
                r = _literal(buf, p, end, eof, lits[1])
                if r >= 0:
                    out_b[i, slot] = 0
                    return r, OK
            else:
                return p, EXACT
            if r == _R_SYNTAX:
                state[1] = p
            return r, 0
        if c != 45 and (c < 48 or c > 57):
            return p, EXACT
        r, code, w, q, neg, is_int = scan_number(buf, p, end, eof)
        if code < 0:
            if code == _R_SYNTAX:
                state[1] = r
                # '-Infinity' and friends: let the generic skipper decide
                return p, EXACT
            return code, 0
        if code != 0:
            if is_int and state[5] > 0 and r - p - (1 if neg else 0) > state[5]:
                state[3] |= 4
            return p, EXACT
        if kind == K_INT:
            if not is_int or nd_too_big(w, neg):
                return p, EXACT
            if neg:
                out_i[i, slot] = -np.int64(w) if w < _TOP else np.int64(-9223372036854775807 - 1)
            else:
                out_i[i, slot] = np.int64(w)
            return r, OK
        v, ok = to_double(w, q, neg, pow10, pow5)
        if not ok:
            return p, EXACT
        if is_int and w == _U64(0):
            v = 0.0  # JSON "-0" is the integer 0
        out_f[i, slot] = v
        return r, OK
    # arrays: [n] or [rows][cols] of numbers
    n_out = rows if rows > 0 else 1
    n_in = cols
    k = 0
    if c != 91:
        return p, EXACT
    q0 = p + 1
    for a in range(n_out):
        if rows > 0:
            q0 = _ws(buf, q0, end)
            if q0 >= end:
                return (_R_NEED if not eof else p), (0 if not eof else EXACT)
            if buf[q0] != 91:
                return p, EXACT
            q0 += 1
        for b in range(n_in):
            q0 = _ws(buf, q0, end)
            if q0 >= end:
                return (_R_NEED if not eof else p), (0 if not eof else EXACT)
            c = buf[q0]
            if c != 45 and (c < 48 or c > 57):
                return p, EXACT
            r, code, w, q, neg, is_int = scan_number(buf, q0, end, eof)
            if code == _R_NEED:
                return _R_NEED, 0
            if code != 0:
                if code == 1 and is_int and state[5] > 0 and r - q0 - (1 if neg else 0) > state[5]:
                    state[3] |= 4
                return p, EXACT
            v, ok = to_double(w, q, neg, pow10, pow5)
            if not ok:
                return p, EXACT
            if is_int and w == _U64(0):
                v = 0.0
            out_f[i, slot + k] = v
            k += 1
            q0 = _ws(buf, r, end)
            if q0 >= end:
                return (_R_NEED if not eof else p), (0 if not eof else EXACT)
            if b < n_in - 1:
                if buf[q0] != 44:
                    return p, EXACT
                q0 += 1
        if buf[q0] != 93:
            return p, EXACT
        q0 += 1
        if rows > 0:
            q0 = _ws(buf, q0, end)
            if q0 >= end:
                return (_R_NEED if not eof else p), (0 if not eof else EXACT)
            if a < n_out - 1:
                if buf[q0] != 44:
                    return p, EXACT
                q0 += 1
            elif buf[q0] != 93:
                return p, EXACT
            else:
                q0 += 1
    return q0, OK


@njit(cache=True, _nrt=False)
def nd_too_big(w, neg):
    """An integer literal outside int64."""
    if neg:
        return w > _TOP
    return w >= _TOP


# ------------------------------------------------------------------------------------------------- records

@njit(cache=True, _nrt=False)
def _record(buf, p, end, eof, i, keys, key_off, key_hash, kinds, slots, rows, cols,
            out_f, out_i, out_b, out_s, status, tab, names, name_off, stack, state, pow10, pow5, lits):
    """Parse the object at p (buf[p] == '{') as record i. Returns the position after it or a negative code."""
    nf = len(kinds)
    for f in range(nf):
        status[i, f] = ABSENT
    exact_record = False
    p = _ws(buf, p + 1, end)
    if p >= end:
        return _end(eof, state, p), False
    if buf[p] == 125:
        return p + 1, False
    while True:
        if buf[p] != 34:
            state[1] = p
            return _R_SYNTAX, False
        ks = p + 1
        r, flags = scan_string(buf, p, end, eof, state)
        if r < 0:
            return r, False
        ke = r - 1
        f = -1
        if flags & 1:
            exact_record = True  # a key with escapes may spell a declared field
        else:
            f = _field_of(buf, ks, ke, keys, key_off, key_hash)
        if flags & 2:
            state[3] |= 2
        p = _ws(buf, r, end)
        if p >= end:
            return _end(eof, state, p), False
        if buf[p] != 58:
            state[1] = p
            return _R_SYNTAX, False
        p = _ws(buf, p + 1, end)
        if p >= end:
            return _end(eof, state, p), False
        handled = False
        if f >= 0:
            if status[i, f] != ABSENT:
                status[i, f] = EXACT  # a repeated key: the last one wins, as in json
            else:
                kind = kinds[f]
                if kind == K_STR:
                    c = buf[p]
                    if c == 34:
                        r, sflags = scan_string(buf, p, end, eof, state)
                        if r < 0:
                            return r, False
                        if sflags & 2:
                            state[3] |= 2
                        idx = _intern(buf, p + 1, r - 1, state, tab, names, name_off)
                        if idx >= 0:
                            out_s[i, slots[f]] = idx
                            status[i, f] = OK
                        else:
                            status[i, f] = EXACT
                        p = r
                        handled = True
                    elif c == 110:
                        r = _literal(buf, p, end, eof, lits[2])
                        if r < 0:
                            if r == _R_SYNTAX:
                                state[1] = p
                            return r, False
                        status[i, f] = NULL
                        p = r
                        handled = True
                    else:
                        status[i, f] = EXACT
                else:
                    r, st = _numeric(buf, p, end, eof, kind, rows[f], cols[f], out_f, out_i, out_b, i, slots[f],
                                     pow10, pow5, lits, state)
                    if r < 0:
                        return r, False
                    status[i, f] = st
                    if st != EXACT:
                        p = r
                        handled = True
        if not handled:
            r = skip_value(buf, p, end, eof, np.int64(2), stack, state, lits)
            if r < 0:
                return r, False
            p = r
        p = _ws(buf, p, end)
        if p >= end:
            return _end(eof, state, p), False
        c = buf[p]
        if c == 44:
            p = _ws(buf, p + 1, end)
            if p >= end:
                return _end(eof, state, p), False
            continue
        if c == 125:
            return p + 1, exact_record
        state[1] = p
        return _R_SYNTAX, False


@njit(cache=True, nogil=True, _nrt=False)
def scan_array(buf, end, eof, pos, expect, keys, key_off, key_hash, kinds, slots, rows, cols,
               out_f, out_i, out_b, out_s, status, rec, rec_kind, tab, names, name_off, stack, state,
               pow10, pow5, lits):
    """Read items of a JSON array from ``buf[pos:end]`` into the outputs (row 0 up).

    ``expect``: EXPECT_FIRST (just after '['), EXPECT_ITEM (after ','), EXPECT_SEP (after an item).
    Returns ``(code, pos, expect, n)``: n items written; DONE (pos after ']'), NEED (more input needed; resume at
    pos with expect), FULL (outputs full; resume likewise), SYNTAX / TOO_DEEP (offset in ``state[1]``).
    ``rec[i]`` holds each item's (start, end) offsets in buf; ``rec_kind[i]`` REC_OBJECT / REC_OTHER / REC_EXACT.
    """
    cap = len(rec)
    n = np.int64(0)  # typed, not Literal[int](0): _record and its helpers compile once
    p = pos
    while True:
        p = _ws(buf, p, end)
        if p >= end:
            if eof:
                state[1] = p
                return SYNTAX, p, expect, n
            return NEED, p, expect, n
        c = buf[p]
        if expect == EXPECT_SEP:
            if c == 44:
                p += 1
                expect = EXPECT_ITEM
                continue
            if c == 93:
                return DONE, p + 1, expect, n
            state[1] = p
            return SYNTAX, p, expect, n
        if expect == EXPECT_FIRST and c == 93:
            return DONE, p + 1, expect, n
        if n >= cap:
            return FULL, p, expect, n
        start = p
        if c == 123:
            r, exact = _record(buf, p, end, eof, n, keys, key_off, key_hash, kinds, slots, rows, cols,
                               out_f, out_i, out_b, out_s, status, tab, names, name_off, stack, state,
                               pow10, pow5, lits)
            kind = REC_EXACT if exact else REC_OBJECT
        else:
            r = skip_value(buf, p, end, eof, np.int64(1), stack, state, lits)
            kind = REC_OTHER
            for f in range(len(kinds)):
                status[n, f] = ABSENT
        if r == _R_NEED:
            return NEED, start, expect, n
        if r == _R_SYNTAX:
            return SYNTAX, start, expect, n
        if r == _R_DEEP:
            return TOO_DEEP, start, expect, n
        rec[n, 0] = start
        rec[n, 1] = r
        rec_kind[n] = kind
        n += 1
        p = r
        expect = EXPECT_SEP


@njit(cache=True, _nrt=False)
def object_member(buf, p, end, state):
    """At p (whitespace allowed): a member's ``"key" :``. Returns ``(code, key start, key end, value start)``; code
    DONE, or SYNTAX with the offset in ``state[1]``. The key offsets include its quotes."""
    p = _ws(buf, p, end)
    if p >= end or buf[p] != 34:
        state[1] = p
        return SYNTAX, 0, 0, p
    r, flags = scan_string(buf, p, end, np.bool_(True), state)
    if r < 0:
        return SYNTAX, 0, 0, p
    if flags & 2:
        state[3] |= 2
    q = _ws(buf, r, end)
    if q >= end or buf[q] != 58:
        state[1] = q
        return SYNTAX, 0, 0, q
    q = _ws(buf, q + 1, end)
    if q >= end:
        state[1] = q
        return SYNTAX, 0, 0, q
    return DONE, p, r, q


@njit(cache=True, _nrt=False)
def object_next(buf, p, end, state):
    """After a member's value: ``(code, pos, more)``; more: a ',' (pos after it), else a closing '}' (pos after it).
    """
    p = _ws(buf, p, end)
    if p < end and buf[p] == 44:
        return DONE, p + 1, True
    if p < end and buf[p] == 125:
        return DONE, p + 1, False
    state[1] = p
    return SYNTAX, p, False


@njit(cache=True, _nrt=False)
def skip_at(buf, p, end, depth0, stack, state, lits):
    """``skip_value`` over a complete buffer, as (code, pos after the value)."""
    r = skip_value(buf, p, end, np.bool_(True), depth0, stack, state, lits)
    if r == _R_DEEP:
        return TOO_DEEP, p
    if r < 0:
        return SYNTAX, p
    return DONE, r


LITERALS = (_TRUE, _FALSE, _NULL, _NAN, _INF)
