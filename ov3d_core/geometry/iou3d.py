"""Exact 3D IoU of arbitrarily rotated cuboids (float64, numba) and the broad phase that picks candidate pairs.

Method (per pair A, B): the intersection A ∩ B is convex; its boundary is made of A's faces clipped by B's six
half-spaces and B's faces clipped by A's (Sutherland-Hodgman). The volume follows from the divergence theorem,
(1/3) * sum over pieces of (signed distance of the piece's plane from a reference point) * (piece area). Everything is
computed relative to A's centre, so boxes 1e4 m from the origin keep full precision.

Degenerate configurations are resolved by construction, not by luck of rounding:

* Each box is first made exactly plane-faced: every face plane is fitted through the face (Newell normal, face centroid)
  and every corner is moved to the intersection of its three face planes, so the clipped pieces close up into one
  surface. Corners of valid boxes (Omni3D allows 1e-4 m of non-planarity) move by at most that much; far from planar
  garbage keeps its raw corners and gets an approximate, finite, clamped value (check_valid zeroes it anyway).
* Coplanar faces of the same orientation (boxes standing on the same floor, a box shifted along its own axis): each
  face is clipped by the difference F of the two plane functions (see ``_face_piece``). A keeps F >= 0 and B keeps
  -F > 0 of the same affine function, so a shared patch is counted exactly once, and nearly coplanar faces (tilted by
  1e-12 .. 1e-8 rad) split it consistently instead of leaving rounding-amplified gaps or overlaps.
* The reference point is the mean of the pieces' vertices, which lies in the intersection: seams between nearly coplanar
  faces then carry no volume (this matters for thin wedges between boxes that barely touch).
* A box on the outer side of one of the other's planes within a tolerance (separated, or touching faces) gives exactly
  0; a box inside the other within the tolerance gives the smaller volume. The tolerance is 1e-11 of the boxes' size
  plus 1e-13 of their distance from the origin: far above float64 rounding, and the volume it can misattribute is below
  about 1e-10 of the boxes' volume.

Checked against an independent scipy half-space-intersection oracle (1e-9 IoU on random rotated boxes; in practice
~1e-15), against closed forms for boxes sharing a rotation (exact coplanar faces, 1e4 m offsets), and for continuity
under rotations of 1e-13 .. 1e-5 rad (the error stays at the size of the true change).

IoU is clamped to [0, 1] and is never NaN; boxes with non-finite corners or zero volume have IoU 0 with everything.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ov3d_core.geometry.boxes import BOX_FACES
from ov3d_core.geometry.validity import box_volume, valid_boxes  # noqa: F401  (re-exported)

__all__ = ["box_iou_3d", "paired_iou_3d", "candidate_pairs", "valid_boxes", "box_volume", "bounding_spheres"]

_FACES = np.ascontiguousarray(BOX_FACES, dtype=np.int64)
#: For each corner, the three faces that contain it (derived from BOX_FACES, never re-derived from the corner order).
_CORNER_FACES = np.array([[f for f in range(6) if k in BOX_FACES[f]] for k in range(8)], dtype=np.int64)
assert _CORNER_FACES.shape == (8, 3)

_POLY_CAP = 256  # Sutherland-Hodgman output bound for a 4-gon after 6 clips, even for noisy (non-convex) input

# --------------------------------------------------------------------------------------------------------------------
# numba kernels


@njit(cache=True, error_model="numpy", nogil=True)
def _prepare_kernel(corners, faces, corner_faces, ctr, loc, nrm, off, vol, rad, ok):
    """Per box: centre, plane-faced corners relative to the centre, outward unit normals and plane offsets (inside:
    n . x <= off, off > 0), volume and radius. ``ok`` False for non-finite or flat boxes."""
    n_boxes = corners.shape[0]
    L = np.empty((8, 3))
    X = np.empty((8, 3))
    for b in range(n_boxes):
        ok[b] = False
        vol[b] = 0.0
        rad[b] = 0.0
        for a in range(3):
            ctr[b, a] = 0.0
        for f in range(6):
            off[b, f] = 0.0
            for a in range(3):
                nrm[b, f, a] = 0.0
        finite = True
        for k in range(8):
            for a in range(3):
                if not np.isfinite(corners[b, k, a]):
                    finite = False
        if not finite:
            for k in range(8):
                for a in range(3):
                    loc[b, k, a] = 0.0
            continue
        for a in range(3):
            s = 0.0
            for k in range(8):
                s += corners[b, k, a]
            ctr[b, a] = s / 8.0
        scale = 0.0
        for k in range(8):
            for a in range(3):
                L[k, a] = corners[b, k, a] - ctr[b, a]
                loc[b, k, a] = L[k, a]
                scale = max(scale, abs(L[k, a]))
        if not scale > 0.0:
            continue
        good = True
        for f in range(6):
            i0, i1, i2, i3 = faces[f, 0], faces[f, 1], faces[f, 2], faces[f, 3]
            # Newell normal of the quad: cross product of its diagonals (2 x area vector for a planar quad)
            ux = L[i2, 0] - L[i0, 0]
            uy = L[i2, 1] - L[i0, 1]
            uz = L[i2, 2] - L[i0, 2]
            vx = L[i3, 0] - L[i1, 0]
            vy = L[i3, 1] - L[i1, 1]
            vz = L[i3, 2] - L[i1, 2]
            nx = uy * vz - uz * vy
            ny = uz * vx - ux * vz
            nz = ux * vy - uy * vx
            nn = np.sqrt(nx * nx + ny * ny + nz * nz)
            if not nn > 1e-14 * scale * scale:
                good = False
                break
            nx /= nn
            ny /= nn
            nz /= nn
            qx = 0.25 * (L[i0, 0] + L[i1, 0] + L[i2, 0] + L[i3, 0])
            qy = 0.25 * (L[i0, 1] + L[i1, 1] + L[i2, 1] + L[i3, 1])
            qz = 0.25 * (L[i0, 2] + L[i1, 2] + L[i2, 2] + L[i3, 2])
            o = nx * qx + ny * qy + nz * qz
            if o < 0.0:  # orient outwards (the centre of a convex box is inside)
                nx, ny, nz, o = -nx, -ny, -nz, -o
            if not o > 1e-12 * scale:  # the centre lies on a face plane: flat box
                good = False
                break
            nrm[b, f, 0] = nx
            nrm[b, f, 1] = ny
            nrm[b, f, 2] = nz
            off[b, f] = o
        if not good:
            continue
        # corners = intersections of their three face planes (Cramer's rule)
        regular = True
        for k in range(8):
            f1, f2, f3 = corner_faces[k, 0], corner_faces[k, 1], corner_faces[k, 2]
            ax, ay, az = nrm[b, f1, 0], nrm[b, f1, 1], nrm[b, f1, 2]
            bx, by, bz = nrm[b, f2, 0], nrm[b, f2, 1], nrm[b, f2, 2]
            cx, cy, cz = nrm[b, f3, 0], nrm[b, f3, 1], nrm[b, f3, 2]
            bcx, bcy, bcz = by * cz - bz * cy, bz * cx - bx * cz, bx * cy - by * cx
            cax, cay, caz = cy * az - cz * ay, cz * ax - cx * az, cx * ay - cy * ax
            abx, aby, abz = ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx
            det = ax * bcx + ay * bcy + az * bcz
            if not abs(det) > 1e-9:
                regular = False
                break
            o1, o2, o3 = off[b, f1], off[b, f2], off[b, f3]
            X[k, 0] = (o1 * bcx + o2 * cax + o3 * abx) / det
            X[k, 1] = (o1 * bcy + o2 * cay + o3 * aby) / det
            X[k, 2] = (o1 * bcz + o2 * caz + o3 * abz) / det
            dev = max(abs(X[k, 0] - L[k, 0]), abs(X[k, 1] - L[k, 1]), abs(X[k, 2] - L[k, 2]))
            if not dev <= 1e-3 * scale:  # far from plane-faced: keep the raw corners
                regular = False
                break
        r = 0.0
        for k in range(8):
            for a in range(3):
                if regular:
                    loc[b, k, a] = X[k, a]
            r = max(r, np.sqrt(loc[b, k, 0] ** 2 + loc[b, k, 1] ** 2 + loc[b, k, 2] ** 2))
        rad[b] = r
        v = 0.0
        for f in range(6):
            i0, i1, i2, i3 = faces[f, 0], faces[f, 1], faces[f, 2], faces[f, 3]
            ux = loc[b, i2, 0] - loc[b, i0, 0]
            uy = loc[b, i2, 1] - loc[b, i0, 1]
            uz = loc[b, i2, 2] - loc[b, i0, 2]
            vx = loc[b, i3, 0] - loc[b, i1, 0]
            vy = loc[b, i3, 1] - loc[b, i1, 1]
            vz = loc[b, i3, 2] - loc[b, i1, 2]
            ax = uy * vz - uz * vy
            ay = uz * vx - ux * vz
            az = ux * vy - uy * vx
            area = 0.5 * abs(ax * nrm[b, f, 0] + ay * nrm[b, f, 1] + az * nrm[b, f, 2])
            v += off[b, f] * area / 3.0
        vol[b] = v
        ok[b] = v > 0.0 and np.isfinite(v)


@njit(cache=True, error_model="numpy")
def _clip(src, n, gx, gy, gz, c, strict, dst, dist):
    """Sutherland-Hodgman: clip polygon src[:n] to the half-space F(p) = c - g . p >= 0 (> 0 when ``strict``) into
    dst. Returns the new vertex count, or -1 when nothing is clipped (dst untouched). Crossing points are interpolated
    from the inside vertex, so two faces sharing an edge get bit-identical points."""
    n_out = 0
    for k in range(n):
        d = c - (gx * src[k, 0] + gy * src[k, 1] + gz * src[k, 2])
        dist[k] = d
        if d < 0.0 or (strict and d == 0.0):
            n_out += 1
    if n_out == 0:
        return -1
    if n_out == n:
        return 0
    m = 0
    for k in range(n):
        k2 = k + 1 if k + 1 < n else 0
        d1 = dist[k]
        d2 = dist[k2]
        in1 = d1 > 0.0 or (not strict and d1 == 0.0)
        in2 = d2 > 0.0 or (not strict and d2 == 0.0)
        if in1:
            dst[m, 0] = src[k, 0]
            dst[m, 1] = src[k, 1]
            dst[m, 2] = src[k, 2]
            m += 1
            if not in2:
                t = d1 / (d1 - d2)
                dst[m, 0] = src[k, 0] + t * (src[k2, 0] - src[k, 0])
                dst[m, 1] = src[k, 1] + t * (src[k2, 1] - src[k, 1])
                dst[m, 2] = src[k, 2] + t * (src[k2, 2] - src[k, 2])
                m += 1
        elif in2:
            t = d2 / (d2 - d1)
            dst[m, 0] = src[k2, 0] + t * (src[k, 0] - src[k2, 0])
            dst[m, 1] = src[k2, 1] + t * (src[k, 1] - src[k2, 1])
            dst[m, 2] = src[k2, 2] + t * (src[k, 2] - src[k2, 2])
            m += 1
    return m


@njit(cache=True, error_model="numpy")
def _poly_area(poly, m, nx, ny, nz):
    """Area of the planar polygon poly[:m] projected on the unit normal (fan from the first vertex), and the sum of
    its vertices."""
    px, py, pz = poly[0, 0], poly[0, 1], poly[0, 2]
    if m < 3:
        return 0.0, 0.0, 0.0, 0.0
    sx = 0.0
    sy = 0.0
    sz = 0.0
    ux, uy, uz = poly[1, 0] - px, poly[1, 1] - py, poly[1, 2] - pz
    qx = px + poly[1, 0]
    qy = py + poly[1, 1]
    qz = pz + poly[1, 2]
    for k in range(2, m):
        vx, vy, vz = poly[k, 0] - px, poly[k, 1] - py, poly[k, 2] - pz
        sx += uy * vz - uz * vy
        sy += uz * vx - ux * vz
        sz += ux * vy - uy * vx
        ux, uy, uz = vx, vy, vz
        qx += poly[k, 0]
        qy += poly[k, 1]
        qz += poly[k, 2]
    return 0.5 * abs(sx * nx + sy * ny + sz * nz), qx, qy, qz


@njit(cache=True, error_model="numpy")
def _face_piece(P, face, nrm_self, off_self, nrm_other, off_other, skip, strict, buf1, buf2, dist):
    """The part of the quad P[face] (on the plane nrm_self . p = off_self) inside the other box: clipped by each of the
    other box's planes f not marked in skip, written as the difference of the two plane functions,
    F(p) = (off_other[f] - nrm_other[f] . p) - (off_self - nrm_self . p). On the quad's plane F equals the other box's
    plane function; between two nearly coplanar faces F is one affine function (evaluated without cancellation), and
    A's faces keep F >= 0 while B's keep -F > 0, so the shared patch is split consistently and counted exactly once.
    Returns (buffer, count)."""
    for q in range(4):
        for a in range(3):
            buf1[q, a] = P[face[q], a]
    src = buf1
    dst = buf2
    m = np.int64(4)  # typed int64, not Literal[int](4): one compiled _clip, not two
    for f in range(6):
        if skip[f]:
            continue
        r = _clip(src, m, nrm_other[f, 0] - nrm_self[0], nrm_other[f, 1] - nrm_self[1], nrm_other[f, 2] - nrm_self[2],
                  off_other[f] - off_self, strict, dst, dist)
        if r == -1:
            continue
        m = r
        if m == 0:
            break
        src, dst = dst, src
    return src, m


@njit(cache=True, error_model="numpy")
def _face_terms(P, faces, n_own, o_own, n_other, o_other, skip_other, second, buf1, buf2, dist):
    """Clip each face of one box (corners ``P``) by the other's half-spaces; the pieces' divergence-theorem terms:
    (sum o*area, sum n*area as 3 scalars, sum of piece vertices as 3 scalars, vertex count). Scalars, not an array,
    so the hot loop allocates nothing."""
    s0 = s1x = s1y = s1z = rx = ry = rz = 0.0
    nv = 0
    for f in range(6):
        poly, m = _face_piece(P, faces[f], n_own[f], o_own[f], n_other, o_other, skip_other, second, buf1, buf2,
                              dist)
        if m >= 3:
            area, qx, qy, qz = _poly_area(poly, m, n_own[f, 0], n_own[f, 1], n_own[f, 2])
            s0 += o_own[f] * area
            s1x += n_own[f, 0] * area
            s1y += n_own[f, 1] * area
            s1z += n_own[f, 2] * area
            rx += qx
            ry += qy
            rz += qz
            nv += m
    return s0, s1x, s1y, s1z, rx, ry, rz, nv


@njit(cache=True, error_model="numpy")
def _intersection_volume(i, j, ctrA, locA, nrmA, offA, radA, ctrB, locB, nrmB, offB, radB, volA, volB, faces,
                         PB, oB, skipA, skipB, buf1, buf2, dist):
    """Exact volume of A_i ∩ B_j (both prepared by _prepare_kernel and ok)."""
    ex = ctrB[j, 0] - ctrA[i, 0]
    ey = ctrB[j, 1] - ctrA[i, 1]
    ez = ctrB[j, 2] - ctrA[i, 2]
    rr = radA[i] + radB[j]
    if ex * ex + ey * ey + ez * ez > rr * rr * (1.0 + 1e-9):
        return 0.0
    big = max(abs(ctrA[i, 0]), abs(ctrA[i, 1]), abs(ctrA[i, 2])) + max(abs(ctrB[j, 0]), abs(ctrB[j, 1]),
                                                                      abs(ctrB[j, 2]))
    tol = 1e-11 * rr + 1e-13 * big
    # B in A's frame
    for k in range(8):
        PB[k, 0] = locB[j, k, 0] + ex
        PB[k, 1] = locB[j, k, 1] + ey
        PB[k, 2] = locB[j, k, 2] + ez
    for f in range(6):
        oB[f] = offB[j, f] + nrmB[j, f, 0] * ex + nrmB[j, f, 1] * ey + nrmB[j, f, 2] * ez
    # depths (>= 0 inside) of B's corners below A's planes and of A's corners below B's planes
    b_in_a = True
    a_in_b = True
    for f in range(6):
        maxa = -np.inf
        maxb = -np.inf
        mina = np.inf
        minb = np.inf
        for k in range(8):
            da = offA[i, f] - (nrmA[i, f, 0] * PB[k, 0] + nrmA[i, f, 1] * PB[k, 1] + nrmA[i, f, 2] * PB[k, 2])
            db = oB[f] - (nrmB[j, f, 0] * locA[i, k, 0] + nrmB[j, f, 1] * locA[i, k, 1] + nrmB[j, f, 2] * locA[i, k, 2])
            maxa = max(maxa, da)
            maxb = max(maxb, db)
            mina = min(mina, da)
            minb = min(minb, db)
        if maxa <= tol or maxb <= tol:  # separated by a face plane, or touching it
            return 0.0
        if mina < -tol:
            b_in_a = False
        if minb < -tol:
            a_in_b = False
        # a plane that leaves the other box's corners clearly inside clips none of its faces
        skipA[f] = mina > tol  # A's plane f, when clipping B's faces
        skipB[f] = minb > tol  # B's plane f, when clipping A's faces
    if b_in_a:
        return volB[j]
    if a_in_b:
        return volA[i]
    locAi = locA[i]
    nA = nrmA[i]
    oA = offA[i]
    nB = nrmB[j]
    # Divergence theorem about a point r: V = (1/3) sum (o_f - n_f . r) area_f = (s0 - r . s1) / 3. Any r is exact for
    # a closed surface; r = the mean of the pieces' vertices (inside the intersection) makes the result insensitive to
    # the rounding-level seams between nearly coplanar faces of A and B (e.g. a thin wedge where the boxes just touch).
    # np.bool_ flags are typed boolean, not Literal[bool]: numba compiles the face helpers once instead of once per
    # literal value (about a third of the kernels' compile time on a first run without a JIT cache)
    a0, a1, a2, a3, a4, a5, a6, an = _face_terms(locAi, faces, nA, oA, nB, oB, skipB, np.bool_(False), buf1, buf2,
                                                 dist)
    b0, b1, b2, b3, b4, b5, b6, bn = _face_terms(PB, faces, nB, oB, nA, oA, skipA, np.bool_(True), buf1, buf2, dist)
    s0, s1x, s1y, s1z = a0 + b0, a1 + b1, a2 + b2, a3 + b3
    rx, ry, rz, nv = a4 + b4, a5 + b5, a6 + b6, an + bn
    if nv == 0:
        return 0.0
    return (s0 - (rx * s1x + ry * s1y + rz * s1z) / nv) / 3.0


@njit(cache=True, error_model="numpy")
def _iou_from(inter, va, vb):
    if not inter > 0.0:
        return 0.0
    inter = min(inter, va, vb)
    union = va + vb - inter
    if not union > 0.0:
        return 0.0
    iou = inter / union
    if iou > 1.0:
        return 1.0
    if iou > 0.0:
        return iou
    return 0.0


@njit(cache=True, error_model="numpy", nogil=True)
def _paired_kernel(ia, ib, ctrA, locA, nrmA, offA, radA, volA, okA, ctrB, locB, nrmB, offB, radB, volB, okB, faces,
                   out):
    PB = np.empty((8, 3))
    oB = np.empty(6)
    skipA = np.zeros(6, dtype=np.bool_)
    skipB = np.zeros(6, dtype=np.bool_)
    buf1 = np.empty((_POLY_CAP, 3))
    buf2 = np.empty((_POLY_CAP, 3))
    dist = np.empty(_POLY_CAP)
    for p in range(ia.shape[0]):
        i = ia[p]
        j = ib[p]
        if not (okA[i] and okB[j]):
            out[p] = 0.0
            continue
        inter = _intersection_volume(i, j, ctrA, locA, nrmA, offA, radA, ctrB, locB, nrmB, offB, radB, volA, volB,
                                     faces, PB, oB, skipA, skipB, buf1, buf2, dist)
        out[p] = _iou_from(inter, volA[i], volB[j])


@njit(cache=True, error_model="numpy", nogil=True)
def _dense_kernel(ctrA, locA, nrmA, offA, radA, volA, okA, ctrB, locB, nrmB, offB, radB, volB, okB, faces, out):
    PB = np.empty((8, 3))
    oB = np.empty(6)
    skipA = np.zeros(6, dtype=np.bool_)
    skipB = np.zeros(6, dtype=np.bool_)
    buf1 = np.empty((_POLY_CAP, 3))
    buf2 = np.empty((_POLY_CAP, 3))
    dist = np.empty(_POLY_CAP)
    for i in range(ctrA.shape[0]):
        for j in range(ctrB.shape[0]):
            if not (okA[i] and okB[j]):
                out[i, j] = 0.0
                continue
            inter = _intersection_volume(i, j, ctrA, locA, nrmA, offA, radA, ctrB, locB, nrmB, offB, radB, volA,
                                         volB, faces, PB, oB, skipA, skipB, buf1, buf2, dist)
            out[i, j] = _iou_from(inter, volA[i], volB[j])


# --------------------------------------------------------------------------------------------------------------------
# Python API


def _corners(corners, name: str) -> np.ndarray:
    c = np.asarray(corners, dtype=np.float64)
    if c.size == 0:
        return np.zeros((0, 8, 3))
    if c.ndim != 3 or c.shape[1:] != (8, 3):
        raise ValueError(f"{name}: expected corners of shape (N, 8, 3), got {c.shape}")
    return np.ascontiguousarray(c)


def _prepare(c: np.ndarray, check_valid: bool):
    n = len(c)
    ctr = np.empty((n, 3))
    loc = np.empty((n, 8, 3))
    nrm = np.empty((n, 6, 3))
    off = np.empty((n, 6))
    vol = np.empty(n)
    rad = np.empty(n)
    ok = np.empty(n, dtype=np.bool_)
    if n:
        _prepare_kernel(c, _FACES, _CORNER_FACES, ctr, loc, nrm, off, vol, rad, ok)
        if check_valid:
            ok &= valid_boxes(c)
    return ctr, loc, nrm, off, rad, vol, ok


def box_iou_3d(corners_a, corners_b, *, check_valid: bool = True) -> np.ndarray:
    """Exact 3D IoU ``(N, M)`` float64 of boxes ``corners_a (N, 8, 3)`` (ground truth) and ``corners_b (M, 8, 3)``
    (predictions), corners in the Omni3D order (``ov3d_core.geometry.boxes``), any 3D rotation.

    With ``check_valid`` the predictions that fail Omni3D's validity rule (``valid_boxes``) get IoU 0 with everything,
    as Omni3D does; ground truth is never checked. Values are in [0, 1] and never NaN. For many images use
    ``candidate_pairs`` + ``paired_iou_3d`` instead of one dense call per image."""
    a = _corners(corners_a, "corners_a")
    b = _corners(corners_b, "corners_b")
    out = np.zeros((len(a), len(b)))
    if len(a) == 0 or len(b) == 0:
        return out
    pa = _prepare(a, False)
    pb = _prepare(b, check_valid)
    _dense_kernel(*pa, *pb, _FACES, out)
    return out


def paired_iou_3d(corners_a, corners_b, ia, ib, *, check_valid: bool = True) -> np.ndarray:
    """Exact 3D IoU ``(P,)`` of the pairs ``(corners_a[ia[p]], corners_b[ib[p]])``; same rules as ``box_iou_3d``.

    One compiled loop over the pairs (no Python per pair); this is what the geometry cache runs on the candidate pairs
    of ``candidate_pairs``. Each call prepares all boxes of both sets (about 0.5 us per box, plus ~0.5 ms fixed), so
    call it once for a whole dataset rather than once per image."""
    a = _corners(corners_a, "corners_a")
    b = _corners(corners_b, "corners_b")
    ia = np.ascontiguousarray(ia, dtype=np.int64).reshape(-1)
    ib = np.ascontiguousarray(ib, dtype=np.int64).reshape(-1)
    if ia.shape != ib.shape:
        raise ValueError(f"ia and ib must have the same length, got {ia.shape} and {ib.shape}")
    out = np.zeros(len(ia))
    if len(ia) == 0:
        return out
    for name, idx, n in (("ia", ia, len(a)), ("ib", ib, len(b))):
        if idx.min() < 0 or idx.max() >= n:
            raise IndexError(f"{name} has indices outside [0, {n})")
    pa = _prepare(a, False)
    pb = _prepare(b, check_valid)
    _paired_kernel(ia, ib, *pa, *pb, _FACES, out)
    return out


# --------------------------------------------------------------------------------------------------------------------
# broad phase


def bounding_spheres(corners) -> tuple[np.ndarray, np.ndarray]:
    """Centres ``(N, 3)`` (corner mean) and radii ``(N,)`` (largest corner distance from it) of boxes ``(N, 8, 3)``.
    For a cuboid the radius is the half-diagonal. Non-finite boxes give NaN (they overlap nothing)."""
    c = _corners(corners, "corners")
    centre = np.empty((len(c), 3))
    radius = np.empty(len(c))
    _spheres_kernel(c, centre, radius)
    return centre, radius


@njit(cache=True, error_model="numpy", nogil=True)
def _spheres_kernel(c, centre, radius):
    """``bounding_spheres`` in one pass per box, with numpy's own operation order (``c.mean(axis=1)``, then the
    largest of ``(dx*dx + dy*dy) + dz*dz``), so centres and radii are bit-identical to the numpy expression it
    replaced (a test compares them); NaN propagates as numpy's ``max`` does."""
    for i in range(c.shape[0]):
        for q in range(3):
            s = c[i, 0, q]
            for j in range(1, 8):
                s += c[i, j, q]
            centre[i, q] = s / 8.0
        best = 0.0
        for j in range(8):
            dx = c[i, j, 0] - centre[i, 0]
            dy = c[i, j, 1] - centre[i, 1]
            dz = c[i, j, 2] - centre[i, 2]
            d = (dx * dx + dy * dy) + dz * dz
            if d != d:
                best = d
                break
            if d > best:
                best = d
        radius[i] = np.sqrt(best)


