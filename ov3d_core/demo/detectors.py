"""Simulated detectors: named runs with documented, deliberately different error profiles.

Every failure mode the demo shows is here by design, and every parameter lives in this file: one frozen
:class:`ErrorProfile` per run (``RUNS``), plus the confusion tables (which classes a detector mistakes for which).
A simulated detector looks at the ground truth of an image and decides, per object, whether it is found, how its
box is perturbed and which label and score it gets; then it adds extra hypotheses, duplicates and hallucinations.

The six runs (the paper's detectors, caricatured):

``cubercnn_star``
    A closed-vocabulary Cube R-CNN over a small base vocabulary (``CLOSED_VOCABULARY``; indoor furniture and
    car / pedestrian / cyclist). Boxes are good, labels are coarse base labels (a desk comes out as "table", a van
    or a bus as "car", a bicyclist as "cyclist"); classes with no base counterpart (barriers, cones, barrels) are
    missed. Meant to be remapped into each dataset vocabulary from its crops (the paper's Cube R-CNN*): on
    demo_outdoor_av almost none of its labels are in the vocabulary until remapped. Written as Cube R-CNN
    ``instances_predictions.pth`` records with contiguous ids into ``CLOSED_VOCABULARY``.
``ovmono_like``
    OVMono3D-like: good localisation and recall, semantically adjacent confusions, over-predicts ``table`` and
    ``shelves`` (extra label hypotheses on the same boxes); trained on demo_indoor and demo_outdoor, so on
    demo_outdoor_av its labels cross taxonomy boundaries much more (regular vehicle -> large vehicle / truck cab).
``detany_like``
    DetAny3D-like: decent boxes, many confident hallucinations of classes absent from the image, favours
    ``chair`` (and ``pedestrian`` outdoors); transfers worst out of domain. The target-aware oracle hides most of
    its false positives.
``wild_like``
    WildDet3D-like: trained on everything; the highest recall, but noisy depth and sizes (boxes land near, not on,
    the object), moderate confusions; well calibrated scores.
``weak_mono``
    A weak monocular baseline: low recall, depth error growing quickly with distance, many near-duplicate boxes,
    under-confident scores; trained on demo_indoor and demo_outdoor_av, so demo_outdoor is its unseen domain.
``promptable``
    Prompt-conditioned, OVMono3D-like (OVMono3D / DetAny3D / WildDet3D take the prompt as an input): one prediction
    file per prompt template (the 15 presets U1-U5, S1-S5, O1-O5 and Pro-Bench's ``PB-<type>``). One shared draw per
    object and image, then per template (``PROMPT_EFFECTS``, each from its own sub-stream): standard prompts best,
    underdetailed and overdetailed a little worse (the road-scene wording of O3-O5 worse indoors), Pro-Bench's
    negative, relational, compositional and affordance prompts clearly worse (lower recall, more confusions and
    hallucinations); boxes move a little between templates and some appear or disappear, so Pro-Bench's PCR and
    PLC are below 1. No crops (it is not remapped: its labels come from the prompt).

Every run declares a synthetic ``runtime`` (ms per image by stage, in the range of OV3D-Bench's Table 10).

The oracle effect: a well-localised car often also gets a "van" or "truck" hypothesis (a second label on the same
box), a table a "desk" one, an armchair a "sofa" one. In images without vans those hypotheses are false positives
that the dataset-level protocol counts and the target-aware protocol (prompting with the image's GT classes)
deletes, so AP of van / truck / desk / sofa rises under the oracle while car AP does not move.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache

import numpy as np

from ov3d_core.demo.annotate import GTObject, projected_box2d_fast
from ov3d_core.demo.jsonfast import PRED_TEMPLATE, PRED_TEMPLATE_NO_NAME, dumps, jstr
from ov3d_core.demo.rng import Stream
from ov3d_core.demo.scenes import DatasetSpec, Scene
from ov3d_core.geometry.boxes import corners_from_pose

# ------------------------------------------------------------------------------------------------ vocabularies
#: The closed vocabulary of ``cubercnn_star`` in Cube R-CNN's contiguous order (sorted by Omni3D id).
CLOSED_VOCABULARY = ("pedestrian", "car", "cyclist", "chair", "lamp", "shelves", "sink", "cabinet", "toilet",
                     "table", "bed", "sofa", "television")

#: What the closed-vocabulary detector calls each dataset class (None: it cannot detect it at all).
CLOSED_LABEL = {
    # demo_indoor
    "chair": "chair", "table": "table", "sofa": "sofa", "bed": "bed", "cabinet": "cabinet", "shelves": "shelves",
    "television": "television", "lamp": "lamp", "sink": "sink", "toilet": "toilet", "desk": "table",
    "night stand": "cabinet", "bookcase": "shelves", "bathtub": "sink", "refrigerator": "cabinet",
    "oven": "cabinet", "stove": "cabinet", "machine": "cabinet", "pillow": "sofa", "box": "cabinet",
    "bin": "cabinet", "door": "cabinet", "window": "television", "picture": "television",
    # demo_outdoor
    "car": "car", "van": "car", "truck": "car", "bus": "car", "tram": "car", "pedestrian": "pedestrian",
    "cyclist": "cyclist", "barrier": None, "traffic cone": None,
    # demo_outdoor_av
    "regular vehicle": "car", "large vehicle": "car", "box truck": "car", "truck cab": "car",
    "articulated bus": "car", "bicyclist": "cyclist", "construction barrel": None, "construction cone": None,
}

#: Semantically adjacent classes (label confusions), per dataset vocabulary: class -> {wrong label: weight}.
NEIGHBOURS = {
    "chair": {"sofa": 3, "table": 1, "desk": 0.3}, "sofa": {"chair": 2, "bed": 1},
    "table": {"desk": 3, "night stand": 0.6, "cabinet": 0.3}, "desk": {"table": 3, "cabinet": 0.5},
    "bed": {"sofa": 2, "table": 0.5},
    "cabinet": {"shelves": 2, "night stand": 1, "bookcase": 1, "refrigerator": 0.5, "table": 0.5},
    "shelves": {"bookcase": 3, "cabinet": 2}, "bookcase": {"shelves": 3, "cabinet": 1},
    "night stand": {"cabinet": 2, "table": 2}, "television": {"picture": 1.5, "window": 0.5},
    "picture": {"window": 1, "television": 1}, "window": {"picture": 1, "door": 0.5},
    "door": {"cabinet": 1, "window": 0.3}, "lamp": {}, "sink": {"cabinet": 1}, "bathtub": {},
    "toilet": {"chair": 0.3}, "refrigerator": {"cabinet": 2, "machine": 0.5},
    "oven": {"stove": 2, "machine": 1, "cabinet": 1}, "stove": {"oven": 2, "cabinet": 1},
    "machine": {"oven": 1, "cabinet": 1, "refrigerator": 0.5}, "pillow": {"sofa": 0.5, "box": 0.5},
    "box": {"bin": 1, "cabinet": 1}, "bin": {"box": 1},
    "car": {"van": 3, "truck": 1}, "van": {"car": 3, "truck": 2}, "truck": {"van": 2, "bus": 1, "car": 1},
    "bus": {"tram": 2, "truck": 1}, "tram": {"bus": 3}, "pedestrian": {"cyclist": 1},
    "cyclist": {"pedestrian": 2}, "barrier": {"traffic cone": 1, "pedestrian": 0.5},
    "traffic cone": {"barrier": 1, "pedestrian": 0.5},
    "regular vehicle": {"large vehicle": 2, "truck cab": 1, "box truck": 1},
    "large vehicle": {"regular vehicle": 2, "box truck": 2, "bus": 1},
    "box truck": {"large vehicle": 2, "truck cab": 2}, "truck cab": {"box truck": 2, "large vehicle": 1,
                                                                    "regular vehicle": 1},
    "articulated bus": {"bus": 3}, "bicyclist": {"pedestrian": 2},
    "construction barrel": {"construction cone": 2, "pedestrian": 1},
    "construction cone": {"construction barrel": 2},
}
#: The same within the AV taxonomy where names are shared with demo_outdoor ("bus", "pedestrian").
NEIGHBOURS_AV = {"bus": {"articulated bus": 3, "large vehicle": 1}, "pedestrian": {"bicyclist": 1}}

#: Look-alike kinds: extra confusion weights for objects whose *shape* invites a wrong label (an armchair looks
#: like a sofa, a delivery van like a large vehicle, a bedside table like a table). Added to NEIGHBOURS.
KIND_BIAS = {
    "armchair": {"sofa": 4}, "coffee_table": {"table": 0, "desk": 0.5}, "night_stand": {"table": 2},
    "sideboard": {"table": 1, "shelves": 1}, "kitchen_sink": {"cabinet": 3}, "filing_cabinet": {"machine": 0.5},
    "wall_television": {"picture": 1}, "office_chair": {}, "bookcase": {"shelves": 1},
    "minivan": {"van": 1, "large vehicle": 3, "car": 1},
    "delivery_van": {"large vehicle": 3, "box truck": 1, "truck": 1},
    "pickup": {"truck": 2, "truck cab": 2, "van": 1}, "step_van": {"box truck": 2, "truck": 2},
    "motorhome": {"bus": 1, "van": 2}, "flatbed_truck": {"box truck": 3}, "truck_cab": {"car": 0.5},
    "articulated_bus": {"tram": 3}, "suv": {"van": 1, "large vehicle": 1}, "construction_barrel": {"barrier": 1},
}


# ------------------------------------------------------------------------------------------------ profiles
@dataclass(frozen=True)
class ErrorProfile:
    """How one simulated detector errs. All randomness is drawn per image from the run's own stream.

    Recall (probability that a GT object is detected):
        recall: for a fully visible, untruncated, large object in domain.
        min_height_px: 2D box height (pixels) at which the detection probability is halved (small objects).
        occlusion_power: probability is multiplied by visibility ** occlusion_power.
        truncation_penalty: probability is multiplied by 1 - truncation_penalty * truncation.
        closed_novel_recall: closed-vocabulary run only: multiplier for classes outside its base vocabulary.

    Localisation (noise of a detected box):
        depth_sigma: relative depth noise (std of log depth) at 0 m.
        depth_sigma_per_10m: growth of that std per 10 m of distance (depth error growing with distance).
        depth_bias: log-scale depth bias (negative: predicted too close).
        center_sigma: lateral centre noise as a fraction of the mean object size.
        size_sigma: std of the log of each predicted dimension.
        yaw_sigma_deg: heading noise (degrees); yaw_flip: probability of a 180-degree heading flip.
        box2d_sigma: 2D box edge noise as a fraction of the box size.

    Semantics:
        confusion: probability that the label is a semantically adjacent class (NEIGHBOURS + KIND_BIAS).
        attractors: class -> weight multiplier when choosing wrong labels and hallucinated classes
            (over-prediction of those classes).
        attractor_jump: probability that a confused label is an attractor even if it is not adjacent.
        second_label: probability of an extra hypothesis on the same box with an adjacent label.
        second_score: its raw score relative to the main hypothesis.
        hallucinations: expected boxes per image on empty floor/road with a class absent from the image.
        halluc_score: uniform raw score range of hallucinations (high-ish: the FPs the oracle hides).
        duplicates: probability of a near-duplicate box with the same label and a lower score.

    Scores:
        score_mean: mean raw confidence of a correct, well visible detection.
        score_temp, score_bias: calibration, score = sigmoid((logit(raw) + score_bias) / score_temp);
            temp < 1 is over-confident, a negative bias under-confident.

    Out-of-domain (evaluation datasets not in ``trained_on``):
        ood_recall: recall multiplier; ood_confusion: multiplier of confusion and second_label;
        ood_hallucinations: multiplier of hallucinations; ood_depth_bias: extra log depth bias (another camera).

    Prompt-conditioned runs (the prompt is an input of the detector):
        templates: template ids with one prediction file each (``per_template``); their effects are
            ``PROMPT_EFFECTS`` (:func:`simulate_prompted`). Empty: an ordinary run with one file.
        default_template: the template whose file is the run's default (``default_template``).

    Declared timing:
        runtime: ms per image by stage (``semantic_ms``, ``geometry_ms`` and/or ``total_ms``), written as the run's
            ``runtime:`` entry with ``source: demo (synthetic)``.
    """

    name: str
    description: str
    trained_on: tuple[str, ...]
    closed_vocabulary: tuple[str, ...] | None = None
    recall: float = 0.8
    min_height_px: float = 18.0
    occlusion_power: float = 1.0
    truncation_penalty: float = 0.5
    closed_novel_recall: float = 1.0
    depth_sigma: float = 0.06
    depth_sigma_per_10m: float = 0.02
    depth_bias: float = 0.0
    center_sigma: float = 0.05
    size_sigma: float = 0.08
    yaw_sigma_deg: float = 8.0
    yaw_flip: float = 0.03
    box2d_sigma: float = 0.04
    confusion: float = 0.08
    attractors: dict = field(default_factory=dict)
    attractor_jump: float = 0.0
    second_label: float = 0.1
    second_score: float = 0.8
    hallucinations: float = 0.4
    halluc_score: tuple[float, float] = (0.2, 0.6)
    duplicates: float = 0.03
    score_mean: float = 0.75
    score_temp: float = 1.0
    score_bias: float = 0.0
    ood_recall: float = 0.9
    ood_confusion: float = 2.0
    ood_hallucinations: float = 2.0
    ood_depth_bias: float = -0.05
    max_dets: int = 100
    format: str = "cubercnn-json"
    #: Prompt-conditioned detectors only: the template ids it writes one prediction file for (``per_template`` in
    #: benchmark.yaml; effects in ``PROMPT_EFFECTS``) and the one whose file is the run's default. Empty: one file.
    templates: tuple[str, ...] = ()
    default_template: str | None = None
    #: Declared ms per image by stage (``runtime:`` in benchmark.yaml: semantic_ms / geometry_ms / total_ms,
    #: device); synthetic numbers in the range of OV3D-Bench's Table 10, labelled as such.
    runtime: dict = field(default_factory=dict)


# ------------------------------------------------------------------------------------------------ prompts
#: The templates the prompt-conditioned run writes a file for: the 15 presets of ov3d_core.remap.templates
#: (U1-U5 underdetailed, S1-S5 standard, O1-O5 overdetailed) and Pro-Bench's types as ``PB-<type>`` (its
#: ``PROBENCH_TYPES``, in the paper's order). Spelled out here (not imported: importing ov3d_core.remap would load
#: the encoders in every build worker); tests/demo/test_promptable.py checks them against that module.
PROBENCH_TYPE_IDS = ("categorical", "attributive", "relational", "affordance", "state", "part-whole", "negative",
                     "compositional")
PROMPTED_TEMPLATES: tuple[str, ...] = (
    tuple(f"{g}{i}" for g in "USO" for i in range(1, 6)) + tuple(f"PB-{t}" for t in PROBENCH_TYPE_IDS))


@dataclass(frozen=True)
class PromptEffect:
    """What one prompt template does to a prompt-conditioned detector, relative to its :class:`ErrorProfile`.

    Every template starts from one shared draw per object (found or not, confused or not, its box, its score); a
    template changes it through these numbers and its own random stream:

        recall: multiplier of the detection probability (fewer objects found with a worse prompt).
        confusion: multiplier of the confusion and second-label probabilities (a prompt that reads less like the
            class name confuses adjacent classes more).
        resample: probability that an object's detection and label decisions are drawn again from the template's
            stream instead of the shared draw (objects appearing / disappearing between prompts at equal recall).
        jitter: scale of the template's own box perturbation, as a fraction of the profile's localisation noise (the
            box moves a little with the prompt: PLC below 1).
        score: shift of the raw confidence (before calibration).
        hallucinations: multiplier of the profile's hallucination rate (extra boxes for the template's words: "next
            to other objects", "not broken").
        context: the environment the prompt's wording belongs to (O3-O5 talk about roads); elsewhere recall is
            multiplied by ``off_context`` and confusion by ``1 / off_context``.
    """

    recall: float = 1.0
    confusion: float = 1.0
    resample: float = 0.08
    jitter: float = 0.12
    score: float = 0.0
    hallucinations: float = 1.0
    context: str | None = None
    off_context: float = 0.93


_UNDER = PromptEffect(recall=0.95, confusion=1.35, resample=0.12, jitter=0.2, score=-0.02, hallucinations=1.2)
_STANDARD = PromptEffect()
_OVER = PromptEffect(recall=0.9, confusion=1.6, resample=0.15, jitter=0.25, score=-0.04, hallucinations=1.4)

#: Effect of each template of ``PROMPTED_TEMPLATES``. Groups: standard best, underdetailed a little worse (the bare
#: name is ambiguous), overdetailed worse (irrelevant detail dilutes the class); Pro-Bench types after the paper's
#: findings: negation and relations are misread (the "not" and the other objects pull the grounding away),
#: compositional and affordance wording worse than attributes and states.
PROMPT_EFFECTS: dict[str, PromptEffect] = {
    **{f"U{i}": _UNDER for i in range(1, 6)},
    "U1": PromptEffect(recall=0.94, confusion=1.45, resample=0.12, jitter=0.2, score=-0.03, hallucinations=1.25),
    **{f"S{i}": _STANDARD for i in range(1, 6)},
    "S5": PromptEffect(recall=0.97, confusion=1.1, resample=0.1, jitter=0.15, score=-0.03),  # "a bad photo of"
    **{f"O{i}": _OVER for i in range(1, 6)},
    "O1": PromptEffect(recall=0.93, confusion=1.4, resample=0.12, jitter=0.25, score=-0.02, hallucinations=1.3),
    "O3": PromptEffect(recall=0.9, confusion=1.6, resample=0.15, jitter=0.25, score=-0.04, hallucinations=1.4,
                       context="outdoor", off_context=0.85),
    "O4": PromptEffect(recall=0.88, confusion=1.7, resample=0.18, jitter=0.3, score=-0.05, hallucinations=1.5,
                       context="outdoor", off_context=0.85),
    "O5": PromptEffect(recall=0.88, confusion=1.7, resample=0.18, jitter=0.3, score=-0.05, hallucinations=1.5,
                       context="outdoor", off_context=0.85),
    "PB-categorical": PromptEffect(recall=0.94, confusion=1.45, resample=0.12, jitter=0.2, score=-0.03,
                                   hallucinations=1.25),
    "PB-attributive": PromptEffect(recall=0.93, confusion=1.4, resample=0.15, jitter=0.25, score=-0.03,
                                   hallucinations=1.3),
    "PB-relational": PromptEffect(recall=0.72, confusion=2.8, resample=0.35, jitter=0.5, score=-0.08,
                                  hallucinations=3.0),
    "PB-affordance": PromptEffect(recall=0.82, confusion=2.3, resample=0.25, jitter=0.35, score=-0.06,
                                  hallucinations=2.0),
    "PB-state": PromptEffect(recall=0.94, confusion=1.3, resample=0.14, jitter=0.2, score=-0.03,
                             hallucinations=1.2),
    "PB-part-whole": PromptEffect(recall=0.9, confusion=1.5, resample=0.18, jitter=0.4, score=-0.04,
                                  hallucinations=1.4),
    "PB-negative": PromptEffect(recall=0.62, confusion=3.2, resample=0.4, jitter=0.45, score=-0.1,
                                hallucinations=3.5),
    "PB-compositional": PromptEffect(recall=0.8, confusion=2.2, resample=0.28, jitter=0.4, score=-0.06,
                                     hallucinations=2.2),
}


RUNS: tuple[ErrorProfile, ...] = (
    ErrorProfile(
        name="cubercnn_star",
        description="closed-vocabulary Cube R-CNN over 13 base classes: good boxes, coarse base labels "
                    "(desk->table, van/bus->car) meant to be remapped from crops; misses classes it has no "
                    "base label for",
        trained_on=("demo_indoor", "demo_outdoor"), closed_vocabulary=CLOSED_VOCABULARY, format="cubercnn-pth",
        recall=0.82, min_height_px=16, occlusion_power=0.9, closed_novel_recall=0.7,
        depth_sigma=0.025, depth_sigma_per_10m=0.01, center_sigma=0.03, size_sigma=0.06, yaw_sigma_deg=7,
        confusion=0.06, second_label=0.05, hallucinations=0.25, halluc_score=(0.1, 0.4), duplicates=0.02,
        score_mean=0.8, ood_recall=0.92, ood_confusion=1.0, ood_hallucinations=1.5, ood_depth_bias=-0.04,
        runtime={"geometry_ms": 33.3}),
    ErrorProfile(
        name="ovmono_like",
        description="OVMono3D-like: good localisation, adjacent-class confusions, over-predicts table and "
                    "shelves; labels cross taxonomy boundaries out of domain",
        trained_on=("demo_indoor", "demo_outdoor"),
        recall=0.86, min_height_px=14, occlusion_power=0.8,
        depth_sigma=0.025, depth_sigma_per_10m=0.01, center_sigma=0.03, size_sigma=0.06, yaw_sigma_deg=8,
        confusion=0.16, attractors={"table": 3.0, "shelves": 3.0, "truck": 1.5}, attractor_jump=0.25,
        second_label=0.4, second_score=0.95, hallucinations=0.5, halluc_score=(0.25, 0.65), duplicates=0.03,
        score_mean=0.75, ood_recall=0.9, ood_confusion=3.5, ood_hallucinations=3.0, ood_depth_bias=-0.06,
        runtime={"total_ms": 300.8}),
    ErrorProfile(
        name="detany_like",
        description="DetAny3D-like: confident hallucinations of classes absent from the image, favours chair "
                    "(pedestrian outdoors); transfers worst out of domain",
        trained_on=("demo_indoor", "demo_outdoor"),
        recall=0.8, min_height_px=18, occlusion_power=1.0,
        depth_sigma=0.05, depth_sigma_per_10m=0.02, center_sigma=0.05, size_sigma=0.09, yaw_sigma_deg=12,
        confusion=0.14, attractors={"chair": 4.0, "pedestrian": 2.0, "sofa": 1.5}, attractor_jump=0.35,
        second_label=0.25, second_score=0.9, hallucinations=1.6, halluc_score=(0.35, 0.85), duplicates=0.04,
        score_mean=0.72, score_temp=0.75, score_bias=0.3,
        ood_recall=0.72, ood_confusion=2.8, ood_hallucinations=3.0, ood_depth_bias=-0.1,
        runtime={"semantic_ms": 182.9, "geometry_ms": 400.0}),
    ErrorProfile(
        name="wild_like",
        description="WildDet3D-like: trained on all three datasets, highest recall, noisy depth and size, "
                    "moderate confusions, calibrated scores",
        trained_on=("demo_indoor", "demo_outdoor", "demo_outdoor_av"),
        recall=0.93, min_height_px=10, occlusion_power=0.6, truncation_penalty=0.3,
        depth_sigma=0.09, depth_sigma_per_10m=0.03, center_sigma=0.06, size_sigma=0.12, yaw_sigma_deg=14,
        yaw_flip=0.06, confusion=0.1, second_label=0.25, second_score=0.9, hallucinations=0.6,
        halluc_score=(0.1, 0.5),
        duplicates=0.05, score_mean=0.7, runtime={"semantic_ms": 96.4, "geometry_ms": 151.7}),
    ErrorProfile(
        name="weak_mono",
        description="weak monocular baseline: low recall, depth error growing fast with distance, many "
                    "duplicates, under-confident; demo_outdoor is its unseen domain",
        trained_on=("demo_indoor", "demo_outdoor_av"),
        recall=0.55, min_height_px=28, occlusion_power=1.4, truncation_penalty=0.8,
        depth_sigma=0.04, depth_sigma_per_10m=0.1, depth_bias=-0.03, center_sigma=0.05, size_sigma=0.1,
        yaw_sigma_deg=15, yaw_flip=0.1, confusion=0.12, second_label=0.08, hallucinations=0.4,
        halluc_score=(0.1, 0.45), duplicates=0.35, score_mean=0.55, score_temp=1.6, score_bias=-0.8,
        ood_recall=0.8, ood_confusion=1.8, ood_hallucinations=1.5, ood_depth_bias=0.08,
        runtime={"semantic_ms": 41.2, "geometry_ms": 17.8}),
    ErrorProfile(
        name="promptable",
        description="prompt-conditioned, OVMono3D-like: one prediction file per prompt template; labels and "
                    "recall depend on the prompt (standard best; negative, relational and compositional Pro-Bench "
                    "prompts clearly worse), boxes move slightly between prompts",
        trained_on=("demo_indoor", "demo_outdoor"),
        recall=0.85, min_height_px=14, occlusion_power=0.8,
        depth_sigma=0.035, depth_sigma_per_10m=0.015, center_sigma=0.04, size_sigma=0.08, yaw_sigma_deg=10,
        confusion=0.12, attractors={"table": 2.0, "shelves": 2.0, "truck": 1.5}, attractor_jump=0.15,
        second_label=0.2, second_score=0.85, hallucinations=0.4, halluc_score=(0.2, 0.6), duplicates=0.03,
        score_mean=0.74, ood_recall=0.88, ood_confusion=2.5, ood_hallucinations=2.5, ood_depth_bias=-0.06,
        templates=PROMPTED_TEMPLATES, default_template="S1",
        runtime={"semantic_ms": 176.5, "geometry_ms": 121.4}),
)
RUNS_BY_NAME = {r.name: r for r in RUNS}


# ------------------------------------------------------------------------------------------------ simulation
@dataclass(eq=False)
class Pred:
    """One simulated prediction (camera frame). ``origin``: object | second | duplicate | hallucination."""

    category: str
    score: float
    center: np.ndarray
    dims: np.ndarray
    R: np.ndarray
    box2d: np.ndarray  # XYXY
    origin: str
    ann_id: int  # source GT annotation (0 for hallucinations)
    corners: np.ndarray | None = None  # filled by simulate()


def output_vocabulary(profile: ErrorProfile, spec: DatasetSpec) -> tuple[str, ...]:
    """Labels the run can output on ``spec``: the dataset vocabulary (open-vocabulary runs are prompted with it) or
    the part of the closed vocabulary that applies to the environment."""
    if profile.closed_vocabulary is None:
        return spec.vocabulary
    env_names = {CLOSED_LABEL.get(c) for c in spec.vocabulary} - {None}
    return tuple(c for c in profile.closed_vocabulary if c in env_names)


def _neighbours(category: str, kind: str, spec: DatasetSpec, vocab: tuple[str, ...]) -> dict:
    return dict(_neighbours_cached(category, kind, spec.style, vocab))


@lru_cache(maxsize=4096)
def _neighbours_cached(category: str, kind: str, style: str, vocab: tuple[str, ...]) -> tuple:
    table = dict(NEIGHBOURS.get(category, {}))
    if style == "av" and category in NEIGHBOURS_AV:
        table = dict(NEIGHBOURS_AV[category])
    for k, v in KIND_BIAS.get(kind, {}).items():
        table[k] = table.get(k, 0.0) + v
    return tuple((k, v) for k, v in table.items() if k in vocab and k != category and v > 0)


def _choose_wrong(rng, profile: ErrorProfile, label: str, kind_table: dict, vocab) -> str | None:
    attractors = {k: v for k, v in profile.attractors.items() if k in vocab and k != label}
    if attractors and rng.random() < profile.attractor_jump:
        return rng.weighted_choice(attractors)
    if not kind_table:
        return None
    return rng.weighted_choice({n: kind_table[n] * profile.attractors.get(n, 1.0) for n in kind_table})


def _calibrate(profile: ErrorProfile, raw: float) -> float:
    raw = min(max(float(raw), 1e-3), 1 - 1e-3)
    logit = math.log(raw / (1 - raw))
    s = 1.0 / (1.0 + math.exp(-(logit + profile.score_bias) / profile.score_temp))
    return min(max(s, 0.005), 0.999)


def _yaw_matrix(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])  # ov3d_core.geometry.boxes.rotation_y


def _perturb(rng, profile: ErrorProfile, ood: bool, center, dims, R, W, H, box2d, scale_noise=1.0):
    """A noisy copy of a box: depth scaled along the viewing ray (log-normal, growing with distance), lateral
    centre, size and yaw noise, and a jittered 2D box. (Scalar Python arithmetic: this runs ~10^6 times in an
    Omni3D-scale annotations-only build.) Returns plain lists (centre, dims, rotation rows, XYXY box)."""
    cx, cy, cz = center.tolist() if isinstance(center, np.ndarray) else center
    nrm = rng.normals(0.0, 1.0, 11)
    sigma = (profile.depth_sigma + profile.depth_sigma_per_10m * max(cz, 0.0) / 10.0) * scale_noise
    bias = profile.depth_bias + (profile.ood_depth_bias if ood else 0.0)
    s = math.exp(bias + sigma * nrm[0])
    w, h, l = dims.tolist() if isinstance(dims, np.ndarray) else dims
    lat = profile.center_sigma * (w + h + l) / 3.0 * scale_noise
    c = [cx * s + nrm[1] * lat, cy * s + nrm[2] * lat, cz * s]
    k = profile.size_sigma * scale_noise
    s3 = s ** 0.3
    d = [w * math.exp(nrm[3] * k) * s3, h * math.exp(nrm[4] * k) * s3, l * math.exp(nrm[5] * k) * s3]
    yaw = math.radians(profile.yaw_sigma_deg * scale_noise * nrm[6])
    if rng.random() < profile.yaw_flip:
        yaw += math.pi
    cs, sn = math.cos(yaw), math.sin(yaw)
    (a0, a1, a2), (b0, b1, b2), (c0, c1, c2) = R.tolist() if isinstance(R, np.ndarray) else R
    Rp = [[a0 * cs - a2 * sn, a1, a0 * sn + a2 * cs],  # R @ rotation_y(yaw)
          [b0 * cs - b2 * sn, b1, b0 * sn + b2 * cs],
          [c0 * cs - c2 * sn, c1, c0 * sn + c2 * cs]]
    x0, y0, x1, y1 = box2d.tolist() if isinstance(box2d, np.ndarray) else box2d
    bw, bh = x1 - x0, y1 - y0
    e = profile.box2d_sigma * scale_noise
    nx0 = min(max(x0 + nrm[7] * e * bw, 0.0), W - 1.0)
    ny0 = min(max(y0 + nrm[8] * e * bh, 0.0), H - 1.0)
    nx1 = min(max(x1 + nrm[9] * e * bw, 0.0), W - 1.0)
    ny1 = min(max(y1 + nrm[10] * e * bh, 0.0), H - 1.0)
    b = [nx0, ny0, nx1, ny1] if (nx1 - nx0 >= 1 and ny1 - ny0 >= 1) else [float(x0), float(y0), float(x1), float(y1)]
    return c, d, Rp, b


@lru_cache(maxsize=16)
def _inv_K_cached(focal: float, width: int, height: int) -> np.ndarray:
    Kinv = np.linalg.inv(np.array([[focal, 0.0, width / 2], [0.0, focal, height / 2], [0.0, 0.0, 1.0]]))
    Kinv.flags.writeable = False
    return Kinv


def _inv_K(spec: DatasetSpec) -> np.ndarray:
    """``np.linalg.inv(spec.K)``, computed once per camera."""
    return _inv_K_cached(float(spec.focal), spec.width, spec.height)


def _ground_box(rng, scene: Scene, shape_dims, yaw_layout: float):
    """Centre and rotation of a box of ``shape_dims`` standing on the floor/road under a random image pixel."""
    spec = scene.spec
    W, H = spec.width, spec.height
    Kinv = _inv_K(spec)
    R_wc = scene.R_cw.T
    for _ in range(8):
        u, v = rng.uniform(0.05 * W, 0.95 * W), rng.uniform(0.45 * H, 0.98 * H)
        d_cam = Kinv @ np.array([u, v, 1.0])
        d_world = R_wc @ d_cam
        if d_world[1] <= 1e-3:
            continue
        p_cam = d_cam * (scene.cam_h / d_world[1])
        if not (1.0 < p_cam[2] < (8.0 if spec.environment == "indoor" else 45.0)):
            continue
        foot = scene.camera_to_layout(p_cam)
        return scene.pose_at(foot[0], foot[2], yaw_layout, 0.0, float(shape_dims[1]))
    return None


class GTTable:
    """What every simulated run reads from an image's ground truth, gathered once per image (five runs share it)."""

    def __init__(self, scene: Scene, gts: list[GTObject]):
        self.n = len(gts)
        self.categories = [g.category for g in gts]
        self.kinds = [scene.objects[g.obj_index].kind for g in gts]
        self.ann_ids = [g.ann_id for g in gts]
        self.behind = np.array([g.behind for g in gts], bool)
        if self.n:
            vis = np.array([max(g.visibility, 0.0) if g.visibility >= 0 else 1.0 for g in gts])
            tight = np.array([g.tight for g in gts])
            trunc_box = np.array([g.trunc for g in gts])
            self.vis = vis
            self.h2d = np.where(tight[:, 0] >= 0, tight[:, 3] - tight[:, 1],
                                (trunc_box[:, 3] - trunc_box[:, 1]) * np.sqrt(vis))
            self.trn = np.array([g.truncation for g in gts])
            self.vis_l = vis.tolist()
            self.center_l = np.array([g.center for g in gts]).tolist()
            self.dims_l = np.array([g.dims for g in gts]).tolist()
            self.R_l = np.array([g.R for g in gts]).tolist()
            self.trunc_l = trunc_box.tolist()


