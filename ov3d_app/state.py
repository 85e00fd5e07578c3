"""Every ``st.session_state`` key of the app, its default, and its URL query-parameter mirror.

The key table and the conversions are pure (no streamlit import), so they are unit-tested directly:

- ``defaults()``: a fresh dict of every key's default.
- ``state_to_query(state) -> dict[str, str]``: the URL-mirrored keys that differ from their defaults, as strings.
- ``query_to_state(params) -> dict``: every URL-mirrored key, parsed from the params where valid, default otherwise
  (unknown params and bad values are ignored).

Values that depend on the loaded data (a dataset name, a run name, an image id) are only checked for type here; the
app checks them against the benchmark (``sanitize``) and falls back to the first valid choice.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ov3d_core.analysis import MINING_KINDS
from ov3d_core.eval.constants import PROTOCOLS

IOU_CHOICES = (0.15, 0.25, 0.5)
PRED_STATUSES = ("TP", "FP", "mislabelled", "ignored", "not evaluated")
GT_STATUSES = ("TP", "FN", "ignored")
ERROR_FILTERS = ("FP", "FN", "mislabelled", "TP")
CONF_LEVELS = ("fine", "super")
SOURCES = ("demo", "config")
COLOR_BY = ("status", "class")

_LIST_SEP = ","


@dataclass(frozen=True)
class Key:
    """One session-state key.

    Attributes:
        name: the ``st.session_state`` key.
        default: its default value (copied per session).
        kind: "str", "choice", "float", "int", "optint", "bool", "list", "cell" or "any".
        query: the URL query-parameter name, or None when the key is not mirrored.
        choices: allowed values for "choice" (and for the items of "list" when given).
        lo, hi: bounds for numbers.
        doc: what it holds.
    """

    name: str
    default: Any
    kind: str
    query: str | None = None
    choices: tuple | None = None
    lo: float | None = None
    hi: float | None = None
    doc: str = ""


KEYS: tuple[Key, ...] = (
    # data source and shared sidebar
    Key("source", "demo", "choice", "src", SOURCES, doc="demo benchmark or a benchmark YAML"),
    Key("config_path", "", "str", "cfg", doc="benchmark YAML path (source=config)"),
    Key("dataset", None, "str", "ds", doc="active dataset"),
    Key("runs", [], "list", "runs", doc="runs shown (empty: all runs of the dataset)"),
    Key("protocol", "dataset-level", "choice", "proto", PROTOCOLS, doc="evaluation protocol"),
    Key("min_score", 0.0, "float", "thr", lo=0.0, hi=1.0, doc="score threshold applied before scoring"),
    Key("iou", 0.25, "choice", "iou", IOU_CHOICES, doc="3D IoU at which TP/FP/FN statuses are drawn"),
    Key("subset", None, "str", "sub", doc="image subset of the dataset scored on every page (None: all images)"),
    # selection that several pages share
    Key("category", None, "str", "cat", doc="selected category (overview bar / leaderboard)"),
    Key("focus_run", None, "str", "run", doc="selected run (leaderboard row / confusion / oracle)"),
    # scene inspector
    Key("image_id", None, "optint", "img", doc="image shown in the scene inspector"),
    Key("f_classes", [], "list", "cls", doc="scene filter: classes (GT or prediction)"),
    Key("f_errors", [], "list", "err", ERROR_FILTERS, doc="scene filter: images with these statuses"),
    Key("f_run", "", "str", "frun", doc="scene filter: statuses of this run only ('': any shown run)"),
    Key("f_min_score", 0.0, "float", "fsc", lo=0.0, hi=1.0, doc="scene filter: hide predictions below"),
    Key("color_by", "status", "choice", "col", COLOR_BY, doc="box colour: by status or by class"),
    Key("show_3d", False, "bool", "3d", doc="show the 3D point-cloud view"),
    Key("highlight", None, "str", "hl", doc="box to highlight: 'run|pred|row' or 'gt|row'"),
    # confusion
    Key("conf_level", "fine", "choice", "lvl", CONF_LEVELS, doc="fine classes or super-categories"),
    Key("hide_diag", False, "bool", "nodiag", doc="hide the confusion diagonal"),
    Key("log_color", False, "bool", "log", doc="log colour scale"),
    Key("conf_norm", True, "bool", "norm", doc="row-normalised fractions (else counts)"),
    Key("conf_classes", [], "list", "ccls", doc="class subset of the matrix (empty: all)"),
    Key("conf_cell", None, "cell", "cell", doc="selected cell (gt name, predicted name)"),
    # failure mining and the object view
    Key("mine_kind", MINING_KINDS[0], "choice", "mine", MINING_KINDS, doc="failure-mining list shown"),
    Key("gt_row", None, "optint", "gt", lo=0, doc="GT object of the object view (a GT row of the dataset)"),
    # prompt lab
    Key("templates", [], "list", "tpl", doc="template ids evaluated in the prompt lab (empty: the preset)"),
    Key("template", None, "str", "tsel", doc="template whose remapped labels are shown"),
    Key("theta", None, "float", "theta", lo=-1.0, hi=1.0, doc="remapping similarity threshold (None: default)"),
    Key("custom_template", "", "str", None, doc="a template the user typed"),
    # splits / transfer
    Key("split_k", 10, "int", "k", lo=1, hi=1000, doc="classes per random subset"),
    Key("split_n", 2000, "int", "n", lo=10, hi=100000, doc="number of random subsets"),
    # lab-meeting support
    Key("presentation", False, "bool", "present", doc="presentation mode (big fonts, no sidebar)"),
    Key("saved_views", [], "any", None, doc="pinned views: list of {'title', 'page', 'params'}"),
    Key("view_idx", 0, "int", None, lo=0, doc="position in the pinned views"),
)

#: Keys that name things of one benchmark (its dataset, runs, a class, an image, a box): back to their defaults when
#: the user switches the data source, so that nothing of the previous benchmark is carried over.
BENCHMARK_KEYS: tuple[str, ...] = ("dataset", "runs", "subset", "category", "focus_run", "image_id", "f_classes",
                                   "f_run", "highlight", "conf_classes", "conf_cell", "gt_row")

#: Per page (its URL path, ``ui.PAGES``): the keys of that page's own view that a pinned view's title names, besides
#: the shared dataset, run, protocol, score threshold and IoU (``selection.pinned_title``). A key of another page (the
#: image last opened in the inspector, a confusion cell) stays in the view's parameters but not in its title.
PAGE_VIEW_KEYS: dict[str, tuple[str, ...]] = {
    "overview": ("category",), "scene": ("image_id",), "grid": (), "curves": (), "confusion": ("conf_level", "conf_cell"),
    "prompts": ("template",), "oracle": ("image_id",), "mining": ("mine_kind",), "object": ("gt_row",),
    "errors": (), "splits": (), "data": (),
}

BY_NAME: dict[str, Key] = {k.name: k for k in KEYS}
BY_QUERY: dict[str, Key] = {k.query: k for k in KEYS if k.query}
#: The URL-mirrored keys, in table order.
URL_KEYS: tuple[str, ...] = tuple(k.name for k in KEYS if k.query)


def defaults() -> dict[str, Any]:
    """A fresh dict with every key's default (lists copied)."""
    return {k.name: copy.deepcopy(k.default) for k in KEYS}


