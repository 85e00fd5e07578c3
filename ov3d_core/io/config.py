"""Benchmark config: which datasets (GT files, images, environment) and which runs (prediction files) to load.

A benchmark is described by a YAML file; relative paths in it are relative to the file. The schema is the pydantic
models below (``ConfigModel``, ``DatasetModel``, ``RunModel``), validated up front and strictly: a string is a
string (``5`` is not a name), a boolean is ``true``/``false`` (``'no'`` is not False), lists are lists (``chair`` is not
``[c, h, a, i, r]``), unknown keys are refused with a did-you-mean. docs/benchmark_yaml.md documents every key with
one full example; its key table is ``key_table_markdown()`` (a test keeps the two equal).

``load_config(path, allowed_roots=None)`` is the one entry point of the CLI and the app. It reads the file through
``ov3d_core.io.yaml_safe`` (size, depth and alias bounds; one-line errors naming the file and the line), validates
it, and returns the frozen ``BenchmarkConfig`` the rest of the code reads. With ``allowed_roots`` the config and
every path it names (GT, images, calib, depth / points patterns, predictions, crops, cache_dir) must resolve, after
symlinks, inside one of the roots (``ov3d_core.io.paths``).

Errors are ``InputError``s in one line: the file, the entry (``datasets[0]``), the key path inside it
(``subsets.base``), what was expected and the *kind* of what was found ("got an integer"), never the value: the app
shows these messages to whoever has the link, and the file may not be theirs.

Nothing here reads the GT or prediction files; ``ov3d_core.benchmark`` does that lazily.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import string
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import annotated_types
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import PydanticCustomError, PydanticUndefined

from ov3d_core.errors import InputError
from ov3d_core.io.ontology_file import load_ontology
from ov3d_core.io.paths import DATA_ROOT_ENV, check_under_roots, is_under_roots
from ov3d_core.io.yaml_safe import Kind, load_yaml_file
from ov3d_core.ontology import BUILTIN_ONTOLOGIES
from ov3d_core.remap.templates import BUILTIN_TEMPLATES, PROBENCH_TEMPLATES, PROBENCH_WRAPPED

ENVIRONMENTS = ("indoor", "outdoor")
DATASET_FORMATS = ("omni3d", "kitti")
RUN_FORMATS = ("auto", "cubercnn-json", "cubercnn-pth", "detany3d-json", "kitti")
DEFAULT_CACHE_DIR = ".ov3d_cache"


# ------------------------------------------------------------------------------------------------- output types
@dataclass(frozen=True)
class DatasetSpec:
    name: str
    gt: tuple[Path, ...]
    images: Path | None = None
    environment: str | None = None
    categories: tuple[str, ...] | None = None
    proximity: bool | None = None
    depth: str | None = None
    points: str | None = None
    subsets: dict = field(default_factory=dict)
    calib: Path | None = None  # KITTI: calib folder (gt is then the label_2 folder)
    format: str = "omni3d"     # omni3d | kitti
    name_from_file: bool = False  # CLI: report the GT file's info.name (or stem) rather than `name`
    #: Named image subsets: name -> ``Path`` of an id-list file (.txt / .json) or an ``ImageRule``; read by
    #: ``Benchmark.image_subset``. Left out of the repr (the load cache keys on it) so existing keys stay as they were.
    image_subsets: dict = field(default_factory=dict, repr=False)
    record: str | None = field(default=None, repr=False, compare=False)  # "datasets[i]" in the config, for errors


@dataclass(frozen=True)
class ImageRule:
    """A seeded image subset: ``n`` images drawn without replacement from the dataset's sorted image ids, by
    ``ov3d_core.demo.rng.Stream([seed, IMAGE_RULE_STREAM]).permutation`` (documented transforms of PCG64's raw
    words, so every machine and NumPy release draws the same ids); the first ``n`` of the permuted ids, sorted."""

    rule: str = "random"
    n: int = 1
    seed: int = 0


#: The second entropy word of an ``ImageRule``'s stream (the first is its seed).
IMAGE_RULE_STREAM = 0x1A6E5


@dataclass(frozen=True)
class DeclaredRuntime:
    """A run's own timing as its ``runtime:`` entry declares it (ms per image; None where not given)."""

    semantic_ms: float | None = None
    geometry_ms: float | None = None
    total_ms: float | None = None
    device: str | None = None
    images: int | None = None
    source: str | None = None