def simulate(profile: ErrorProfile, scene: Scene, gts: list[GTObject], rng: Stream,
             typical_dims: dict, table: GTTable | None = None) -> list[Pred]:
    """Predictions of ``profile`` on one image, sorted by descending score (at most ``max_dets``). ``table``: the
    image's :class:`GTTable` (built here when not given)."""
    spec = scene.spec
    W, H = spec.width, spec.height
    ood = spec.name not in profile.trained_on
    vocab = output_vocabulary(profile, spec)
    closed = profile.closed_vocabulary is not None
    conf_p = min(0.9, profile.confusion * (profile.ood_confusion if ood else 1.0))
    second_p = min(0.9, profile.second_label * (profile.ood_confusion if ood else 1.0))
    recall = profile.recall * (profile.ood_recall if ood else 1.0)
    preds: list[Pred] = []
    n = len(gts)
    if n:
        if table is None:
            table = GTTable(scene, gts)
        # detection probabilities of all GT objects at once; one random block per image
        cats = table.categories
        labels = [CLOSED_LABEL.get(c) for c in cats] if closed else cats
        vis, h2d = table.vis, table.h2d
        size_term = h2d / (h2d + profile.min_height_px)
        p = recall * vis ** profile.occlusion_power * size_term * (1.0 - profile.truncation_penalty * table.trn)
        if closed:
            novel = np.array([lb is not None and lb != c for lb, c in zip(labels, cats)])
            p = np.where(novel, p * profile.closed_novel_recall, p)
            p = np.where([lb is not None and lb in vocab for lb in labels], p, 0.0)
        p = np.where(table.behind, 0.0, p)
        draws = rng.random((n, 4))
        hits = np.flatnonzero(draws[:, 0] < p).tolist()
        draws = draws.tolist()
        vis_l, size_l = table.vis_l, size_term.tolist()
        kinds, ann_ids = table.kinds, table.ann_ids
        center_l, dims_l, R_l, trunc_l = table.center_l, table.dims_l, table.R_l, table.trunc_l
    else:
        hits = []
    score_mean, duplicates = profile.score_mean, profile.duplicates
    for j in hits:
        kind = kinds[j]
        label = labels[j]
        dj = draws[j]
        quality = 0.55 + 0.45 * vis_l[j] * min(1.0, size_l[j] / 0.8)
        raw = min(max(score_mean * quality + 0.08 * rng.standard_normal(), 0.02), 0.98)
        origin = "object"
        if dj[1] < conf_p:
            wrong = _choose_wrong(rng, profile, label, _neighbours(label, kind, spec, vocab), vocab)
            if wrong is not None:
                label = wrong
                raw *= rng.uniform(0.6, 0.95)
        c, d, Rp, b = _perturb(rng, profile, ood, center_l[j], dims_l[j], R_l[j], W, H, trunc_l[j])
        if c[2] <= 0.3:
            continue
        ann_id = ann_ids[j]
        preds.append(Pred(label, _calibrate(profile, raw), c, d, Rp, b, origin, ann_id))
        if dj[2] < second_p:
            base = label if closed else cats[j]
            alt_table = {k: v for k, v in _neighbours(base, kind, spec, vocab).items() if k != label}
            alt = _choose_wrong(rng, profile, label, alt_table, vocab)
            if alt is not None and alt != label:
                c2, d2, R2, b2 = _perturb(rng, profile, ood, c, d, Rp, W, H, b, scale_noise=0.25)
                raw2 = raw * profile.second_score * rng.uniform(0.55, 1.0)
                preds.append(Pred(alt, _calibrate(profile, raw2), c2, d2, R2, b2, "second", ann_id))
        if dj[3] < duplicates:
            c2, d2, R2, b2 = _perturb(rng, profile, ood, c, d, Rp, W, H, b, scale_noise=1.0)
            if c2[2] > 0.3:
                raw2 = raw * rng.uniform(0.3, 0.75)
                preds.append(Pred(label, _calibrate(profile, raw2), c2, d2, R2, b2, "duplicate", ann_id))
    # hallucinations: classes absent from the image, on empty floor / road
    present = {CLOSED_LABEL.get(g.category) if closed else g.category for g in gts}
    absent = [c for c in vocab if c not in present and c in typical_dims]
    lam = profile.hallucinations * (profile.ood_hallucinations if ood else 1.0)
    n_h = int(rng.poisson(lam)) if absent else 0
    hall = []
    for _ in range(n_h):
        cat = rng.weighted_choice({c: profile.attractors.get(c, 1.0) for c in absent})
        dims = np.asarray(typical_dims[cat], float) * np.exp(rng.normal(0, 0.1, 3))
        pose = _ground_box(rng, scene, dims, rng.uniform(0, 2 * math.pi))
        if pose is not None:
            hall.append((cat, dims, pose, rng.uniform(*profile.halluc_score)))
    if hall:
        hc = corners_from_pose(np.array([h[2][0] for h in hall]), np.array([h[1] for h in hall]),
                               np.array([h[2][1] for h in hall]))
        _, htr = projected_box2d_fast(hc, scene.K, W, H)
        for (cat, dims, (c, R), raw), tr in zip(hall, htr):
            if tr[0] >= 0:
                preds.append(Pred(cat, _calibrate(profile, raw), c, dims, R, tr, "hallucination", 0))
    order = sorted(range(len(preds)), key=lambda i: -preds[i].score)
    preds = [preds[i] for i in order[: profile.max_dets]]
    if preds:
        corners = corners_from_pose(np.array([p.center for p in preds]), np.array([p.dims for p in preds]),
                                    np.array([p.R for p in preds]))
        for p, k in zip(preds, corners):
            p.corners = k
    return preds