@njit(cache=True, error_model="numpy", nogil=True)
def _pairs_kernel(start, stop, order_b, ca, ra, cb, rb, use2d, ba, bb, counts, offsets, ia, ib, fill):
    for i in range(start.shape[0]):
        w = offsets[i] if fill else 0
        c = 0
        for pos in range(start[i], stop[i]):
            j = order_b[pos]
            dx = ca[i, 0] - cb[j, 0]
            dy = ca[i, 1] - cb[j, 1]
            dz = ca[i, 2] - cb[j, 2]
            r = ra[i] + rb[j]
            hit = dx * dx + dy * dy + dz * dz <= r * r * (1.0 + 1e-9)
            if not hit and use2d:
                ow = min(ba[i, 2], bb[j, 2]) - max(ba[i, 0], bb[j, 0])
                oh = min(ba[i, 3], bb[j, 3]) - max(ba[i, 1], bb[j, 1])
                hit = ow > 0.0 and oh > 0.0
            if hit:
                if fill:
                    ia[w + c] = i
                    ib[w + c] = j
                c += 1
        if not fill:
            counts[i] = c


def candidate_pairs(image_a, image_b, corners_a, corners_b, box2d_a=None, box2d_b=None) -> tuple[np.ndarray,
                                                                                               np.ndarray]:
    """Broad phase: index pairs ``(ia, ib)`` (int64, sorted by ia then ib) of boxes in the same image whose bounding
    spheres overlap or touch, or, when both 2D boxes ``(N, 4)`` / ``(M, 4)`` XYXY are given, whose 2D boxes overlap
    with positive area.

    Every pair with 3D IoU > 0 is included (its spheres overlap), and so is every pair whose centre distance is at most
    the ground truth's half-diagonal. No pair spans two images. One compiled loop per box of ``a`` over the boxes of
    ``b`` in its image; nothing is done per pair in Python."""
    image_a = np.asarray(image_a).reshape(-1)
    image_b = np.asarray(image_b).reshape(-1)
    a = _corners(corners_a, "corners_a")
    b = _corners(corners_b, "corners_b")
    if len(a) != len(image_a) or len(b) != len(image_b):
        raise ValueError("image ids and corners must have the same length")
    if (box2d_a is None) != (box2d_b is None):
        raise ValueError("give both box2d_a and box2d_b, or neither")
    use2d = box2d_a is not None
    if use2d:
        ba = np.ascontiguousarray(box2d_a, dtype=np.float64).reshape(-1, 4)
        bb = np.ascontiguousarray(box2d_b, dtype=np.float64).reshape(-1, 4)
        if len(ba) != len(a) or len(bb) != len(b):
            raise ValueError("2D boxes and corners must have the same length")
    else:
        ba = np.zeros((len(a), 4))
        bb = np.zeros((len(b), 4))
    empty = np.zeros(0, dtype=np.int64)
    if len(a) == 0 or len(b) == 0:
        return empty, empty.copy()
    # contiguous image codes (ids may be any sortable type)
    _, codes = np.unique(np.concatenate([image_a, image_b]), return_inverse=True)
    code_a = codes[: len(a)].astype(np.int64)
    code_b = codes[len(a):].astype(np.int64)
    order_b = np.argsort(code_b, kind="stable").astype(np.int64)
    sorted_b = code_b[order_b]
    start = np.searchsorted(sorted_b, code_a, side="left").astype(np.int64)
    stop = np.searchsorted(sorted_b, code_a, side="right").astype(np.int64)
    ca, ra = bounding_spheres(a)
    cb, rb = bounding_spheres(b)
    counts = np.zeros(len(a), dtype=np.int64)
    offsets = np.zeros(len(a), dtype=np.int64)
    _pairs_kernel(start, stop, order_b, ca, ra, cb, rb, use2d, ba, bb, counts, offsets, empty, empty, False)
    np.cumsum(counts[:-1], out=offsets[1:])
    total = int(counts.sum())
    ia = np.empty(total, dtype=np.int64)
    ib = np.empty(total, dtype=np.int64)
    if total:
        _pairs_kernel(start, stop, order_b, ca, ra, cb, rb, use2d, ba, bb, counts, offsets, ia, ib, True)
    return ia, ib