@dataclass(frozen=True)
class RunSpec:
    name: str
    dataset: str
    predictions: Path
    format: str = "auto"
    category_list: tuple[str, ...] | None = None
    trained_on: tuple[str, ...] = ()
    closed_vocabulary: tuple[str, ...] | None = None
    crops: Path | None = None
    description: str = ""
    runtime: DeclaredRuntime | None = None
    #: Prompt-conditioned detectors: template id -> its prediction file (same format as ``predictions``), in YAML
    #: order; ``predictions`` is then the run's default file. Out of the repr (a load-cache key) and of equality.
    per_template: dict = field(default_factory=dict, repr=False, compare=False)
    default_template: str | None = field(default=None, repr=False, compare=False)
    record: str | None = field(default=None, repr=False, compare=False)  # "runs[i]" in the config, for errors

    @property
    def key(self) -> tuple[str, str]:
        return (self.name, self.dataset)

    @property
    def in_domain(self) -> bool:
        return self.dataset in self.trained_on


@dataclass(frozen=True)
class BenchmarkConfig:
    name: str
    path: Path | None
    datasets: dict[str, DatasetSpec]
    runs: dict[tuple[str, str], RunSpec]
    cache_dir: Path
    ontology: Any = None  # ov3d_core.ontology.Ontology of `ontology:`; None: not given (the default, ov3d-bench)

    @property
    def run_names(self) -> list[str]:
        return list(dict.fromkeys(r.name for r in self.runs.values()))

    def runs_on(self, dataset: str) -> list[RunSpec]:
        return [r for r in self.runs.values() if r.dataset == dataset]


# ------------------------------------------------------------------------------------------------- the schema
@dataclass(frozen=True)
class Expect:
    """What a value must be, in words: used by error messages and by the documentation's type column."""

    text: str


def _one_or_many(v):
    return [v] if isinstance(v, str) else v


def _check_pattern(v: str) -> str:
    """A per-image file pattern: ``{image_id}`` (optionally with a format spec such as ``{image_id:06d}``) and no
    other field, conversion or attribute access."""
    got = None
    try:
        fields = [(name, conv) for _, name, _, conv in string.Formatter().parse(v) if name is not None]
        if not fields:
            got = "a pattern without {image_id} (every image would get the same file)"
        elif not all(n == "image_id" and c is None for n, c in fields):
            got = "a pattern with another field, an attribute or a conversion"
        else:
            v.format(image_id=0)
    except (ValueError, KeyError, IndexError, AttributeError, TypeError):
        got = "a pattern Python's str.format cannot fill"
    if got:
        raise PydanticCustomError("ov3d", "pattern", {"expected": "a path pattern whose only field is {image_id} "
                                  "(e.g. depth/{image_id}.png)", "got": got})
    return v


Name = Annotated[str, annotated_types.MinLen(1), Expect("a non-empty string")]
CategoryName = Annotated[str, annotated_types.MinLen(1), Expect("a category name (a non-empty string)")]
DatasetName = Annotated[str, annotated_types.MinLen(1), Expect("a dataset name (a non-empty string)")]
PathText = Annotated[str, annotated_types.MinLen(1), Expect("a path (a non-empty string)")]
Pattern = Annotated[str, annotated_types.MinLen(1), AfterValidator(_check_pattern),
                    Expect("a path pattern with {image_id}")]
CategoryNames = Annotated[list[CategoryName], annotated_types.MinLen(1), Expect("a non-empty list of category names")]
DatasetNames = Annotated[list[DatasetName], Expect("a list of dataset names")]
GtPaths = Annotated[list[PathText], annotated_types.MinLen(1), BeforeValidator(_one_or_many),
                    Expect("a path or a non-empty list of paths")]
Subsets = Annotated[dict[Name, CategoryNames], Expect("a mapping of subset name -> list of category names")]


def known_template_ids() -> tuple[str, ...]:
    """Template ids a ``per_template`` entry may name: the built-in ids (U1..U5, S1..S5, O1..O5) and Pro-Bench's
    (``PB-<type>``, ``PB-<type>-wrapped``), from ``ov3d_core.remap.templates``."""
    return tuple(t.id for t in (*BUILTIN_TEMPLATES, *PROBENCH_TEMPLATES, *PROBENCH_WRAPPED))


def _check_template_id(v: str) -> str:
    known = known_template_ids()
    if v not in known:
        hint = _did_you_mean(v, known)
        raise PydanticCustomError("ov3d", "template", {
            "expected": f"a template id of ov3d_core.remap.templates{hint} (built-in U1-U5, S1-S5, O1-O5 or "
                        "Pro-Bench PB-<type>, PB-<type>-wrapped)", "got": "an unknown template id"})
    return v


TemplateId = Annotated[str, annotated_types.MinLen(1), AfterValidator(_check_template_id),
                       Expect("a template id (e.g. S1, PB-attributive)")]