def benchmark_defaults() -> dict[str, Any]:
    """The defaults of ``BENCHMARK_KEYS`` (what a switch of data source resets)."""
    return {name: copy.deepcopy(BY_NAME[name].default) for name in BENCHMARK_KEYS}


# ------------------------------------------------------------------------------------------------ encode / decode
def _fmt_float(v: float) -> str:
    return f"{v:.6g}"


def _encode(key: Key, value: Any) -> str | None:
    if value is None:
        return None
    if key.kind == "bool":
        return "1" if value else "0"
    if key.kind in ("float",):
        return _fmt_float(float(value))
    if key.kind == "choice" and isinstance(value, float):
        return _fmt_float(value)
    if key.kind in ("int", "optint"):
        return str(int(value))
    if key.kind == "list":
        return _LIST_SEP.join(str(v) for v in value)
    if key.kind == "cell":
        return f"{value[0]}|{value[1]}"
    return str(value)


def _decode(key: Key, text: str) -> Any:
    """Parse one parameter; raises ValueError when invalid."""
    if key.kind == "str":
        return text
    if key.kind == "choice":
        for c in key.choices or ():
            if isinstance(c, float):
                try:
                    if math.isclose(float(text), c):
                        return c
                except ValueError:
                    continue
            elif text == c:
                return c
        raise ValueError(text)
    if key.kind == "bool":
        low = text.strip().lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise ValueError(text)
    if key.kind == "float":
        v = float(text)
        if not math.isfinite(v):
            raise ValueError(text)
        return _bounded(key, v)
    if key.kind in ("int", "optint"):
        return int(_bounded(key, int(text)))
    if key.kind == "list":
        items = [t for t in (s.strip() for s in text.split(_LIST_SEP)) if t]
        if key.choices is not None:
            items = [t for t in items if t in key.choices]
        return list(dict.fromkeys(items))
    if key.kind == "cell":
        a, sep, b = text.partition("|")
        if not sep or not a or not b:
            raise ValueError(text)
        return (a, b)
    raise ValueError(f"{key.name} is not URL-mirrored")


