"""Category tables: the Omni3D global ids, its fixed vocabularies and per-dataset subsets; the paper's 9
super-categories are re-exported from ``ov3d_core.ontology``."""

from __future__ import annotations

# The super-categories (OV3D-Bench Fig. 4) are ontologies, owned by ov3d_core/ontology.py (the paper's "ov3d-bench",
# the default, and "ov3d-explorer-10"); these names stay importable from here.
from ov3d_core.ontology import OTHER, SUPER_CATEGORIES, SUPER_CATEGORY_RULES, super_category  # noqa: F401

_OMNI3D_IDS = """
0 pedestrian|1 car|2 dontcare|3 cyclist|4 van|5 truck|6 tram|7 person|8 traffic cone|9 barrier|10 motorcycle|
11 bicycle|12 bus|13 trailer|14 books|15 bottle|16 camera|17 cereal box|18 chair|19 cup|20 laptop|21 shoes|22 towel|
23 blinds|24 window|25 lamp|26 shelves|27 mirror|28 sink|29 cabinet|30 bathtub|31 door|32 toilet|33 desk|34 box|
35 bookcase|36 picture|37 table|38 counter|39 bed|40 night stand|41 dresser|42 pillow|43 sofa|44 television|
45 floor mat|46 curtain|47 clothes|48 stationery|49 refrigerator|50 board|51 kitchen pan|52 bin|53 stove|
54 microwave|55 plates|56 bowl|57 oven|58 vase|59 faucet|60 tissues|61 machine|62 printer|63 monitor|64 podium|
65 cart|66 projector|67 electronics|68 computer|69 air conditioner|70 drawers|71 coffee maker|72 toaster|
73 potted plant|74 painting|75 bag|76 tray|77 keyboard|78 blanket|79 rack|80 phone|81 mouse|82 fire extinguisher|
83 toys|84 ladder|85 fan|86 glass|87 clock|88 toilet paper|89 closet|90 fume hood|91 utensils|92 soundsystem|
93 fire place|94 shower curtain|95 remote|96 pen|97 fireplace
"""

#: Omni3D global category id -> name (98 entries, ids 0..97; stats.json).
OMNI3D_CATEGORIES: dict[int, str] = {
    int(tok.split(" ", 1)[0]): tok.split(" ", 1)[1]
    for tok in (t.strip() for t in _OMNI3D_IDS.replace("\n", "").split("|")) if tok
}
OMNI3D_NAME_TO_ID: dict[str, int] = {v: k for k, v in OMNI3D_CATEGORIES.items()}

#: Names that Omni3D keeps as ignore-only (they never reach AP).
IGNORE_NAMES = ("dontcare", "ignore", "void")

#: The 50 Omni3D categories, in ``get_omni3d_categories('omni3d')`` order.
OMNI3D_50 = (
    "chair", "table", "cabinet", "car", "lamp", "books", "sofa", "pedestrian", "picture", "window", "pillow", "truck",
    "door", "blinds", "sink", "shelves", "television", "shoes", "cup", "bottle", "bookcase", "laptop", "desk",
    "cereal box", "floor mat", "traffic cone", "mirror", "barrier", "counter", "camera", "bicycle", "toilet", "bus",
    "bed", "refrigerator", "trailer", "box", "oven", "clothes", "van", "towel", "motorcycle", "night stand", "stove",
    "machine", "stationery", "bathtub", "cyclist", "curtain", "bin")

_SUNRGBD_38 = (
    "bicycle", "books", "bottle", "chair", "cup", "laptop", "shoes", "towel", "blinds", "window", "lamp", "shelves",
    "mirror", "sink", "cabinet", "bathtub", "door", "toilet", "desk", "box", "bookcase", "picture", "table", "counter",
    "bed", "night stand", "pillow", "sofa", "television", "floor mat", "curtain", "clothes", "stationery",
    "refrigerator", "bin", "stove", "oven", "machine")
_HYPERSIM_29 = tuple(c for c in _SUNRGBD_38 if c not in
                     {"bicycle", "bottle", "cup", "laptop", "shoes", "bin", "stove", "oven", "machine"})

#: Omni3D's fixed per-dataset category subsets (reference §4.2) and the pooled In/Out lists, by preset name.
SUBSET_PRESETS: dict[str, tuple[str, ...]] = {
    "omni3d": OMNI3D_50,
    "omni3d_in": _SUNRGBD_38,
    "omni3d_out": ("cyclist", "pedestrian", "trailer", "bus", "motorcycle", "car", "barrier", "truck", "van",
                   "traffic cone", "bicycle"),
    "KITTI": ("pedestrian", "car", "cyclist", "van", "truck"),
    "nuScenes": ("pedestrian", "car", "truck", "traffic cone", "barrier", "motorcycle", "bicycle", "bus", "trailer"),
    "Objectron": ("bicycle", "books", "bottle", "camera", "cereal box", "chair", "cup", "laptop", "shoes"),
    "SUNRGBD": _SUNRGBD_38,
    "Hypersim": _HYPERSIM_29,
    "Hypersim_test": tuple(c for c in _HYPERSIM_29 if c != "toilet"),
    "ARKitScenes": ("table", "bed", "sofa", "television", "refrigerator", "chair", "oven", "machine", "stove",
                    "shelves", "sink", "cabinet", "bathtub", "toilet"),
    "novel22": ("monitor", "bag", "dresser", "board", "printer", "keyboard", "painting", "drawers", "microwave",
                "computer", "kitchen pan", "potted plant", "tissues", "rack", "tray", "toys", "phone", "podium", "cart",
                "soundsystem", "fireplace", "tram"),
}


def omni3d_preset_for(dataset_name: str) -> tuple[str, ...] | None:
    """The Omni3D per-dataset subset for a dataset name such as ``SUNRGBD_test`` (None if not an Omni3D source)."""
    if dataset_name.startswith("Hypersim_test"):
        return SUBSET_PRESETS["Hypersim_test"]
    for key in ("KITTI", "nuScenes", "Objectron", "SUNRGBD", "Hypersim", "ARKitScenes"):
        if dataset_name.startswith(key):
            return SUBSET_PRESETS[key]
    return None


def uses_proximity(dataset_name: str) -> bool:
    """Omni3D turns proximity evaluation on for datasets whose name contains SUNRGBD or Objectron."""
    return "SUNRGBD" in dataset_name or "Objectron" in dataset_name