def template_stream_key(template: str) -> int:
    """The last entropy word of a template's own random stream: the CRC-32 of its id (so adding or reordering
    templates never changes another template's draws)."""
    return zlib.crc32(template.encode("utf-8"))


def _jitter_profile(profile: ErrorProfile) -> ErrorProfile:
    """The profile a template's box perturbation uses: its noise without biases or heading flips (those are part of
    the shared draw; a prompt moves the box a little, it does not turn it round)."""
    return replace(profile, depth_bias=0.0, ood_depth_bias=0.0, yaw_flip=0.0)


def _hallucinate(rng: Stream, profile: ErrorProfile, scene: Scene, absent: list, lam: float,
                 typical_dims: dict) -> list:
    """Boxes of classes absent from the image on empty floor / road: (class, dims, (centre, R), raw score)."""
    out = []
    n_h = int(rng.poisson(lam)) if absent and lam > 0 else 0
    for _ in range(n_h):
        cat = rng.weighted_choice({c: profile.attractors.get(c, 1.0) for c in absent})
        dims = np.asarray(typical_dims[cat], float) * np.exp(rng.normal(0, 0.1, 3))
        pose = _ground_box(rng, scene, dims, rng.uniform(0, 2 * math.pi))
        if pose is not None:
            out.append((cat, dims, pose, rng.uniform(*profile.halluc_score)))
    return out


