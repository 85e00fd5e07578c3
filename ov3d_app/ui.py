"""Streamlit glue shared by app.py and the pages: state initialisation and widget binding, URL mirroring, the
page context, error handling, and export buttons.

State lives under the canonical keys of ``ov3d_app.state``. A widget never owns a canonical key: ``bind(name)``
gives it its own key (``w:<name>[:suffix]``) initialised from the canonical value, and its ``on_change`` copies
the value back. Writing a canonical key anywhere (a click on a chart, a pinned view, a test) therefore updates
every widget bound to it on the next run, and page-local widgets survive page switches.

A widget that was not drawn in the previous run is (re)mounted by the browser, which shows only what the server
sends with it; ``bind`` then hands it the canonical value again. (A run that ends in ``st.stop()`` keeps stale
widget values in the session, so "the key is still there" does not mean the browser still shows it.)
"""

from __future__ import annotations

import contextlib
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import streamlit as st

from ov3d_app import state as S
from ov3d_core.errors import InputError

_W = "w:"
_SYNC = "s:"
_SEEN = "b:"          # the run in which a widget was last bound
_RUN = "_ov3d_run"    # script runs of this session (app.py's ``init_state`` counts them)
_WARN_SLOT = "_ov3d_warn_slot"  # this run's place for load warnings, under the page header (``need_context``)

#: Pages: file, title, icon, url path (app.py registers them in this order; the first is the default).
PAGES = (
    ("app_pages/overview.py", "Overview", ":material/leaderboard:", "overview"),
    ("app_pages/scene.py", "Scene inspector", ":material/view_in_ar:", "scene"),
    ("app_pages/grid.py", "Sample grid", ":material/grid_view:", "grid"),
    ("app_pages/curves.py", "PR curves", ":material/show_chart:", "curves"),
    ("app_pages/confusion.py", "Confusion", ":material/grid_on:", "confusion"),
    ("app_pages/prompt_lab.py", "Prompt lab", ":material/text_fields:", "prompts"),
    ("app_pages/robustness.py", "Prompt robustness", ":material/balance:", "robustness"),
    ("app_pages/oracle.py", "Oracle", ":material/visibility_off:", "oracle"),
    ("app_pages/mining.py", "Failure mining", ":material/manage_search:", "mining"),
    ("app_pages/object.py", "Object view", ":material/center_focus_strong:", "object"),
    ("app_pages/errors.py", "Error breakdown", ":material/troubleshoot:", "errors"),
    ("app_pages/splits.py", "Splits & transfer", ":material/call_split:", "splits"),
    ("app_pages/data_source.py", "Data source", ":material/folder_open:", "data"),
)
PAGE_FILE = {url: f for f, _, _, url in PAGES}
PAGE_TITLE = {url: t for _, t, _, url in PAGES}


# ================================================================================================ state
def init_state() -> None:
    """Every run (counted); once per session: defaults, overridden by the URL's query parameters."""
    ss = st.session_state
    ss[_RUN] = ss.get(_RUN, 0) + 1
    ss.pop(_WARN_SLOT, None)  # the load-warning slot of the previous run's page
    if ss.get("_ov3d_init"):
        return
    from_url = S.query_to_state(st.query_params.to_dict())
    for name, value in S.defaults().items():
        if name not in ss:
            ss[name] = from_url.get(name, value)
    ss["_ov3d_init"] = True


def get(name: str) -> Any:
    return st.session_state.get(name, S.BY_NAME[name].default if name in S.BY_NAME else None)


def set_state(**values) -> None:
    """Write canonical keys (widgets bound to them follow on the next run)."""
    for k, v in values.items():
        if k not in S.BY_NAME:
            raise KeyError(f"unknown state key {k!r}")
        st.session_state[k] = v


def switch_source(**source) -> None:
    """Switch the data source (``source``, ``config_path``) and forget the selection of the previous benchmark
    (``state.BENCHMARK_KEYS``); the protocol, threshold, IoU and page settings stay."""
    set_state(**S.benchmark_defaults(), **source)


