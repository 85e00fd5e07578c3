"""Super-category ontologies: which coarse category each fine class belongs to (OV3D-Bench Fig. 4).

An :class:`Ontology` maps a class name to one of its super-categories by an exact-name table (checked first) and
then by substring rules (a rule matches when one of its keys occurs in the name as whole words, case-insensitive,
``_`` read as a space; the first matching rule wins). A class that neither reaches is an error naming the class,
unless the ontology has a ``fallback`` bucket. Three sources:

- ``"ov3d-bench"`` (:data:`OV3D_BENCH`, the default): the paper's nine super-categories, no tenth bucket.
- ``"ov3d-explorer-10"`` (:data:`OV3D_EXPLORER_10`): this tool's rules before issue 23 (the nine plus ``"other"``
  for every class no rule names). Kept so old numbers can be reproduced.
- a user file: YAML or JSON, read by ``ov3d_core.io.ontology_file.load_ontology`` (its docstring lists the keys).

The paper (seeds/000, "3D Detection Confusion Matrices"): "We manually assign each fine-grained class to one of 9
super-categories, namely vehicle, person, seating, table, storage, bed, appliance, electronics, and barricades, by
matching category-name substrings (e.g. cabinet, shelves, and wardrobe all fall under storage)." It publishes the
rule, not the table, so "ov3d-bench" is built in two tiers:

1. **The substring rules** (:data:`SUPER_CATEGORY_RULES`, the same as "ov3d-explorer-10"): a name that contains a
   member word of a super-category goes there ("office chair" -> seating, "kitchen cabinet" -> storage, "box
   truck" -> vehicle, "construction barrel" -> barricades, "shower curtain" -> appliance).
2. **The manual assignment** (:data:`PAPER_ASSIGNMENT_RULES`), only for names tier 1 leaves unassigned (the classes
   "ov3d-explorer-10" puts in "other"). Each class goes by its *kind* where its kind is one of the nine, else to
   the super-category of the furniture or fixture it is used on or in (its *host*): co-located objects share image
   crops and depth, which is where a monocular detector's coarse errors go. The table and the reason per group:

   ============  ==========================================================  =========================================
   super         classes (Omni3D, the demo, Argoverse 2, ScanNet-200 style)  reason
   ============  ==========================================================  =========================================
   bed           pillow, blanket, duvet, quilt, floor mat, mat, rug, carpet  bedding and soft floor textiles: the
                                                                             textile furnishings; a pillow lies on a
                                                                             bed (a floor mat has no single host; it
                                                                             goes with the other soft textiles)
   seating       cushion                                                     sofa and chair cushions
   appliance     lamp, light, towel, kitchen pan, pan, fire extinguisher,    household equipment and fixtures:
                 fire alarm, ladder, vacuum cleaner, broom, dustpan,         lighting (with fans and heaters), what
                 plunger, ironing board, iron, dryer, soap dispenser, soap   serves the bath and the stove, cleaning
                 dish, water cooler, scale, vent, power outlet               and safety equipment
   storage       books, book, bag, backpack, suitcase, luggage, purse,       containers, and what is kept in shelves,
                 container, bucket, case, trash can, hamper, mailbox,        closets and wardrobes (books on
                 vanity, shoes, shoe, clothes, jacket, hat, toys, toy,       bookcases, clothes in a wardrobe)
                 stuffed animal
   table         cup, glass, plates, plate, bowl, utensils, tray, bottle,    tableware, desk supplies and decoration
                 bottles, vase, tissues, pen, stationery, paper,             set on tables, desks and counters
                 potted plant, plant, candle, pitcher
   electronics   picture, painting, poster, mirror, board, whiteboard,       flat wall-mounted displays: the shape and
                 blackboard, clock, calendar, frame; telephone,              place of a television or monitor (the
                 headphones, copier, power strip                             paper's fireplace->television is such a
                                                                             geometric confusion); devices tier 1's
                                                                             words miss
   barricades    door, window, blinds, curtain, divider, rail, railing,      what closes, screens or bounds an opening
                 gate                                                        or a passage (a door is a movable
                                                                             barrier)
   vehicle       cart, wheeled                                               wheeled things one pushes or rides (like
                                                                             stroller and wheelchair in tier 1)
   person        dog, animal, signaler                                       agents on foot (Argoverse 2's animals and
                                                                             official signaler)
   ============  ==========================================================  =========================================

   The tiers' order decides names with words of two rows: "clothes dryer" is an appliance, "paper bag" storage,
   "stuffed animal" storage (a toy), "ironing board" an appliance.

   Every one of Omni3D's 97 evaluated names (its 98 less the ignore label ``dontcare``), the demo's three
   vocabularies and Argoverse 2's 30 annotation classes get one of the nine (a test holds this). ScanNet-200 names
   that neither tier reaches (25 of 200: wall, floor, ceiling, stairs, object, ...) are errors: give an
   ontology file.

A user ontology file replaces or extends these (``extends: ov3d-bench``). The benchmark YAML names one with its
top-level ``ontology:`` key (a built-in name or a path relative to the YAML).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Iterable, Sequence

from ov3d_core.errors import InputError

__all__ = ["BUILTIN_ONTOLOGIES", "DEFAULT_ONTOLOGY", "OTHER", "OV3D_BENCH", "OV3D_EXPLORER_10", "Ontology",
           "PAPER_ASSIGNMENT_RULES", "SUPER_CATEGORIES", "SUPER_CATEGORY_RULES", "resolve_ontology", "super_category"]

SUPER_CATEGORIES = ("vehicle", "person", "seating", "table", "storage", "bed", "appliance", "electronics",
                    "barricades")
OTHER = "other"

Rules = tuple[tuple[str, tuple[str, ...]], ...]

#: Tier 1: a fine class maps to the first super-category one of whose substrings occurs in its name. The rules of
#: "ov3d-explorer-10" and the first tier of "ov3d-bench". Edit this table, not the code that uses it.
SUPER_CATEGORY_RULES: Rules = (
    # Order matters where names share words: "sofa chair" is seating, "bed" must not catch "bedside table".
    ("barricades", ("barrier", "traffic cone", "cone", "bollard", "barricade", "construction barrel", "fence",
                    "sign", "delineator")),
    ("person", ("pedestrian", "person", "cyclist", "bicyclist", "motorcyclist", "rider", "people", "child", "adult",
                "wheelchair user")),
    ("vehicle", ("car", "van", "truck", "bus", "tram", "trailer", "motorcycle", "bicycle", "vehicle", "cab",
                 "train", "stroller", "wheelchair", "moped", "scooter")),
    ("electronics", ("television", "tv", "monitor", "laptop", "computer", "keyboard", "phone", "printer",
                     "projector", "speaker", "soundsystem", "electronics", "mouse", "remote", "camera", "screen")),
    ("appliance", ("refrigerator", "fridge", "oven", "stove", "microwave", "machine", "sink", "bathtub", "toilet",
                   "dishwasher", "toaster", "coffee maker", "kettle", "air conditioner", "fan", "heater",
                   "radiator", "fireplace", "fire place", "range hood", "fume hood", "shower", "faucet")),
    ("storage", ("cabinet", "shelves", "shelf", "wardrobe", "bookcase", "bookshelf", "dresser", "drawers",
                 "closet", "rack", "bin", "box", "chest", "cupboard", "locker", "night stand", "nightstand",
                 "basket", "crate", "storage")),
    ("table", ("table", "desk", "counter", "nightstand table", "podium", "workbench", "island")),
    ("seating", ("chair", "sofa", "couch", "stool", "bench", "ottoman", "seat", "armchair", "recliner")),
    ("bed", ("bed", "mattress", "crib", "bunk")),
)

#: Tier 2 of "ov3d-bench": the manual assignment of what tier 1 leaves unassigned (module docstring: table and
#: reasons). Checked only after every tier-1 rule, so it never changes a class tier 1 assigns.
PAPER_ASSIGNMENT_RULES: Rules = (
    ("bed", ("pillow", "blanket", "duvet", "quilt", "floor mat", "mat", "rug", "carpet")),
    ("seating", ("cushion",)),
    ("appliance", ("lamp", "light", "towel", "kitchen pan", "pan", "fire extinguisher", "fire alarm", "ladder",
                   "vacuum cleaner", "broom", "dustpan", "plunger", "ironing board", "iron", "dryer",
                   "soap dispenser", "soap dish", "water cooler", "scale", "vent", "power outlet")),
    ("storage", ("books", "book", "bag", "backpack", "suitcase", "luggage", "purse", "container", "bucket", "case",
                 "trash can", "hamper", "mailbox", "vanity", "shoes", "shoe", "clothes", "jacket", "hat", "toys",
                 "toy", "stuffed animal")),
    ("table", ("cup", "glass", "plates", "plate", "bowl", "utensils", "tray", "bottle", "bottles", "vase",
               "tissues", "pen", "stationery", "paper", "potted plant", "plant", "candle", "pitcher")),
    ("electronics", ("picture", "painting", "poster", "mirror", "board", "whiteboard", "blackboard", "clock",
                     "calendar", "frame", "telephone", "headphones", "copier", "power strip")),
    ("barricades", ("door", "window", "blinds", "curtain", "divider", "rail", "railing", "gate")),
    ("vehicle", ("cart", "wheeled")),
    ("person", ("dog", "animal", "signaler")),
)


class _Said(str):
    """Text shown bare in an ``InputError``'s "got" part (as ``ov3d_core.io.yaml_safe.Kind``, which this module
    cannot import: ``ov3d_core.io`` imports the taxonomy, which imports this module)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str(self)