def _project_hallucinations(scene: Scene, hall: list) -> list:
    """``hall`` entries with their clipped 2D box: (class, dims, centre, R, box, raw score); those that miss the image
    are None."""
    if not hall:
        return []
    spec = scene.spec
    hc = corners_from_pose(np.array([h[2][0] for h in hall]), np.array([h[1] for h in hall]),
                           np.array([h[2][1] for h in hall]))
    _, htr = projected_box2d_fast(hc, scene.K, spec.width, spec.height)
    return [(cat, dims, c, R, tr, raw) if tr[0] >= 0 else None for (cat, dims, (c, R), raw), tr in zip(hall, htr)]


def _hallucination_preds(profile: ErrorProfile, projected: list, score_shift: float) -> list[Pred]:
    return [Pred(cat, _calibrate(profile, raw + score_shift), c, dims, R, tr, "hallucination", 0)
            for cat, dims, c, R, tr, raw in filter(None, projected)]


def simulate_prompted(profile: ErrorProfile, scene: Scene, gts: list[GTObject], rng: Stream,
                      streams: Mapping[str, Stream], typical_dims: dict,
                      table: GTTable | None = None) -> dict[str, list[Pred]]:
    """Predictions of a prompt-conditioned ``profile`` on one image under each of its templates (template id ->
    predictions sorted by descending score, at most ``max_dets``).

    ``rng`` gives the shared draw: per GT object its detection and confusion uniforms, its base box (the profile's
    localisation noise, biases included), wrong and second labels, score and duplicate; and the image's base
    hallucinations. ``streams[template]`` (its own sub-stream) gives the template's changes (``PROMPT_EFFECTS``):
    thresholds scaled by the template's recall and confusion, a fraction of the decisions redrawn, a small box
    perturbation around the base box, a score shift and extra hallucinations. Equal uniforms against scaled
    thresholds keep the templates coupled: a template with lower recall loses objects, it does not find others."""
    if profile.closed_vocabulary is not None or not profile.templates:
        raise ValueError(f"simulate_prompted: {profile.name} is not an open-vocabulary prompt-conditioned profile")
    spec = scene.spec
    W, H = spec.width, spec.height
    ood = spec.name not in profile.trained_on
    vocab = output_vocabulary(profile, spec)
    conf_p = profile.confusion * (profile.ood_confusion if ood else 1.0)
    second_p = profile.second_label * (profile.ood_confusion if ood else 1.0)
    recall = profile.recall * (profile.ood_recall if ood else 1.0)
    jit = _jitter_profile(profile)
    n = len(gts)
    base = []
    if n:
        if table is None:
            table = GTTable(scene, gts)
        size_term = table.h2d / (table.h2d + profile.min_height_px)
        p = recall * table.vis ** profile.occlusion_power * size_term * (1.0 - profile.truncation_penalty * table.trn)
        p = np.where(table.behind, 0.0, p).tolist()
        U = rng.random((n, 4)).tolist()  # detection, confusion, second label, duplicate
        size_l = size_term.tolist()
        for j in range(n):
            cat, kind = table.categories[j], table.kinds[j]
            nb = _neighbours(cat, kind, spec, vocab)
            quality = 0.55 + 0.45 * table.vis_l[j] * min(1.0, size_l[j] / 0.8)
            raw = min(max(profile.score_mean * quality + 0.08 * rng.standard_normal(), 0.02), 0.98)
            wrong = _choose_wrong(rng, profile, cat, nb, vocab)
            wrong_factor = rng.uniform(0.6, 0.95)
            box = _perturb(rng, profile, ood, table.center_l[j], table.dims_l[j], table.R_l[j], W, H, table.trunc_l[j])
            alt = _choose_wrong(rng, profile, cat, nb, vocab)
            second_factor = profile.second_score * rng.uniform(0.55, 1.0)
            dup = _perturb(rng, profile, ood, *box[:3], W, H, box[3], scale_noise=1.0)
            dup_factor = rng.uniform(0.3, 0.75)
            base.append((p[j], U[j], raw, nb, wrong, wrong_factor, box, alt, second_factor, dup, dup_factor))
    present = {g.category for g in gts}
    absent = [c for c in vocab if c not in present and c in typical_dims]
    lam = profile.hallucinations * (profile.ood_hallucinations if ood else 1.0)
    shared_hall = _project_hallucinations(scene, _hallucinate(rng, profile, scene, absent, lam, typical_dims))
    out: dict[str, list[Pred]] = {}
    for t in profile.templates:
        eff = PROMPT_EFFECTS[t]
        rt = streams[t]
        r_mult, c_mult = eff.recall, eff.confusion
        if eff.context is not None and eff.context != spec.environment:
            r_mult, c_mult = r_mult * eff.off_context, c_mult / eff.off_context
        cp, sp = min(0.9, conf_p * c_mult), min(0.9, second_p * c_mult)
        preds: list[Pred] = []
        V = rt.random((n, 4)).tolist() if n else []  # redraw?, then redrawn detection / confusion / second label
        for j, (pj, u, raw, nb, wrong, wf, box, alt, sf, dup, df) in enumerate(base):
            v = V[j]
            again = v[0] < eff.resample
            if (v[1] if again else u[0]) >= pj * r_mult:
                continue
            label, r = table.categories[j], raw + eff.score
            if (v[2] if again else u[1]) < cp:
                w = _choose_wrong(rt, profile, label, nb, vocab) if again else wrong
                if w is not None:
                    label, r = w, r * wf
            r = min(max(r + 0.03 * rt.standard_normal(), 0.02), 0.98)
            c, d, Rp, b = _perturb(rt, jit, ood, *box[:3], W, H, box[3], scale_noise=eff.jitter)
            if c[2] <= 0.3:
                continue
            ann_id = table.ann_ids[j]
            preds.append(Pred(label, _calibrate(profile, r), c, d, Rp, b, "object", ann_id))
            if (v[3] if again else u[2]) < sp and alt is not None and alt != label:
                c2, d2, R2, b2 = _perturb(rt, jit, ood, c, d, Rp, W, H, b, scale_noise=0.25)
                preds.append(Pred(alt, _calibrate(profile, r * sf), c2, d2, R2, b2, "second", ann_id))
            if u[3] < profile.duplicates:
                c2, d2, R2, b2 = _perturb(rt, jit, ood, *dup[:3], W, H, dup[3], scale_noise=eff.jitter)
                if c2[2] > 0.3:
                    preds.append(Pred(label, _calibrate(profile, r * df), c2, d2, R2, b2, "duplicate", ann_id))
        # the shared hallucinations a template keeps, and the extra ones its wording invites
        hall = [h for h in shared_hall if rt.random() < 0.85]
        hall += _project_hallucinations(scene, _hallucinate(rt, profile, scene, absent,
                                                            lam * max(eff.hallucinations - 1.0, 0.0), typical_dims))
        preds += _hallucination_preds(profile, hall, eff.score)
        order = sorted(range(len(preds)), key=lambda i: -preds[i].score)
        out[t] = [preds[i] for i in order[: profile.max_dets]]
    return out