def _bounded(key: Key, v):
    if (key.lo is not None and v < key.lo) or (key.hi is not None and v > key.hi):
        raise ValueError(v)
    return v


def state_to_query(state: Mapping[str, Any]) -> dict[str, str]:
    """The URL query parameters for a state: every mirrored key whose value differs from its default.

    Keys missing from ``state`` are treated as defaults; ``config_path`` is only written for ``source=config``."""
    out: dict[str, str] = {}
    for name in URL_KEYS:
        key = BY_NAME[name]
        if name not in state:
            continue
        value = state[name]
        if value == key.default or (key.kind == "list" and not value):
            continue
        if name == "config_path" and state.get("source", "demo") != "config":
            continue
        text = _encode(key, value)
        if text is not None and text != "":
            out[key.query] = text
    return out


def query_to_state(params: Mapping[str, Any]) -> dict[str, Any]:
    """Every URL-mirrored key: the parsed parameter where present and valid, the default otherwise.

    ``params`` maps parameter names to a string or a list of strings (the last one wins, as in
    ``st.query_params``). Unknown parameters are ignored."""
    out = {name: copy.deepcopy(BY_NAME[name].default) for name in URL_KEYS}
    for qname, raw in params.items():
        key = BY_QUERY.get(qname)
        if key is None:
            continue
        if isinstance(raw, (list, tuple)):
            if not raw:
                continue
            raw = raw[-1]
        if not isinstance(raw, str):
            continue
        try:
            out[key.name] = _decode(key, raw)
        except (ValueError, TypeError):
            continue
    return out


def view_title(params: Mapping[str, str], page: str | None = None) -> str:
    """A short human title for a pinned view (page, dataset, image, cell, protocol)."""
    state = query_to_state(params)
    bits = [page or "view"]
    for name, fmt in (("dataset", "{}"), ("image_id", "image {}"), ("conf_cell", "{0[0]}→{0[1]}"),
                      ("gt_row", "GT {}"), ("category", "{}"), ("protocol", "{}")):
        v = state.get(name)
        if v is not None and v != BY_NAME[name].default:
            bits.append(fmt.format(v))
    return " · ".join(bits)


# ------------------------------------------------------------------------------------------------ sanitising
def sanitize(state: dict[str, Any], *, datasets: list[str], runs_of: Callable[[str], list[str]]) -> dict[str, Any]:
    """Values of data-dependent keys replaced by valid ones: an unknown dataset -> the first dataset, unknown runs
    dropped, an unknown focus run -> None. Returns only the keys that changed."""
    changed: dict[str, Any] = {}
    ds = state.get("dataset")
    if datasets and ds not in datasets:
        ds = datasets[0]
        changed["dataset"] = ds
    if ds is None:
        return changed
    names = runs_of(ds)
    runs = [r for r in (state.get("runs") or []) if r in names]
    if runs != list(state.get("runs") or []):
        changed["runs"] = runs
    if state.get("focus_run") is not None and state.get("focus_run") not in names:
        changed["focus_run"] = None
    return changed


def active_runs(state: Mapping[str, Any], available: list[str]) -> list[str]:
    """The runs a page shows: the selected ones in selection order, or every available run when none is selected."""
    chosen = [r for r in (state.get("runs") or []) if r in available]
    return chosen or list(available)
