"""Object shapes for the demo benchmark: open3d mesh primitives (box, cylinder, sphere, cone) composed into
recognisable objects, one builder per *kind* (e.g. ``dining_chair``, ``armchair``, ``sedan``, ``box_truck``).

A builder works in a convenient frame (x = the object's front/heading, y = up, z = across, base on y = 0) and the
result is converted by :func:`finalize` to the Omni3D object frame of ``ov3d_core.geometry.boxes``: the tight
bounding box of the mesh is centred on the origin, local x is the length ``l``, local y the height ``h`` (pointing
*down*, so the top is at y = -h/2) and local z the width ``w``. The conversion is a 180-degree rotation about x
(diag(1, -1, -1), det +1), so the GT box of an object is exactly the tight box of its mesh, and every rendered pixel
of an object lies inside the projection of its GT box.

Every builder draws its sizes and colours from the generator it is given and returns a short visual description
(colour, material, noun) used for crop captions. Kinds, not categories, are what is built: the dataset taxonomy
(``scenes.py``) decides which category a kind is annotated as (a ``minivan`` is a ``van`` in demo_outdoor and a
``regular vehicle`` in demo_outdoor_av).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from ov3d_core.demo.rng import Stream
from ov3d_core.open3d_import import open3d

# Shading material codes (render.py).
MATTE, GLOSSY, GLASS, EMISSIVE = 0, 1, 2, 3

#: Named colours (RGB in [0, 1]); the names end up in captions.
COLOURS: dict[str, tuple[float, float, float]] = {
    "white": (0.90, 0.90, 0.88), "off-white": (0.85, 0.83, 0.78), "cream": (0.90, 0.85, 0.70),
    "beige": (0.78, 0.70, 0.56), "light grey": (0.72, 0.72, 0.72), "grey": (0.50, 0.50, 0.52),
    "dark grey": (0.28, 0.28, 0.30), "black": (0.08, 0.08, 0.09), "silver": (0.70, 0.72, 0.75),
    "red": (0.72, 0.10, 0.10), "dark red": (0.45, 0.07, 0.08), "orange": (0.95, 0.45, 0.08),
    "yellow": (0.92, 0.78, 0.15), "green": (0.20, 0.50, 0.25), "olive": (0.45, 0.48, 0.22),
    "teal": (0.10, 0.48, 0.50), "blue": (0.15, 0.30, 0.70), "navy": (0.10, 0.13, 0.35),
    "light blue": (0.55, 0.70, 0.88), "brown": (0.45, 0.28, 0.15), "dark brown": (0.28, 0.17, 0.09),
    "light wood": (0.78, 0.62, 0.42), "oak": (0.66, 0.50, 0.30), "walnut": (0.40, 0.26, 0.15),
    "pink": (0.88, 0.55, 0.62), "purple": (0.42, 0.22, 0.55), "mustard": (0.80, 0.62, 0.15),
}
GLASS_RGB = (0.10, 0.13, 0.17)
SCREEN_RGB = (0.04, 0.05, 0.07)
METAL_RGB = (0.55, 0.56, 0.58)
TYRE_RGB = (0.07, 0.07, 0.07)
SKIN = ((0.93, 0.75, 0.62), (0.80, 0.60, 0.45), (0.55, 0.38, 0.26), (0.38, 0.25, 0.17))


# ------------------------------------------------------------------------------------------------ primitives
@lru_cache(maxsize=None)
def _template(kind: str, res: int = 12) -> tuple[np.ndarray, np.ndarray]:
    """Unit primitive from open3d, as (vertices, triangles) numpy arrays in the builder frame (y up).

    box: unit cube centred on the origin; cylinder: radius 1, height 1, axis y, centred; sphere: radius 1;
    cone: radius 1, height 1, base on y = 0, apex at y = 1."""
    o3d = open3d()

    if kind == "box":
        m = o3d.geometry.TriangleMesh.create_box(1.0, 1.0, 1.0)
        v = np.asarray(m.vertices) - 0.5
    elif kind == "cylinder":
        m = o3d.geometry.TriangleMesh.create_cylinder(radius=1.0, height=1.0, resolution=res, split=1)
        v = np.asarray(m.vertices)[:, [0, 2, 1]] * np.array([1.0, 1.0, -1.0])  # axis z -> y
    elif kind == "sphere":
        m = o3d.geometry.TriangleMesh.create_sphere(radius=1.0, resolution=res // 2)
        v = np.asarray(m.vertices)
    elif kind == "cone":
        m = o3d.geometry.TriangleMesh.create_cone(radius=1.0, height=1.0, resolution=res, split=1)
        v = np.asarray(m.vertices)[:, [0, 2, 1]] * np.array([1.0, 1.0, -1.0])
    else:  # pragma: no cover
        raise ValueError(kind)
    t = np.asarray(m.triangles, dtype=np.int32)
    v = np.ascontiguousarray(v, dtype=np.float64)
    v.flags.writeable = False
    t.flags.writeable = False
    return v, t


#: Vertex bounds of the open3d unit primitives (exact values, so a bounds-only build gives bit-identical boxes).
_TEMPLATE_BOUNDS = {
    ("cylinder", 6): ((-1.0, -0.5, -0.8660254037844387), (1.0, 0.5, 0.866025403784439)),
    ("cylinder", 8): ((-1.0, -0.5, -1.0), (1.0, 0.5, 1.0)),
    ("cylinder", 10): ((-1.0, -0.5, -0.9510565162951536), (1.0, 0.5, 0.9510565162951536)),
    ("cylinder", 12): ((-1.0, -0.5, -1.0), (1.0, 0.5, 1.0)),
    ("cylinder", 14): ((-1.0, -0.5, -0.9749279121818236), (1.0, 0.5, 0.9749279121818236)),
    ("cylinder", 16): ((-1.0, -0.5, -1.0), (1.0, 0.5, 1.0)),
    ("cylinder", 20): ((-1.0, -0.5, -1.0), (1.0, 0.5, 1.0)),
    ("cone", 6): ((-1.0, 0.0, -0.8660254037844387), (1.0, 1.0, 0.866025403784439)),
    ("cone", 8): ((-1.0, 0.0, -1.0), (1.0, 1.0, 1.0)),
    ("cone", 10): ((-1.0, 0.0, -0.9510565162951536), (1.0, 1.0, 0.9510565162951536)),
    ("cone", 12): ((-1.0, 0.0, -1.0), (1.0, 1.0, 1.0)),
    ("cone", 14): ((-1.0, 0.0, -0.9749279121818236), (1.0, 1.0, 0.9749279121818236)),
    ("cone", 16): ((-1.0, 0.0, -1.0), (1.0, 1.0, 1.0)),
    ("cone", 20): ((-1.0, 0.0, -1.0), (1.0, 1.0, 1.0)),
    ("sphere", 6): ((-0.8660254037844387, -0.7500000000000004, -1.0), (0.8660254037844387, 0.7500000000000001, 1.0)),
    ("sphere", 8): ((-1.0, -1.0, -1.0), (1.0, 1.0, 1.0)),
    ("sphere", 10): ((-0.9510565162951536, -0.9045084971874738, -1.0), (0.9510565162951536, 0.9045084971874738, 1.0)),
    ("sphere", 12): ((-1.0, -1.0, -1.0), (1.0, 1.0, 1.0)),
    ("sphere", 14): ((-0.9749279121818236, -0.9504844339512096, -1.0), (0.9749279121818236, 0.9504844339512096, 1.0)),
    ("sphere", 16): ((-1.0, -1.0, -1.0), (1.0, 1.0, 1.0)),
    ("sphere", 20): ((-1.0, -1.0, -1.0), (1.0, 1.0, 1.0)),
    ("box", 12): ((-0.5, -0.5, -0.5), (0.5, 0.5, 0.5)),

}


def _template_bounds(kind: str, res: int = 12) -> tuple[np.ndarray, np.ndarray]:
    key = (kind, 12 if kind == "box" else res)
    if key not in _TEMPLATE_BOUNDS:  # pragma: no cover - resolutions not used by the builders
        v, _ = _template(kind, res)
        _TEMPLATE_BOUNDS[key] = (tuple(v.min(0).tolist()), tuple(v.max(0).tolist()))
    return _TEMPLATE_BOUNDS[key]


class Kit:
    """Collects coloured primitive parts of one object in the builder frame.

    With ``mesh=False`` only the parts' bounding boxes are kept (no open3d, no vertices): enough for layouts and
    annotations (``--annotations-only``), and bit-identical to the bounds of the full mesh."""

    def __init__(self, rng: Stream, mesh: bool = True):
        self.rng = rng
        self.mesh = mesh
        self.verts: list[np.ndarray] = []
        self.tris: list[np.ndarray] = []
        self.lo: list[np.ndarray] = []
        self.hi: list[np.ndarray] = []
        self.colors: list[tuple[float, float, float]] = []
        self.materials: list[int] = []

    def _add(self, kind, res, scale, perm, sign, center, color, material: int):
        """Add template ``kind`` scaled by ``scale``, axes permuted by ``perm`` with signs ``sign``, moved to
        ``center``. Bounds-only kits do the same float arithmetic on the template's extreme vertices, so the boxes
        agree bit for bit."""
        if self.mesh:
            v, t = _template(kind, res)
            v = v * np.asarray(scale, float)
            if perm is not None:
                v = v[:, perm] * np.asarray(sign, float)
            v = v + np.asarray(center, float)
            self.verts.append(v)
            self.tris.append(t)
            self.lo.append(v.min(0))
            self.hi.append(v.max(0))
        else:
            (t0, t1, t2), (u0, u1, u2) = _TEMPLATE_BOUNDS.get((kind, 12 if kind == "box" else res)) or \
                _template_bounds(kind, res)
            sx, sy, sz = scale
            lo = (t0 * sx, t1 * sy, t2 * sz)
            hi = (u0 * sx, u1 * sy, u2 * sz)
            if perm is not None:
                a = [lo[q] * g for q, g in zip(perm, sign)]
                b = [hi[q] * g for q, g in zip(perm, sign)]
                lo, hi = [min(x, y) for x, y in zip(a, b)], [max(x, y) for x, y in zip(a, b)]
            cx, cy, cz = center
            self.lo.append((lo[0] + cx, lo[1] + cy, lo[2] + cz))
            self.hi.append((hi[0] + cx, hi[1] + cy, hi[2] + cz))
        self.colors.append(color)  # converted to arrays on first use (Shape.part_color / part_material)
        self.materials.append(material)

    def box(self, lo, hi, color, material: int = MATTE):
        """Axis-aligned box between corners ``lo`` and ``hi``."""
        lx, ly, lz = lo
        hx, hy, hz = hi
        lx, ly, lz, hx, hy, hz = float(lx), float(ly), float(lz), float(hx), float(hy), float(hz)
        sx, sy, sz = hx - lx, hy - ly, hz - lz
        cx, cy, cz = (lx + hx) / 2, (ly + hy) / 2, (lz + hz) / 2
        if self.mesh:
            self._add("box", 12, (sx, sy, sz), None, None, (cx, cy, cz), color, material)
            return
        # bounds only: the same float arithmetic as _add on the unit cube's corners (-0.5, 0.5)
        self.lo.append((-0.5 * sx + cx, -0.5 * sy + cy, -0.5 * sz + cz))
        self.hi.append((0.5 * sx + cx, 0.5 * sy + cy, 0.5 * sz + cz))
        self.colors.append(color)
        self.materials.append(material)

    def cyl(self, center, radius, height, color, axis: str = "y", material: int = MATTE, res: int = 12,
            radius2: float | None = None):
        """Cylinder (or elliptic cylinder with ``radius2`` across) centred at ``center`` along ``axis``."""
        r2 = radius if radius2 is None else radius2
        r, h, r2 = float(radius), float(height), float(r2)
        cx, cy, cz = center
        cx, cy, cz = float(cx), float(cy), float(cz)
        if not self.mesh:
            # bounds only, inlined _add: the axis permutations multiply by +-1 (exact), then min/max per axis
            (t0, t1, t2), (u0, u1, u2) = _TEMPLATE_BOUNDS.get(("cylinder", res)) or _template_bounds("cylinder", res)
            l0, l1, l2, h0, h1, h2 = t0 * r, t1 * h, t2 * r2, u0 * r, u1 * h, u2 * r2
            if axis == "z" or axis == "x":
                if axis == "z":  # perm (0, 2, 1), sign (1, 1, -1)
                    l1, l2, h1, h2 = l2, -l1, h2, -h1
                else:  # perm (1, 0, 2), sign (-1, 1, 1)
                    l0, l1, h0, h1 = -l1, l0, -h1, h0
                # min(a, b) / max(a, b) as the builtins pick them (a unless b is strictly smaller / larger)
                self.lo.append(((h0 if h0 < l0 else l0) + cx, (h1 if h1 < l1 else l1) + cy,
                                (h2 if h2 < l2 else l2) + cz))
                self.hi.append(((h0 if h0 > l0 else l0) + cx, (h1 if h1 > l1 else l1) + cy,
                                (h2 if h2 > l2 else l2) + cz))
            else:
                self.lo.append((l0 + cx, l1 + cy, l2 + cz))
                self.hi.append((h0 + cx, h1 + cy, h2 + cz))
            self.colors.append(color)
            self.materials.append(material)
            return
        scale = (r, h, r2)
        center = (cx, cy, cz)
        if axis == "z":
            self._add("cylinder", res, scale, (0, 2, 1), (1.0, 1.0, -1.0), center, color, material)
        elif axis == "x":
            self._add("cylinder", res, scale, (1, 0, 2), (-1.0, 1.0, 1.0), center, color, material)
        else:
            self._add("cylinder", res, scale, None, None, center, color, material)

    def sphere(self, center, radii, color, material: int = MATTE, res: int = 12):
        r = (float(radii),) * 3 if np.isscalar(radii) else tuple(map(float, radii))
        self._add("sphere", res, r, None, None, tuple(map(float, center)), color, material)

    def cone(self, base_center, radius, height, color, material: int = MATTE, res: int = 12):
        self._add("cone", res, (float(radius), float(height), float(radius)), None, None,
                  tuple(map(float, base_center)), color, material)

    def top(self) -> float:
        """Highest point of the parts so far (builder frame, y up)."""
        return float(max(h[1] for h in self.hi))

    # random helpers
    def u(self, lo, hi):
        # lo + (hi - lo) * random(), like Stream.uniform but without its check (a reversed range is allowed)
        lo = float(lo)
        return lo + (float(hi) - lo) * self.rng.random()

    def pick(self, options):
        return options[int(self.rng.integers(len(options)))]

    def colour(self, names, jitter: float = 0.04):
        """A named colour with a small per-instance jitter: (name, rgb)."""
        name = names[int(self.rng.integers(len(names)))]
        n0, n1, n2 = self.rng.normal(0, jitter, 3).tolist()
        c0, c1, c2 = COLOURS[name]
        return name, (min(max(c0 + n0, 0.0), 1.0), min(max(c1 + n1, 0.0), 1.0), min(max(c2 + n2, 0.0), 1.0))


@dataclass(frozen=True, eq=False)
class Shape:
    """A finished object in the Omni3D object frame (centred on its tight box, y down).

    Attributes:
        verts: ``(V, 3)`` float64 vertices; tris: ``(T, 3)`` int32; tri_part: ``(T,)`` part index per triangle
            (empty for bounds-only shapes).
        dims: ``[w, h, l]`` of the tight box (metres).
        kind: builder name; noun, colour, material: the visual description for captions.
        part_color ``(P, 3)`` RGB, part_material ``(P,)`` shading codes, part_lo / part_hi ``(P, 3)`` per-part
        bounds: computed on first use (layouts of annotations-only builds rarely need them).
    """

    verts: np.ndarray
    tris: np.ndarray
    tri_part: np.ndarray
    dims: np.ndarray
    kind: str
    noun: str
    colour: str
    material: str
    _colors: list
    _materials: list
    _lo: list
    _hi: list
    _mid: tuple

    @cached_property
    def part_color(self) -> np.ndarray:
        return np.array([tuple(map(float, c)) for c in self._colors], float).reshape(-1, 3)

    @cached_property
    def part_material(self) -> np.ndarray:
        return np.array([int(m) for m in self._materials], np.int32)

    @cached_property
    def part_lo(self) -> np.ndarray:
        plo, phi, mid = np.asarray(self._lo, float), np.asarray(self._hi, float), self._mid
        # builder -> Omni3D frame: (x, y, z) -> (x, -y, -z), a 180-degree rotation about x (det +1)
        return np.stack([plo[:, 0] - mid[0], -(phi[:, 1] - mid[1]), -(phi[:, 2] - mid[2])], 1)

    @cached_property
    def part_hi(self) -> np.ndarray:
        plo, phi, mid = np.asarray(self._lo, float), np.asarray(self._hi, float), self._mid
        return np.stack([phi[:, 0] - mid[0], -(plo[:, 1] - mid[1]), -(plo[:, 2] - mid[2])], 1)

    def surface_height(self, x0: float, x1: float, z0: float, z1: float) -> float:
        """Height above the box bottom of the highest part whose footprint overlaps the local rectangle
        [x0, x1] x [z0, z1] (for placing an object on top of this one)."""
        over = (self.part_lo[:, 0] < x1) & (self.part_hi[:, 0] > x0) & (self.part_lo[:, 2] < z1) & \
            (self.part_hi[:, 2] > z0)
        if not over.any():
            return float(self.dims[1])
        return float(self.dims[1] / 2 - self.part_lo[over, 1].min())

    @property
    def caption(self) -> str:
        words = " ".join(w for w in (self.colour, self.material, self.noun) if w)
        return f"{article(words)} {words}"


def article(words: str) -> str:
    return "an" if words[:1].lower() in "aeiou" else "a"




def finalize(kit: Kit, kind: str, noun: str, colour: str = "", material: str = "") -> Shape:
    """Centre the parts on their tight box and turn them into the Omni3D object frame (y down)."""
    lo = [min(c) for c in zip(*kit.lo)]
    hi = [max(c) for c in zip(*kit.hi)]
    mid = ((lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2, (lo[2] + hi[2]) / 2)
    dims = np.array([hi[2] - lo[2], hi[1] - lo[1], hi[0] - lo[0]])  # builder (x, y, z) = (l, h, w)
    if kit.mesh:
        verts = np.concatenate(kit.verts) - np.array(mid)
        verts[:, 1:] *= -1.0  # (x, y, z) -> (x, -y, -z)
        tsize = np.fromiter((len(t) for t in kit.tris), np.int64, len(kit.tris))
        vsize = np.fromiter((len(v) for v in kit.verts), np.int64, len(kit.verts))
        starts = np.concatenate([[0], np.cumsum(vsize)[:-1]])
        tris = (np.concatenate(kit.tris) + np.repeat(starts, tsize)[:, None]).astype(np.int32)
        tri_part = np.repeat(np.arange(len(tsize), dtype=np.int32), tsize)
    else:
        verts, tris, tri_part = _EMPTY_V, _EMPTY_T, _EMPTY_P
    shape = object.__new__(Shape)  # the frozen dataclass __init__, without its per-field object.__setattr__ calls
    shape.__dict__.update(verts=verts, tris=tris, tri_part=tri_part, dims=dims, kind=kind, noun=noun, colour=colour,
                          material=material, _colors=kit.colors, _materials=kit.materials, _lo=kit.lo, _hi=kit.hi,
                          _mid=mid)
    return shape


_EMPTY_V, _EMPTY_T, _EMPTY_P = np.zeros((0, 3)), np.zeros((0, 3), np.int32), np.zeros(0, np.int32)


# ------------------------------------------------------------------------------------------------ indoor kinds
WOODS = ("light wood", "oak", "walnut")
FABRICS = ("grey", "beige", "blue", "navy", "green", "teal", "dark red", "mustard", "light grey", "brown")


def _legs(k: Kit, l, w, h, t, col, inset=0.02, round_=False):
    for sx in (-1, 1):
        for sz in (-1, 1):
            cx, cz = sx * (l / 2 - inset - t / 2), sz * (w / 2 - inset - t / 2)
            if round_:
                k.cyl((cx, h / 2, cz), t / 2, h, col, res=8)
            else:
                k.box((cx - t / 2, 0, cz - t / 2), (cx + t / 2, h, cz + t / 2), col)


def dining_chair(k: Kit):
    name, col = k.colour(WOODS + ("black", "white"))
    l, w, sh = k.u(0.42, 0.50), k.u(0.42, 0.48), k.u(0.43, 0.47)
    bh = k.u(0.38, 0.50)
    _legs(k, l, w, sh - 0.04, 0.035, col)
    seat_name, seat = (name, col) if k.rng.random() < 0.5 else k.colour(FABRICS)
    k.box((-l / 2, sh - 0.04, -w / 2), (l / 2, sh, w / 2), seat)
    k.box((-l / 2, sh, -w / 2), (-l / 2 + 0.035, sh + bh, w / 2), col)
    return "dining chair", name, "wooden" if name in WOODS else "painted"


def office_chair(k: Kit):
    name, col = k.colour(("black", "dark grey", "grey", "blue", "navy"))
    sh = k.u(0.44, 0.52)
    k.cyl((0, 0.03, 0), 0.30, 0.06, (0.1, 0.1, 0.1), res=10)
    k.cyl((0, sh / 2, 0), 0.03, sh, METAL_RGB, material=GLOSSY, res=8)
    l, w = k.u(0.46, 0.52), k.u(0.48, 0.54)
    k.box((-l / 2, sh - 0.07, -w / 2), (l / 2, sh, w / 2), col)
    bh = k.u(0.45, 0.65)
    k.box((-l / 2 - 0.02, sh + 0.05, -w / 2 + 0.03), (-l / 2 + 0.05, sh + bh, w / 2 - 0.03), col)
    if k.rng.random() < 0.6:
        for s in (-1, 1):
            k.box((-0.15, sh + 0.18, s * w / 2 - 0.03), (0.15, sh + 0.21, s * w / 2 + 0.03), (0.1, 0.1, 0.1))
    return "office chair", name, "fabric" if name not in ("black",) else "mesh"


def armchair(k: Kit):
    name, col = k.colour(FABRICS)
    l, w, h = k.u(0.75, 0.90), k.u(0.75, 0.92), k.u(0.80, 0.95)
    sh = k.u(0.38, 0.44)
    k.box((-l / 2, 0.08, -w / 2), (l / 2, sh, w / 2), col)
    dark = tuple(np.asarray(col) * 0.8)
    k.box((-l / 2, sh, -w / 2 + 0.14), (l / 2 - 0.02, sh + 0.08, w / 2 - 0.14),
          tuple(np.clip(np.asarray(col) * 1.08, 0, 1)))
    k.box((-l / 2, sh, -w / 2), (-l / 2 + 0.18, h, w / 2), dark)
    for s in (-1, 1):
        k.box((-l / 2, sh, s * w / 2 - (0.14 if s > 0 else 0)), (l / 2, sh + 0.22, s * w / 2 + (0.14 if s < 0 else 0)),
              col)
    _legs(k, l, w, 0.08, 0.05, (0.25, 0.17, 0.1))
    return "armchair", name, k.pick(("fabric", "upholstered", "velvet"))


def sofa(k: Kit):
    leather = k.rng.random() < 0.3
    name, col = k.colour(("black", "brown", "dark brown", "cream") if leather else FABRICS)
    seats = int(k.rng.integers(2, 4))
    l, w, h = k.u(0.85, 1.0), seats * k.u(0.6, 0.7) + 0.4, k.u(0.78, 0.90)
    sh = k.u(0.40, 0.45)
    k.box((-l / 2, 0.1, -w / 2), (l / 2, sh - 0.1, w / 2), col)
    cush = tuple(np.clip(np.asarray(col) * 1.1, 0, 1))
    inner = (w - 0.4) / seats
    for i in range(seats):
        z0 = -w / 2 + 0.2 + i * inner
        k.box((-l / 2 + 0.2, sh - 0.1, z0 + 0.01), (l / 2 - 0.02, sh, z0 + inner - 0.01), cush)
    k.box((-l / 2, sh - 0.1, -w / 2 + 0.2), (-l / 2 + 0.2, h, w / 2 - 0.2), tuple(np.asarray(col) * 0.85))
    for s in (-1, 1):
        z = (-w / 2, -w / 2 + 0.2) if s < 0 else (w / 2 - 0.2, w / 2)
        k.box((-l / 2, 0.1, z[0]), (l / 2, sh + 0.2, z[1]), col)
    _legs(k, l, w, 0.1, 0.05, (0.15, 0.1, 0.06))
    return ("couch" if k.rng.random() < 0.3 else "sofa"), name, "leather" if leather else "fabric"


def dining_table(k: Kit):
    name, col = k.colour(WOODS + ("white", "black"))
    h = k.u(0.72, 0.77)
    if k.rng.random() < 0.25:
        r = k.u(0.45, 0.6)
        k.cyl((0, h - 0.02, 0), r, 0.04, col, res=20)
        k.cyl((0, (h - 0.04) / 2, 0), 0.05, h - 0.04, col, res=8)
        k.cyl((0, 0.015, 0), 0.25, 0.03, col, res=12)
        return "round table", name, "wooden" if name in WOODS else ""
    l, w = k.u(0.8, 1.0), k.u(1.2, 1.9)
    k.box((-l / 2, h - 0.04, -w / 2), (l / 2, h, w / 2), col)
    _legs(k, l, w, h - 0.04, 0.06, col, inset=0.04)
    return "dining table", name, "wooden" if name in WOODS else ""


def coffee_table(k: Kit):
    name, col = k.colour(WOODS + ("white", "black"))
    h, l, w = k.u(0.38, 0.46), k.u(0.5, 0.65), k.u(0.9, 1.2)
    glass = k.rng.random() < 0.3
    k.box((-l / 2, h - 0.03, -w / 2), (l / 2, h, w / 2), GLASS_RGB if glass else col, GLASS if glass else MATTE)
    k.box((-l / 2 + 0.05, 0.12, -w / 2 + 0.05), (l / 2 - 0.05, 0.14, w / 2 - 0.05), col)
    _legs(k, l, w, h - 0.03, 0.045, col)
    return "coffee table", name, "glass-top" if glass else ("wooden" if name in WOODS else "")


def desk(k: Kit):
    name, col = k.colour(("white", "light wood", "oak", "black", "grey"))
    h, l, w = k.u(0.72, 0.76), k.u(0.6, 0.75), k.u(1.2, 1.6)
    k.box((-l / 2, h - 0.03, -w / 2), (l / 2, h, w / 2), col)
    dw = k.u(0.38, 0.45)
    dcol = tuple(np.asarray(col) * 0.92)
    k.box((-l / 2 + 0.02, 0, w / 2 - dw), (l / 2 - 0.01, h - 0.03, w / 2), dcol)
    for i in range(3):
        y = 0.1 + i * (h - 0.15) / 3 + (h - 0.15) / 6
        k.box((l / 2 - 0.01, y - 0.01, w / 2 - dw / 2 - 0.06), (l / 2, y + 0.01, w / 2 - dw / 2 + 0.06),
              METAL_RGB, GLOSSY)
    k.box((-l / 2 + 0.02, 0, -w / 2), (l / 2 - 0.02, h - 0.03, -w / 2 + 0.03), dcol)
    k.box((-l / 2, h - 0.35, -w / 2 + 0.03), (-l / 2 + 0.02, h - 0.03, w / 2 - dw), dcol)
    return k.pick(("desk", "writing desk", "office desk")), name, ""


def bed(k: Kit):
    name, col = k.colour(WOODS + ("white", "grey", "dark grey"))
    double = k.rng.random() < 0.65
    w, l = (k.u(1.45, 1.85) if double else k.u(0.95, 1.1)), k.u(2.0, 2.15)
    fh, mh, hh = k.u(0.25, 0.35), k.u(0.2, 0.28), k.u(0.95, 1.2)
    k.box((-l / 2 + 0.05, 0.05, -w / 2), (l / 2, fh, w / 2), col)
    k.box((-l / 2 + 0.05, 0, -w / 2 + 0.05), (l / 2 - 0.05, 0.05, w / 2 - 0.05), (0.1, 0.08, 0.06))
    sheet_name, sheet = k.colour(("white", "cream", "light blue", "light grey", "pink", "beige"))
    k.box((-l / 2 + 0.07, fh, -w / 2 + 0.03), (l / 2 - 0.03, fh + mh, w / 2 - 0.03), sheet)
    duvet_name, duvet = k.colour(FABRICS + ("white",))
    k.box((-l / 2 + 0.6, fh + mh, -w / 2 + 0.01), (l / 2 - 0.02, fh + mh + 0.06, w / 2 - 0.01), duvet)
    k.box((-l / 2, 0, -w / 2), (-l / 2 + 0.06, hh, w / 2), col)
    return ("double bed" if double else "single bed"), duvet_name, ""


def pillow(k: Kit):
    name, col = k.colour(("white", "cream", "grey", "blue", "mustard", "teal", "pink", "dark red", "beige"))
    l, h, w = k.u(0.12, 0.3), k.u(0.12, 0.2), k.u(0.4, 0.65)
    k.sphere((0, h / 2, 0), (l / 2, h / 2, w / 2), col, res=12)
    return k.pick(("pillow", "cushion")), name, ""


def night_stand(k: Kit):
    name, col = k.colour(WOODS + ("white", "black"))
    h, l, w = k.u(0.45, 0.62), k.u(0.35, 0.45), k.u(0.4, 0.55)
    k.box((-l / 2, 0.06, -w / 2), (l / 2, h, w / 2), col)
    _legs(k, l, w, 0.06, 0.04, col, inset=0.0)
    n = int(k.rng.integers(1, 3))
    for i in range(n):
        y = 0.06 + (h - 0.06) * (i + 0.5) / n
        k.box((l / 2, y - 0.008, -w / 2 + 0.02), (l / 2 + 0.004, y + 0.008, w / 2 - 0.02), tuple(np.asarray(col) * 0.6))
        k.box((l / 2 + 0.004, y + 0.03, -0.04), (l / 2 + 0.02, y + 0.045, 0.04), METAL_RGB, GLOSSY)
    return k.pick(("night stand", "bedside table", "bedside drawer")), name, "wooden" if name in WOODS else ""


def _door_lines(k: Kit, l, y0, y1, w, n, col, handle=True):
    for i in range(1, n):
        z = -w / 2 + w * i / n
        k.box((l / 2, y0, z - 0.004), (l / 2 + 0.004, y1, z + 0.004), tuple(np.asarray(col) * 0.55))
    if handle:
        for i in range(n):
            z = -w / 2 + w * (i + 0.5) / n + (0.08 if i % 2 == 0 else -0.08) * (w / n > 0.3)
            k.box((l / 2 + 0.004, (y0 + y1) / 2 - 0.08, z - 0.01), (l / 2 + 0.025, (y0 + y1) / 2 + 0.08, z + 0.01),
                  METAL_RGB, GLOSSY)


def wardrobe(k: Kit):
    name, col = k.colour(WOODS + ("white", "light grey"))
    h, l, w = k.u(1.8, 2.1), k.u(0.5, 0.6), k.u(0.9, 1.5)
    k.box((-l / 2, 0.05, -w / 2), (l / 2, h, w / 2), col)
    k.box((-l / 2 + 0.02, 0, -w / 2 + 0.02), (l / 2 - 0.04, 0.05, w / 2 - 0.02), tuple(np.asarray(col) * 0.5))
    _door_lines(k, l, 0.05, h - 0.02, w, 2 if w < 1.2 else 3, col)
    return k.pick(("wardrobe", "tall cupboard")), name, "wooden" if name in WOODS else ""


def sideboard(k: Kit):
    name, col = k.colour(WOODS + ("white", "grey", "black"))
    h, l, w = k.u(0.55, 0.85), k.u(0.4, 0.5), k.u(1.0, 1.8)
    k.box((-l / 2, 0.1, -w / 2), (l / 2, h, w / 2), col)
    _legs(k, l, w, 0.1, 0.04, (0.12, 0.1, 0.08))
    _door_lines(k, l, 0.1, h - 0.02, w, int(k.rng.integers(2, 5)), col)
    return k.pick(("sideboard", "low cabinet", "TV cabinet")), name, "wooden" if name in WOODS else ""


def kitchen_cabinet(k: Kit):
    name, col = k.colour(("white", "off-white", "light wood", "oak", "green", "navy", "light grey"))
    h, l, w = k.u(0.86, 0.92), k.u(0.58, 0.62), k.pick((0.6, 0.8, 0.9, 1.2))
    k.box((-l / 2, 0.1, -w / 2), (l / 2 - 0.03, h - 0.04, w / 2), col)
    k.box((-l / 2, 0, -w / 2 + 0.01), (l / 2 - 0.08, 0.1, w / 2 - 0.01), (0.12, 0.12, 0.12))
    top_name, top = k.colour(("black", "light grey", "white", "oak", "dark grey"))
    k.box((-l / 2, h - 0.04, -w / 2), (l / 2, h, w / 2), top)
    k.box((l / 2 - 0.03, h - 0.2, -w / 2), (l / 2 - 0.03 + 0.004, h - 0.19, w / 2), tuple(np.asarray(col) * 0.55))
    _door_lines(k, l - 0.06, 0.1, h - 0.22, w, max(1, int(round(w / 0.45))), col)
    return "kitchen cabinet", name, ""


def filing_cabinet(k: Kit):
    name, col = k.colour(("grey", "light grey", "dark grey", "white", "black"))
    h, l, w = k.u(0.7, 1.35), k.u(0.5, 0.62), k.u(0.45, 0.8)
    k.box((-l / 2, 0, -w / 2), (l / 2, h, w / 2), col, GLOSSY)
    n = max(2, int(round(h / 0.33)))
    for i in range(n):
        y = h * (i + 0.5) / n
        k.box((l / 2, y + h / n / 2 - 0.01, -w / 2), (l / 2 + 0.004, y + h / n / 2, w / 2),
              tuple(np.asarray(col) * 0.5))
        k.box((l / 2, y - 0.015, -0.08), (l / 2 + 0.02, y + 0.015, 0.08), METAL_RGB, GLOSSY)
    return k.pick(("filing cabinet", "metal cabinet")), name, "metal"


def _shelf_items(k: Kit, l, w, y, h, books: bool):
    z = -w / 2 + 0.03
    while z < w / 2 - 0.08:
        if books:
            bw, bh, bl = k.u(0.02, 0.05), k.u(0.6, 0.95) * h, k.u(0.15, 0.24)
        else:
            if k.rng.random() < 0.35:
                z += k.u(0.1, 0.3)
                continue
            bw, bh, bl = k.u(0.12, 0.3), k.u(0.3, 0.8) * h, k.u(0.15, 0.3)
        bw = min(bw, w / 2 - 0.03 - z)
        if bw <= 0.01:
            break
        _, c = k.colour(tuple(COLOURS), jitter=0.06)
        k.box((-l / 2 + 0.03, y, z), (-l / 2 + 0.03 + min(bl, l - 0.05), y + bh, z + bw), c)
        z += bw + (0.003 if books else k.u(0.03, 0.15))


def bookcase(k: Kit):
    name, col = k.colour(WOODS + ("white", "black"))
    h, l, w = k.u(1.4, 2.1), k.u(0.28, 0.36), k.u(0.7, 1.2)
    t = 0.025
    k.box((-l / 2, 0, -w / 2), (-l / 2 + 0.01, h, w / 2), tuple(np.asarray(col) * 0.8))
    for s in (-1, 1):
        k.box((-l / 2, 0, s * w / 2 - (t if s > 0 else 0)), (l / 2, h, s * w / 2 + (t if s < 0 else 0)), col)
    n = int(round(h / 0.36))
    for i in range(n + 1):
        y = min(i * (h - t) / n, h - t)
        k.box((-l / 2, y, -w / 2 + t), (l / 2, y + t, w / 2 - t), col)
        if i < n:
            _shelf_items(k, l, w - 2 * t, y + t, (h - t) / n - t - 0.02, books=True)
    return k.pick(("bookcase full of books", "bookshelf", "tall bookcase")), name, ""


def shelves(k: Kit):
    metal = k.rng.random() < 0.4
    name, col = k.colour(("silver", "black", "grey") if metal else WOODS + ("white",))
    h, l, w = k.u(0.8, 1.9), k.u(0.3, 0.45), k.u(0.7, 1.3)
    n = int(k.rng.integers(3, 6))
    for sx in (-1, 1):
        for sz in (-1, 1):
            k.box((sx * l / 2 - (0.03 if sx > 0 else 0), 0, sz * w / 2 - (0.03 if sz > 0 else 0)),
                  (sx * l / 2 + (0.03 if sx < 0 else 0), h, sz * w / 2 + (0.03 if sz < 0 else 0)), col,
                  GLOSSY if metal else MATTE)
    for i in range(n):
        y = 0.05 + i * (h - 0.08) / (n - 1)
        k.box((-l / 2, y, -w / 2), (l / 2, y + 0.02, w / 2), col, GLOSSY if metal else MATTE)
        if i < n - 1 and k.rng.random() < 0.7:
            _shelf_items(k, l, w, y + 0.02, (h - 0.08) / (n - 1) - 0.05, books=False)
    return ("metal shelving unit" if metal else k.pick(("open shelving unit", "shelving unit", "wall shelf unit"))), \
        name, ""


def television(k: Kit, stand: bool = True):
    w = k.u(0.8, 1.4)
    sh = w * 0.57
    base = 0.0
    name = k.pick(("black", "dark grey", "silver"))
    col = COLOURS[name]
    if stand:
        k.box((-0.12, 0, -0.2), (0.12, 0.02, 0.2), col, GLOSSY)
        k.box((-0.04, 0.02, -0.03), (-0.01, 0.08, 0.03), col)
        base = 0.08
    k.box((-0.03, base, -w / 2), (0.02, base + sh, w / 2), col, GLOSSY)
    bright = k.rng.random() < 0.5
    scr = (0.25, 0.35, 0.55) if bright else SCREEN_RGB
    k.box((0.02, base + 0.02, -w / 2 + 0.02), (0.03, base + sh - 0.02, w / 2 - 0.02), scr,
          EMISSIVE if bright else GLASS)
    return k.pick(("flat-screen television", "TV", "television")), "", ""


def wall_television(k: Kit):
    return television(k, stand=False)


def floor_lamp(k: Kit):
    name, shade = k.colour(("white", "cream", "beige", "black"))
    h = k.u(1.4, 1.75)
    k.cyl((0, 0.015, 0), 0.15, 0.03, (0.1, 0.1, 0.1), res=12)
    k.cyl((0, h / 2, 0), 0.015, h - 0.2, METAL_RGB, material=GLOSSY, res=6)
    r = k.u(0.16, 0.24)
    k.cyl((0, h - 0.13, 0), r, 0.28, shade, material=EMISSIVE if name != "black" else MATTE, res=14)
    return "floor lamp", name, ""


def table_lamp(k: Kit):
    name, shade = k.colour(("white", "cream", "beige", "teal", "mustard"))
    h = k.u(0.35, 0.55)
    bn, bc = k.colour(("black", "white", "silver", "oak"))
    k.cyl((0, (h - 0.18) / 2, 0), k.u(0.05, 0.08), h - 0.18, bc, res=10)
    k.cone((0, h - 0.2, 0), k.u(0.13, 0.18), 0.2, shade, material=EMISSIVE, res=14)
    return "table lamp", name, ""


def vanity_sink(k: Kit):
    name, col = k.colour(("white", "light wood", "grey", "navy"))
    h, l, w = k.u(0.8, 0.88), k.u(0.45, 0.55), k.u(0.6, 1.0)
    k.box((-l / 2, 0.05, -w / 2), (l / 2, h - 0.05, w / 2), col)
    k.box((-l / 2, h - 0.05, -w / 2), (l / 2, h, w / 2), COLOURS["white"], GLOSSY)
    k.box((-l / 2 + 0.1, h, -0.22), (l / 2 - 0.06, h + 0.05, 0.22), COLOURS["white"], GLOSSY)
    k.box((-l / 2 + 0.13, h + 0.05, -0.19), (l / 2 - 0.09, h + 0.051, 0.19), (0.65, 0.67, 0.7))
    k.cyl((-l / 2 + 0.06, h + 0.1, 0), 0.015, 0.2, METAL_RGB, material=GLOSSY, res=6)
    _door_lines(k, l, 0.05, h - 0.07, w, 2, col)
    return k.pick(("washbasin on a vanity unit", "bathroom sink")), "white", "ceramic"


def pedestal_sink(k: Kit):
    h = k.u(0.8, 0.88)
    k.cyl((0, (h - 0.15) / 2, 0), 0.09, h - 0.15, COLOURS["white"], material=GLOSSY, res=10)
    l, w = k.u(0.4, 0.5), k.u(0.5, 0.65)
    k.box((-l / 2, h - 0.18, -w / 2), (l / 2, h, w / 2), COLOURS["white"], GLOSSY)
    k.box((-l / 2 + 0.06, h, -w / 2 + 0.06), (l / 2 - 0.05, h + 0.002, w / 2 - 0.06), (0.7, 0.72, 0.75))
    k.cyl((-l / 2 + 0.04, h + 0.07, 0), 0.015, 0.14, METAL_RGB, material=GLOSSY, res=6)
    return "pedestal sink", "white", "ceramic"


def kitchen_sink(k: Kit):
    noun, name, _ = kitchen_cabinet(k)
    # basin and tap on top of a base cabinet
    top = k.top()
    k.box((-0.22, top, -0.3), (0.22, top + 0.015, 0.3), (0.62, 0.64, 0.67), GLOSSY)
    k.cyl((-0.25, top + 0.15, 0), 0.015, 0.3, METAL_RGB, material=GLOSSY, res=6)
    k.box((-0.26, top + 0.28, -0.01), (-0.1, top + 0.3, 0.01), METAL_RGB, GLOSSY)
    return "kitchen sink with a tap", "", "stainless"


def bathtub(k: Kit):
    name = k.pick(("white", "white", "cream"))
    col = COLOURS[name]
    l, w, h = k.u(1.5, 1.8), k.u(0.7, 0.82), k.u(0.5, 0.6)
    t = 0.07
    k.box((-l / 2, 0, -w / 2), (l / 2, 0.08, w / 2), col, GLOSSY)
    for s in (-1, 1):
        k.box((-l / 2, 0, s * w / 2 - (t if s > 0 else 0)), (l / 2, h, s * w / 2 + (t if s < 0 else 0)), col, GLOSSY)
        k.box((s * l / 2 - (t if s > 0 else 0), 0, -w / 2), (s * l / 2 + (t if s < 0 else 0), h, w / 2), col, GLOSSY)
    k.box((-l / 2 + t, 0.08, -w / 2 + t), (l / 2 - t, 0.085, w / 2 - t), (0.75, 0.8, 0.85))
    return k.pick(("bathtub", "bath tub")), name, "enamel"


def toilet(k: Kit):
    col = COLOURS["white"]
    h_bowl = k.u(0.38, 0.42)
    k.cyl((0.05, h_bowl / 2 - 0.02, 0), 0.13, h_bowl - 0.04, col, material=GLOSSY, res=12, radius2=0.11)
    k.sphere((0.1, h_bowl - 0.05, 0), (0.24, 0.08, 0.19), col, GLOSSY)
    seat_name, seat = k.colour(("white", "black", "oak"))
    k.cyl((0.1, h_bowl + 0.03, 0), 0.23, 0.025, seat, res=16, radius2=0.185)
    k.box((-0.28, h_bowl - 0.05, -0.2), (-0.1, h_bowl + k.u(0.35, 0.42), 0.2), col, GLOSSY)
    return "toilet", "white", "ceramic"


def refrigerator(k: Kit):
    name, col = k.colour(("white", "silver", "black", "silver"))
    h, l, w = k.u(1.65, 1.95), k.u(0.62, 0.72), k.u(0.6, 0.9)
    k.box((-l / 2, 0.02, -w / 2), (l / 2, h, w / 2), col, GLOSSY)
    split = k.u(0.55, 0.68) * h
    k.box((l / 2, split - 0.006, -w / 2), (l / 2 + 0.004, split + 0.006, w / 2), tuple(np.asarray(col) * 0.4))
    for y0, y1 in ((split + 0.1, min(h - 0.05, split + 0.5)), (split - 0.5, split - 0.1)):
        k.box((l / 2, y0, -w / 2 + 0.05), (l / 2 + 0.04, y1, -w / 2 + 0.08), METAL_RGB, GLOSSY)
    k.box((-l / 2 + 0.02, 0, -w / 2 + 0.02), (l / 2 - 0.02, 0.02, w / 2 - 0.02), (0.1, 0.1, 0.1))
    return k.pick(("refrigerator", "fridge-freezer", "fridge")), name, "stainless" if name == "silver" else ""


def oven(k: Kit):
    name, col = k.colour(("black", "silver", "white"))
    h, l, w = k.u(0.55, 0.62), k.u(0.55, 0.6), k.u(0.56, 0.6)
    k.box((-l / 2, 0, -w / 2), (l / 2, h, w / 2), col, GLOSSY)
    k.box((l / 2, 0.05, -w / 2 + 0.06), (l / 2 + 0.01, h - 0.14, w / 2 - 0.06), GLASS_RGB, GLASS)
    k.box((l / 2 + 0.01, h - 0.13, -w / 2 + 0.08), (l / 2 + 0.04, h - 0.11, w / 2 - 0.08), METAL_RGB, GLOSSY)
    k.box((l / 2, h - 0.1, -w / 2 + 0.04), (l / 2 + 0.01, h - 0.03, w / 2 - 0.04), (0.05, 0.05, 0.05))
    return k.pick(("built-in oven", "wall oven", "oven with a glass door")), name, ""


def stove(k: Kit):
    name, col = k.colour(("white", "silver", "black"))
    h, l, w = k.u(0.88, 0.92), k.u(0.6, 0.65), k.u(0.58, 0.76)
    k.box((-l / 2, 0, -w / 2), (l / 2, h, w / 2), col, GLOSSY)
    k.box((-l / 2, h, -w / 2), (l / 2 - 0.02, h + 0.01, w / 2), (0.06, 0.06, 0.06), GLASS)
    for bx in (-0.14, 0.12):
        for bz in (-w / 4, w / 4):
            k.cyl((bx, h + 0.015, bz), 0.08, 0.012, (0.22, 0.22, 0.22), res=12)
    k.box((l / 2, 0.12, -w / 2 + 0.06), (l / 2 + 0.01, h - 0.2, w / 2 - 0.06), GLASS_RGB, GLASS)
    for i in range(4):
        z = -w / 2 + w * (i + 1) / 5
        k.cyl((l / 2 + 0.015, h - 0.08, z), 0.02, 0.03, (0.1, 0.1, 0.1), axis="x", res=8)
    return k.pick(("cooker with four burners", "gas stove", "kitchen range")), name, ""


def washing_machine(k: Kit):
    name, col = k.colour(("white", "white", "silver"))
    h, l, w = k.u(0.82, 0.86), k.u(0.55, 0.62), 0.6
    k.box((-l / 2, 0, -w / 2), (l / 2, h, w / 2), col, GLOSSY)
    k.cyl((l / 2 + 0.015, h * 0.45, 0), 0.17, 0.03, (0.55, 0.57, 0.6), axis="x", material=GLOSSY, res=16)
    k.cyl((l / 2 + 0.032, h * 0.45, 0), 0.13, 0.005, GLASS_RGB, axis="x", material=GLASS, res=16)
    k.box((l / 2, h - 0.12, -w / 2 + 0.03), (l / 2 + 0.01, h - 0.03, w / 2 - 0.03), (0.8, 0.8, 0.82))
    return k.pick(("washing machine", "front-loading washer")), name, ""


def trash_bin(k: Kit):
    name, col = k.colour(("grey", "black", "blue", "green", "silver", "white"))
    h = k.u(0.3, 0.65)
    if k.rng.random() < 0.5:
        r = k.u(0.12, 0.2)
        k.cyl((0, h / 2, 0), r, h, col, res=14)
        k.cyl((0, h + 0.01, 0), r + 0.01, 0.02, tuple(np.asarray(col) * 0.7), res=14)
    else:
        a, b = k.u(0.22, 0.35), k.u(0.25, 0.4)
        k.box((-a / 2, 0, -b / 2), (a / 2, h, b / 2), col)
        k.box((-a / 2 - 0.01, h, -b / 2 - 0.01), (a / 2 + 0.01, h + 0.03, b / 2 + 0.01), tuple(np.asarray(col) * 0.7))
    return k.pick(("trash can", "waste bin", "rubbish bin")), name, "plastic" if name != "silver" else "metal"


def cardboard_box(k: Kit):
    plastic = k.rng.random() < 0.25
    name, col = k.colour(("blue", "grey", "white", "green")) if plastic else ("brown", (0.62, 0.45, 0.28))
    if not plastic:
        col = tuple(np.clip(np.asarray(col) + k.rng.normal(0, 0.04, 3), 0, 1))
    l, h, w = k.u(0.25, 0.6), k.u(0.2, 0.5), k.u(0.3, 0.7)
    k.box((-l / 2, 0, -w / 2), (l / 2, h, w / 2), col)
    if not plastic:
        k.box((-l / 2 - 0.002, h - 0.001, -0.03), (l / 2 + 0.002, h + 0.002, 0.03), (0.78, 0.68, 0.5))
    return ("storage box" if plastic else "cardboard box"), name if plastic else "", ""


def door(k: Kit):
    name, col = k.colour(("white", "off-white", "light wood", "oak", "walnut", "grey"))
    h, w, l = k.u(2.0, 2.1), k.u(0.78, 0.92), 0.045
    k.box((-l / 2, 0, -w / 2), (l / 2, h, w / 2), col)
    k.box((l / 2, 0, -w / 2 - 0.04), (l / 2 + 0.015, h + 0.05, -w / 2), tuple(np.asarray(col) * 0.9))
    k.box((l / 2, 0, w / 2), (l / 2 + 0.015, h + 0.05, w / 2 + 0.04), tuple(np.asarray(col) * 0.9))
    k.box((l / 2, h, -w / 2), (l / 2 + 0.015, h + 0.05, w / 2), tuple(np.asarray(col) * 0.9))
    k.box((l / 2 + 0.015, 1.0, w / 2 - 0.1), (l / 2 + 0.06, 1.03, w / 2 - 0.05), METAL_RGB, GLOSSY)
    return "door", name, "wooden" if name in WOODS else "painted"


def window(k: Kit):
    name, col = k.colour(("white", "white", "dark grey", "oak"))
    h, w, l = k.u(1.0, 1.4), k.u(0.8, 1.6), 0.07
    f = 0.05
    sky = (0.75, 0.85, 0.95)
    k.box((-l / 2 + 0.01, f, -w / 2 + f), (-l / 2 + 0.02, h - f, w / 2 - f), sky, EMISSIVE)
    for y0, y1 in ((0, f), (h - f, h)):
        k.box((-l / 2, y0, -w / 2), (l / 2, y1, w / 2), col)
    for z0, z1 in ((-w / 2, -w / 2 + f), (w / 2 - f, w / 2), (-0.02, 0.02)):
        k.box((-l / 2, f, z0), (l / 2, h - f, z1), col)
    return k.pick(("window", "window with a view of the sky")), "", ""


def picture(k: Kit):
    name, col = k.colour(("black", "white", "oak", "walnut", "silver"))
    h, w, l = k.u(0.3, 0.8), k.u(0.4, 1.0), 0.03
    k.box((-l / 2, 0, -w / 2), (l / 2, h, w / 2), col)
    _, bg = k.colour(tuple(COLOURS), jitter=0.08)
    k.box((l / 2, 0.04, -w / 2 + 0.04), (l / 2 + 0.002, h - 0.04, w / 2 - 0.04), bg)
    for _ in range(int(k.rng.integers(1, 4))):
        _, c = k.colour(tuple(COLOURS), jitter=0.08)
        y0, z0 = k.u(0.06, h * 0.6), k.u(-w / 2 + 0.06, w * 0.1)
        k.box((l / 2 + 0.002, y0, z0), (l / 2 + 0.004, min(h - 0.05, y0 + k.u(0.05, h * 0.5)),
                                        min(w / 2 - 0.05, z0 + k.u(0.05, w * 0.45))), c)
    return k.pick(("framed picture", "painting in a frame", "framed poster")), "", ""


# unannotated clutter
def potted_plant(k: Kit):
    _, pot = k.colour(("white", "orange", "grey", "brown"))
    h = k.u(0.6, 1.3)
    k.cyl((0, 0.13, 0), 0.14, 0.26, pot, res=12)
    k.sphere((0, 0.26 + (h - 0.26) / 2, 0), (k.u(0.2, 0.35), (h - 0.26) / 2, k.u(0.2, 0.35)),
             tuple(np.clip(np.asarray(COLOURS["green"]) + k.rng.normal(0, 0.05, 3), 0, 1)), res=10)
    return "potted plant", "", ""


def rug(k: Kit):
    name, col = k.colour(FABRICS + ("cream", "dark red"))
    l, w = k.u(1.2, 2.0), k.u(1.6, 2.6)
    k.box((-l / 2, 0, -w / 2), (l / 2, 0.012, w / 2), col)
    return "rug", name, ""


# ------------------------------------------------------------------------------------------------ outdoor kinds
CAR_COLOURS = ("white", "silver", "black", "grey", "dark grey", "red", "blue", "navy", "dark red", "light blue",
               "green", "beige", "yellow")


def _wheels(k: Kit, xs, w, r, width=0.22):
    for x in xs:
        for s in (-1, 1):
            k.cyl((x, r, s * (w / 2 - width / 2)), r, width, TYRE_RGB, axis="z", res=12)
            k.cyl((x, r, s * (w / 2 - 0.002)), r * 0.55, 0.012, METAL_RGB, axis="z", material=GLOSSY, res=10)


def _lights(k: Kit, l, w, y, h=0.1):
    for s in (-1, 1):
        z0 = s * (w / 2 - 0.25)
        k.box((l / 2, y, z0 - 0.18), (l / 2 + 0.015, y + h, z0 + 0.18), (0.95, 0.95, 0.85), EMISSIVE)
        k.box((-l / 2 - 0.015, y, z0 - 0.15), (-l / 2, y + h, z0 + 0.15), (0.7, 0.05, 0.05), EMISSIVE)


def _car(k: Kit, l, w, h, cabin_frac, cabin_shift, body_top, noun, palette=CAR_COLOURS):
    name, col = k.colour(palette)
    r = k.u(0.3, 0.36)
    k.box((-l / 2, 0.25, -w / 2), (l / 2, body_top, w / 2), col, GLOSSY)
    cl = l * cabin_frac
    cx = cabin_shift * l
    k.box((cx - cl / 2, body_top, -w / 2 + 0.08), (cx + cl / 2, h - 0.05, w / 2 - 0.08), GLASS_RGB, GLASS)
    k.box((cx - cl / 2 + 0.1, h - 0.05, -w / 2 + 0.1), (cx + cl / 2 - 0.15, h, w / 2 - 0.1), col, GLOSSY)
    _wheels(k, (l / 2 - 0.85, -l / 2 + 0.8), w, r)
    _lights(k, l, w, body_top - 0.22)
    return noun, name, ""


def sedan(k: Kit):
    return _car(k, k.u(4.2, 4.9), k.u(1.72, 1.85), k.u(1.40, 1.50), 0.48, -0.05, 0.9,
                k.pick(("sedan", "saloon car", "car")))


def hatchback(k: Kit):
    return _car(k, k.u(3.7, 4.2), k.u(1.65, 1.78), k.u(1.45, 1.55), 0.55, -0.12, 0.92,
                k.pick(("hatchback", "small car", "compact car")))


def suv(k: Kit):
    return _car(k, k.u(4.4, 4.9), k.u(1.82, 1.95), k.u(1.65, 1.85), 0.6, -0.1, 1.05,
                k.pick(("SUV", "sport utility vehicle", "crossover")))


def pickup(k: Kit):
    name, col = k.colour(CAR_COLOURS)
    l, w, h = k.u(5.2, 5.8), k.u(1.9, 2.0), k.u(1.8, 1.95)
    k.box((-l / 2, 0.35, -w / 2), (l / 2, 1.1, w / 2), col, GLOSSY)
    k.box((0.05 * l - 0.9, 1.1, -w / 2 + 0.06), (0.05 * l + 0.6, h - 0.05, w / 2 - 0.06), GLASS_RGB, GLASS)
    k.box((0.05 * l - 0.8, h - 0.05, -w / 2 + 0.08), (0.05 * l + 0.5, h, w / 2 - 0.08), col, GLOSSY)
    k.box((-l / 2, 1.1, -w / 2), (0.05 * l - 1.0, 1.35, -w / 2 + 0.06), col, GLOSSY)
    k.box((-l / 2, 1.1, w / 2 - 0.06), (0.05 * l - 1.0, 1.35, w / 2), col, GLOSSY)
    _wheels(k, (l / 2 - 0.95, -l / 2 + 1.0), w, 0.38, 0.26)
    _lights(k, l, w, 0.85)
    return "pickup truck", name, ""


def minivan(k: Kit):
    name, col = k.colour(("white", "silver", "grey", "dark grey", "blue", "black", "red"))
    l, w, h = k.u(4.7, 5.3), k.u(1.85, 2.0), k.u(1.75, 2.0)
    k.box((-l / 2, 0.28, -w / 2), (l / 2, 1.05, w / 2), col, GLOSSY)
    k.box((-l / 2 + 0.1, 1.05, -w / 2 + 0.04), (l / 2 - 0.7, h - 0.1, w / 2 - 0.04), GLASS_RGB, GLASS)
    k.box((-l / 2 + 0.1, h - 0.1, -w / 2 + 0.05), (l / 2 - 0.75, h, w / 2 - 0.05), col, GLOSSY)
    k.box((l / 2 - 0.7, 1.05, -w / 2 + 0.1), (l / 2 - 0.2, 1.2, w / 2 - 0.1), col, GLOSSY)
    _wheels(k, (l / 2 - 0.9, -l / 2 + 0.85), w, 0.33)
    _lights(k, l, w, 0.8)
    return k.pick(("minivan", "people carrier")), name, ""


def delivery_van(k: Kit):
    name, col = k.colour(("white", "white", "silver", "yellow", "red", "blue"))
    l, w, h = k.u(5.0, 6.2), k.u(1.95, 2.1), k.u(2.2, 2.6)
    k.box((-l / 2, 0.35, -w / 2), (l / 2 - 0.8, h, w / 2), col)
    k.box((l / 2 - 0.8, 0.35, -w / 2), (l / 2, 1.15, w / 2), col, GLOSSY)
    k.box((l / 2 - 0.8, 1.15, -w / 2 + 0.05), (l / 2 - 0.25, h - 0.35, w / 2 - 0.05), GLASS_RGB, GLASS)
    if k.rng.random() < 0.5:
        _, stripe = k.colour(("red", "blue", "green", "orange"))
        k.box((-l / 2 + 0.3, 1.2, -w / 2 - 0.001), (l / 2 - 1.0, 1.5, w / 2 + 0.001), stripe)
    _wheels(k, (l / 2 - 1.0, -l / 2 + 1.0), w, 0.36)
    _lights(k, l, w, 0.75)
    return k.pick(("delivery van", "panel van", "white van" if name == "white" else "cargo van")), name, ""


def box_truck(k: Kit):
    name, col = k.colour(("white", "red", "blue", "green", "orange", "silver"))
    box_name, box_col = k.colour(("white", "white", "silver", "yellow", "blue"))
    l, w, h = k.u(6.5, 8.5), k.u(2.3, 2.5), k.u(3.0, 3.5)
    cab = 2.0
    k.box((l / 2 - cab, 0.45, -w / 2 + 0.05), (l / 2, 2.6, w / 2 - 0.05), col, GLOSSY)
    k.box((l / 2, 1.55, -w / 2 + 0.15), (l / 2 + 0.012, 2.4, w / 2 - 0.15), GLASS_RGB, GLASS)
    k.box((-l / 2, 0.9, -w / 2), (l / 2 - cab - 0.1, h, w / 2), box_col)
    k.box((-l / 2 + 0.3, 0.5, -w / 2 + 0.3), (l / 2 - 0.3, 0.9, w / 2 - 0.3), (0.15, 0.15, 0.15))
    _wheels(k, (l / 2 - 1.2, -l / 2 + 1.3, -l / 2 + 2.6), w, 0.48, 0.3)
    return k.pick(("box truck", "lorry with a cargo box", "moving truck")), box_name, ""


def flatbed_truck(k: Kit):
    name, col = k.colour(("white", "red", "blue", "green", "orange", "yellow"))
    l, w, h = k.u(7.0, 9.0), k.u(2.3, 2.5), k.u(2.7, 3.1)
    k.box((l / 2 - 2.1, 0.45, -w / 2 + 0.05), (l / 2, h, w / 2 - 0.05), col, GLOSSY)
    k.box((l / 2, h - 1.0, -w / 2 + 0.15), (l / 2 + 0.012, h - 0.2, w / 2 - 0.15), GLASS_RGB, GLASS)
    k.box((-l / 2, 0.9, -w / 2), (l / 2 - 2.2, 1.2, w / 2), (0.3, 0.3, 0.3))
    for i in range(int(k.rng.integers(1, 4))):
        x0 = -l / 2 + 0.2 + i * 1.6
        _, c = k.colour(("brown", "light wood", "grey", "blue"))
        k.box((x0, 1.2, -w / 2 + 0.2), (min(x0 + 1.4, l / 2 - 2.3), 1.2 + k.u(0.5, 1.3), w / 2 - 0.2), c)
    _wheels(k, (l / 2 - 1.2, -l / 2 + 1.3, -l / 2 + 2.6), w, 0.48, 0.3)
    return k.pick(("flatbed truck", "lorry carrying crates")), name, ""


def truck_cab(k: Kit):
    name, col = k.colour(("red", "white", "blue", "black", "yellow", "silver", "green"))
    l, w, h = k.u(5.8, 6.8), k.u(2.45, 2.55), k.u(3.3, 3.9)
    cab = 2.4
    k.box((l / 2 - cab, 0.6, -w / 2), (l / 2, h - 0.5, w / 2), col, GLOSSY)
    k.box((l / 2 - cab, h - 0.5, -w / 2 + 0.2), (l / 2 - 0.6, h, w / 2 - 0.2), col, GLOSSY)
    k.box((l / 2, h - 1.6, -w / 2 + 0.12), (l / 2 + 0.012, h - 0.75, w / 2 - 0.12), GLASS_RGB, GLASS)
    k.box((-l / 2, 0.6, -w / 2 + 0.35), (l / 2 - cab, 1.05, w / 2 - 0.35), (0.15, 0.15, 0.15))
    k.cyl((-l / 2 + 1.0, 1.1, 0), 0.45, 0.12, (0.1, 0.1, 0.1), res=14)
    for s in (-1, 1):
        k.cyl((l / 2 - cab - 0.15, (h - 0.3) / 2 + 0.5, s * (w / 2 - 0.2)), 0.07, h - 0.9, METAL_RGB,
              material=GLOSSY, res=8)
    _wheels(k, (l / 2 - 1.3, -l / 2 + 0.7, -l / 2 + 2.0), w, 0.52, 0.3)
    return k.pick(("semi-truck cab without a trailer", "tractor unit", "truck cab")), name, ""


def _bus_body(k: Kit, x0, x1, w, h, col, band):
    k.box((x0, 0.3, -w / 2), (x1, 1.15, w / 2), col, GLOSSY)
    k.box((x0, 1.15, -w / 2 + 0.01), (x1, h - 0.45, w / 2 - 0.01), GLASS_RGB, GLASS)
    k.box((x0, h - 0.45, -w / 2), (x1, h, w / 2), band, GLOSSY)


def bus(k: Kit):
    name, col = k.colour(("white", "yellow", "red", "blue", "green", "orange", "silver"))
    l, w, h = k.u(10.5, 12.5), k.u(2.5, 2.55), k.u(3.0, 3.25)
    _bus_body(k, -l / 2, l / 2, w, h, col, col)
    k.box((l / 2, 1.0, -w / 2 + 0.1), (l / 2 + 0.012, h - 0.3, w / 2 - 0.1), GLASS_RGB, GLASS)
    _wheels(k, (l / 2 - 2.5, -l / 2 + 2.8), w, 0.5, 0.3)
    school = name == "yellow"
    return ("school bus" if school else k.pick(("city bus", "bus", "single-decker bus"))), name, ""


def articulated_bus(k: Kit):
    name, col = k.colour(("white", "red", "blue", "green", "silver"))
    l, w, h = k.u(17.5, 18.7), 2.55, k.u(3.0, 3.2)
    mid = k.u(-0.5, 0.5)
    _bus_body(k, mid + 0.6, l / 2, w, h, col, col)
    _bus_body(k, -l / 2, mid - 0.6, w, h, col, col)
    k.box((mid - 0.6, 0.5, -w / 2 + 0.1), (mid + 0.6, h - 0.15, w / 2 - 0.1), (0.12, 0.12, 0.12))
    _wheels(k, (l / 2 - 2.5, mid + 1.5, -l / 2 + 2.0), w, 0.5, 0.3)
    return k.pick(("articulated bus", "bendy bus", "long two-section bus")), name, ""


def tram(k: Kit):
    name, col = k.colour(("red", "white", "yellow", "blue", "green", "silver"))
    n = int(k.rng.integers(3, 6))
    seg = k.u(5.5, 6.5)
    l, w, h = n * seg, k.u(2.3, 2.6), k.u(3.3, 3.6)
    body_h = h - 0.45
    for i in range(n):
        x0 = -l / 2 + i * seg
        k.box((x0 + 0.05, 0.35, -w / 2), (x0 + seg - 0.05, 1.1, w / 2), col, GLOSSY)
        k.box((x0 + 0.05, 1.1, -w / 2 + 0.01), (x0 + seg - 0.05, body_h - 0.35, w / 2 - 0.01), GLASS_RGB, GLASS)
        k.box((x0 + 0.05, body_h - 0.35, -w / 2), (x0 + seg - 0.05, body_h, w / 2), col, GLOSSY)
        k.box((x0 - 0.05, 0.4, -w / 2 + 0.2), (x0 + 0.05, body_h - 0.1, w / 2 - 0.2), (0.15, 0.15, 0.15))
    k.box((-l / 2, 0.05, -w / 2 + 0.3), (l / 2, 0.35, w / 2 - 0.3), (0.12, 0.12, 0.12))
    for x in (-l / 2 + seg / 2, l / 2 - seg / 2):
        k.box((x - 0.6, body_h, -0.5), (x + 0.6, body_h + 0.15, 0.5), (0.2, 0.2, 0.2))
    k.box((-0.05, body_h + 0.15, -0.6), (0.05, h, 0.6), (0.15, 0.15, 0.15))
    k.box((-0.8, body_h + 0.1, -0.05), (0.8, h - 0.05, 0.05), (0.15, 0.15, 0.15))
    return k.pick(("tram", "streetcar", "light-rail tram")), name, ""


def motorhome(k: Kit):
    name, col = k.colour(("white", "white", "cream", "beige"))
    l, w, h = k.u(7.0, 9.0), k.u(2.3, 2.5), k.u(3.1, 3.5)
    k.box((-l / 2, 0.45, -w / 2), (l / 2 - 1.2, h, w / 2), col)
    k.box((l / 2 - 1.2, 0.45, -w / 2 + 0.05), (l / 2, 1.4, w / 2 - 0.05), col, GLOSSY)
    k.box((l / 2 - 1.2, 1.4, -w / 2 + 0.1), (l / 2 - 0.4, 2.4, w / 2 - 0.1), GLASS_RGB, GLASS)
    _, stripe = k.colour(("brown", "blue", "grey", "red"))
    k.box((-l / 2, 1.3, -w / 2 - 0.002), (l / 2 - 1.25, 1.5, w / 2 + 0.002), stripe)
    k.box((-l / 2 + 1.5, 1.7, -w / 2 - 0.004), (-l / 2 + 2.6, 2.3, w / 2 + 0.004), GLASS_RGB, GLASS)
    _wheels(k, (l / 2 - 1.5, -l / 2 + 1.8, -l / 2 + 3.0), w, 0.45, 0.28)
    return k.pick(("motorhome", "RV camper", "recreational vehicle")), name, ""


def step_van(k: Kit):
    name, col = k.colour(("white", "brown", "silver", "yellow"))
    l, w, h = k.u(6.0, 7.2), k.u(2.2, 2.4), k.u(2.8, 3.1)
    k.box((-l / 2, 0.45, -w / 2), (l / 2, h, w / 2), col)
    k.box((l / 2, 1.4, -w / 2 + 0.1), (l / 2 + 0.012, h - 0.3, w / 2 - 0.1), GLASS_RGB, GLASS)
    _wheels(k, (l / 2 - 1.1, -l / 2 + 1.3), w, 0.45, 0.28)
    _lights(k, l, w, 0.9)
    return k.pick(("step van", "large delivery van", "parcel van")), name, ""


TOPS = ("red", "blue", "navy", "green", "yellow", "white", "black", "grey", "orange", "purple", "pink", "teal",
        "beige", "brown")
TROUSERS = ("navy", "black", "dark grey", "blue", "beige", "brown", "grey")


def _person(k: Kit, height, x0=0.0, stride=None, sitting=False, lean=0.0):
    top_name, top = k.colour(TOPS)
    _, legs = k.colour(TROUSERS)
    skin = SKIN[int(k.rng.integers(len(SKIN)))]
    hip = 0.52 * height
    stride = k.u(0.0, 0.35) if stride is None else stride
    if not sitting:
        for s in (-1, 1):
            k.cyl((x0 + s * stride / 2, hip / 2, s * 0.09), 0.065, hip, legs, res=8)
    sh = 0.82 * height
    k.box((x0 - 0.11 + lean, hip, -0.19), (x0 + 0.11 + lean, sh, 0.19), top)
    for s in (-1, 1):
        k.cyl((x0 + lean - s * stride / 4, (hip + sh) / 2 + 0.03, s * 0.25), 0.05, sh - hip - 0.02, top, res=8)
    k.sphere((x0 + lean * 1.2, sh + 0.11, 0), (0.1, 0.12, 0.09), skin, res=10)
    _, hair = k.colour(("black", "dark brown", "brown", "beige", "grey"))
    k.sphere((x0 + lean * 1.2 - 0.02, sh + 0.16, 0), (0.095, 0.08, 0.09), hair, res=10)
    return top_name


def pedestrian(k: Kit):
    h = k.u(1.5, 1.92)
    top = _person(k, h)
    extra = ""
    if k.rng.random() < 0.3:
        _, bag = k.colour(("black", "brown", "navy", "red"))
        k.box((-0.24, 0.5 * h, -0.12), (-0.1, 0.75 * h, 0.12), bag)
        extra = " with a backpack"
    who = k.pick(("person", "man", "woman", "pedestrian", "person walking"))
    return f"{who} in {article(top)} {top} jacket{extra}", "", ""


def cyclist(k: Kit):
    bike_name, frame = k.colour(("red", "black", "blue", "silver", "green", "white", "yellow"))
    r = k.u(0.33, 0.36)
    wb = k.u(1.0, 1.12)
    for x in (-wb / 2, wb / 2):
        k.cyl((x, r, 0), r, 0.04, TYRE_RGB, axis="z", res=14)
        k.cyl((x, r, 0), r * 0.15, 0.06, METAL_RGB, axis="z", res=8)
    k.box((-wb / 2, r - 0.02, -0.02), (wb / 2 - 0.1, r + 0.35, 0.02), frame)
    k.box((wb / 2 - 0.15, r + 0.3, -0.25), (wb / 2 - 0.05, r + 0.38, 0.25), (0.1, 0.1, 0.1))
    k.u(1.6, 1.85)
    top_name, top = k.colour(TOPS)
    _, legs = k.colour(TROUSERS)
    skin = SKIN[int(k.rng.integers(len(SKIN)))]
    seat = r + 0.45
    for s in (-1, 1):
        k.cyl((-0.05 + s * 0.06, (r + seat) / 2 - 0.02, s * 0.1), 0.06, seat - r + 0.1, legs, res=8)
    k.box((-0.25, seat, -0.18), (0.05, seat + 0.55, 0.18), top)
    k.box((-0.05, seat + 0.35, -0.24), (wb / 2 - 0.12, seat + 0.45, 0.24), top)
    k.sphere((0.05, seat + 0.7, 0), (0.1, 0.12, 0.09), skin, res=10)
    _, helmet = k.colour(("white", "black", "red", "blue", "yellow"))
    k.sphere((0.03, seat + 0.77, 0), (0.13, 0.08, 0.11), helmet, GLOSSY, res=10)
    return f"person riding a {bike_name} bicycle", "", ""


def jersey_barrier(k: Kit):
    name, col = k.colour(("light grey", "white", "off-white"))
    l, w, h = k.u(2.0, 3.6), k.u(0.55, 0.65), k.u(0.8, 0.9)
    k.box((-l / 2, 0, -w / 2), (l / 2, 0.3, w / 2), col)
    k.box((-l / 2, 0.3, -w / 2 + 0.15), (l / 2, h, w / 2 - 0.15), col)
    if k.rng.random() < 0.5:
        for i in range(int(l / 0.6)):
            x = -l / 2 + 0.3 + i * 0.6
            k.box((x, 0.55, -w / 2 + 0.148), (x + 0.25, 0.7, w / 2 - 0.148), COLOURS["red"])
    return k.pick(("concrete road barrier", "jersey barrier", "concrete traffic barrier")), "", ""


def fence_barrier(k: Kit):
    l, w, h = k.u(1.5, 2.5), k.u(0.5, 0.7), k.u(0.95, 1.1)
    col = COLOURS["red"] if k.rng.random() < 0.5 else COLOURS["orange"]
    for x in (-l / 2 + 0.1, l / 2 - 0.1):
        k.box((x - 0.04, 0, -w / 2), (x + 0.04, 0.06, w / 2), (0.15, 0.15, 0.15))
        k.box((x - 0.03, 0.06, -0.03), (x + 0.03, h, 0.03), (0.75, 0.75, 0.75))
    for y in (h - 0.25, h - 0.55):
        k.box((-l / 2, y, -0.02), (l / 2, y + 0.2, 0.02), col)
        for i in range(int(l / 0.4)):
            x = -l / 2 + 0.1 + i * 0.4
            k.box((x, y - 0.001, -0.022), (x + 0.18, y + 0.201, 0.022), COLOURS["white"])
    return "red and white striped road barrier", "", ""


def traffic_cone(k: Kit):
    h = k.u(0.5, 0.78)
    r = 0.3 * h
    orange = np.clip(np.asarray(COLOURS["orange"]) + k.rng.normal(0, 0.03, 3), 0, 1)
    k.box((-r - 0.04, 0, -r - 0.04), (r + 0.04, 0.035, r + 0.04), (0.1, 0.1, 0.1))
    k.cone((0, 0.035, 0), r, h - 0.035, orange, res=12)
    y = 0.55 * h
    k.cyl((0, y, 0), r * (1 - (y - 0.035) / (h - 0.035)) + 0.005, 0.08 * h, COLOURS["white"], res=12)
    return k.pick(("orange traffic cone", "road cone", "safety cone")), "", ""


def construction_barrel(k: Kit):
    h, r = k.u(0.95, 1.1), k.u(0.27, 0.31)
    k.cyl((0, 0.04, 0), r + 0.08, 0.08, (0.08, 0.08, 0.08), res=14)
    n = 5
    for i in range(n):
        y0 = 0.08 + i * (h - 0.08) / n
        c = COLOURS["orange"] if i % 2 == 0 else COLOURS["white"]
        k.cyl((0, y0 + (h - 0.08) / n / 2, 0), r, (h - 0.08) / n, c, res=14)
    return k.pick(("orange-and-white construction barrel", "traffic drum", "striped barrel")), "", ""


# unannotated street furniture
def tree(k: Kit):
    h = k.u(5.5, 8.0)
    k.cyl((0, h * 0.3, 0), k.u(0.12, 0.2), h * 0.6, (0.3, 0.2, 0.12), res=8)
    g = np.clip(np.asarray(COLOURS["green"]) + k.rng.normal(0, 0.06, 3), 0, 1)
    cr = k.u(1.0, 1.6)
    k.sphere((0, h - cr, 0), (cr, cr, cr), g, res=10)
    return "tree", "", ""


def streetlight(k: Kit):
    h = k.u(5.5, 7.5)
    k.cyl((0, h / 2, 0), 0.08, h, (0.35, 0.36, 0.38), res=8)
    k.box((0, h - 0.1, -0.06), (1.4, h, 0.06), (0.35, 0.36, 0.38))
    k.box((1.1, h - 0.18, -0.12), (1.5, h - 0.1, 0.12), (0.9, 0.9, 0.8), EMISSIVE)
    return "street light", "", ""


#: kind -> builder.
BUILDERS = {f.__name__: f for f in (
    dining_chair, office_chair, armchair, sofa, dining_table, coffee_table, desk, bed, pillow, night_stand, wardrobe,
    sideboard, kitchen_cabinet, filing_cabinet, bookcase, shelves, television, wall_television, floor_lamp,
    table_lamp, vanity_sink, pedestal_sink, kitchen_sink, bathtub, toilet, refrigerator, oven, stove,
    washing_machine, trash_bin, cardboard_box, door, window, picture, potted_plant, rug,
    sedan, hatchback, suv, pickup, minivan, delivery_van, box_truck, flatbed_truck, truck_cab, bus,
    articulated_bus, tram, motorhome, step_van, pedestrian, cyclist, jersey_barrier, fence_barrier, traffic_cone,
    construction_barrel, tree, streetlight)}


def build_shape(kind: str, rng: Stream, mesh: bool = True) -> Shape:
    """Build one instance of ``kind`` with sizes and colours drawn from ``rng`` (``mesh=False``: bounds only; the
    random draws, sizes and boxes are the same)."""
    kit = Kit(rng, mesh)
    noun, colour, material = BUILDERS[kind](kit)
    return finalize(kit, kind, noun, colour, material)