PerTemplate = Annotated[dict[TemplateId, Annotated[str, annotated_types.MinLen(1),
                                                    Expect("a path (a non-empty string)")]],
                        annotated_types.MinLen(1), Expect("a non-empty mapping of template id -> prediction file")]


class ImageRuleModel(BaseModel):
    """A seeded image subset rule (``{rule: random, n: 500, seed: 0}``)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    expect: ClassVar[str] = "a rule (a mapping with `rule: random`, `n` and optionally `seed`)"

    rule: Literal["random"] = Field(description="`random`: n images drawn without replacement.")
    n: Annotated[int, annotated_types.Ge(1), Expect("a positive integer")] = Field(description="How many images.")
    seed: Annotated[int, annotated_types.Ge(0), Expect("a whole number >= 0")] = Field(0, description="The seed.")


def _image_subset_value(v):
    """An ``image_subsets`` value: a non-empty string (an id-list file) or a rule mapping (``ImageRuleModel``)."""
    if isinstance(v, str) and v:
        return v
    if isinstance(v, dict):
        try:
            return ImageRuleModel.model_validate(v)
        except ValidationError as exc:
            err = exc.errors(include_url=False)[0]
            key = ".".join(str(p) for p in err["loc"] if p != "[key]") or "rule"
            if err["type"] == "extra_forbidden":
                expected = "a rule with only `rule`, `n` and `seed`"
                got = "an unknown key"
            elif err["type"] == "missing":
                expected, got = f"a rule with `{key}`", "nothing"
            else:
                t = typing.get_type_hints(ImageRuleModel, include_extras=True).get(key)
                expected = f"a rule whose `{key}` is " + ("random" if key == "rule" else describe(t) if t is not None
                                                           else "a valid value")
                got = str(kind_of(err.get("input"))) if not isinstance(err.get("input"), str) else "another string"
            raise PydanticCustomError("ov3d", "image_rule", {"expected": expected, "got": got}) from None
    raise PydanticCustomError("ov3d", "image_subset", {
        "expected": "an id-list file (.txt one id a line, or .json list) or a rule {rule: random, n: N, seed: S}",
        "got": str(kind_of(v))})


ImageSubsetValue = Annotated[Any, AfterValidator(_image_subset_value), Expect(
    "an id-list file (.txt one id a line, or .json list) or a rule {rule: random, n: N, seed: S}")]
ImageSubsets = Annotated[dict[Name, ImageSubsetValue], Expect(
    "a mapping of subset name -> id-list file or {rule: random, n, seed}")]
def _check_plain(v):
    if v is not None and not isinstance(v, (str, int, float, bool)):
        raise PydanticCustomError("ov3d", "plain", {"expected": "a plain value (a string, number or boolean)",
                                                    "got": str(kind_of(v))})
    return v


PlainValue = Annotated[Any, AfterValidator(_check_plain)]
Generator = Annotated[dict[Name, PlainValue], Expect("a mapping of names to plain values")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    expect: ClassVar[str] = "a mapping"


class DatasetModel(_Strict):
    """One dataset: its GT and where its images and per-image assets are."""

    expect: ClassVar[str] = "a dataset (a mapping with at least `name` and `gt`)"

    name: Name = Field(description="Unique name of the dataset; runs refer to it.")
    gt: GtPaths = Field(description="Omni3D GT JSON file(s), concatenated in order; for `format: kitti` the "
                                    "`label_2` folder.")
    images: PathText | None = Field(None, description="Root that the GT's image `file_path` values are relative "
                                                      "to (for KITTI: the `image_2` folder).")
    environment: Literal["indoor", "outdoor"] | None = Field(
        None, description="Domain-transfer pairs stay within one environment; unset: not counted in transfer tables.")
    categories: CategoryNames | None = Field(None, description="Evaluated vocabulary (default: the GT file's "
                                                               "categories).")
    proximity: bool | None = Field(None, description="Proximity evaluation (default: Omni3D's rule: on for "
                                                     "names containing SUNRGBD or Objectron).")
    depth: Pattern | None = Field(None, description="Per-image depth map file pattern (.npz / .npy in metres, "
                                                    "16-bit .png / .tif in millimetres).")
    points: Pattern | None = Field(None, description="Per-image point cloud file pattern (.ply / .pcd).")
    subsets: Subsets | None = Field(None, description="Named category subsets whose mean AP is reported "
                                                      "(e.g. base / novel).")
    calib: PathText | None = Field(None, description="KITTI only: the `calib` folder (P2 of each image).")
    format: Literal["omni3d", "kitti"] = Field("omni3d", description="GT format.")
    image_subsets: ImageSubsets | None = Field(
        None, description="Named image subsets: an id-list file (.txt one image id a line, or a .json list) or a "
                          "seeded rule `{rule: random, n: 500, seed: 0}` (n of the sorted image ids, drawn by "
                          "ov3d_core.demo.rng.Stream([seed, 0x1A6E5]).permutation).")


Milliseconds = Annotated[float, Field(ge=0, allow_inf_nan=False),
                         Expect("a finite number of milliseconds per image, >= 0")]


class RuntimeModel(_Strict):
    """A run's own per-image timing (OV3D-Bench Table 10), as its authors measured it."""

    expect: ClassVar[str] = "a mapping with `semantic_ms`, `geometry_ms` and/or `total_ms`"

    semantic_ms: Milliseconds | None = Field(None, description="Semantic stage (e.g. GroundingDINO, crop encoding).")
    geometry_ms: Milliseconds | None = Field(None, description="Geometry stage (the 3D detector).")
    total_ms: Milliseconds | None = Field(None, description="End to end (default: semantic + geometry).")
    device: Name | None = Field(None, description="Where it was measured (e.g. H100 NVL).")
    images: Annotated[int, annotated_types.Ge(1), Expect("a positive integer")] | None = Field(
        None, description="Images timed.")
    source: Name | None = Field(None, description="Where the numbers come from (e.g. paper Table 10).")

    @model_validator(mode="after")
    def _some_time(self):
        if self.semantic_ms is None and self.geometry_ms is None and self.total_ms is None:
            raise PydanticCustomError("ov3d", "runtime", {"expected": "a mapping with at least one of `semantic_ms`, "
                                      "`geometry_ms`, `total_ms`", "got": "none of them"})
        return self


