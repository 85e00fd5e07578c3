"""Super-category ontologies (issue 23, item 4): the paper's nine ("ov3d-bench", the default) cover every class of
Omni3D, the demo and Argoverse 2; "ov3d-explorer-10" reproduces the rules this tool had before (copied below
verbatim as the reference); the ontology changes the cross-boundary share on a hand-computed case; user files are
validated in one line naming the file and the field."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from ov3d_core.demo.scenes import AV_VOCAB, INDOOR_VOCAB, OUTDOOR_VOCAB
from ov3d_core.diagnostics.confusion import ConfusionMatrix, super_category_confusion, super_category_names
from ov3d_core.diagnostics.semantic import tree_cost
from ov3d_core.errors import InputError
from ov3d_core.io.ontology_file import load_ontology
from ov3d_core.ontology import OV3D_BENCH, OV3D_EXPLORER_10, SUPER_CATEGORIES, resolve_ontology
from ov3d_core.taxonomy import IGNORE_NAMES, OMNI3D_CATEGORIES, super_category

# Argoverse 2 sensor-dataset annotation categories (30), as the dataset spells them.
AV2 = ("ANIMAL", "ARTICULATED_BUS", "BICYCLE", "BICYCLIST", "BOLLARD", "BOX_TRUCK", "BUS", "CONSTRUCTION_BARREL",
       "CONSTRUCTION_CONE", "DOG", "LARGE_VEHICLE", "MESSAGE_BOARD_TRAILER", "MOBILE_PEDESTRIAN_CROSSING_SIGN",
       "MOTORCYCLE", "MOTORCYCLIST", "OFFICIAL_SIGNALER", "PEDESTRIAN", "RAILED_VEHICLE", "REGULAR_VEHICLE",
       "SCHOOL_BUS", "SIGN", "STOP_SIGN", "STROLLER", "TRAFFIC_LIGHT_TRAILER", "TRUCK", "TRUCK_CAB",
       "VEHICULAR_TRAILER", "WHEELCHAIR", "WHEELED_DEVICE", "WHEELED_RIDER")
# ScanNet-200 class names (the benchmark's CLASS_LABELS_200).
SCANNET200 = tuple(n.replace("_", " ") for n in (
    "wall chair floor table door couch cabinet shelf desk office_chair bed pillow sink picture window toilet bookshelf "
    "monitor curtain book armchair coffee_table box refrigerator lamp kitchen_cabinet towel clothes tv nightstand "
    "counter dresser stool cushion plant ceiling bathtub end_table dining_table keyboard bag backpack toilet_paper "
    "printer tv_stand whiteboard blanket shower_curtain trash_can closet stairs microwave stove shoe computer_tower "
    "bottle bin ottoman bench board washing_machine mirror copier basket sofa_chair file_cabinet fan laptop shower "
    "paper person paper_towel_dispenser oven blinds rack plate blackboard piano suitcase rail radiator recycling_bin "
    "container wardrobe soap_dispenser telephone bucket clock stand light laundry_basket pipe clothes_dryer guitar "
    "toilet_paper_holder seat speaker column bicycle ladder bathroom_stall shower_wall cup jacket storage_bin "
    "coffee_maker dishwasher paper_towel_roll machine mat windowsill bar toaster bulletin_board ironing_board "
    "fireplace soap_dish kitchen_counter doorframe toilet_paper_dispenser mini_fridge fire_extinguisher ball hat "
    "shower_curtain_rod water_cooler paper_cutter tray shower_door pillar ledge toaster_oven mouse "
    "toilet_seat_cover_dispenser furniture cart storage_container scale tissue_box light_switch crate power_outlet "
    "decoration sign projector closet_door vacuum_cleaner candle plunger stuffed_animal headphones dish_rack broom "
    "guitar_case range_hood dustpan hair_dryer water_bottle handicap_bar purse vent shower_floor water_pitcher "
    "mailbox bowl paper_bag alarm_clock music_stand projector_screen divider laundry_detergent bathroom_counter "
    "object bathroom_vanity closet_wall laundry_hamper bathroom_stall_door ceiling_light trash_bin dumbbell "
    "stair_rail tube bathroom_cabinet cd_case closet_rod coffee_kettle structure shower_head keyboard_piano "
    "case_of_water_bottles coat_rack storage_organizer folded_chair fire_alarm power_strip calendar poster "
    "potted_plant luggage mattress").split())
OMNI3D_97 = tuple(n for n in OMNI3D_CATEGORIES.values() if n not in IGNORE_NAMES)
DEMO = INDOOR_VOCAB + OUTDOOR_VOCAB + AV_VOCAB

# ------------------------------------------------------------------------------------------------------------------
# The mapping before issue 23, verbatim from ov3d_core/taxonomy.py at 32167e2 (the reference for ov3d-explorer-10).
_OLD_RULES = (
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


def _old_super_category(name: str, rules=_OLD_RULES) -> str:
    low = name.lower().replace("_", " ")
    for sup, keys in rules:
        for key in keys:
            if re.search(rf"(?<![a-z]){re.escape(key)}(?![a-z])", low):
                return sup
    return "other"


def test_the_paper_ontology_is_the_default_and_maps_every_known_class_to_one_of_nine():
    assert resolve_ontology(None) is OV3D_BENCH and OV3D_BENCH.names == SUPER_CATEGORIES and len(SUPER_CATEGORIES) == 9
    for name in OMNI3D_97 + DEMO + AV2:
        assert super_category(name) in SUPER_CATEGORIES, name
        assert OV3D_BENCH.super_category(name) == super_category(name, "ov3d-bench")
    # the classes the 10-bucket puts in "other" get an explicit place (module docstring of ov3d_core.ontology)
    expected = {"lamp": "appliance", "pillow": "bed", "blanket": "bed", "door": "barricades", "window": "barricades",
                "blinds": "barricades", "curtain": "barricades", "picture": "electronics", "mirror": "electronics",
                "books": "storage", "clothes": "storage", "cup": "table", "bottle": "table", "towel": "appliance",
                "cart": "vehicle", "DOG": "person", "WHEELED_DEVICE": "vehicle"}
    assert {n: super_category(n) for n in expected} == expected
    # the paper's own example: cabinet, shelves and wardrobe are storage
    assert {super_category(n) for n in ("cabinet", "shelves", "wardrobe")} == {"storage"}
    # tier 2 never changes what tier 1 assigns: the two agree wherever the 10-bucket names a real category
    for name in OMNI3D_97 + DEMO + AV2 + SCANNET200:
        old = _old_super_category(name)
        if old != "other":
            assert OV3D_BENCH.lookup(name) == old, name


def test_a_class_no_rule_reaches_is_an_error_naming_it():
    with pytest.raises(InputError) as e:
        super_category("dontcare")
    assert "dontcare" in str(e.value) and "ontology ov3d-bench" in str(e.value) and "\n" not in str(e.value)
    reached = [n for n in SCANNET200 if OV3D_BENCH.lookup(n) is not None]
    unreached = OV3D_BENCH.missing(SCANNET200)
    assert len(reached) + len(unreached) == 200 and all(super_category(n) in SUPER_CATEGORIES for n in reached)
    # building parts, generic words and objects of no super-category: an ontology file must place them
    assert unreached == ["wall", "floor", "ceiling", "stairs", "piano", "stand", "pipe", "guitar", "column",
                         "bathroom stall", "windowsill", "bar", "doorframe", "ball", "pillar", "ledge", "furniture",
                         "decoration", "handicap bar", "music stand", "laundry detergent", "object", "dumbbell",
                         "tube", "structure"]
    with pytest.raises(InputError) as e:
        OV3D_BENCH.require(["chair", "wall", "banana", "table"])
    msg = str(e.value)
    assert msg.endswith("got none for: wall, banana") and "`classes`" in msg


def test_explorer_10_reproduces_the_old_mapping_exactly():
    odd = ("sofa chair", "Traffic_Cone", "bedside table", "widget", "", "tv stand", "BOX TRUCK", "cab", "cabinet2")
    for name in tuple(OMNI3D_CATEGORIES.values()) + DEMO + AV2 + SCANNET200 + odd:
        assert OV3D_EXPLORER_10.super_category(name) == _old_super_category(name), name
        assert super_category(name, "ov3d-explorer-10") == _old_super_category(name), name
    assert super_category_names("ov3d-explorer-10") == SUPER_CATEGORIES + ("other",)
    assert OV3D_EXPLORER_10.missing(["widget"]) == []


def _cm(vocab, pairs):
    """A fine ConfusionMatrix from (gt class, predicted class) matched pairs."""
    code = {n: i for i, n in enumerate(vocab)}
    g = np.array([code[a] for a, _ in pairs], np.int64)
    p = np.array([code[b] for _, b in pairs], np.int64)
    counts = np.zeros((len(vocab), len(vocab)), np.int64)
    np.add.at(counts, (g, p), 1)
    m = len(pairs)
    return ConfusionMatrix(counts=counts, class_names=tuple(vocab), threshold=0.5,
                           missed=np.zeros(len(vocab), np.int64), match_gt=np.arange(m), match_pred=np.arange(m), match_image=np.zeros(m, np.int64),
                           match_iou=np.full(m, 0.8), match_gt_label=g, match_pred_label=p)


def test_the_ontology_changes_the_cross_boundary_share_by_hand():
    vocab = ("chair", "sofa", "table", "bed", "pillow", "lamp")
    # 3 fine confusions: pillow->bed, lamp->table, chair->sofa; 3 correct matches
    cm = _cm(vocab, [("pillow", "bed"), ("lamp", "table"), ("chair", "sofa"), ("bed", "bed"), ("lamp", "lamp"),
                     ("table", "table")])
    paper = super_category_confusion(cm)  # pillow is bed, lamp an appliance: only lamp->table crosses
    assert paper.ontology is OV3D_BENCH and paper.to_dict()["ontology"] == "ov3d-bench"
    assert paper.cross_super_share_of_confusions == pytest.approx(1 / 3)
    assert paper.cross_super_share_of_matches == pytest.approx(1 / 6)
    m, s = paper.matrix, {n: i for i, n in enumerate(paper.matrix.class_names)}
    assert m.class_names == SUPER_CATEGORIES
    assert m.counts[s["bed"], s["bed"]] == 2 and m.counts[s["appliance"], s["table"]] == 1
    assert m.counts[s["appliance"], s["appliance"]] == 1 and m.counts[s["seating"], s["seating"]] == 1
    # diagonals: seating 1, table 1, bed 1, appliance 1/2 -> mean off-diagonal 1 - 3.5/4
    assert paper.mean_off_diagonal == pytest.approx(1 - 3.5 / 4)
    old = super_category_confusion(cm, "ov3d-explorer-10")  # pillow and lamp are "other": 2 of 3 cross
    assert old.ontology.name == "ov3d-explorer-10" and old.matrix.class_names[-1] == "other"
    assert old.cross_super_share_of_confusions == pytest.approx(2 / 3)
    assert old.cross_super_share_of_matches == pytest.approx(2 / 6)
    dropped = super_category_confusion(cm, "ov3d-explorer-10", drop_other=True)  # pillow, lamp pairs removed
    assert dropped.dropped_other and "other" not in dropped.matrix.class_names
    assert dropped.cross_super_share_of_confusions == 0.0 and dropped.matrix.n_matched == 3
    assert not super_category_confusion(cm, drop_other=True).dropped_other  # nothing to drop in the paper's nine


def test_tree_cost_follows_the_ontology():
    names = ("pillow", "bed", "lamp", "picture")
    paper, old = tree_cost(names), tree_cost(names, "ov3d-explorer-10")
    assert paper[0, 1] == 0.5 and old[0, 1] == 1.0  # pillow and bed: siblings under the paper's ontology only
    assert paper[2, 3] == 1.0 and old[2, 3] == 1.0  # lamp (appliance) / picture (electronics); both "other" before
    with pytest.raises(InputError, match="none for: gizmo"):
        tree_cost(("chair", "gizmo"))


def test_a_user_ontology_file(tmp_path):
    f = tmp_path / "coarse.yaml"
    f.write_text("name: coarse\nsuper_categories: [furniture, road]\nclasses: {chair: furniture, Car: road}\n"
                 "rules: {furniture: [table, sofa], road: [truck]}\n")
    onto = load_ontology(f)
    assert onto.name == "coarse" and onto.names == ("furniture", "road") and onto.fallback is None
    assert [onto.super_category(n) for n in ("chair", "car", "coffee table", "box truck")] == \
        ["furniture", "road", "furniture", "road"]
    cm = _cm(("chair", "table", "car", "truck"), [("chair", "table"), ("car", "truck"), ("truck", "chair")])
    sup = super_category_confusion(cm, onto)
    assert sup.ontology is onto and sup.cross_super_share_of_confusions == pytest.approx(1 / 3)
    # extends a built-in: the file's entries win, the rest is the paper's
    j = tmp_path / "more.json"
    j.write_text(json.dumps({"extends": "ov3d-bench", "classes": {"banana": "table", "lamp": "electronics"}}))
    more = load_ontology(j)
    assert more.names == SUPER_CATEGORIES and more.name == "more"
    assert [more.super_category(n) for n in ("banana", "lamp", "cabinet")] == ["table", "electronics", "storage"]


@pytest.mark.parametrize("text, field, got", [
    ("super_categories: [furniture]\nclasses: {chair: furniture}\n", "classes", "none for: car, truck"),
    ("super_categories: [furniture]\nclasses: {chair: furnitur}\n", "classes.chair", "another string"),
    ("super_categories: [furniture]\nrules: {road: [car]}\n", "rules.road", "another string"),
    ("- chair\n- table\n", None, "a list"),
    ("super_categories: [a, a]\nclasses: {chair: a}\n", "super_categories", "'a' twice"),
    ("super_categories: furniture\n", "super_categories", "a string"),
    ("classes: {chair: seating}\n", "super_categories", "nothing"),
    ("extends: paper\n", "extends", "another string"),
    ("super_categories: [a]\nclass: {chair: a}\n", "class", "an unknown key"),
    ("super_categories: [a]\nrules: {a: []}\n", "rules.a", "an empty list"),
])
def test_bad_ontology_files_are_one_line_errors_naming_file_and_field(tmp_path, text, field, got):
    f = tmp_path / "onto.yaml"
    f.write_text(text)
    with pytest.raises(InputError) as e:
        load_ontology(f).require(["chair", "car", "truck"])
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(str(f)) and msg.endswith("got " + got)
    assert e.value.field == field
    if field:
        assert f"`{field}`" in msg


def test_unknown_builtin_name():
    with pytest.raises(ValueError, match="ov3d-bench, ov3d-explorer-10"):
        resolve_ontology("paper")
