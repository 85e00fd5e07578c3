"""Scene layouts for the demo benchmark: rooms (indoor) and streets (outdoor), one per image.

Layouts are made in a *layout frame*: a ground plane (x, z) in metres plus a height above the floor. The camera
stands at (cx, cz) with a heading psi, a height and a pitch (indoor: looking slightly down) and a small roll. The
world frame is camera-centred and gravity aligned (x right, y down, z along the camera heading); the camera frame
is the world frame rotated by the pitch/roll (``R_cw``). Poses are egocentric, as in Omni3D: an object's
``R_cam = R_cw @ rotation_y(ry)``, so a pitched camera gives objects a pitch in the camera frame.

Objects are placed without interpenetration: their oriented footprints (and height intervals) are tested against
everything placed before; objects resting on others (a lamp on a night stand, a pillow on a bed) sit on the support
surface and are allowed inside its box. Groups make co-located objects (chairs around a table, night stands by a
bed, a TV on a TV cabinet, parked cars in a row) so occlusion, truncation and confusions arise naturally.

Which category a built *kind* is annotated as depends on the dataset taxonomy (``DatasetSpec.taxonomy``); kinds
mapped to ``None`` are unannotated clutter (plants, trees, street lights; in demo_outdoor_av also jersey
barriers, which its vocabulary has no name for).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ov3d_core.demo.rng import Stream
from ov3d_core.demo.shapes import COLOURS, Shape, build_shape
from ov3d_core.geometry.boxes import rotation_y
from ov3d_core.taxonomy import OMNI3D_NAME_TO_ID

# Background material codes (render.py).
BG_FLOOR_WOOD, BG_FLOOR_TILE, BG_CARPET, BG_WALL, BG_CEILING, BG_ROAD, BG_SIDEWALK, BG_FACADE, BG_GROUND = range(9)

BG_DESCRIPTIONS = {
    BG_FLOOR_WOOD: "a patch of wooden floor", BG_FLOOR_TILE: "a patch of tiled floor",
    BG_CARPET: "a patch of carpet", BG_WALL: "a patch of {colour} wall", BG_CEILING: "a white ceiling",
    BG_ROAD: "an empty stretch of asphalt road", BG_SIDEWALK: "a paved sidewalk",
    BG_FACADE: "a {colour} building facade with windows", BG_GROUND: "bare ground in the distance",
}


# ------------------------------------------------------------------------------------------------ datasets
INDOOR_TAXONOMY = {
    "dining_chair": "chair", "office_chair": "chair", "armchair": "chair", "sofa": "sofa", "dining_table": "table",
    "coffee_table": "table", "desk": "desk", "bed": "bed", "pillow": "pillow", "night_stand": "night stand",
    "wardrobe": "cabinet", "sideboard": "cabinet", "kitchen_cabinet": "cabinet", "filing_cabinet": "cabinet",
    "bookcase": "bookcase", "shelves": "shelves", "television": "television", "wall_television": "television",
    "floor_lamp": "lamp", "table_lamp": "lamp", "vanity_sink": "sink", "pedestal_sink": "sink",
    "kitchen_sink": "sink", "bathtub": "bathtub", "toilet": "toilet", "refrigerator": "refrigerator",
    "oven": "oven", "stove": "stove", "washing_machine": "machine", "trash_bin": "bin", "cardboard_box": "box",
    "door": "door", "window": "window", "picture": "picture", "potted_plant": None,
}
OUTDOOR_TAXONOMY = {
    "sedan": "car", "hatchback": "car", "suv": "car", "pickup": "car", "minivan": "van", "delivery_van": "van",
    "step_van": "van", "box_truck": "truck", "flatbed_truck": "truck", "truck_cab": "truck", "motorhome": "truck",
    "bus": "bus", "articulated_bus": "bus", "tram": "tram", "pedestrian": "pedestrian", "cyclist": "cyclist",
    "jersey_barrier": "barrier", "fence_barrier": "barrier", "construction_barrel": "barrier",
    "traffic_cone": "traffic cone", "tree": None, "streetlight": None,
}
AV_TAXONOMY = {
    "sedan": "regular vehicle", "hatchback": "regular vehicle", "suv": "regular vehicle",
    "pickup": "regular vehicle", "minivan": "regular vehicle", "delivery_van": "regular vehicle",
    "step_van": "large vehicle", "motorhome": "large vehicle", "flatbed_truck": "large vehicle",
    "box_truck": "box truck", "truck_cab": "truck cab", "bus": "bus", "articulated_bus": "articulated bus",
    "pedestrian": "pedestrian", "cyclist": "bicyclist", "construction_barrel": "construction barrel",
    "traffic_cone": "construction cone", "jersey_barrier": None, "tree": None, "streetlight": None,
}
#: Category ids of demo_outdoor_av names that are not in the Omni3D table (the file's own ids, >= 1000).
AV_EXTRA_IDS = {"regular vehicle": 1000, "large vehicle": 1001, "box truck": 1002, "truck cab": 1003,
                "articulated bus": 1004, "bicyclist": 1005, "construction barrel": 1006, "construction cone": 1007}


@dataclass(frozen=True)
class DatasetSpec:
    """One demo dataset: camera, taxonomy, ids and folder."""

    name: str
    folder: str
    environment: str  # indoor | outdoor
    stream: int  # random stream index (seeds are SeedSequence([seed, stream, image_index]))
    width: int
    height: int
    focal: float
    cam_height: tuple[float, float]
    pitch_deg: tuple[float, float]  # positive looks down
    taxonomy: dict
    vocabulary: tuple[str, ...]
    image_id_base: int
    ann_id_base: int
    dataset_id: int
    source: str
    style: str  # layout style: indoor | kitti | av
    subsets: dict = field(default_factory=dict)

    def category_id(self, name: str) -> int:
        if name in OMNI3D_NAME_TO_ID:
            return OMNI3D_NAME_TO_ID[name]
        return AV_EXTRA_IDS[name]

    @property
    def K(self) -> np.ndarray:
        return np.array([[self.focal, 0.0, self.width / 2], [0.0, self.focal, self.height / 2], [0.0, 0.0, 1.0]])


INDOOR_VOCAB = ("chair", "table", "sofa", "bed", "cabinet", "shelves", "television", "lamp", "sink", "bathtub",
                "toilet", "refrigerator", "oven", "desk", "bookcase", "night stand", "pillow", "box", "door",
                "window", "picture", "stove", "machine", "bin")
OUTDOOR_VOCAB = ("car", "van", "truck", "bus", "tram", "pedestrian", "cyclist", "barrier", "traffic cone")
AV_VOCAB = ("regular vehicle", "large vehicle", "box truck", "truck cab", "bus", "articulated bus", "pedestrian",
            "bicyclist", "construction barrel", "construction cone")

DATASETS: tuple[DatasetSpec, ...] = (
    DatasetSpec(
        name="demo_indoor", folder="indoor", environment="indoor", stream=1, width=640, height=480, focal=520.0,
        cam_height=(1.2, 1.6), pitch_deg=(8.0, 24.0), taxonomy=INDOOR_TAXONOMY, vocabulary=INDOOR_VOCAB,
        image_id_base=100000, ann_id_base=10_000_000, dataset_id=90, source="OV3D demo: synthetic RGB-D rooms",
        style="indoor",
        subsets={"base": ["chair", "table", "sofa", "bed", "cabinet", "shelves", "television", "lamp", "sink",
                          "toilet"],
                 "novel": ["bathtub", "refrigerator", "oven", "desk", "bookcase", "night stand", "pillow", "box",
                           "door", "window", "picture", "stove", "machine", "bin"]}),
    DatasetSpec(
        name="demo_outdoor", folder="outdoor", environment="outdoor", stream=2, width=1242, height=375, focal=721.5,
        cam_height=(1.65, 1.65), pitch_deg=(-0.3, 0.3), taxonomy=OUTDOOR_TAXONOMY, vocabulary=OUTDOOR_VOCAB,
        image_id_base=200000, ann_id_base=20_000_000, dataset_id=91,
        source="OV3D demo: synthetic KITTI-like street scenes with a 32-beam LiDAR", style="kitti",
        subsets={"base": ["car", "pedestrian", "cyclist"],
                 "novel": ["van", "truck", "bus", "tram", "barrier", "traffic cone"]}),
    DatasetSpec(
        name="demo_outdoor_av", folder="outdoor_av", environment="outdoor", stream=3, width=768, height=576,
        focal=580.0, cam_height=(1.8, 1.95), pitch_deg=(1.0, 3.0), taxonomy=AV_TAXONOMY, vocabulary=AV_VOCAB,
        image_id_base=300000, ann_id_base=30_000_000, dataset_id=92,
        source="OV3D demo: synthetic street scenes with an Argoverse-2-like taxonomy", style="av",
        subsets={"base": ["regular vehicle", "pedestrian", "bus"],
                 "novel": ["large vehicle", "box truck", "truck cab", "articulated bus", "bicyclist",
                           "construction barrel", "construction cone"]}),
)
DATASETS_BY_NAME = {d.name: d for d in DATASETS}


def rotate(pts: np.ndarray, M: np.ndarray) -> np.ndarray:
    """``pts @ M.T`` for (n, 3) points without BLAS (BLAS threads are slow for thin matrices on a busy machine)."""
    pts = np.asarray(pts)
    return np.einsum("...j,kj->...k", pts, np.asarray(M, dtype=pts.dtype if pts.dtype == np.float32 else None))


# ------------------------------------------------------------------------------------------------ scene model
@dataclass(eq=False)
class Placed:
    """One object in a layout. ``heading`` is the angle in the layout ground plane of the object's local +x axis
    (direction (cos, sin) in (x, z)); ``base`` its bottom height above the floor."""

    kind: str
    category: str | None  # None: unannotated clutter
    shape: Shape
    x: float
    z: float
    heading: float
    base: float = 0.0
    support: int | None = None
    footprint: tuple[float, float] | None = None  # (l, w) used for collisions instead of the box (trees)

    @property
    def fp_l(self) -> float:
        return self.footprint[0] if self.footprint else self.l

    @property
    def fp_w(self) -> float:
        return self.footprint[1] if self.footprint else self.w

    @property
    def l(self) -> float:
        return float(self.shape.dims[2])

    @property
    def w(self) -> float:
        return float(self.shape.dims[0])

    @property
    def h(self) -> float:
        return float(self.shape.dims[1])


@dataclass(eq=False)
class Background:
    """A background box in the layout frame: corners lo/hi as (x, height, z); material code, colour name, rgb."""

    lo: tuple[float, float, float]
    hi: tuple[float, float, float]
    material: int
    colour: str
    rgb: tuple[float, float, float]

    @property
    def description(self) -> str:
        return BG_DESCRIPTIONS[self.material].format(colour=self.colour)


@dataclass(eq=False)
class Scene:
    spec: DatasetSpec
    index: int
    image_id: int
    kind: str  # room type or street type
    cam_x: float
    cam_z: float
    psi: float  # camera heading in the layout: forward = (sin psi, cos psi) in (x, z)
    cam_h: float
    pitch: float  # radians, positive down
    roll: float
    objects: list[Placed]
    background: list[Background]
    road: dict = field(default_factory=dict)  # street parameters for textures (lane lines, tram rails, crossing)
    light_dir_world: tuple[float, float, float] = (0.3, 1.0, 0.4)  # direction the light travels (y down)

    @property
    def K(self) -> np.ndarray:
        return self.spec.K

    @property
    def R_cw(self) -> np.ndarray:
        """World (gravity aligned, y down) -> camera rotation: pitch about x, then roll about z (read-only)."""
        key = (self.pitch, self.roll)
        cached = self.__dict__.get("_R_cw")
        if cached is None or cached[0] != key:
            c, s = np.cos(self.pitch), np.sin(self.pitch)
            rx = np.array([[1.0, 0, 0], [0, c, -s], [0, s, c]])
            cr, sr = np.cos(self.roll), np.sin(self.roll)
            rz = np.array([[cr, -sr, 0], [sr, cr, 0], [0, 0, 1.0]])
            R = rz @ rx
            R.flags.writeable = False
            cached = self.__dict__["_R_cw"] = (key, R)
        return cached[1]

    def _axes(self):
        cached = self.__dict__.get("_axes_rf")
        if cached is None or cached[0] != self.psi:
            f = np.array([np.sin(self.psi), np.cos(self.psi)])
            r = np.array([np.cos(self.psi), -np.sin(self.psi)])
            r.flags.writeable = f.flags.writeable = False
            cached = self.__dict__["_axes_rf"] = (self.psi, r, f)
        return cached[1], cached[2]

    def layout_to_camera(self, pts: np.ndarray) -> np.ndarray:
        """Layout points ``(..., 3)`` as (x, height, z) -> camera frame."""
        pts = np.asarray(pts, float)
        r, f = self._axes()
        if pts.shape == (3,):  # one point: the same elementwise arithmetic on Python floats (no array temporaries)
            (r0, r1), (f0, f1) = r.tolist(), f.tolist()
            x, y, z = pts.tolist()
            dx, dz = x - self.cam_x, z - self.cam_z
            return rotate(np.array([r0 * dx + r1 * dz, self.cam_h - y, f0 * dx + f1 * dz]), self.R_cw)
        dx, dz = pts[..., 0] - self.cam_x, pts[..., 2] - self.cam_z
        world = np.stack([r[0] * dx + r[1] * dz, self.cam_h - pts[..., 1], f[0] * dx + f[1] * dz], -1)
        return rotate(world, self.R_cw)

    def camera_to_layout(self, pts: np.ndarray) -> np.ndarray:
        pts = np.asarray(pts)
        world = rotate(pts if pts.dtype == np.float32 else pts.astype(np.float64), self.R_cw.T)
        r, f = self._axes()
        if world.shape == (3,) and world.dtype == np.float64:  # one point (see layout_to_camera)
            (r0, r1), (f0, f1) = r.tolist(), f.tolist()
            w0, w1, w2 = world.tolist()
            return np.array([self.cam_x + r0 * w0 + f0 * w2, self.cam_h - w1, self.cam_z + r1 * w0 + f1 * w2])
        x = self.cam_x + r[0] * world[..., 0] + f[0] * world[..., 2]
        z = self.cam_z + r[1] * world[..., 0] + f[1] * world[..., 2]
        return np.stack([x, self.cam_h - world[..., 1], z], -1)

    def object_pose(self, obj: Placed) -> tuple[np.ndarray, np.ndarray]:
        """(center_cam (3,), R_cam (3, 3)) of an object's GT box."""
        return self.pose_at(obj.x, obj.z, obj.heading, obj.base, obj.h)

    def pose_at(self, x: float, z: float, heading: float, base: float, h: float) -> tuple[np.ndarray, np.ndarray]:
        """Camera-frame centre and rotation of a box of height ``h`` standing at layout (x, z) on ``base``."""
        r, f = self._axes()
        d = np.array([np.cos(heading), np.sin(heading)])
        hx, hz = float(r @ d), float(f @ d)
        ry = np.arctan2(-hz, hx)
        # rotation_y(ry)[0], without its (1, 3, 3) scaffolding: the same cos/sin of a one-element array
        ra = np.array([ry], dtype=np.float64)
        cy, sy = float(np.cos(ra)[0]), float(np.sin(ra)[0])
        R = self.R_cw @ np.array([[cy, 0.0, sy], [0.0, 1.0, 0.0], [-sy, 0.0, cy]])
        c = self.layout_to_camera(np.array([x, base + h / 2, z]))
        return c, R

    def poses(self, idx) -> tuple[np.ndarray, np.ndarray]:
        """Batched :meth:`object_pose` of objects ``idx``: centres (n, 3) and rotations (n, 3, 3)."""
        objs = [self.objects[i] for i in idx]
        if not objs:
            return np.zeros((0, 3)), np.zeros((0, 3, 3))
        r, f = self._axes()
        a = np.array([o.heading for o in objs])
        hx = r[0] * np.cos(a) + r[1] * np.sin(a)
        hz = f[0] * np.cos(a) + f[1] * np.sin(a)
        R = np.einsum("ij,njk->nik", self.R_cw, rotation_y(np.arctan2(-hz, hx)))
        pts = np.array([[o.x, o.base + o.h / 2, o.z] for o in objs])
        return self.layout_to_camera(pts), R

    def light_dir_camera(self) -> np.ndarray:
        v = self.R_cw @ np.asarray(self.light_dir_world, float)
        return v / np.linalg.norm(v)

    def annotated(self) -> list[int]:
        return [i for i, o in enumerate(self.objects) if o.category is not None]