def _norm(name: str) -> str:
    return " ".join(str(name).lower().replace("_", " ").split())


@dataclass(frozen=True)
class Ontology:
    """A class -> super-category mapping (module docstring).

    Attributes:
        name: what tables print ("ov3d-bench", "ov3d-explorer-10", or the file's ``name``).
        super_categories: the super-categories in display order (without the fallback bucket).
        rules: substring rules ``((super, (key, ...)), ...)``, first match wins.
        classes: exact names (normalised: lower case, ``_`` as space) -> super-category, checked before the rules.
        fallback: the bucket of classes nothing reaches ("other"), or None: such a class is an error.
        how: how the mapping was made, in one or two sentences (shown beside the table).
        source: the file it was read from (None for a built-in).
    """

    name: str
    super_categories: tuple[str, ...]
    rules: Rules = ()
    classes: tuple[tuple[str, str], ...] = ()
    fallback: str | None = None
    how: str = ""
    source: str | None = field(default=None, compare=False)

    def __post_init__(self):
        known = set(self.super_categories)
        for sup, _ in self.rules:
            if sup not in known:
                raise ValueError(f"ontology {self.name}: rule for unknown super-category {sup!r}")
        for cls, sup in self.classes:
            if sup not in known:
                raise ValueError(f"ontology {self.name}: class {cls!r} -> unknown super-category {sup!r}")

    @property
    def names(self) -> tuple[str, ...]:
        """Row/column order of a super-category table: the super-categories, then the fallback bucket if any."""
        return self.super_categories + ((self.fallback,) if self.fallback and self.fallback not in
                                        self.super_categories else ())

    @cached_property
    def _table(self) -> dict[str, str]:
        return {_norm(c): s for c, s in self.classes}

    @cached_property
    def _patterns(self) -> tuple[tuple[str, re.Pattern], ...]:
        return tuple((sup, re.compile("|".join(rf"(?<![a-z]){re.escape(_norm(k))}(?![a-z])" for k in keys)))
                     for sup, keys in self.rules if keys)

    def lookup(self, name: str) -> str | None:
        """The super-category of ``name`` by the table, then the rules; None when neither reaches it."""
        low = _norm(name)
        hit = self._table.get(low)
        if hit is not None:
            return hit
        for sup, pat in self._patterns:
            if pat.search(low):
                return sup
        return None

    def super_category(self, name: str) -> str:
        """The super-category of ``name``; the fallback bucket, or ``InputError`` naming the class, when nothing
        reaches it."""
        hit = self.lookup(name)
        if hit is not None:
            return hit
        if self.fallback is not None:
            return self.fallback
        raise self._unmapped([str(name)])

    def missing(self, names: Iterable[str]) -> list[str]:
        """The names no table entry or rule reaches (always empty with a fallback bucket), in input order."""
        if self.fallback is not None:
            return []
        return list(dict.fromkeys(str(n) for n in names if self.lookup(n) is None))

    def require(self, names: Iterable[str]) -> None:
        """``InputError`` naming every class of ``names`` (the evaluated vocabulary) this ontology does not map."""
        miss = self.missing(names)
        if miss:
            raise self._unmapped(miss)

    def mapping(self, names: Iterable[str]) -> dict[str, str]:
        """``{name: super-category}`` for ``names`` (``InputError`` naming all unmapped ones at once)."""
        names = list(names)
        self.require(names)
        return {str(n): self.super_category(n) for n in names}

    def _unmapped(self, missing: Sequence[str]) -> InputError:
        shown = ", ".join(missing[:20]) + (f" and {len(missing) - 20} more" if len(missing) > 20 else "")
        if self.source is not None:
            return InputError(self.source, None, "classes", "a super-category for every class of the evaluated "
                              "vocabulary (an entry under `classes` or a key under `rules`)",
                              _Said(f"none for: {shown}"))
        return InputError(f"ontology {self.name}", None, "classes",
                          f"one of its {len(self.super_categories)} super-categories for every class (a class "
                          "no rule reaches needs an ontology file: `ontology:` in the benchmark YAML, "
                          "docs/benchmark_yaml.md)", _Said(f"none for: {shown}"))

    def frame(self, names: Iterable[str]):
        """``class, super_category`` table of ``names`` (pandas), for display beside the matrix."""
        import pandas as pd

        m = self.mapping(names)
        return pd.DataFrame({"class": list(m), "super_category": list(m.values())})

    def to_dict(self) -> dict:
        return {"name": self.name, "super_categories": list(self.names), "how": self.how, "source": self.source}


