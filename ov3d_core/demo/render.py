"""Rendering of demo scenes with ``open3d.t.geometry.RaycastingScene`` on the CPU.

One ray per pixel through the pixel centre (integer pixel coordinates, the convention of
``ov3d_core.geometry.boxes.project_points``) gives per-pixel depth (camera z), the instance (object index), the
background part and the surface normal. The RGB image is shaded from these: per-part base colours with per-instance
variation, procedural floor/wall/road/facade textures evaluated at the hit points, Lambert + ambient lighting, a
specular term for glossy parts, and mild noise.

Visibility of an object is ``visible pixels / pixels of the object rendered alone``; the "alone" render casts only
the rays inside the object's projected box against a scene holding only that object (subsampled for big boxes).

Point clouds: indoor scenes back-project the depth map on a regular pixel grid (an RGB-D camera); outdoor scenes
cast a 32-beam LiDAR scan from a sensor just above and behind the camera. Points are stored in the camera frame, so
they overlay the boxes directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ov3d_core.demo import scenes as S
from ov3d_core.demo.rng import Stream
from ov3d_core.demo.scenes import rotate
from ov3d_core.demo.shapes import EMISSIVE, GLASS, GLOSSY
from ov3d_core.open3d_import import open3d

INDOOR_POINT_STRIDE = 16  # depth-map back-projection grid (pixels)
LIDAR_BEAMS = 32
LIDAR_ELEVATION_DEG = (-24.8, 2.0)
LIDAR_AZIMUTH_STEP_DEG = 1.0
LIDAR_RANGE = 90.0
LIDAR_OFFSET_WORLD = (0.0, -0.08, -0.27)  # sensor position relative to the camera (world axes, y down)


@dataclass(eq=False)
class Render:
    """Per-pixel buffers of one rendered scene (H x W) and derived per-object statistics.

    depth: float32 camera z in metres (0 where nothing was hit); instance: int32 object index (-1: background);
    bg: int16 background part index (-1: object or nothing); rgb: uint8 (H, W, 3);
    visible_px / alone_px / visibility: per object (len(scene.objects)), estimated inside the projected box;
    points: (N, 3) float32 camera-frame point cloud; point_obj: (N,) int32 object index per point (-1 none).
    """

    depth: np.ndarray
    instance: np.ndarray
    bg: np.ndarray
    rgb: np.ndarray
    visible_px: np.ndarray
    alone_px: np.ndarray
    visibility: np.ndarray
    points: np.ndarray
    point_obj: np.ndarray


@lru_cache(maxsize=8)
def _pixel_dirs(width: int, height: int, fx: float, fy: float, cx: float, cy: float) -> np.ndarray:
    u, v = np.meshgrid(np.arange(width, dtype=np.float64), np.arange(height, dtype=np.float64))
    d = np.stack([(u - cx) / fx, (v - cy) / fy, np.ones_like(u)], -1).reshape(-1, 3).astype(np.float32)
    d.flags.writeable = False
    return d


def _mesh_arrays(scene: S.Scene):
    """Camera-frame triangle arrays: background boxes first, then one geometry per object."""
    from ov3d_core.demo.shapes import _template

    bv, bt = _template("box")
    geoms = []
    for b in scene.background:
        lo, hi = np.asarray(b.lo, float), np.asarray(b.hi, float)
        geoms.append((scene.layout_to_camera(bv * (hi - lo) + (lo + hi) / 2), bt))
    cs, Rs = scene.poses(range(len(scene.objects)))
    for o, c, R in zip(scene.objects, cs, Rs):
        geoms.append((rotate(o.shape.verts, R) + c, o.shape.tris))
    return geoms


def build_raycasting_scene(geoms):
    o3d = open3d()

    rs = o3d.t.geometry.RaycastingScene()
    for v, t in geoms:
        rs.add_triangles(o3d.core.Tensor(np.ascontiguousarray(v, np.float32)),
                         o3d.core.Tensor(np.ascontiguousarray(t, np.uint32)))
    return rs


def _cast(rs, origins: np.ndarray, dirs: np.ndarray):
    o3d = open3d()

    rays = np.concatenate([np.broadcast_to(origins, dirs.shape), dirs], 1).astype(np.float32)
    out = rs.cast_rays(o3d.core.Tensor(rays))
    return (out["t_hit"].numpy(), out["geometry_ids"].numpy().astype(np.int64),
            out["primitive_ids"].numpy(), out["primitive_normals"].numpy())


def _hash(*cells: np.ndarray) -> np.ndarray:
    """Deterministic per-cell pseudo-random numbers in [0, 1) from integer-valued cell indices (float arrays)."""
    acc = np.zeros(np.shape(cells[0]))
    for k, c in enumerate(cells):
        acc = acc + np.asarray(c, np.float64) * (12.9898, 78.233, 37.719)[k % 3]
    h = np.sin(acc) * 43758.5453
    return (h - np.floor(h)).astype(np.float32)


def _background_colour(scene: S.Scene, part: np.ndarray, P: np.ndarray, normal_of) -> np.ndarray:
    """Base colour of background hits: part indices (n,), layout hit points (n, 3) (x, height, z) and a function
    giving the layout-frame normals (k, 3) of some of them (only facades need them)."""
    mats = np.array([b.material for b in scene.background])
    out = np.array([b.rgb for b in scene.background], np.float32)[part]
    mat = mats[part]
    for code in np.unique(mats):
        idx = np.flatnonzero(mat == code)
        if not len(idx):
            continue
        x, h, z = P[idx, 0], P[idx, 1], P[idx, 2]
        col = out[idx]
        if code == S.BG_FLOOR_WOOD:
            row = np.floor(z / 0.14)
            hr = _hash(row)
            xs = x + 0.6 * hr
            tint = 0.88 + 0.2 * _hash(row, np.floor(xs / 1.2))
            grain = 1.0 + 0.025 * np.sin(x * 37.0 + 6.0 * hr)
            seam = (np.mod(z, 0.14) < 0.006) | (np.mod(xs, 1.2) < 0.006)
            col *= (tint * grain * np.where(seam, 0.7, 1.0))[:, None]
        elif code == S.BG_FLOOR_TILE:
            size = 0.45
            grout = (np.mod(x, size) < 0.012) | (np.mod(z, size) < 0.012)
            col *= (0.95 + 0.08 * _hash(np.floor(x / size), np.floor(z / size)))[:, None]
            col[grout] = 0.55
        elif code == S.BG_CARPET:
            col *= (0.95 + 0.06 * _hash(np.floor(x / 0.25), np.floor(z / 0.25)))[:, None]
        elif code == S.BG_WALL:
            col *= (1.0 - 0.04 * np.clip(h / 3.0, 0, 1))[:, None]
            col[h < 0.08] = (0.92, 0.92, 0.9)
        elif code == S.BG_ROAD:
            r = scene.road
            col *= (0.97 + 0.04 * _hash(np.floor(x / 0.4), np.floor(z / 0.4)))[:, None]
            lw, white = 0.13, (0.88, 0.88, 0.86)
            dash = np.mod(z, 9.0) < 3.0
            inner = list(range(1, r["n_right"])) + [-k for k in range(1, r["n_left"])]
            lines = [(k * r["lane_w"], True) for k in inner]
            lines += [(r["n_right"] * r["lane_w"], False), (-r["n_left"] * r["lane_w"], False)]
            if not r["av"]:
                lines.append((0.0, True))
            for x0, dashed in lines:
                on = np.abs(x - x0) < lw / 2
                col[on & dash if dashed else on] = white
            if r["av"]:
                col[np.abs(np.abs(x) - 0.12) < 0.06] = (0.85, 0.68, 0.15)
            if r["crossing"] is not None:
                z0, z1 = r["crossing"]
                col[(z > z0) & (z < z1) & (np.mod(x, 1.0) < 0.5)] = white
            if r["tram"]:
                for off in (-0.72, 0.72):
                    col[np.abs(x - r["tram_x"] - off) < 0.04] = (0.62, 0.62, 0.64)
        elif code == S.BG_SIDEWALK:
            size = 0.6
            grout = (np.mod(x, size) < 0.015) | (np.mod(z, size) < 0.015)
            col *= (0.95 + 0.06 * _hash(np.floor(x / size), np.floor(z / size)))[:, None]
            col[grout] *= 0.75
        elif code == S.BG_FACADE:
            n_lay = normal_of(idx)
            side = np.abs(n_lay[:, 0]) > np.abs(n_lay[:, 2])
            u = np.where(side, z, x)
            col_w = np.mod(u, 2.4)
            fl = np.mod(h - 3.2, 3.1)
            win = np.where(h < 3.2, (np.mod(u, 4.0) < 3.0) & (h > 0.5) & (h < 2.8),
                           (col_w > 0.6) & (col_w < 1.8) & (fl > 0.9) & (fl < 2.6))
            wi = np.flatnonzero(win)
            col[wi] = np.array([0.16, 0.2, 0.26], np.float32) * \
                (0.8 + 0.5 * _hash(np.floor(u[wi] / 2.4), np.floor(h[wi] / 3.1)))[:, None]
        out[idx] = col
    return out


def _sky(v: np.ndarray, height: int) -> np.ndarray:
    t = np.clip(v / max(height, 1), 0, 1)[:, None]
    return ((1 - t) * np.array([0.50, 0.68, 0.90], np.float32) + t * np.array([0.85, 0.90, 0.95], np.float32))


def render(scene: S.Scene, *, points: bool = True, rgb: bool = True) -> Render:
    spec = scene.spec
    W, H = spec.width, spec.height
    K = scene.K
    dirs = _pixel_dirs(W, H, K[0, 0], K[1, 1], K[0, 2], K[1, 2])
    geoms = _mesh_arrays(scene)
    rs = build_raycasting_scene(geoms)
    t_hit, gid, prim, normals = _cast(rs, np.zeros(3), dirs)
    n_bg = len(scene.background)
    hit = np.isfinite(t_hit)
    gid = np.where(hit, gid, -1)
    depth = np.where(hit, t_hit, 0.0).astype(np.float32)
    inst = np.where(hit & (gid >= n_bg), gid - n_bg, -1).astype(np.int32)
    bgi = np.where(hit & (gid >= 0) & (gid < n_bg), gid, -1).astype(np.int16)

    image = None
    if rgb:
        image = _shade(scene, dirs, np.where(hit, t_hit, 0).astype(np.float32), hit, inst, bgi,
                       prim.astype(np.int64), normals)

    n_obj = len(scene.objects)
    visible = np.bincount(inst[inst >= 0], minlength=n_obj).astype(np.int64)
    alone, vis_s = _alone_counts(scene, geoms[n_bg:], dirs, inst.reshape(H, W))
    visibility = np.where(alone > 0, vis_s / np.maximum(alone, 1), 0.0)
    inst2 = inst.reshape(H, W)

    pts = np.zeros((0, 3), np.float32)
    pobj = np.zeros(0, np.int32)
    if points:
        if spec.environment == "indoor":
            st = INDOOR_POINT_STRIDE
            ys, xs = np.mgrid[st // 2:H:st, st // 2:W:st]
            idx = (ys * W + xs).ravel()
            ok = hit[idx]
            idx = idx[ok]
            pts = (dirs[idx] * t_hit[idx, None]).astype(np.float32)
            pobj = inst[idx]
        else:
            pts, pobj = lidar_scan(scene, rs, n_bg)
    return Render(depth=depth.reshape(H, W), instance=inst2, bg=bgi.reshape(H, W), rgb=image,
                  visible_px=visible, alone_px=alone, visibility=visibility, points=pts, point_obj=pobj)


@lru_cache(maxsize=8)
def _sensor(width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-resolution vignetting factor (flattened) and a fixed noise pattern (2x the image, for random shifts)."""
    yy, xx = np.mgrid[0:height, 0:width]
    r2 = ((xx - width / 2) / (width / 2)) ** 2 + ((yy - height / 2) / (height / 2)) ** 2
    vign = (255.0 * (1.0 - 0.12 * r2)).astype(np.float32).ravel()
    noise = Stream(12345).normal(0, 0.8, 2 * width * height).astype(np.float32)
    vign.flags.writeable = False
    noise.flags.writeable = False
    return vign, noise