def _copy_back(name: str, wkey: str) -> None:
    value = st.session_state[wkey]
    st.session_state[name] = value
    st.session_state[_SYNC + wkey] = value


def bind(name: str, suffix: str = "", on_change: Callable | None = None) -> dict:
    """Keyword arguments (``key``, ``on_change``) that bind a widget to canonical key ``name``.

    Call right before creating the widget, and give the widget no default (``value``/``index``/``default``):
    its value comes from the canonical key."""
    ss = st.session_state
    wkey = f"{_W}{name}{suffix}"
    sync = _SYNC + wkey
    run = ss.get(_RUN, 0)
    mounted = ss.get(_SEEN + wkey) in (run, run - 1)  # drawn in this run (a fragment) or the previous one
    if not mounted or wkey not in ss or ss.get(sync) != ss.get(name):
        ss[wkey] = ss.get(name)
    ss[sync] = ss.get(name)
    ss[_SEEN + wkey] = run

    def cb():
        _copy_back(name, wkey)
        if on_change is not None:
            on_change()

    return {"key": wkey, "on_change": cb}


def ensure_valid(name: str, options: list) -> None:
    """Make the canonical value of a single-choice key one of ``options`` (the first one if it is not), before
    binding a selectbox or radio to it."""
    if options and get(name) not in options:
        st.session_state[name] = options[0]


def ensure_subset(name: str, options: list) -> None:
    """Drop values of a multi-choice key that are not among ``options`` (before binding a multiselect)."""
    cur = get(name) or []
    keep = [v for v in cur if v in options]
    if keep != list(cur):
        st.session_state[name] = keep


def sync_query_params() -> None:
    """Mirror the URL-mirrored state to ``st.query_params`` (only when it changed)."""
    want = S.state_to_query({k: st.session_state.get(k) for k in S.URL_KEYS})
    have = st.query_params.to_dict()
    if have != want:
        st.query_params.from_dict(want)


def current_view() -> dict:
    """The current view as a pinnable snapshot."""
    page = st.session_state.get("_page", "overview")
    params = S.state_to_query({k: st.session_state.get(k) for k in S.URL_KEYS})
    return {"title": S.view_title(params, PAGE_TITLE.get(page, page)), "page": page, "params": params}


def apply_view(view: dict) -> None:
    """Load a pinned view's state (the caller then switches to its page)."""
    for k, v in S.query_to_state(view.get("params", {})).items():
        if k in ("presentation",):
            continue
        st.session_state[k] = v


# ================================================================================================ context
@dataclass(frozen=True)
class Context:
    """What every page needs from the sidebar: the data source and the active selection."""

    cfg_key: str
    dataset: str
    runs: tuple[str, ...]        # runs shown on the page (selected, or all of the dataset)
    all_runs: tuple[str, ...]    # every run on the dataset
    protocol: str
    min_score: float
    iou: float
    subset: str | None = None    # image subset of the dataset (None: every image)

    def view(self, run: str | None = None, **changes):
        """The ``ov3d_core.View`` of the sidebar's selection for ``run`` (other fields overridable): every page's
        views are built here, so the sidebar's image subset reaches every number."""
        from ov3d_core.analysis import View

        fields = {"dataset": self.dataset, "protocol": self.protocol, "min_score": self.min_score, "iou": self.iou,
                  "subset": self.subset}
        return View(run=run, **{**fields, **changes})


def per_box(ctx: Context) -> tuple[Context, frozenset | None]:
    """For the pages that show single boxes by their rows (scene inspector, sample grid, object view, failure
    mining): the context without the image subset, and the subset's image ids (None: every image), to which the page
    restricts the images it lists. A box's status at a fixed IoU depends on its own image only (matching, the
    target-aware filter and the score threshold are per image), so the whole dataset's statuses of the subset's
    images are the subset's; the rows stay the dataset's own, which every table, link and highlight uses."""
    if ctx.subset is None:
        return ctx, None
    from dataclasses import replace

    from ov3d_app import cache

    ids = frozenset(int(i) for i in cache.benchmark(ctx.cfg_key).image_subset(ctx.dataset, ctx.subset))
    return replace(ctx, subset=None), ids