def _prediction_arrays(preds: list[Pred], K: np.ndarray) -> tuple:
    """The rounded values of the records of ``preds``: XYWH boxes, projected centres, centres, dims, rotations and
    corners (``ndarray.round`` is ``np.round``)."""
    C = np.array([p.center for p in preds]).round(4)
    D = np.array([p.dims for p in preds]).round(4)
    R = np.array([p.R for p in preds]).round(5)
    corners = corners_from_pose(C, D, R).round(5)  # 5 decimals: Omni3D zeroes IoU of non-planar faces (1e-4)
    B = np.array([p.box2d for p in preds], float)
    xywh = B.copy()
    xywh[:, 2:] -= B[:, :2]  # XYXY -> XYWH
    uvw = C @ K.T
    c2 = (uvw[:, :2] / uvw[:, 2:3]).round(2)
    return xywh.round(2), c2, C, D, R, corners


def prediction_records(preds: list[Pred], image_id: int, K: np.ndarray, category_ids: list[int],
                       category_names: list[str | None]) -> list[dict]:
    """Cube R-CNN instances (``instances_to_coco_json``): bbox XYWH, bbox3D corners in the Omni3D order. The corners
    are rebuilt from the rounded pose, so each record is self-consistent after rounding."""
    if not preds:
        return []
    bbox, c2, Cl, Dl, Rl, Kl = (a.tolist() for a in _prediction_arrays(preds, K))
    out = []
    for k, p in enumerate(preds):
        rec = {"image_id": int(image_id), "category_id": int(category_ids[k]), "bbox": bbox[k],
               "score": round(float(p.score), 5), "depth": Cl[k][2], "bbox3D": Kl[k], "center_cam": Cl[k],
               "center_2D": c2[k], "dimensions": Dl[k], "pose": Rl[k]}
        if category_names[k] is not None:
            rec["category_name"] = category_names[k]
        out.append(rec)
    return out