# ------------------------------------------------------------------------------------------------ layout helper
def _quad(x, z, a, l, w, lo=0.0, hi=0.0):
    """Footprint as a tuple (x, z, cos, sin, l/2, w/2, bounding radius, lo, hi) for the fast overlap test; lo/hi:
    the height interval the overlap counts in (placed objects: [base, base + h - 1e-6])."""
    return (float(x), float(z), math.cos(a), math.sin(a), float(l) / 2, float(w) / 2,
            0.5 * float(np.hypot(l, w)), lo, hi)


def _quad_overlap(p, q) -> bool:
    """Separating-axis test of two oriented rectangles given by :func:`_quad` (pure Python, fast)."""
    dx, dz = q[0] - p[0], q[1] - p[1]
    if dx * dx + dz * dz >= (p[6] + q[6]) ** 2:
        return False
    for ux, uz, ext in ((p[2], p[3], p[4]), (-p[3], p[2], p[5]), (q[2], q[3], q[4]), (-q[3], q[2], q[5])):
        rp = p[4] * abs(p[2] * ux + p[3] * uz) + p[5] * abs(-p[3] * ux + p[2] * uz)
        rq = q[4] * abs(q[2] * ux + q[3] * uz) + q[5] * abs(-q[3] * ux + q[2] * uz)
        if abs(dx * ux + dz * uz) >= rp + rq:
            return False
    return True