def context() -> Context | None:
    """The page context set by app.py, or None when no benchmark is loaded (app.py then already said why)."""
    return st.session_state.get("_ctx")


def need_context() -> Context:
    """The page context, or stop the page with a hint."""
    ctx = context()
    if ctx is None:
        st.info("No benchmark is loaded. Choose the demo or a benchmark config in the sidebar.")
        st.stop()
    if not ctx.all_runs:
        st.info(f"Dataset **{md(ctx.dataset)}** has no runs (prediction files) in this benchmark config.")
    if ctx.subset is not None:
        subset_notice(ctx)
    st.session_state[_WARN_SLOT] = st.empty()
    show_load_warnings()
    return ctx


def subset_notice(ctx: Context) -> None:
    """Under the page header: the image subset every number of the page is computed on, and its size."""
    from ov3d_app import cache

    with guard("The image subset"):
        a = cache.analysis(ctx.cfg_key)
        n = len(a.view_dataset(ctx.view()).images)
        total = len(a.view_dataset(ctx.view(subset=None)).images)
        st.info(f"Images: subset **{md(ctx.subset)}** of {md(ctx.dataset)}, {n} of its {total} images. Every number "
                "on this page is computed on these images only (sidebar: Images).", icon=":material/filter_alt:")


def warning_text(w) -> str:
    """One load warning (``Benchmark.LoadWarning``, its paths already cut to basenames) for ``st.warning``."""
    where = f"GT of {w.dataset}" if w.run is None else f"run {w.run} on {w.dataset}"
    return f"**{md(where)}** · {md(w.category)}: {md(w.message)}"


def show_load_warnings() -> None:
    """Every counted warning of the loads of this page's inputs (the dataset's GT and the page's runs, as far as
    they are loaded), one ``st.warning`` each, in the slot under the page header; app.py calls it again once the
    page has run, for the loads the page itself caused. Nothing when the page has no slot (no context)."""
    slot, ctx = st.session_state.get(_WARN_SLOT), context()
    if slot is None or ctx is None:
        return
    from ov3d_app import cache

    items = cache.load_warnings(ctx.cfg_key, ctx.dataset, ctx.runs)
    if not items:
        slot.empty()
        return
    with slot.container():
        for w in items:
            st.warning(warning_text(w), icon=":material/warning:")


# ================================================================================================ text and errors
_MD_INLINE = re.compile(r"([\\*_\[\]<>~:$|])")
_MD_LINE_START = re.compile(r"^(\s*)([#>+=-]|\d+(?=[.)]))")


_MD_CODE = re.compile(r"(`+)(.+?)\1")
_AUTOLINK = re.compile(r"(?i)\b(https?|ftp|www)(?=\\?://|\.)")  # GFM links bare URLs: a word joiner stops it


def _escape(text: str) -> str:
    return _AUTOLINK.sub("\\1\u2060", _MD_INLINE.sub(r"\\\1", text))


def md(text: Any) -> str:
    """``text`` (a name or message from a file or the URL) escaped for Streamlit markdown, on one line: shown as
    typed, never as a link (bare URLs included), image, colour directive, formula, heading, list or HTML. Use it
    for every piece of data in a markdown string, label or message. Code spans (``\`...\```) are kept: they render
    their text literally."""
    one = " ".join(str(text).splitlines())
    parts, last = [], 0
    for m in _MD_CODE.finditer(one):
        parts += [_escape(one[last:m.start()]), m.group(0)]
        last = m.end()
    parts.append(_escape(one[last:]))
    return _MD_LINE_START.sub(lambda m: m.group(1) + ("\\" + m.group(2) if not m.group(2).isdigit()
                                                       else m.group(2) + "\\"), "".join(parts), count=1)