class RunModel(_Strict):
    """One prediction file of one method on one dataset."""

    expect: ClassVar[str] = "a run (a mapping with at least `name`, `dataset` and `predictions` or `per_template`)"

    name: Name = Field(description="Method name; the same name on several datasets is one method.")
    dataset: DatasetName = Field(description="The `name` of the dataset these predictions are for.")
    predictions: PathText | None = Field(
        None, description="Prediction file (.json, .pth) or, for `format: kitti`, the folder of result .txt files; "
                          "required unless `per_template` is given (then default: the `default_template`'s file).")
    format: Literal["auto", "cubercnn-json", "cubercnn-pth", "detany3d-json", "kitti"] = Field(
        "auto", description="`auto`: .pth is cubercnn-pth, .json is cubercnn-json.")
    category_list: CategoryNames | None = Field(
        None, description="Contiguous category id -> name (index = id): the model's training classes, needed for "
                          "a .pth.")
    trained_on: DatasetNames | None = Field(None, description="Datasets the method was trained on (in-domain); "
                                                              "may name datasets not in this config.")
    closed_vocabulary: CategoryNames | None = Field(
        None, description="A closed-vocabulary detector's own labels (what remapping maps from).")
    crops: PathText | None = Field(None, description="Crop descriptors of the predictions (JSON, for remapping).")
    description: str = Field("", description="One line shown beside the run.")
    runtime: RuntimeModel | None = Field(None, description="The run's own ms per image by stage (`semantic_ms`, "
                                         "`geometry_ms`, `total_ms`, `device`, `images`, `source`): Table 10.")
    per_template: PerTemplate | None = Field(
        None, description="Prompt-conditioned detectors: template id (S1, PB-attributive, ...) -> prediction file "
                          "of that prompt (same format as `predictions`).")
    default_template: TemplateId | None = Field(
        None, description="The `per_template` id whose file is the run's default when `predictions` is not given "
                          "(default: the first listed).")


class ConfigModel(_Strict):
    """The whole benchmark file."""

    expect: ClassVar[str] = "a mapping with `datasets` (and `runs`)"

    name: Name | None = Field(None, description="Benchmark name (default: the file name without extension).")
    cache_dir: PathText = Field(DEFAULT_CACHE_DIR, description="Folder of the geometry and load caches.")
    datasets: Annotated[list[DatasetModel], annotated_types.MinLen(1), Expect("a non-empty list of datasets")] = \
        Field(description="The datasets (at least one).")
    runs: Annotated[list[RunModel], Expect("a list of runs")] | None = Field(
        None, description="The runs (none: a benchmark of GT only).")
    ontology: PathText | None = Field(None, description="Super-category ontology of the confusion tables: "
                                      "`ov3d-bench` (the paper's 9; the default), `ov3d-explorer-10`, or an "
                                      "ontology file (YAML / JSON).")
    generator: Generator | None = Field(None, description="Written by the tool that generated the file (the demo "
                                                          "build); not read.")


