"""Streamlit glue for tags and notes (``ov3d_core.tags``): the store of the loaded benchmark, an editor for an image
or a box, the tag filter the inspector and the grid share, the tags and notes of exported tables, and the
pinned-views bundle of the Lab-meeting expander."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from ov3d_app import cache
from ov3d_app import state as S
from ov3d_core.tags import SUGGESTED_TAGS, TagStore, join_tags, legacy_tags_path, tags_path, views_bundle


def store(cfg_key: str) -> TagStore:
    """The tags file of the benchmark (beside its config; beside the folder of a generated demo, which a rebuild
    replaces whole: ``ov3d_core.tags.tags_path``)."""
    cfg = cache.benchmark(cfg_key).config
    return TagStore(tags_path(cfg.path, cfg.cache_dir), legacy=legacy_tags_path(cfg.path))


def _save(st_: TagStore, dataset: str, image_id: int, box, tkey: str, nkey: str) -> None:
    st_.set(dataset, image_id, box=box, tags=st.session_state.get(tkey) or [],
            note=st.session_state.get(nkey) or "")


def editor(cfg_key: str, dataset: str, image_id: int, box=None, *, label: str = "image") -> None:
    """Tags (pick or type new ones) and a note for an image (``box`` None) or a box (``(kind, run, row)``); every
    change is written at once."""
    s = store(cfg_key)
    item = s.get(dataset, image_id, box)
    ident = f"{dataset}:{image_id}:{'' if box is None else '|'.join(str(b) for b in box)}"
    tkey, nkey = f"tag:t:{ident}", f"tag:n:{ident}"
    options = list(dict.fromkeys([*item.tags, *s.all_tags(dataset), *SUGGESTED_TAGS]))
    c1, c2 = st.columns([1, 1])
    c1.multiselect(f"Tags of this {label}", options, default=item.tags, key=tkey, accept_new_options=True,
                   placeholder="add a tag (or type a new one)", select_all=False,  # "Select all": every suggestion
                   on_change=_save, args=(s, dataset, image_id, box, tkey, nkey))
    c2.text_input(f"Note on this {label}", value=item.note, key=nkey, placeholder="a note for later",
                  on_change=_save, args=(s, dataset, image_id, box, tkey, nkey))


def filter_widget(cfg_key: str, dataset: str, key: str, container=st) -> list[str]:
    """A multiselect of the tags in use on ``dataset``: the images to keep carry one of them (empty: no filter)."""
    s = store(cfg_key)
    used = s.all_tags(dataset)
    return container.multiselect("Tagged", used, key=key, placeholder="any image" if used else "no tags yet",
                                 disabled=not used, help="Keep images that carry one of these tags (on the image or "
                                                         "on one of its boxes).")


def tagged_images(cfg_key: str, dataset: str, tags: list[str]) -> set[int] | None:
    """Images carrying one of ``tags`` (None when ``tags`` is empty: no filter)."""
    return store(cfg_key).images_with(dataset, tags) if tags else None


def with_tags(cfg_key: str, dataset: str, frame: pd.DataFrame, **how) -> pd.DataFrame:
    """``frame`` with the ``tags`` and ``note`` columns of its images or boxes, for an export (``how``: the keywords
    of ``ov3d_core.tags.join_tags``); unchanged when ``dataset`` has no tags."""
    return join_tags(frame, store(cfg_key).table(dataset), **how)


def view_url(view: Mapping, default_page: str) -> str:
    """A pinned view's address relative to the app's root: the page's path (none for ``default_page``, which is
    served at the root) and its query, e.g. ``scene?ds=demo_indoor&img=100003``."""
    page = view.get("page") or default_page
    params = view.get("params") or {}
    path = "" if page == default_page else page
    return f"{path}?{urlencode(params)}" if params else (path or "./")


def of_source(view: Mapping, source: str, config_path: str) -> bool:
    """Whether a pinned view was pinned on this data source (the demo, or the config at ``config_path``)."""
    state = S.query_to_state(view.get("params") or {})
    if state["source"] != source:
        return False
    return source != "config" or (state["config_path"] or "").strip() == (config_path or "").strip()


def pinned_bundle(views: Sequence[Mapping], *, tag_store: TagStore | None, source: str, config_path: str,
                  datasets: Sequence[str], default_page: str) -> dict:
    """The pinned views (title, page, params, ``url_query``) with every tag and note of the datasets they show
    (``ov3d_core.tags.views_bundle``). ``tag_store`` is the loaded benchmark's (None: no benchmark loaded),
    ``source`` / ``config_path`` say which benchmark that is and ``datasets`` lists its datasets (a view without a
    dataset shows the first). A view pinned on another data source (:func:`of_source`) is listed without its tags:
    they live beside another config."""
    entries, touched = [], []
    for v in views:
        params = dict(v.get("params") or {})
        entries.append({"title": v.get("title", ""), "page": v.get("page", default_page), "params": params,
                        "url_query": view_url(v, default_page)})
        if tag_store is not None and of_source(v, source, config_path):
            ds = S.query_to_state(params)["dataset"] or (datasets[0] if datasets else None)
            if ds is not None:
                touched.append(ds)
    items = tag_store.load() if touched else []
    return views_bundle(entries, items, touched)