def code(text: Any) -> str:
    """``text`` as an inline code span for Streamlit markdown, shown exactly as typed: nothing is escaped inside it
    (a backslash in a code span is printed, so ``md`` inside backticks showed ``.ov3d\\_cache``), and it is fenced
    with more backticks than it holds, on one line."""
    one = " ".join(str(text).splitlines())
    fence = "`" * (max((len(m) for m in re.findall(r"`+", one)), default=0) + 1)
    pad = " " if one.startswith("`") or one.endswith("`") else ""
    return f"{fence}{pad}{one}{pad}{fence}"


def _safe_got(got: Any) -> Any:
    """What an error may say it found: a kind (``Kind``, from the loaders), numbers, short lists of numbers;
    anything else (a string or structure read from a file) only as its kind, never its text."""
    from ov3d_core.io.config import kind_of
    from ov3d_core.io.yaml_safe import Kind

    number = (int, float)
    if got is None or isinstance(got, Kind) or (isinstance(got, number) and not isinstance(got, bool)):
        return got
    if isinstance(got, (list, tuple)) and len(got) <= 16 and all(isinstance(v, number) for v in got):
        return got
    return kind_of(got)


def error_text(exc: BaseException) -> str:
    """The one-line message of an error for the page: an ``InputError`` names the file by its basename only (the
    server's folders stay private) and what it found by kind, not by its text (``_safe_got``); anything else says
    only its type (the traceback goes to the server log)."""
    if isinstance(exc, InputError):
        name = None if exc.file is None else (Path(exc.file).name or exc.file)
        return str(InputError(name, exc.record, exc.field, exc.expected, _safe_got(exc.got)))
    return f"an unexpected error ({type(exc).__name__}); the server log has the details"


def show_error(exc: BaseException, what: str = "") -> None:
    """``st.error`` with :func:`error_text` (escaped); unexpected errors are logged with their traceback."""
    if not isinstance(exc, InputError):
        logging.getLogger("ov3d_app").error("%s failed", what or "a page", exc_info=exc)
    text = md(error_text(exc))
    st.error(f"{md(what)}: {text}" if what else text, icon=":material/error:")


@contextlib.contextmanager
def guard(what: str = ""):
    """Show errors as ``st.error`` and go on with the rest of the page: user-input errors with their message
    (file, record, field), anything else without a traceback (it is logged). Streamlit's own control flow
    (``st.stop``, ``st.rerun``, page switches) is not an ``Exception`` and passes through."""
    try:
        yield
    except Exception as exc:  # noqa: BLE001 - a page shows a message, never a traceback
        show_error(exc, what)


def page_header(title: str, intro: str) -> None:
    st.title(title)
    st.caption(intro)


# ================================================================================================ export
#: The figure downloads: (label, format, self-contained HTML, file-name suffix, key suffix, help).
FIGURE_EXPORTS = (
    ("PNG", "png", True, "", "png", "A raster image at twice the figure's size."),
    ("SVG", "svg", True, "", "svg", "A vector image (for a paper or slides)."),
    ("HTML, offline (plotly.js inside: 4.8 MB)", "html", True, "", "html",
     "The interactive figure with plotly.js inside: opens in any browser without the network."),
    ("HTML, small (plotly.js from the CDN: needs the network to view)", "html", False, "_cdn", "html-cdn",
     "The interactive figure, loading plotly.js from the plotly CDN when opened: a few kB to send, but the "
     "browser that opens it must reach cdn.plot.ly."),
)


