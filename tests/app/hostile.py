"""The mini benchmark (``minibench``) with markup in every name a file can carry: two category names that are HTML
(an ``<img onerror>`` and a ``<meta refresh>``), a category, dataset, run and benchmark name and a run description
in Streamlit markdown (images and links to a local port that nothing serves, colour directives, formulas). A page
that renders any of them as markup shows a different page, navigates away, changes the title or makes a request
to ``BEACON``; one that escapes them shows the names as typed."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.app.minibench import build as build_mini

BEACON = "http://127.0.0.1:9"
CAT_IMG = "<img src=x onerror=\"document.title='pwned'\">"
CAT_META = "<meta http-equiv=\"refresh\" content=\"0;url=about:blank\">"
CAT_MD = f"![cat]({BEACON}/cat.png) [click]({BEACON}/c) :red[x] $x^2$"
CAT_LINK = f'<a href="{BEACON}/a">sofa</a>'  # Plotly renders <a> in tick labels and hover text
DATASET = f"Mini **indoor** <b>b</b> ![ds]({BEACON}/ds.png)"
RUN = f"good [run]({BEACON}/run) <style>*{{display:none}}</style>"
NAME = f"mini ![name]({BEACON}/name.png) # heading"
DESCRIPTION = f"![desc]({BEACON}/desc.png) <script>document.title='pwned'</script>"
#: Every hostile string (each must be shown escaped or not at all).
ALL = (CAT_IMG, CAT_META, CAT_MD, CAT_LINK, DATASET, RUN, NAME, DESCRIPTION)
RENAME = {"chair": CAT_IMG, "table": CAT_META, "sofa": CAT_LINK, "car": CAT_MD}


def build(root: Path) -> Path:
    """Write the hostile mini benchmark under ``root`` and return its ``benchmark.yaml``."""
    path = build_mini(Path(root))
    root = path.parent
    for f in list(root.rglob("gt.json")) + list(root.rglob("preds.json")):
        text = f.read_text()
        for old, new in RENAME.items():
            text = text.replace(json.dumps(old), json.dumps(new))
        f.write_text(text)
    cfg = yaml.safe_load(path.read_text())
    cfg["name"] = NAME
    for d in cfg["datasets"]:
        d["categories"] = [RENAME.get(c, c) for c in d["categories"]]
    old_ds = cfg["datasets"][0]["name"]
    cfg["datasets"][0]["name"] = DATASET
    for r in cfg["runs"]:
        if r["dataset"] == old_ds:
            r["dataset"] = DATASET
            r["trained_on"] = [DATASET if t == old_ds else t for t in r.get("trained_on", [])]
        if r["name"] == "good":
            r["name"] = RUN
            r["description"] = DESCRIPTION
    path.write_text(yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True))
    return path
