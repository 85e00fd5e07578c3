"""What to score: the frozen :class:`View` (and :class:`RemapSpec`) that keys every number of the product, and the
checks and names that go with it. No scoring happens here."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Sequence

import numpy as np

from ov3d_core.errors import InputError
from ov3d_core.eval.constants import PROTOCOLS, STATUS_IOU, SUMMARY_KEYS
from ov3d_core.remap.remap import SCORE_MODES

__all__ = ["View", "RemapSpec", "RunFailure", "DISTANCE_MODES", "DEFAULT_TEMPLATES", "MINING_KINDS",
           "LEADERBOARD_COLUMNS", "view_error", "finite_number", "positive_int", "check_seed", "pair_names",
           "score_key", "restrict_classes"]

#: Centre-distance matching modes of :meth:`Analysis.distance` (``ov3d_core.diagnostics.distance.DISTANCE_MODES``;
#: repeated here so that importing this module stays light; a test holds the two equal).
DISTANCE_MODES = ("3dmood", "3dmood-compat", "nuscenes")


#: The 15 preset templates of the paper's prompt probe (3 types x 5), in display order.
DEFAULT_TEMPLATES = ("U1", "U2", "U3", "U4", "U5", "S1", "S2", "S3", "S4", "S5", "O1", "O2", "O3", "O4", "O5")


def view_error(field_: str, expected: str, got) -> InputError:
    return InputError(None, "view", field_, expected, got)


def finite_number(name: str, v, lo: float | None = None, hi: float | None = None, *, lo_open: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise view_error(name, "a number", v)
    f = float(v)
    if not math.isfinite(f):
        raise view_error(name, "a finite number", v)
    if (lo is not None and (f < lo or (lo_open and f == lo))) or (hi is not None and f > hi):
        raise view_error(name, f"a number in {'(' if lo_open else '['}{lo}, {hi}]", v)
    return f


@dataclass(frozen=True)
class RemapSpec:
    """Training-free VLM remapping of a run (OV3D-Bench, Cube R-CNN*): every predicted box is relabelled with its most
    similar dataset class under ``template`` when the similarity reaches ``theta``.

    Attributes:
        encoder: ``"proxy"`` (the demo's stand-in) or ``"hf:<checkpoint or local dir>"`` (SigLIP 2 / SigLIP / CLIP).
        template: a template id ("S1"), a group ("standard", ensembled), ids joined by commas, or a literal template
            with one ``{}``.
        theta: acceptance threshold on the top-1 value (probability for calibrated encoders, else cosine); None: the
            encoder's default (0.5 for a calibrated probability, 0.0 for a cosine).
        score_mode: "detector" (keep the detector score), "similarity" (the top-1 value) or "product".
        templates_file: optional YAML/JSON of user templates (id, group, text) that ``template`` may name.
        pad, min_size: crop context (fraction per side) and smallest crop side in pixels (pixel encoders).
    """

    encoder: str = "proxy"
    template: str = "S1"
    theta: float | None = None
    score_mode: str = "detector"
    templates_file: str | None = None
    pad: float = 0.0
    min_size: float = 8.0

    def __post_init__(self):
        if not isinstance(self.encoder, str) or not (self.encoder == "proxy" or
                                                     (self.encoder.startswith("hf:") and len(self.encoder) > 3)):
            raise view_error("remap.encoder", "`proxy` or `hf:<checkpoint or local dir>`", self.encoder)
        if not isinstance(self.template, str) or not self.template.strip():
            raise view_error("remap.template", "a template id, group or text with one {}", self.template)
        if self.theta is not None:
            object.__setattr__(self, "theta", finite_number("remap.theta", self.theta, -1.0, 1.0))
        if self.score_mode not in SCORE_MODES:
            raise view_error("remap.score_mode", f"one of {SCORE_MODES}", self.score_mode)
        if self.templates_file is not None:
            object.__setattr__(self, "templates_file", str(self.templates_file))
        object.__setattr__(self, "pad", finite_number("remap.pad", self.pad, 0.0, 2.0))
        object.__setattr__(self, "min_size", finite_number("remap.min_size", self.min_size, 0.0))

    def embedding_key(self, dataset: str, run: str) -> tuple:
        """What the crop embeddings (and the live remapper) of a run depend on."""
        return (dataset, run, self.encoder, self.templates_file, self.pad, self.min_size)


@dataclass(frozen=True)
class View:
    """What to score: frozen and hashable, so it keys every memo and cache of the app.

    Attributes:
        dataset: dataset name.
        run: run name (None for dataset-wide tables such as the leaderboard).
        protocol: "dataset-level" (OV3D-Bench) or "target-aware" (each image prompted with its GT classes only).
        min_score: predictions scoring below it are dropped before anything is scored.
        iou: 3D IoU at which boxes are marked TP / FP / FN (statuses, inspector, mining).
        remap: optional :class:`RemapSpec` (the run's labels are replaced by the remapped ones).
        classes: optional subset of the vocabulary to evaluate (None: the whole dataset vocabulary).
        distance_mode: centre-distance matching of :meth:`Analysis.distance` ("3dmood" or "nuscenes").
        template: for a prompt-conditioned run (``per_template`` in the benchmark YAML), the template whose prediction
            file is scored (None: the run's default file).
        subset: a named image subset of the dataset (``image_subsets`` in the YAML): only its images are scored, GT
            and predictions alike (None: every image).
    """

    dataset: str
    run: str | None = None
    protocol: str = "dataset-level"
    min_score: float = 0.0
    iou: float = STATUS_IOU
    remap: RemapSpec | None = None
    classes: tuple[str, ...] | None = None
    distance_mode: str = "3dmood"
    template: str | None = None
    subset: str | None = None

    def __post_init__(self):
        if not isinstance(self.dataset, str) or not self.dataset:
            raise view_error("dataset", "a dataset name", self.dataset)
        if self.run is not None and (not isinstance(self.run, str) or not self.run):
            raise view_error("run", "a run name", self.run)
        if self.protocol not in PROTOCOLS:
            raise view_error("protocol", f"one of {PROTOCOLS}", self.protocol)
        object.__setattr__(self, "min_score", finite_number("min_score", self.min_score))
        object.__setattr__(self, "iou", finite_number("iou", self.iou, 0.0, 1.0, lo_open=True))
        if self.remap is not None and not isinstance(self.remap, RemapSpec):
            raise view_error("remap", "a RemapSpec or None", self.remap)
        if self.classes is not None:
            if isinstance(self.classes, str) or not all(isinstance(c, str) and c for c in self.classes):
                raise view_error("classes", "a tuple of category names", self.classes)
            classes = tuple(dict.fromkeys(self.classes))
            if not classes:
                raise view_error("classes", "at least one category name", self.classes)
            object.__setattr__(self, "classes", classes)
        if self.distance_mode not in DISTANCE_MODES:
            raise view_error("distance_mode", f"one of {DISTANCE_MODES}", self.distance_mode)
        if self.template is not None and (not isinstance(self.template, str) or not self.template):
            raise view_error("template", "a template id of the run's per_template files, or None", self.template)
        if self.subset is not None and (not isinstance(self.subset, str) or not self.subset):
            raise view_error("subset", "the name of an image subset of the dataset, or None", self.subset)
        if self.template is not None and self.remap is not None:
            # a prompt-conditioned run has a prediction file per template; remapping relabels one file's crops
            raise view_error("template", "None when remap is given (remapping relabels the run's own file)",
                             self.template)

    def with_(self, **changes) -> "View":
        return replace(self, **changes)

    @property
    def label(self) -> str:
        """A short human title: run (with * when remapped) on dataset, protocol, threshold."""
        run = (self.run or "all runs") + ("*" if self.remap else "") + (f" [{self.template}]" if self.template else "")
        extra = f", score ≥ {self.min_score:g}" if self.min_score > 0 else ""
        subset = f" · images: {self.subset}" if self.subset else ""
        return f"{run} on {self.dataset}{subset} · {self.protocol}{extra}"

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class RunFailure:
    """A run whose files could not be loaded: listed with its message, the other runs still load."""

    dataset: str
    run: str
    message: str


#: Columns of :meth:`Analysis.leaderboard`.
LEADERBOARD_COLUMNS = ["dataset", "run", "environment", "in_domain", "protocol", "n_images", "n_gt", "n_pred",
                       "n_out_of_vocabulary", *SUMMARY_KEYS]


#: Failure-mining lists of :meth:`Analysis.mine`.
MINING_KINDS = ("cross-class", "oracle-gain", "depth-error", "disagreement", "missed-by-all")


def positive_int(name: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or int(v) < 1:
        raise view_error(name, "a positive integer", v)
    return int(v)


def check_seed(v) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or int(v) < 0:
        raise view_error("seed", "a non-negative integer", v)
    return int(v)


def pair_names(a: View, b: View) -> tuple[str, str]:
    """Names of the two sides of a paired comparison: the runs, else the first field that differs."""
    if a.run != b.run:
        return a.run or "A", b.run or "B"
    if a.protocol != b.protocol:
        return a.protocol, b.protocol
    if a.remap != b.remap:
        if a.remap is None or b.remap is None:
            return ("own labels", "remapped") if a.remap is None else ("remapped", "own labels")
        for field_ in ("template", "theta", "encoder", "score_mode", "templates_file", "pad", "min_size"):
            va, vb = getattr(a.remap, field_), getattr(b.remap, field_)
            if va != vb:
                return f"{field_} {va}", f"{field_} {vb}"
    if a.min_score != b.min_score:
        return f"score ≥ {a.min_score:g}", f"score ≥ {b.min_score:g}"
    return "A", "B"


def score_key(view: View) -> tuple:
    """What a score depends on (the TP/FP IoU and the distance mode do not change AP)."""
    return (view.dataset, view.run, view.protocol, view.min_score, view.remap, view.classes, view.template,
            view.subset)


def restrict_classes(lv, classes: tuple[str, ...], vocabulary: Sequence[str], file: str):
    """A label view over the subset ``classes`` of ``vocabulary`` (in vocabulary order): other labels become -1."""
    unknown = [c for c in classes if c not in vocabulary]
    if unknown:
        raise InputError(None, "view", "classes", f"categories of the dataset vocabulary; {unknown} are not", unknown)
    sub = tuple(c for c in vocabulary if c in classes)
    lut = np.array([sub.index(c) if c in sub else -1 for c in lv.vocabulary] + [-1], np.int64)
    return lv.relabel(lut[np.where(lv.label >= 0, lv.label, len(lv.vocabulary))], vocabulary=sub)