def export_figure(fig, name: str, key: str, *, static_fig=None) -> None:
    """PNG / SVG (kaleido, generated on click: the button spins until the file is ready) and HTML download buttons
    for a figure, under a safe file name (``viz.export.safe_file_name``). Drawing them starts the export browser in
    the background (``viz.export.warm_up``, once per process).

    ``fig`` may be a function that builds the figure (called on click only); ``static_fig`` replaces ``fig`` for the
    export (e.g. the static heatmap of a clickable matrix)."""
    from ov3d_core.viz.export import MIME, figure_bytes, safe_file_name, warm_up

    target = static_fig if static_fig is not None else fig
    warm_up()

    def export(fmt: str, offline: bool) -> bytes:
        return figure_bytes(target() if callable(target) else target, fmt, offline=offline)

    with st.popover("Export", icon=":material/download:"):
        for label, fmt, offline, suffix, ksuffix, helptext in FIGURE_EXPORTS:
            st.download_button(label, data=_deferred(export, fmt, offline),
                               file_name=safe_file_name(name + suffix, fmt), mime=MIME[fmt], key=f"dl:{key}:{ksuffix}",
                               on_click="ignore", help=helptext, width="stretch")


def export_table(df, name: str, key: str, *, caption: str | None = None) -> None:
    """CSV and LaTeX download buttons for a table."""
    from ov3d_core.tables import to_csv, to_latex
    from ov3d_core.viz.export import MIME, safe_file_name

    c1, c2 = st.columns(2)
    with c1:
        st.download_button("CSV", data=_deferred(lambda d: to_csv(d, 4).encode("utf-8"), df),
                           file_name=safe_file_name(name, "csv"),
                           mime=MIME["csv"],
                           key=f"dl:{key}:csv", on_click="ignore", icon=":material/table:")
    with c2:
        st.download_button("LaTeX", data=_deferred(lambda d: to_latex(d, caption=caption).encode("utf-8"), df),
                           file_name=safe_file_name(name, "tex"),
                           mime=MIME["tex"], key=f"dl:{key}:tex", on_click="ignore", icon=":material/functions:")


def _deferred(fn, *args, **kw):
    def make():
        return fn(*args, **kw)

    return make


#: Plotly's pseudo-HTML that does more than format text: links and inline styles.
_PLOTLY_ACTIVE = re.compile(r"<(?=\s*/?\s*(?:a|span)\b)", re.IGNORECASE)
_TRACE_TEXT = ("name", "text", "hovertext")


def _inert(value):
    """A string (or a list of them) with Plotly links and styles shown as text (``<`` as the entity ``&lt;``)."""
    if isinstance(value, str):
        return _PLOTLY_ACTIVE.sub("&lt;", value)
    if isinstance(value, (list, tuple)) or (hasattr(value, "dtype") and getattr(value, "dtype", None) == object):
        return [_inert(v) for v in value]
    return value


def _has_active(values) -> bool:
    try:
        return any(isinstance(v, str) and _PLOTLY_ACTIVE.search(v) for v in values)
    except TypeError:
        return False


def _active_axes(fig) -> dict[str, set]:
    """Category axes whose names hold Plotly links or styles: axis reference -> its category names."""
    axes: dict[str, set] = {}
    for tr in fig.data:
        for dim in ("x", "y"):
            vals = tr[dim] if dim in tr else None
            if isinstance(vals, dict):  # a typed array (Plotly's {"dtype", "bdata"} encoding): numbers, no names
                continue
            if vals is not None and len(vals) and isinstance(next(iter(vals)), str) and _has_active(vals):
                ref = (tr[f"{dim}axis"] if f"{dim}axis" in tr else None) or dim
                axes.setdefault(ref, set()).update(v for v in vals if isinstance(v, str))
    return axes


def _texts(fig):
    for tr in fig.data:
        for prop in _TRACE_TEXT:
            if prop in tr and tr[prop] is not None:
                v = tr[prop]
                yield from ([v] if isinstance(v, str) else v if isinstance(v, (list, tuple)) else ())
    if fig.layout.title and fig.layout.title.text:
        yield fig.layout.title.text
    for ann in fig.layout.annotations or ():
        if ann.text:
            yield ann.text