class Layout:
    """Places objects without overlaps inside ``bounds`` = (x0, x1, z0, z1)."""

    def __init__(self, rng: Stream, taxonomy: dict, bounds, keep_clear=(), mesh: bool = True):
        self.rng = rng
        self.mesh = mesh
        self.taxonomy = taxonomy
        self.bounds = bounds
        self.objects: list[Placed] = []
        self.keep_clear = list(keep_clear)  # (x, z, half size) squares nothing may cover (the camera)
        self._quads: list[tuple] = []

    def shape(self, kind: str) -> Shape:
        return build_shape(kind, self.rng, self.mesh)

    def fits(self, x, z, a, l, w, base, h, margin=0.02, skip=(), inside=True, clear_front=0.0) -> bool:
        """Whether a box footprint (centre x, z, heading a, length l, width w) with height interval
        [base, base + h] overlaps nothing placed so far (with ``margin``), stays inside the bounds and off the
        camera; ``clear_front`` also keeps a strip of that depth in front of it free (doors)."""
        x, z, a, l, w, base, h = float(x), float(z), float(a), float(l), float(w), float(base), float(h)
        x0, x1, z0, z1 = self.bounds
        if inside:
            c, s = abs(math.cos(a)), abs(math.sin(a))
            ex, ez = c * l / 2 + s * w / 2, s * l / 2 + c * w / 2
            if x - ex < x0 - 1e-6 or x + ex > x1 + 1e-6 or z - ez < z0 - 1e-6 or z + ez > z1 + 1e-6:
                return False
        quad = _quad(x, z, a, l + 2 * margin, w + 2 * margin)
        for cx, cz, rad in self.keep_clear:
            if _quad_overlap(quad, (cx, cz, 1.0, 0.0, rad, rad, rad * 1.4143)):
                return False
        top = base + h - 1e-6
        px, pz, pr = quad[0], quad[1], quad[6]
        if clear_front > 0:
            fx, fz = math.cos(a), math.sin(a)
            front = _quad(x + fx * (l / 2 + clear_front / 2), z + fz * (l / 2 + clear_front / 2), a, clear_front, w)
            for i, q in enumerate(self._quads):
                if i in skip:
                    continue
                if base < q[8] and q[7] < top and _quad_overlap(quad, q):
                    return False
                if q[7] < 1.0 and _quad_overlap(front, q):
                    return False
            return True
        for i, q in enumerate(self._quads):
            # q[7], q[8]: base and base + h - 1e-6 of the placed object; the bounding-circle test of _quad_overlap
            # inlined (most pairs are far apart)
            if base < q[8] and q[7] < top:
                dx, dz = q[0] - px, q[1] - pz
                if not dx * dx + dz * dz >= (pr + q[6]) ** 2 and i not in skip and _quad_overlap(quad, q):
                    return False
        return True

    def add(self, kind, shape, x, z, a, base=0.0, support=None, footprint=None) -> int:
        o = Placed(kind, self.taxonomy.get(kind), shape, float(x), float(z), float(a), float(base), support, footprint)
        self.objects.append(o)
        self._quads.append(_quad(o.x, o.z, o.heading, o.fp_l, o.fp_w, o.base, o.base + o.h - 1e-6))
        return len(self.objects) - 1

    def remove(self, keep) -> None:
        """Keep only the objects for which ``keep(obj)`` is true (before any support links exist)."""
        pairs = [(o, q) for o, q in zip(self.objects, self._quads) if keep(o)]
        self.objects = [p[0] for p in pairs]
        self._quads = [p[1] for p in pairs]

    def try_place(self, kind, sampler, tries=25, shape=None, **kw) -> int | None:
        """Place ``kind`` at the first pose from ``sampler(shape) -> (x, z, a, base)`` that fits."""
        shape = shape or self.shape(kind)
        for _ in range(tries):
            pose = sampler(shape)
            if pose is None:
                continue
            x, z, a, base = pose
            if self.fits(x, z, a, shape.dims[2], shape.dims[0], base, shape.dims[1], **kw):
                return self.add(kind, shape, x, z, a, base)
        return None

    def on_top(self, kind, support: int, u=None, v=None, heading=None, tries=6) -> int | None:
        """Place ``kind`` on the top surface of object ``support`` at local (u, v) (random if None)."""
        sup = self.objects[support]
        shape = self.shape(kind)
        l, w = shape.dims[2], shape.dims[0]
        da = 0.0 if heading is None else heading
        du, dv = abs(sup.l - l) / 2, abs(sup.w - w) / 2
        for _ in range(tries):
            uu = float(np.clip(self.rng.uniform(-du, du) if u is None else u, -du, du))
            vv = float(np.clip(self.rng.uniform(-dv, dv) if v is None else v, -dv, dv))
            surf = sup.shape.surface_height(uu - l / 2, uu + l / 2, -vv - w / 2, -vv + w / 2)
            c, s = np.cos(sup.heading), np.sin(sup.heading)
            x = sup.x + c * uu - s * vv
            z = sup.z + s * uu + c * vv
            a = sup.heading + da
            base = sup.base + surf + 0.002
            if self.fits(x, z, a, l, w, base, shape.dims[1], margin=0.005, skip={support}, inside=False):
                i = self.add(kind, shape, x, z, a, base, support)
                return i
            if u is not None and v is not None:
                break
        return None