OV3D_BENCH = Ontology(
    name="ov3d-bench", super_categories=SUPER_CATEGORIES, rules=SUPER_CATEGORY_RULES + PAPER_ASSIGNMENT_RULES,
    how="the paper's 9 super-categories: category-name substring rules, then a manual assignment of the classes no "
        "rule names (ov3d_core/ontology.py has the table and the reasons); no tenth bucket")
OV3D_EXPLORER_10 = Ontology(
    name="ov3d-explorer-10", super_categories=SUPER_CATEGORIES, rules=SUPER_CATEGORY_RULES, fallback=OTHER,
    how="substring rules only, with a tenth bucket 'other' for every class no rule names (this tool before "
        "issue 23)")
BUILTIN_ONTOLOGIES: dict[str, Ontology] = {o.name: o for o in (OV3D_BENCH, OV3D_EXPLORER_10)}
DEFAULT_ONTOLOGY = OV3D_BENCH


def resolve_ontology(ontology: Any = None) -> Ontology:
    """An :class:`Ontology` from None (the default, "ov3d-bench"), a built-in name, an ``Ontology``, or a bare
    substring rules table ``((super, (key, ...)), ...)`` (its categories in table order plus an "other" bucket,
    as ``super_category(name, rules)`` behaved before ontologies)."""
    if ontology is None:
        return DEFAULT_ONTOLOGY
    if isinstance(ontology, Ontology):
        return ontology
    if isinstance(ontology, str):
        try:
            return BUILTIN_ONTOLOGIES[ontology]
        except KeyError:
            raise ValueError(f"unknown ontology {ontology!r}: expected one of {', '.join(BUILTIN_ONTOLOGIES)}, or "
                             "an Ontology (ov3d_core.io.ontology_file.load_ontology for a file)") from None
    rules = tuple((str(sup), tuple(keys)) for sup, keys in ontology)
    return Ontology(name="custom rules", super_categories=tuple(dict.fromkeys(sup for sup, _ in rules)), rules=rules,
                    fallback=OTHER, how="substring rules given by the caller, 'other' for the rest")


def super_category(name: str, ontology: Any = None) -> str:
    """Super-category of a fine class name under ``ontology`` (default "ov3d-bench"; see :func:`resolve_ontology`
    for what it may be). ``InputError`` naming the class when the ontology does not map it."""
    return resolve_ontology(ontology).super_category(name)