SLOT_SPACING = 2000.0  # metres between the copies of objects in the "rendered alone" scene


def _alone_counts(scene: S.Scene, obj_geoms, dirs: np.ndarray, inst2: np.ndarray):
    """For every annotated object, sample the pixels of its projected box and count how many see the object when it
    is rendered alone, and how many of those show it in the full render.

    All objects are cast in one call: each object is moved into its own far-apart slot (a 2 km grid) and its rays
    start from the same offset, so a ray can only hit its own object first (hits beyond 1 km are discarded)."""
    from ov3d_core.geometry.boxes import corners_from_pose, projected_box2d

    spec = scene.spec
    K, W, H = scene.K, spec.width, spec.height
    n_obj = len(scene.objects)
    alone = np.zeros(n_obj, np.int64)
    vis_s = np.zeros(n_obj, np.int64)
    geoms, origins, ray_dirs, owner, pix, slot_obj = [], [], [], [], [], []
    ann = scene.annotated()
    cs, Rs = scene.poses(ann)
    dims = np.array([scene.objects[i].shape.dims for i in ann]).reshape(-1, 3)
    _, truncs = projected_box2d(corners_from_pose(cs, dims, Rs), K, W, H)
    for i, trunc in zip(ann, truncs):
        if trunc[0] < 0:
            continue
        x0, y0 = int(np.floor(trunc[0])), int(np.floor(trunc[1]))
        x1, y1 = int(np.ceil(trunc[2])), int(np.ceil(trunc[3]))
        stride = max(1, int(np.ceil(np.sqrt((x1 - x0 + 1) * (y1 - y0 + 1) / 1500.0))))
        ys, xs = np.mgrid[y0:y1 + 1:stride, x0:x1 + 1:stride]
        p = (ys * W + xs).ravel()
        slot = len(geoms)
        off = np.array([SLOT_SPACING * (slot % 8 - 3.5), SLOT_SPACING * (slot // 8 - 3.5), 0.0])
        v, t = obj_geoms[i]
        geoms.append((v + off, t))
        origins.append(np.broadcast_to(off, (len(p), 3)))
        ray_dirs.append(dirs[p])
        owner.append(np.full(len(p), slot))
        pix.append(p)
        slot_obj.append(i)
    if not geoms:
        return alone, vis_s
    o3d = open3d()

    rs = build_raycasting_scene(geoms)
    rays = np.concatenate([np.concatenate(origins), np.concatenate(ray_dirs)], 1).astype(np.float32)
    res = rs.cast_rays(o3d.core.Tensor(rays))
    t_hit = res["t_hit"].numpy()
    gid = res["geometry_ids"].numpy().astype(np.int64)
    owner = np.concatenate(owner)
    pix = np.concatenate(pix)
    hit = np.isfinite(t_hit) & (t_hit < 1000.0) & (gid == owner)
    obj_of_ray = np.asarray(slot_obj, np.int64)[owner]
    alone += np.bincount(obj_of_ray[hit], minlength=n_obj)
    shown = hit & (inst2.ravel()[pix] == obj_of_ray)
    vis_s += np.bincount(obj_of_ray[shown], minlength=n_obj)
    return alone, vis_s


def _shade(scene, dirs, t_hit, hit, inst, bgi, prim, normals) -> np.ndarray:
    spec = scene.spec
    W, H = spec.width, spec.height
    N = W * H
    n = normals  # float32 (N, 3), arbitrary orientation
    L = (-scene.light_dir_camera()).astype(np.float32)
    nd = n[:, 0] * dirs[:, 0] + n[:, 1] * dirs[:, 1] + n[:, 2] * dirs[:, 2]
    nl = n[:, 0] * L[0] + n[:, 1] * L[1] + n[:, 2] * L[2]
    facing = np.where(nd > 0, -1.0, 1.0).astype(np.float32)  # flips normals towards the camera
    diffuse = np.clip(nl * facing, 0, 1)
    col = np.zeros((N, 3), np.float32)
    mat = np.zeros(N, np.int8)
    objm = np.flatnonzero(inst >= 0)
    if len(objm):
        offs = np.cumsum([0] + [len(o.shape.tris) for o in scene.objects])
        poffs = np.cumsum([0] + [len(o.shape.part_color) for o in scene.objects])
        tri_part = np.concatenate([o.shape.tri_part + p for o, p in zip(scene.objects, poffs[:-1])])
        part_col = np.concatenate([o.shape.part_color for o in scene.objects]).astype(np.float32)
        part_mat = np.concatenate([o.shape.part_material for o in scene.objects]).astype(np.int8)
        gp = tri_part[offs[inst[objm]] + prim[objm]]
        col[objm] = part_col[gp]
        mat[objm] = part_mat[gp]
    bgm = np.flatnonzero(bgi >= 0)
    if len(bgm):
        P = scene.camera_to_layout(dirs[bgm] * t_hit[bgm, None])
        r, f = scene._axes()

        def normal_of(sub):  # layout-frame normals of some background pixels
            k = bgm[sub]
            nw = rotate(n[k] * facing[k, None], scene.R_cw.T)
            return np.stack([r[0] * nw[:, 0] + f[0] * nw[:, 2], -nw[:, 1], r[1] * nw[:, 0] + f[1] * nw[:, 2]], -1)

        col[bgm] = _background_colour(scene, bgi[bgm].astype(np.int64), P, normal_of)
    indoor = spec.environment == "indoor"
    amb, kd = (0.5, 0.6) if indoor else (0.45, 0.75)
    shade = amb + kd * diffuse
    if indoor:  # gentle fall-off with distance from the camera (room lights)
        shade *= np.clip(1.1 - 0.035 * np.where(hit, t_hit, 0), 0.75, 1.1)
    vign, noise = _sensor(W, H)
    shade *= vign
    out = col * shade[:, None]
    gl = np.flatnonzero((mat == GLOSSY) | (mat == GLASS))
    if len(gl):
        ng = n[gl] * facing[gl, None]
        dg = dirs[gl] / np.linalg.norm(dirs[gl], axis=1, keepdims=True)
        refl = dg - 2 * (dg * ng).sum(1, keepdims=True) * ng
        spec_ = np.clip(refl[:, 0] * L[0] + refl[:, 1] * L[1] + refl[:, 2] * L[2], 0, 1) ** 24
        add = (0.45 if indoor else 0.6) * spec_[:, None] * np.ones(3, np.float32)
        if not indoor:
            g2 = (mat[gl] == GLASS)[:, None]
            add = add + np.where(g2, np.clip(-refl[:, 1:2], 0, 1) * np.array([0.25, 0.3, 0.38], np.float32), 0)
        out[gl] += add * vign[gl, None]
    em = np.flatnonzero(mat == EMISSIVE)
    out[em] = col[em] * 1.05 * vign[em, None]
    miss = np.flatnonzero(~hit)
    if len(miss):
        out[miss] = _sky((miss // W).astype(np.float32), H) * vign[miss, None]
    shift = int(scene.image_id * 7919) % N
    out += noise[shift:shift + N, None]
    return np.clip(out, 0, 255).astype(np.uint8).reshape(H, W, 3)


def lidar_scan(scene: S.Scene, rs, n_bg: int) -> tuple[np.ndarray, np.ndarray]:
    """A multi-beam scan over the camera's horizontal field of view (plus a margin); camera-frame points."""
    spec = scene.spec
    half = np.degrees(np.arctan(spec.width / 2 / spec.focal)) + 4.0
    az = np.deg2rad(np.arange(-half, half + 1e-9, LIDAR_AZIMUTH_STEP_DEG))
    el = np.deg2rad(np.linspace(*LIDAR_ELEVATION_DEG, LIDAR_BEAMS))
    A, E = np.meshgrid(az, el)
    d_world = np.stack([np.cos(E) * np.sin(A), -np.sin(E), np.cos(E) * np.cos(A)], -1).reshape(-1, 3)
    d_cam = rotate(d_world, scene.R_cw)
    origin = scene.R_cw @ np.asarray(LIDAR_OFFSET_WORLD)
    t, gid, _, _ = _cast(rs, origin, d_cam)
    ok = np.isfinite(t) & (t < LIDAR_RANGE)
    pts = (origin + d_cam[ok] * t[ok, None]).astype(np.float32)
    g = gid[ok]
    pobj = np.where(g >= n_bg, g - n_bg, -1).astype(np.int32)
    return pts, pobj


# ------------------------------------------------------------------------------------------------ writers
def save_rgb(path, rgb: np.ndarray, quality: int = 85) -> None:
    from PIL import Image

    Image.fromarray(rgb).save(path, format="JPEG", quality=quality, optimize=True)


def save_depth(path, depth: np.ndarray) -> None:
    """Depth as a 16-bit PNG in millimetres (0 = no measurement)."""
    from PIL import Image

    mm = np.clip(np.round(depth * 1000.0), 0, 65535).astype(np.uint16)
    Image.fromarray(mm).save(path, format="PNG", compress_level=6)


def save_points(path, pts: np.ndarray) -> None:
    o3d = open3d()

    pc = o3d.t.geometry.PointCloud(o3d.core.Tensor(np.ascontiguousarray(pts, np.float32)))
    o3d.t.io.write_point_cloud(str(path), pc, write_ascii=False, compressed=False)