def _wall_pose(layout: Layout, wall: str, shape: Shape, gap: float, along: float | None = None):
    x0, x1, z0, z1 = layout.bounds
    l, w = shape.dims[2], shape.dims[0]
    rng = layout.rng
    if wall == "left":
        a, x = 0.0, x0 + l / 2 + gap
        z = rng.uniform(z0 + w / 2, z1 - w / 2) if along is None else along
    elif wall == "right":
        a, x = np.pi, x1 - l / 2 - gap
        z = rng.uniform(z0 + w / 2, z1 - w / 2) if along is None else along
    elif wall == "far":
        a, z = -np.pi / 2, z1 - l / 2 - gap
        x = rng.uniform(x0 + w / 2, x1 - w / 2) if along is None else along
    else:  # near
        a, z = np.pi / 2, z0 + l / 2 + gap
        x = rng.uniform(x0 + w / 2, x1 - w / 2) if along is None else along
    return x, z, a


def against_wall(layout: Layout, kind: str, walls=("left", "right", "far"), gap=(0.0, 0.06), base=0.0,
                 tries=25, clear_front=0.0, shape=None) -> int | None:
    rng = layout.rng
    weights = tuple(3.0 if wl == "far" else 2.0 if wl in ("left", "right") else 0.6 for wl in walls)

    def sampler(shape):
        wall = walls[rng.choice_index(weights)]
        x, z, a = _wall_pose(layout, wall, shape, rng.uniform(*gap))
        return x, z, a, base

    return layout.try_place(kind, sampler, tries, shape=shape, clear_front=clear_front)


def free_standing(layout: Layout, kind: str, region=None, snap=True, tries=25, shape=None) -> int | None:
    rng = layout.rng
    x0, x1, z0, z1 = region or layout.bounds

    def sampler(shape):
        a = rng.integers(4) * np.pi / 2 + (rng.normal(0, 0.12) if snap else rng.uniform(0, 2 * np.pi))
        return rng.uniform(x0, x1), rng.uniform(z0, z1), a, 0.0

    return layout.try_place(kind, sampler, tries, shape=shape)