def inert_figure(fig):
    """``fig``, or a copy of it with the names it shows (category ticks, trace names and texts, titles,
    annotations) unable to carry a link or a style: Plotly renders ``<a href>`` and ``<span style>`` in text, and
    names come from files and URLs. The data (``x``, ``y``, ``customdata``) is unchanged, so selections still
    return the real names; a category axis whose names hold such markup gets the escaped names as tick labels.
    A figure without such markup is returned as it is (figures may be shared between sessions)."""
    axes = _active_axes(fig)
    if not axes and not _has_active(_texts(fig)):
        return fig
    import plotly.graph_objects as go

    fig = go.Figure(fig)
    for tr in fig.data:
        for prop in _TRACE_TEXT:
            if prop in tr and tr[prop] is not None:
                tr[prop] = _inert(tr[prop])
    for ref, cats in axes.items():
        name = ref[0] + "axis" + ref[1:]
        cats = sorted(cats)
        fig.layout[name].update(tickmode="array", tickvals=cats, ticktext=[_inert(c) for c in cats])
    if fig.layout.title and fig.layout.title.text:
        fig.layout.title.text = _inert(fig.layout.title.text)
    for ann in fig.layout.annotations or ():
        if ann.text:
            ann.text = _inert(ann.text)
    return fig


def plot(fig, key: str, *, on_select: Callable | None = None, export_name: str | None = None, static_fig=None,
         selection_mode=("points",), width: str = "stretch", config: dict | None = None) -> None:
    """``st.plotly_chart`` with the class palette kept (``theme=None``) and an export popover (``config``: extra
    plotly.js config, e.g. ``plotGlPixelRatio`` for a WebGL scene). ``fig`` is not changed (it may be a figure
    shared by every session, ``cache.shared``)."""
    kw: dict = {"theme": None, "key": key, "width": width,
                "config": {"displaylogo": False, "modeBarButtonsToRemove": ["lasso2d"], **(config or {})}}
    fig = presented(fig, bool(get("presentation")))
    if on_select is not None:
        kw.update(on_select=on_select, selection_mode=selection_mode)
    st.plotly_chart(inert_figure(fig), **kw)
    if export_name:
        export_figure(fig, export_name, key, static_fig=static_fig)


def presented(fig, presenting: bool, *, fresh: bool = False):
    """``fig`` enlarged for a talk when ``presenting`` (charts as well as text), on a copy since the figure may be
    shared, unless ``fresh`` says it was just built for this call; else ``fig`` itself."""
    if not presenting:
        return fig
    import plotly.graph_objects as go

    from ov3d_core.viz.style import presentation

    return presentation(fig if fresh else go.Figure(fig))


def fmt_table(df, percent: tuple[str, ...] = (), fraction: tuple[str, ...] = ()) -> dict:
    """``column_config`` for a results table (AP with one decimal, fractions with three)."""
    cfg = {}
    for c in percent:
        if c in df.columns:
            cfg[c] = st.column_config.NumberColumn(c, format="%.1f")
    for c in fraction:
        if c in df.columns:
            cfg[c] = st.column_config.NumberColumn(c, format="%.3f")
    return cfg


def remapped_runs_toggle(encoder: str, key: str) -> bool:
    """The "Remapped runs (X*)" toggle of the pages that list runs across datasets: closed-vocabulary runs take part
    remapped too (the paper's Cube R-CNN*). On by default with the demo's stand-in encoder (its crops are captions:
    remapping costs a fraction of a second); off for a real checkpoint, whose first remap encodes every crop."""
    return st.toggle("Remapped runs (X*)", value=encoder == "proxy", key=key,
                     help=f"Beside each closed-vocabulary run X (`closed_vocabulary:` in the config), its remap with "
                          f"{'the demo stand-in encoder' if encoder == 'proxy' else encoder} under the default "
                          f"template S1 at the encoder's θ, as X*: the run the paper reports (Cube R-CNN*).")