# ------------------------------------------------------------------------------------------------- error text
_KINDS: tuple[tuple[type, str], ...] = (
    (bool, "a boolean"), (int, "an integer"), (float, "a number"), (list, "a list"), (dict, "a mapping"),
    (_dt.datetime, "a date and time"), (_dt.date, "a date"), (bytes, "binary data"), ((set, frozenset), "a set"))


def kind_of(value: Any) -> Kind:
    """What ``value`` is, in words, never what it says ("a string", "an empty list", "null")."""
    if value is None:
        return Kind("null (nothing)")
    if isinstance(value, str):
        return Kind("an empty string" if not value else "a string")
    if isinstance(value, (list, dict)) and not value:
        return Kind("an empty list" if isinstance(value, list) else "an empty mapping")
    for typ, text in _KINDS:
        if isinstance(value, typ):
            return Kind(text)
    return Kind(f"a value of type {type(value).__name__}")


def _unwrap(t) -> tuple[Any, list]:
    """``Annotated[X, *meta]`` -> (X, meta); ``X | None`` -> X."""
    meta: list = []
    while True:
        if typing.get_origin(t) is Annotated:
            t, *m = typing.get_args(t)
            meta = [*m, *meta]
            continue
        args = typing.get_args(t)
        if typing.get_origin(t) in (typing.Union, types.UnionType) and type(None) in args:
            rest = [a for a in args if a is not type(None)]
            if len(rest) == 1:
                t = rest[0]
                continue
        return t, meta


def describe(t) -> str:
    """The type ``t`` of the schema in words ("a non-empty list of category names", "true or false")."""
    base, meta = _unwrap(t)
    for m in meta:
        if isinstance(m, Expect):
            return m.text
    if isinstance(base, type) and issubclass(base, BaseModel):
        return base.expect
    if typing.get_origin(base) is Literal:
        return "one of " + ", ".join(map(str, typing.get_args(base)))
    if base is bool:
        return "true or false"
    if base is str:
        return "a string"
    origin = typing.get_origin(base)
    if origin is list:
        return "a list"
    if origin is dict:
        return "a mapping"
    return getattr(base, "__name__", str(base))


def _hints(model: type[BaseModel]) -> dict:
    return typing.get_type_hints(model, include_extras=True)


def _type_at(loc: tuple) -> tuple[Any, bool]:
    """The schema type at an error location, and whether the location is a mapping key (pydantic's ``[key]``)."""
    if loc and loc[-1] == "[key]":  # (..., mapping, key, "[key]"): the key type of that mapping
        owner, _ = _type_at(loc[:-2])
        base, _ = _unwrap(owner)
        return (typing.get_args(base)[0] if typing.get_origin(base) is dict else None), True
    t: Any = ConfigModel
    for part in loc:
        base, _ = _unwrap(t)
        if isinstance(base, type) and issubclass(base, BaseModel):
            hints = _hints(base)
            if part not in hints or part == "expect":
                return None, False
            t = hints[part]
        elif typing.get_origin(base) is list:
            t = typing.get_args(base)[0]
        elif typing.get_origin(base) is dict:
            t = typing.get_args(base)[1]
        else:
            return None, False
    return t, False


def _fields_of(loc: tuple) -> list[str]:
    t, _ = _type_at(loc)
    base, _ = _unwrap(t)
    return [k for k in _hints(base) if k != "expect"] if isinstance(base, type) and issubclass(base, BaseModel) else []


def _short_key(key: Any) -> str:
    text = str(key)
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text if len(text) <= 40 else text[:39] + "…"


def _split_loc(loc: tuple) -> tuple[str | None, str | None]:
    """(record, key path) of a location: ``('datasets', 0, 'subsets', 'base')`` -> ``('datasets[0]',
    'subsets.base')``; a top-level key is its own key path."""
    parts = [p for p in loc if p != "[key]"]
    if not parts:
        return None, None
    if len(parts) >= 2 and parts[0] in ("datasets", "runs") and isinstance(parts[1], int):
        record, rest = f"{parts[0]}[{parts[1]}]", parts[2:]
    else:
        record, rest = None, parts
    path = ""
    for p in rest:
        path += f"[{p}]" if isinstance(p, int) else (f".{_short_key(p)}" if path else _short_key(p))
    return record, path or None


def _did_you_mean(word: Any, choices) -> str:
    if not isinstance(word, str):
        return ""
    lower = {c.lower(): c for c in choices}
    close = difflib.get_close_matches(word.lower(), list(lower), n=1, cutoff=0.6)
    return f" (did you mean `{lower[close[0]]}`?)" if close else ""