def prediction_json(preds: list[Pred], image_id: int, K: np.ndarray, category_ids: list[int],
                    category_names: list[str | None]) -> list[str]:
    """:func:`prediction_records` as JSON texts, exactly ``json.dumps(record, sort_keys=True, separators=(",", ":"),
    ensure_ascii=False)`` of each record, written without the dicts (one ``%`` formatting per record of the same
    values; a large annotations-only build writes ~10^6 records)."""
    if not preds:
        return []
    bbox, c2, C, D, R, corners = _prediction_arrays(preds, K)
    n = len(preds)
    M = np.concatenate([bbox, corners.reshape(n, 24), c2, C, C[:, 2:], D, R.reshape(n, 9)], axis=1)
    scores = [round(float(p.score), 5) for p in preds]
    if not (np.isfinite(M).all() and all(math.isfinite(s) for s in scores)):  # NaN / inf: json's own spelling
        return [dumps(r) for r in prediction_records(preds, image_id, K, category_ids, category_names)]
    image_id = int(image_id)
    out = []
    for k, m in enumerate(M.tolist()):
        name = category_names[k]
        if name is None:
            out.append(PRED_TEMPLATE_NO_NAME % (*m[:28], int(category_ids[k]), *m[28:37], image_id, *m[37:],
                                                scores[k]))
        else:
            out.append(PRED_TEMPLATE % (*m[:28], int(category_ids[k]), jstr(name), *m[28:37], image_id, *m[37:],
                                        scores[k]))
    return out