def around(layout: Layout, kind: str, center: int, n: int, gap=(0.03, 0.15), ends=True) -> list[int]:
    """Up to ``n`` chairs (or similar) around object ``center``, facing it."""
    t = layout.objects[center]
    rng = layout.rng
    out = []
    slots = []
    round_ = t.shape.kind == "dining_table" and abs(t.l - t.w) < 0.05
    if round_:
        for k in range(max(n, 3)):
            slots.append(("r", 2 * np.pi * k / max(n, 3) + rng.normal(0, 0.1)))
    else:
        per_side = max(1, int(t.w // 0.6))
        for side in (-1, 1):
            for k in range(per_side):
                slots.append(("s", side, -t.w / 2 + t.w * (k + 0.5) / per_side))
        if ends:
            slots += [("e", -1, 0.0), ("e", 1, 0.0)]
    order = rng.permutation(len(slots))
    for si in order:
        if len(out) >= n:
            break
        slot = slots[si]
        shape = layout.shape(kind)
        cl = shape.dims[2]
        g = rng.uniform(*gap)
        c, s = np.cos(t.heading), np.sin(t.heading)
        if slot[0] == "r":
            ang = slot[1]
            rad = t.l / 2 + cl / 2 + g
            x, z = t.x + rad * np.cos(ang), t.z + rad * np.sin(ang)
            a = ang + np.pi
        elif slot[0] == "s":
            u = slot[1] * (t.l / 2 + cl / 2 + g)
            v = slot[2] + rng.normal(0, 0.05)
            x, z = t.x + c * u - s * v, t.z + s * u + c * v
            a = t.heading + (np.pi if slot[1] > 0 else 0.0)
        else:
            v = slot[1] * (t.w / 2 + cl / 2 + g)
            x, z = t.x - s * v, t.z + c * v
            a = t.heading + (-np.pi / 2 if slot[1] > 0 else np.pi / 2)
        a += rng.normal(0, 0.15)
        if layout.fits(x, z, a, cl, shape.dims[0], 0.0, shape.dims[1]):
            out.append(layout.add(kind, shape, x, z, a))
    return out


def beside(layout: Layout, kind: str, anchor: int, side: int, gap=(0.03, 0.12), flush_back=True) -> int | None:
    """Place ``kind`` next to ``anchor`` along its local z (side -1/+1), same heading, backs aligned."""
    t = layout.objects[anchor]
    shape = layout.shape(kind)
    g = layout.rng.uniform(*gap)
    u = -t.l / 2 + shape.dims[2] / 2 if flush_back else 0.0
    v = side * (t.w / 2 + shape.dims[0] / 2 + g)
    c, s = np.cos(t.heading), np.sin(t.heading)
    x, z = t.x + c * u - s * v, t.z + s * u + c * v
    if layout.fits(x, z, t.heading, shape.dims[2], shape.dims[0], 0.0, shape.dims[1], margin=0.005):
        return layout.add(kind, shape, x, z, t.heading)
    return None


def in_front(layout: Layout, kind: str, anchor: int, dist=(0.35, 0.6), turn=0.0, jitter=0.1) -> int | None:
    t = layout.objects[anchor]
    shape = layout.shape(kind)
    d = layout.rng.uniform(*dist)
    u = t.l / 2 + d + shape.dims[2] / 2
    v = layout.rng.normal(0, jitter)
    c, s = np.cos(t.heading), np.sin(t.heading)
    x, z = t.x + c * u - s * v, t.z + s * u + c * v
    a = t.heading + turn + layout.rng.normal(0, 0.1)
    if layout.fits(x, z, a, shape.dims[2], shape.dims[0], 0.0, shape.dims[1]):
        return layout.add(kind, shape, x, z, a)
    return None


def on_wall(layout: Layout, kind: str, height_center=(1.3, 1.7), walls=("left", "right", "far"),
            tries=20) -> int | None:
    """Wall-mounted flat objects (pictures, windows, TVs): flush on the wall at a centre height."""
    rng = layout.rng

    def sampler(shape):
        wall = walls[int(rng.integers(len(walls)))]
        x, z, a = _wall_pose(layout, wall, shape, 0.005)
        base = rng.uniform(*height_center) - shape.dims[1] / 2
        return x, z, a, max(base, 0.0)

    return layout.try_place(kind, sampler, tries, margin=0.05)


# ------------------------------------------------------------------------------------------------ indoor
ROOM_TYPES = ("living", "bedroom", "kitchen", "bathroom", "office")
WALL_COLOURS = ("white", "off-white", "cream", "beige", "light grey", "light blue", "pink", "mustard", "teal")


def _room(rng, spec: DatasetSpec, kind: str, mesh: bool = True) -> Scene:
    if kind == "bathroom":
        rw, rd = rng.uniform(2.6, 3.6), rng.uniform(3.0, 4.2)
    else:
        rw, rd = rng.uniform(3.8, 6.5), rng.uniform(4.2, 7.0)
    height = rng.uniform(2.5, 3.0)
    cam_h = rng.uniform(*spec.cam_height)
    cx = rw * rng.uniform(0.3, 0.7)
    cz = rng.uniform(0.25, 0.7)
    psi = rng.uniform(-0.42, 0.42)
    pitch = np.deg2rad(rng.uniform(*spec.pitch_deg))
    roll = np.deg2rad(rng.normal(0, 1.0))
    tax = spec.taxonomy
    lay = Layout(rng, tax, (0.0, rw, 0.0, rd), keep_clear=[(cx, cz, 0.45)], mesh=mesh)

    def wall(kind_, **kw):
        return against_wall(lay, kind_, **kw)

    def maybe(p):
        return rng.random() < p

    if kind == "living":
        s = wall("sofa", walls=("left", "right", "far"))
        if s is not None:
            for _ in range(int(rng.integers(1, 4))):
                sup = lay.objects[s]
                lay.on_top("pillow", s, u=-sup.l / 2 + 0.28, heading=rng.normal(0, 0.2))
            ct = in_front(lay, "coffee_table", s, dist=(0.35, 0.55))
            if ct is not None and maybe(0.8):
                for side in (-1, 1)[: int(rng.integers(1, 3))]:
                    t = lay.objects[ct]
                    shape = lay.shape("armchair")
                    v = side * (t.w / 2 + shape.dims[2] / 2 + rng.uniform(0.15, 0.4))
                    c, sn = np.cos(t.heading), np.sin(t.heading)
                    x, z = t.x - sn * v, t.z + c * v
                    a = t.heading - side * np.pi / 2 + rng.normal(0, 0.25)
                    if lay.fits(x, z, a, shape.dims[2], shape.dims[0], 0, shape.dims[1]):
                        lay.add("armchair", shape, x, z, a)
            if maybe(0.6):
                beside(lay, "floor_lamp", s, int(rng.choice([-1, 1])))
        if maybe(0.55):
            tv_stand = wall("sideboard")
            if tv_stand is not None:
                lay.on_top("television", tv_stand, u=0.0, v=rng.normal(0, 0.1))
        else:
            on_wall(lay, "wall_television", (1.1, 1.5))
        for k in ("bookcase", "shelves"):
            if maybe(0.6):
                wall(k, gap=(0.0, 0.03))
        for _ in range(int(rng.integers(1, 3))):
            on_wall(lay, "picture")
    elif kind == "bedroom":
        b = wall("bed", gap=(0.0, 0.02), walls=("left", "right", "far"))
        if b is not None:
            bb = lay.objects[b]
            for _ in range(int(rng.integers(1, 3))):
                lay.on_top("pillow", b, u=-bb.l / 2 + 0.25, heading=rng.normal(0, 0.1))
            for side in (-1, 1):
                if maybe(0.8):
                    ns = beside(lay, "night_stand", b, side, gap=(0.03, 0.1))
                    if ns is not None and maybe(0.7):
                        lay.on_top("table_lamp", ns)
        if maybe(0.8):
            wall("wardrobe", gap=(0.0, 0.03))
        if maybe(0.5):
            d = wall("desk")
            if d is not None:
                in_front(lay, "office_chair" if maybe(0.6) else "dining_chair", d, dist=(0.0, 0.3), turn=np.pi,
                         jitter=0.3)
        if maybe(0.35):
            wall("sideboard")
            if maybe(0.5):
                on_wall(lay, "wall_television", (1.2, 1.5))
        if maybe(0.4):
            wall("shelves")
        on_wall(lay, "picture")
    elif kind == "kitchen":
        wl = str(rng.choice(["left", "right", "far"]))
        items = ["kitchen_cabinet", "kitchen_sink", "kitchen_cabinet", "stove", "kitchen_cabinet", "refrigerator"]
        if maybe(0.5):
            items.insert(int(rng.integers(len(items))), "washing_machine")
        if maybe(0.4):
            items.insert(int(rng.integers(len(items))), "kitchen_cabinet")
        rng.shuffle(items)
        prev = None
        for it in items:
            if prev is None:
                prev = against_wall(lay, it, walls=(wl,), gap=(0.0, 0.01))
            else:
                nxt = beside(lay, it, prev, 1, gap=(0.005, 0.02))
                if nxt is None:
                    nxt = beside(lay, it, prev, -1, gap=(0.005, 0.02))
                prev = nxt if nxt is not None else prev
        cabs = [i for i, o in enumerate(lay.objects) if o.kind == "kitchen_cabinet"]
        if cabs and maybe(0.7):
            lay.on_top("oven" if maybe(0.5) else "cardboard_box", int(rng.choice(cabs)), u=0.0)
        elif maybe(0.5):
            wall("oven")
        t = free_standing(lay, "dining_table", region=(1.0, rw - 1.0, 1.5, rd - 0.8))
        if t is not None:
            around(lay, "dining_chair", t, int(rng.integers(2, 6)))
        if maybe(0.7):
            wall("trash_bin")
    elif kind == "bathroom":
        wall("bathtub", gap=(0.0, 0.01))
        wall("toilet", gap=(0.0, 0.03))
        wall("vanity_sink" if maybe(0.6) else "pedestal_sink", gap=(0.0, 0.02))
        if maybe(0.5):
            wall("trash_bin")
        if maybe(0.4):
            wall("washing_machine", gap=(0.0, 0.02))
        if maybe(0.4):
            wall(str(rng.choice(["sideboard", "shelves"])), gap=(0.0, 0.02))
    else:  # office
        for _ in range(int(rng.integers(1, 4))):
            d = wall("desk")
            if d is not None:
                in_front(lay, "office_chair", d, dist=(0.0, 0.35), turn=np.pi, jitter=0.3)
        for k, p in (("bookcase", 0.7), ("shelves", 0.7), ("filing_cabinet", 0.7), ("filing_cabinet", 0.3)):
            if maybe(p):
                wall(k, gap=(0.0, 0.03))
        if maybe(0.5):
            t = free_standing(lay, "dining_table", region=(1.0, rw - 1.0, 2.0, rd - 0.8))
            if t is not None:
                around(lay, "office_chair" if maybe(0.5) else "dining_chair", t, int(rng.integers(2, 5)))
        if maybe(0.35):
            on_wall(lay, "wall_television", (1.2, 1.5))
        for _ in range(int(rng.integers(1, 3))):
            wall("cardboard_box")
        shelves_i = [i for i, o in enumerate(lay.objects) if o.kind in ("shelves", "filing_cabinet")]
        if shelves_i and maybe(0.5):
            lay.on_top("cardboard_box", int(rng.choice(shelves_i)))
        if maybe(0.7):
            wall("trash_bin")
        if maybe(0.4):
            wall("floor_lamp")
    # doors, windows, pictures, boxes, plants everywhere
    if maybe(0.7):
        wall("door", gap=(0.0, 0.0), clear_front=0.8, walls=("left", "right", "far"))
    for _ in range(int(rng.integers(0, 3))):
        on_wall(lay, "window", (1.4, 1.6))
    if kind != "bathroom" and maybe(0.4):
        on_wall(lay, "picture")
    if maybe(0.35):
        wall("cardboard_box")
    if maybe(0.4):
        wall("potted_plant")
    if kind != "bathroom" and maybe(0.25):
        wall("trash_bin")
    # a chair close to the camera now and then (truncated at the image edge)
    if kind in ("living", "office", "kitchen") and maybe(0.3):
        f = np.array([np.sin(psi), np.cos(psi)])
        r = np.array([np.cos(psi), -np.sin(psi)])
        d, side = rng.uniform(1.0, 1.8), rng.choice([-1.0, 1.0])
        p = np.array([cx, cz]) + f * d + r * side * d * rng.uniform(0.55, 0.8)
        shape = lay.shape("dining_chair" if maybe(0.5) else "office_chair")
        a = rng.uniform(0, 2 * np.pi)
        if lay.fits(p[0], p[1], a, shape.dims[2], shape.dims[0], 0, shape.dims[1]):
            lay.add(shape.kind, shape, p[0], p[1], a)

    floor_mat = {"bathroom": BG_FLOOR_TILE, "kitchen": BG_FLOOR_TILE if rng.random() < 0.7 else BG_FLOOR_WOOD,
                 "bedroom": BG_CARPET if rng.random() < 0.5 else BG_FLOOR_WOOD}.get(
        kind, BG_FLOOR_WOOD if rng.random() < 0.7 else BG_CARPET)
    floor_col = {BG_FLOOR_WOOD: str(rng.choice(["oak", "light wood", "walnut"])),
                 BG_FLOOR_TILE: str(rng.choice(["white", "light grey", "beige", "grey"])),
                 BG_CARPET: str(rng.choice(["grey", "beige", "blue", "brown", "dark grey"]))}[floor_mat]
    wall_col = str(rng.choice(WALL_COLOURS if kind != "bathroom" else ("white", "light blue", "off-white")))
    t = 0.1
    bg = [Background((-t, -t, -t), (rw + t, 0.0, rd + t), floor_mat, floor_col, COLOURS[floor_col]),
          Background((-t, height, -t), (rw + t, height + t, rd + t), BG_CEILING, "white", COLOURS["white"])]
    for lo, hi in (((-t, 0, -t), (0.0, height, rd + t)), ((rw, 0, -t), (rw + t, height, rd + t)),
                   ((-t, 0, rd), (rw + t, height, rd + t)), ((-t, 0, -t), (rw + t, height, 0.0))):
        bg.append(Background(lo, hi, BG_WALL, wall_col, COLOURS[wall_col]))
    light = (rng.uniform(-0.5, 0.5), 1.0, rng.uniform(-0.2, 0.6))
    return Scene(spec, 0, 0, kind, cx, cz, psi, cam_h, pitch, roll, lay.objects, bg,
                 light_dir_world=tuple(float(v) for v in light))


# ------------------------------------------------------------------------------------------------ outdoor
def _street(rng, spec: DatasetSpec, mesh: bool = True, backdrop: bool = True) -> Scene:
    av = spec.style == "av"
    tax = spec.taxonomy
    lane_w = rng.uniform(3.2, 3.6)
    n_right = int(rng.integers(1, 3))
    n_left = int(rng.integers(1, 3))
    park_r, park_l = rng.random() < 0.65, rng.random() < 0.55
    x_road_r = n_right * lane_w + (2.3 if park_r else 0.0)
    x_road_l = -(n_left * lane_w + (2.3 if park_l else 0.0))
    sw_r, sw_l = rng.uniform(2.5, 4.5), rng.uniform(2.5, 4.5)
    tram = (not av) and rng.random() < 0.22
    cam_lane = int(rng.integers(n_right))
    cx = (cam_lane + 0.5) * lane_w + rng.normal(0, 0.2)
    cz = 0.0
    psi = rng.normal(0, 0.03)
    cam_h = rng.uniform(*spec.cam_height)
    pitch = np.deg2rad(rng.uniform(*spec.pitch_deg))
    roll = np.deg2rad(rng.normal(0, 0.3))
    z_far = 140.0
    lay = Layout(rng, tax, (x_road_l - sw_l, x_road_r + sw_r, -25.0, z_far), keep_clear=[(cx, cz, 2.6)],
                 mesh=mesh)

    def kinds(table):
        names, p = zip(*table)
        return names[rng.choice_index(p)]

    if av:
        veh = (("sedan", 30), ("hatchback", 10), ("suv", 20), ("pickup", 8), ("minivan", 8), ("delivery_van", 5),
               ("step_van", 4), ("motorhome", 2), ("flatbed_truck", 2), ("box_truck", 5), ("truck_cab", 4),
               ("bus", 4), ("articulated_bus", 3))
        parked_tab = (("sedan", 35), ("hatchback", 15), ("suv", 25), ("pickup", 10), ("minivan", 8),
                      ("delivery_van", 4), ("step_van", 3), ("box_truck", 2), ("motorhome", 1))
    else:
        veh = (("sedan", 45), ("hatchback", 18), ("suv", 12), ("pickup", 3), ("minivan", 5), ("delivery_van", 4),
               ("box_truck", 3), ("flatbed_truck", 2), ("truck_cab", 1), ("bus", 3), ("articulated_bus", 1))
        parked_tab = (("sedan", 45), ("hatchback", 22), ("suv", 14), ("minivan", 6), ("delivery_van", 5),
                      ("box_truck", 2), ("pickup", 3))

    def lane_traffic(xc, direction, z0, density):
        z = z0
        while z < 75:
            kind = kinds(veh)
            shape = lay.shape(kind)
            z += shape.dims[2] / 2
            a = (np.pi / 2 if direction > 0 else -np.pi / 2) + rng.normal(0, 0.03)
            x = xc + rng.normal(0, 0.25)
            if lay.fits(x, z, a, shape.dims[2], shape.dims[0], 0.0, shape.dims[1], margin=0.3):
                lay.add(kind, shape, x, z, a)
            z += shape.dims[2] / 2 + rng.exponential(26.0 / density) + 4.0

    for i in range(n_right):
        xc = (i + 0.5) * lane_w
        z0 = rng.uniform(6.0, 15.0) if i == cam_lane else rng.uniform(-5.0, 10.0)
        lane_traffic(xc, 1, z0, rng.uniform(0.5, 1.3))
    for i in range(n_left):
        xc = -(i + 0.5) * lane_w
        if tram and i == n_left - 1 and n_left > 1:
            continue
        lane_traffic(xc, -1, rng.uniform(-5.0, 12.0), rng.uniform(0.4, 1.2))
    if tram:
        xt = -(n_left - 0.5) * lane_w if n_left > 1 else -0.5 * lane_w
        shape = lay.shape("tram")
        z = rng.uniform(12.0, 60.0)
        a = (-np.pi / 2 if rng.random() < 0.5 else np.pi / 2) + rng.normal(0, 0.01)
        lay.remove(lambda o: not (abs(o.x - xt) < lane_w / 2 + 1.0 and abs(o.z - z) < shape.dims[2] / 2 + o.l / 2 + 2))
        if lay.fits(xt, z, a, shape.dims[2], shape.dims[0], 0.0, shape.dims[1], margin=0.2):
            lay.add("tram", shape, xt, z, a)

    def parking(x_edge, side):
        z = rng.uniform(-7.0, 4.0)
        while z < 55:
            if rng.random() < 0.4:
                z += rng.uniform(4.0, 12.0)
                continue
            kind = kinds(parked_tab)
            shape = lay.shape(kind)
            z += shape.dims[2] / 2
            x = x_edge - side * (shape.dims[0] / 2 + rng.uniform(0.15, 0.45))
            a = (np.pi / 2 if side > 0 else -np.pi / 2) + rng.normal(0, 0.04) + (np.pi if rng.random() < 0.1 else 0)
            if lay.fits(x, z, a, shape.dims[2], shape.dims[0], 0.0, shape.dims[1], margin=0.1):
                lay.add(kind, shape, x, z, a)
            z += shape.dims[2] / 2 + rng.uniform(0.6, 3.0)

    if park_r:
        parking(x_road_r, 1)
    if park_l:
        parking(x_road_l, -1)

    curb = 0.12
    # street furniture (unannotated) near the curb, then pedestrians on the sidewalks
    for x_edge, side, sw in ((x_road_r, 1, sw_r), (x_road_l, -1, sw_l)):
        z = rng.uniform(-5, 8)
        while z < 110:
            kind = "tree" if rng.random() < 0.6 else "streetlight"
            shape = lay.shape(kind)
            x = x_edge + side * 0.6
            trunk_l, trunk_w = 0.4, 0.4
            if lay.fits(x, z, 0.0, trunk_l, trunk_w, curb, shape.dims[1]):
                lay.add(kind, shape, x, z, (0.0 if side < 0 else np.pi) if kind == "streetlight" else 0.0, curb,
                        footprint=(trunk_l, trunk_w))
            z += rng.uniform(9.0, 20.0)
    ped_n = int(rng.poisson(3.5))
    for _ in range(ped_n):
        side = 1 if rng.random() < 0.5 else -1
        x_edge, sw = (x_road_r, sw_r) if side > 0 else (x_road_l, sw_l)
        group = int(rng.integers(1, 4)) if rng.random() < 0.3 else 1
        x0 = x_edge + side * rng.uniform(0.8, sw - 0.5)
        z0 = rng.uniform(-1.0, 70.0) if rng.random() < 0.85 else rng.uniform(2.0, 12.0)
        a0 = (np.pi / 2 if rng.random() < 0.5 else -np.pi / 2) + rng.normal(0, 0.3)
        for g in range(group):
            shape = lay.shape("pedestrian")
            x, z = x0 + rng.normal(0, 0.5), z0 + g * rng.uniform(0.6, 1.2)
            a = a0 + rng.normal(0, 0.2)
            if lay.fits(x, z, a, shape.dims[2], shape.dims[0], curb, shape.dims[1], margin=0.05):
                lay.add("pedestrian", shape, x, z, a, curb)
    crossing = None
    if rng.random() < 0.35:
        zc = rng.uniform(10.0, 30.0)
        crossing = (zc - 2.0, zc + 2.0)
        for _ in range(int(rng.integers(1, 5))):
            shape = lay.shape("pedestrian")
            x, z = rng.uniform(x_road_l + 0.5, x_road_r - 0.5), rng.uniform(*crossing)
            a = (0.0 if rng.random() < 0.5 else np.pi) + rng.normal(0, 0.2)
            if lay.fits(x, z, a, shape.dims[2], shape.dims[0], 0.0, shape.dims[1], margin=0.1):
                lay.add("pedestrian", shape, x, z, a)
    for _ in range(int(rng.poisson(1.2))):
        shape = lay.shape("cyclist")
        x = n_right * lane_w - rng.uniform(0.6, 1.4) if rng.random() < 0.7 else x_road_r + rng.uniform(0.8, 1.6)
        base = curb if x > x_road_r else 0.0
        z = rng.uniform(3.0, 55.0)
        a = np.pi / 2 + rng.normal(0, 0.05) if rng.random() < 0.8 else -np.pi / 2
        if lay.fits(x, z, a, shape.dims[2], shape.dims[0], base, shape.dims[1], margin=0.2):
            lay.add("cyclist", shape, x, z, a, base)
    # construction zone: cones / barriers / barrels along a lane edge
    if rng.random() < 0.4:
        lanes = [(i + 0.5) * lane_w for i in range(n_right) if i != cam_lane] + \
                [-(i + 0.5) * lane_w for i in range(n_left)]
        xl = float(rng.choice(lanes)) if lanes else (cam_lane + 0.5) * lane_w
        z0 = rng.uniform(8.0, 35.0) if xl != (cam_lane + 0.5) * lane_w else rng.uniform(25.0, 45.0)
        n = int(rng.integers(3, 10))
        items = ("traffic_cone", "construction_barrel", "jersey_barrier") if av else \
            ("traffic_cone", "traffic_cone", "jersey_barrier", "fence_barrier")
        kind0 = str(rng.choice(items))
        step = rng.uniform(2.0, 4.0) if kind0 != "jersey_barrier" else 0.0
        z = z0
        for k in range(n):
            kind = kind0 if rng.random() < 0.8 else str(rng.choice(items))
            shape = lay.shape(kind)
            a = np.pi / 2 + rng.normal(0, 0.05 if "barrier" in kind else 0.6)
            x = xl + rng.normal(0, 0.2) - lane_w * 0.35 * np.sign(xl)
            z += shape.dims[2] / 2
            if lay.fits(x, z, a, shape.dims[2], shape.dims[0], 0.0, shape.dims[1], margin=0.05):
                lay.add(kind, shape, x, z, a)
            z += shape.dims[2] / 2 + step + rng.uniform(0.05, 1.0)
    if rng.random() < 0.3:  # cones/barrels on the sidewalk edge
        for _ in range(int(rng.integers(1, 4))):
            kind = "construction_barrel" if av and rng.random() < 0.5 else "traffic_cone"
            shape = lay.shape(kind)
            side = 1 if rng.random() < 0.6 else -1
            x = (x_road_r + 0.4) if side > 0 else (x_road_l - 0.4)
            z = rng.uniform(5.0, 40.0)
            if lay.fits(x, z, 0.0, shape.dims[2], shape.dims[0], curb, shape.dims[1]):
                lay.add(kind, shape, x, z, 0.0, curb)

    # background: road, sidewalks, buildings, ground
    road_col = "dark grey" if not av else "grey"
    bg = [Background((x_road_l, -0.05, -30.0), (x_road_r, 0.0, z_far + 60), BG_ROAD, road_col,
                     tuple(np.asarray(COLOURS["dark grey"]) * (1.05 if not av else 1.35))),
          Background((x_road_r, -0.05, -30.0), (x_road_r + sw_r, curb, z_far + 60), BG_SIDEWALK, "light grey",
                     COLOURS["light grey"]),
          Background((x_road_l - sw_l, -0.05, -30.0), (x_road_l, curb, z_far + 60), BG_SIDEWALK, "light grey",
                     COLOURS["light grey"]),
          Background((-400.0, -0.2, -60.0), (400.0, -0.06, 600.0), BG_GROUND, "grey", (0.42, 0.40, 0.36))]
    for side, x0 in ((1, x_road_r + sw_r), (-1, x_road_l - sw_l)) if backdrop else ():
        z = -30.0
        while z < z_far + 40:
            bl = rng.uniform(8.0, 30.0)
            if rng.random() < 0.15:
                z += rng.uniform(8.0, 16.0)  # side street
                continue
            colour = str(rng.choice(["beige", "cream", "light grey", "grey", "brown", "dark red", "off-white",
                                     "mustard", "white"]))
            depth = rng.uniform(8.0, 15.0)
            hgt = rng.uniform(6.0, 22.0)
            setback = rng.uniform(0.0, 1.5)
            xa, xb = (x0 + setback, x0 + setback + depth) if side > 0 else (x0 - setback - depth, x0 - setback)
            bg.append(Background((xa, 0.0, z), (xb, hgt, z + bl), BG_FACADE, colour, COLOURS[colour]))
            z += bl + rng.uniform(0.0, 0.6)
    road = {"lane_w": lane_w, "n_right": n_right, "n_left": n_left, "x_road_r": x_road_r, "x_road_l": x_road_l,
            "park_r": park_r, "park_l": park_l, "tram": tram,
            "tram_x": (-(n_left - 0.5) * lane_w if n_left > 1 else -0.5 * lane_w) if tram else None,
            "crossing": crossing, "av": av}
    if not backdrop:  # the last draws of the stream: nothing placed above depends on them
        return Scene(spec, 0, 0, "street", cx, cz, psi, cam_h, pitch, roll, lay.objects, bg, road=road)
    sun = (rng.uniform(-0.6, 0.6), 1.0, rng.uniform(-0.2, 0.8))
    return Scene(spec, 0, 0, "street", cx, cz, psi, cam_h, pitch, roll, lay.objects, bg, road=road,
                 light_dir_world=tuple(float(v) for v in sun))


def scene_rng(seed: int, spec: DatasetSpec, index: int, purpose: int = 0) -> Stream:
    """The random stream of one image (purpose 0: layout; detectors use their own purposes): the
    :class:`~ov3d_core.demo.rng.Stream` of entropy ``[seed, dataset stream, index, purpose]``."""
    return Stream([int(seed), spec.stream, int(index), int(purpose)])


def make_scene(spec: DatasetSpec, index: int, seed: int, mesh: bool = True, backdrop: bool = True) -> Scene:
    """The layout of image ``index`` of dataset ``spec``; depends only on (seed, dataset, index). ``mesh=False``
    builds only the objects' boxes (same layout, no meshes: for annotations-only builds). ``backdrop=False`` leaves
    out what only rendering looks at and is drawn after every object (street facades and the sun direction; the
    objects, road and sidewalks are the same)."""
    rng = scene_rng(seed, spec, index)
    if spec.environment == "indoor":
        kind = ROOM_TYPES[index % len(ROOM_TYPES)] if rng.random() < 0.8 else str(rng.choice(ROOM_TYPES))
        scene = _room(rng, spec, kind, mesh)
    else:
        scene = _street(rng, spec, mesh, backdrop)
    scene.index = index
    scene.image_id = spec.image_id_base + index
    return scene