def _validation_error(file: str, exc: ValidationError) -> InputError:
    errors = exc.errors(include_url=False)
    err = errors[0]
    more = f"; {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''} after this one" if len(errors) > 1 \
        else ""
    loc, typ, value = tuple(err["loc"]), err["type"], err.get("input")
    record, path = _split_loc(loc)
    if typ == "model_type" and not loc:
        return InputError(file, None, None, f"the document to be {ConfigModel.expect}",
                          Kind(("an empty document" if value is None else kind_of(value)) + more))
    if typ == "extra_forbidden":
        fields = _fields_of(loc[:-1])
        hint = _did_you_mean(loc[-1], fields) or f" (one of: {', '.join(fields)})"
        return InputError(file, record, path, f"a known key{hint}", Kind("an unknown key" + more))
    if typ == "invalid_key":
        owner_record, owner = _split_loc(loc[:-1])
        return InputError(file, owner_record, owner, "a mapping whose keys are names (strings)",
                          Kind(f"a key that is {kind_of(value)}{more}"))
    if typ == "ov3d":  # our own checks (a template id key included: it names the key, e.g. per_template.S9)
        return InputError(file, record, path, err["ctx"]["expected"], Kind(err["ctx"]["got"] + more))
    t, is_key = _type_at(loc)
    expected = describe(t) if t is not None else "a valid value"
    if is_key:  # name the mapping, not the key (which may not be printable as a path)
        record, path = _split_loc(loc[:-2])
        return InputError(file, record, path, f"a mapping whose keys are each {expected}",
                          Kind(f"a key that is {kind_of(value)}{more}"))
    if typ == "missing":
        return InputError(file, record, path, f"{expected} (required)", Kind("nothing" + more))
    if typ == "ov3d":
        return InputError(file, record, path, err["ctx"]["expected"], Kind(err["ctx"]["got"] + more))
    got = kind_of(value)
    if typ == "literal_error":
        base, _ = _unwrap(t)
        expected += _did_you_mean(value, map(str, typing.get_args(base)))
        if isinstance(value, str) and value:
            got = Kind("another string")
    elif isinstance(value, (int, float, _dt.date)) and _unwrap(t)[0] is str:
        got = Kind(f"{got} (quote it to make it a string)")
    return InputError(file, record, path, expected, Kind(got + more))


# ------------------------------------------------------------------------------------------------- loading
def load_config(path: str | Path, *, allowed_roots=None) -> BenchmarkConfig:
    """Read, bound and validate a benchmark YAML file (``InputError`` on any problem, naming the file, the entry,
    the key and the expected type).

    ``allowed_roots``: when given (an iterable of folders), the config and every path it names must resolve, after
    symlinks, inside one of them; the app passes ``ov3d_core.io.paths.default_roots(...)``. Errors about the file's
    place name only its basename.
    """
    path = Path(path)
    if allowed_roots is not None:
        allowed_roots = tuple(allowed_roots)
        check_under_roots(path, allowed_roots, what="a benchmark config")
    doc = load_yaml_file(path, file=str(path))
    return parse_config(doc, file=str(path), base=path.parent, path=path, allowed_roots=allowed_roots)


def parse_config(doc: Any, *, file: str, base: Path, path: Path | None = None,
                 allowed_roots=None) -> BenchmarkConfig:
    """Validate parsed YAML ``doc`` (relative paths are relative to ``base``) into a ``BenchmarkConfig``."""
    try:
        model = ConfigModel.model_validate(doc)
    except ValidationError as exc:
        raise _validation_error(file, exc) from None
    _check_cross_references(file, model)

    def rel(p: str) -> Path:
        q = Path(p).expanduser()
        return q if q.is_absolute() else base / q

    def names(v) -> tuple[str, ...] | None:
        return None if v is None else tuple(v)

    datasets = {
        d.name: DatasetSpec(
            name=d.name, gt=tuple(rel(g) for g in d.gt), images=rel(d.images) if d.images else None,
            environment=d.environment, categories=names(d.categories), proximity=d.proximity, depth=d.depth,
            points=d.points, subsets={k: tuple(v) for k, v in (d.subsets or {}).items()},
            calib=rel(d.calib) if d.calib else None, format=d.format,
            image_subsets={k: (rel(v) if isinstance(v, str) else ImageRule(v.rule, v.n, v.seed))
                           for k, v in (d.image_subsets or {}).items()},
            record=f"datasets[{i}]")
        for i, d in enumerate(model.datasets)}
    runs = {
        (r.name, r.dataset): RunSpec(
            name=r.name, dataset=r.dataset, predictions=rel(_default_predictions(r)), format=r.format,
            category_list=names(r.category_list), trained_on=tuple(r.trained_on or ()),
            closed_vocabulary=names(r.closed_vocabulary), crops=rel(r.crops) if r.crops else None,
            description=r.description,
            runtime=DeclaredRuntime(**r.runtime.model_dump()) if r.runtime is not None else None,
            per_template={t: rel(f) for t, f in (r.per_template or {}).items()},
            default_template=(r.default_template or next(iter(r.per_template))) if r.per_template else None,
            record=f"runs[{i}]")
        for i, r in enumerate(model.runs or ())}
    name = model.name or (path.stem if path is not None else "benchmark")
    config = BenchmarkConfig(name=name, path=path, datasets=datasets, runs=runs, cache_dir=rel(model.cache_dir),
                             ontology=_ontology(model.ontology, rel, file, allowed_roots))
    if allowed_roots is not None:
        check_config_roots(config, allowed_roots, file=file)
    return config


