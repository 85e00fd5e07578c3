"""Streamlit glue for tags and notes (``ov3d_core.tags``): the store of the loaded benchmark, an editor for an image
or a box, and the tag filter the inspector and the grid share."""

from __future__ import annotations

import streamlit as st

from ov3d_app import cache
from ov3d_core.tags import SUGGESTED_TAGS, TagStore, tags_path


def store(cfg_key: str) -> TagStore:
    """The tags file of the benchmark (beside its config)."""
    cfg = cache.benchmark(cfg_key).config
    return TagStore(tags_path(cfg.path, cfg.cache_dir))


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
                   placeholder="add a tag (or type a new one)",
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