def _default_predictions(r: RunModel) -> str:
    """A run's default file: ``predictions``, else its ``default_template``'s (else the first listed) file."""
    if r.predictions is not None:
        return r.predictions
    return r.per_template[r.default_template or next(iter(r.per_template))]


def _ontology(value: str | None, rel, file: str, allowed_roots):
    """The `ontology:` of a config: a built-in by name, else an ontology file relative to the config (read now, so
    that its problems are reported before anything is scored)."""
    if value is None:
        return None
    if value in BUILTIN_ONTOLOGIES:
        return BUILTIN_ONTOLOGIES[value]
    p = rel(value)
    if allowed_roots is not None and not is_under_roots(p, tuple(allowed_roots)):
        raise InputError(file, None, "ontology", "a path inside the allowed data roots", Kind("a path outside them"))
    if not p.is_file():
        raise InputError(file, None, "ontology", f"one of {', '.join(BUILTIN_ONTOLOGIES)}, or the path of an "
                         "ontology file (YAML or JSON)", Kind("a name of neither"))
    return load_ontology(p)


def _check_cross_references(file: str, model: ConfigModel) -> None:
    """What one entry alone cannot tell: unique names, runs naming defined datasets, KITTI's calib."""
    first: dict[str, int] = {}
    for i, d in enumerate(model.datasets):
        if d.name in first:
            raise InputError(file, f"datasets[{i}]", "name", "a name no other dataset has",
                             Kind(f"the name of datasets[{first[d.name]}]"))
        first[d.name] = i
        if d.format == "kitti":
            if d.calib is None:
                raise InputError(file, f"datasets[{i}]", "calib", "the KITTI calib folder (format: kitti)",
                                 Kind("nothing"))
            if len(d.gt) != 1:
                raise InputError(file, f"datasets[{i}]", "gt", "one label_2 folder (format: kitti)",
                                 Kind(f"{len(d.gt)} paths"))
    seen: dict[tuple[str, str], int] = {}
    for i, r in enumerate(model.runs or ()):
        if r.dataset not in first:
            lower = {n.lower(): n for n in first}
            close = difflib.get_close_matches(r.dataset.lower(), list(lower), n=1, cutoff=0.6)
            hint = f" (closest: the name of datasets[{first[lower[close[0]]]}])" if close else ""
            raise InputError(file, f"runs[{i}]", "dataset", f"the name of a dataset under `datasets`{hint}",
                             Kind("a name no dataset has"))
        if (r.name, r.dataset) in seen:
            raise InputError(file, f"runs[{i}]", "name", "a run name used once per dataset",
                             Kind(f"the name and dataset of runs[{seen[(r.name, r.dataset)]}] again"))
        seen[(r.name, r.dataset)] = i
        if r.predictions is None and r.per_template is None:
            raise InputError(file, f"runs[{i}]", "predictions", "a path (required), or a `per_template` mapping",
                             Kind("nothing"))
        if r.default_template is not None and r.default_template not in (r.per_template or {}):
            raise InputError(file, f"runs[{i}]", "default_template", "one of the run's `per_template` ids",
                             Kind("an id not among them"))


def config_paths(config: BenchmarkConfig) -> list[tuple[str, str, Path]]:
    """Every path a config names, as (record, key, path): GT files, images, calib, the folder part of the depth /
    points patterns (formatted with image id 0), predictions, crops and cache_dir."""
    base = config.path.parent if config.path is not None else Path(".")
    out: list[tuple[str, str, Path]] = []
    for i, d in enumerate(config.datasets.values()):
        rec = f"datasets[{i}]"
        out += [(rec, f"gt[{j}]" if len(d.gt) > 1 else "gt", g) for j, g in enumerate(d.gt)]
        out += [(rec, k, p) for k, p in (("images", d.images), ("calib", d.calib)) if p is not None]
        for k, pattern in (("depth", d.depth), ("points", d.points)):
            if pattern:
                q = Path(pattern.format(image_id=0)).expanduser()
                out.append((rec, k, q if q.is_absolute() else base / q))
        out += [(rec, f"image_subsets.{k}", p) for k, p in d.image_subsets.items() if isinstance(p, Path)]
    for i, r in enumerate(config.runs.values()):
        rec = f"runs[{i}]"
        out.append((rec, "predictions", r.predictions))
        out += [(rec, f"per_template.{t}", p) for t, p in r.per_template.items()]
        if r.crops is not None:
            out.append((rec, "crops", r.crops))
    out.append((None, "cache_dir", config.cache_dir))
    return out


def check_config_roots(config: BenchmarkConfig, roots, *, file: str | None = None) -> None:
    """``InputError`` (naming the entry and key, not the path) for the first path of ``config`` outside ``roots``."""
    roots = tuple(roots)
    label = file if file is not None else (config.path.name if config.path is not None else "<config>")
    for record, key, p in config_paths(config):
        if not is_under_roots(p, roots):
            raise InputError(label, record, key, f"a path inside the allowed data roots (--data-root or "
                             f"${DATA_ROOT_ENV}, the demo folder)", Kind("a path outside them"))


def config_from_files(gt: list[str | Path], predictions: list[str | Path], *, run_names: list[str] | None = None,
                      formats: list[str] | None = None, category_list: tuple[str, ...] | None = None,
                      cache_dir: str | Path | None = None, dataset_name: str | None = None) -> BenchmarkConfig:
    """A one-dataset config from GT files and prediction files (what the CLI's ``evaluate`` builds)."""
    gt = tuple(Path(g) for g in gt)
    ds = DatasetSpec(name=dataset_name or "+".join(g.stem for g in gt), gt=gt, images=gt[0].parent,
                     name_from_file=dataset_name is None)
    runs = {}
    for i, p in enumerate(predictions):
        p = Path(p)
        name = run_names[i] if run_names and i < len(run_names) else _default_run_name(p)
        fmt = formats[i] if formats and i < len(formats) else "auto"
        runs[(name, ds.name)] = RunSpec(name=name, dataset=ds.name, predictions=p, format=fmt,
                                        category_list=category_list)
    cache = Path(cache_dir) if cache_dir else Path(DEFAULT_CACHE_DIR)
    return BenchmarkConfig(name="cli", path=None, datasets={ds.name: ds}, runs=runs, cache_dir=cache)


def _default_run_name(p: Path) -> str:
    # omni_instances_results.json / instances_predictions.pth carry no name: use the folder.
    if p.stem in ("omni_instances_results", "instances_predictions") and p.parent.name:
        return p.parent.name
    return p.stem


# ------------------------------------------------------------------------------------------------- documentation
def schema_rows() -> list[tuple[str, str, str, str]]:
    """(key, type, default, meaning) of every key of the schema, from the models (docs/benchmark_yaml.md's table)."""
    rows: list[tuple[str, str, str, str]] = []
    for prefix, model in (("", ConfigModel), ("datasets[].", DatasetModel), ("runs[].", RunModel)):
        for name, info in model.model_fields.items():
            typ = describe(_hints(model)[name])
            if info.is_required():
                default = "required"
            elif info.default is None or info.default is PydanticUndefined:
                default = "—"
            else:
                default = f"`{info.default}`" if info.default != "" else '`""`'
            rows.append((prefix + name, typ, default, info.description or ""))
    return rows


def key_table_markdown() -> str:
    """The Markdown key table of docs/benchmark_yaml.md (generated; a test checks the doc holds it verbatim)."""
    lines = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for key, typ, default, meaning in schema_rows():
        lines.append(f"| `{key}` | {typ} | {default} | {meaning} |".replace("{image_id}", "`{image_id}`"))
    return "\n".join(lines)


__all__ = ["BenchmarkConfig", "ConfigModel", "DatasetModel", "DatasetSpec", "DeclaredRuntime", "ENVIRONMENTS",
           "IMAGE_RULE_STREAM", "ImageRule", "ImageRuleModel", "known_template_ids",
           "RUN_FORMATS", "RunModel", "RunSpec", "check_config_roots", "config_from_files", "config_paths", "describe", "key_table_markdown",
           "kind_of", "load_config", "parse_config", "schema_rows"]
