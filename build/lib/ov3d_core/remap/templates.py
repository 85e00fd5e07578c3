"""Prompt templates: the 15 built-in templates in three groups, user templates, and template ensembling.

The built-ins are reference/siglip_metrics_prompts.md §4.3 (underdetailed U1-U5, standard S1-S5, overdetailed
O1-O5); ``assets/templates.yaml`` holds the same list in editable form. A template has exactly one ``{}`` where the
class name goes. Encoders lowercase prompts themselves (SigLIP was trained on lowercased text), so templates keep
their natural case here.

Ensembling (CLIP's recipe): L2-normalise each template's class embeddings, average over templates, re-normalise.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from ov3d_core.errors import InputError

GROUPS = ("underdetailed", "standard", "overdetailed")

#: Where the editable copy of the built-in templates lives.
DEFAULT_PATH = Path(__file__).resolve().parents[2] / "assets" / "templates.yaml"


@dataclass(frozen=True)
class Template:
    """One prompt template: ``id`` (e.g. "S1"), ``group`` (e.g. "standard"), ``text`` with exactly one ``{}``."""

    id: str
    group: str
    text: str

    def format(self, name: str) -> str:
        """The prompt for one class name (plain substitution: other braces in the text stay literal)."""
        return self.text.replace("{}", str(name), 1)


BUILTIN_TEMPLATES: tuple[Template, ...] = (
    Template("U1", "underdetailed", "{}"),
    Template("U2", "underdetailed", "a {}"),
    Template("U3", "underdetailed", "the {}"),
    Template("U4", "underdetailed", "{}."),
    Template("U5", "underdetailed", "a {}."),
    Template("S1", "standard", "a photo of a {}."),
    Template("S2", "standard", "a photo of the {}."),
    Template("S3", "standard", "This is a photo of {}."),
    Template("S4", "standard", "itap of a {}."),
    Template("S5", "standard", "a bad photo of the {}."),
    Template("O1", "overdetailed", "a photo of the large {}."),
    Template("O2", "overdetailed", "a low resolution photo of the {}."),
    Template("O3", "overdetailed", "a photo of a {}, a type of road user."),
    Template("O4", "overdetailed",
             "a blurry dashcam photo of a {} on a city street, partly occluded by other vehicles."),
    Template("O5", "overdetailed",
             "a close-up photo of the {} seen from the front camera of a self-driving car at night."),
)


def validate_text(text: object, *, file: str | None = None, record: str | int | None = None,
                  field: str = "text") -> str:
    """Return ``text`` if it is a string with exactly one ``{}``; raise ``InputError`` otherwise."""
    if not isinstance(text, str) or text.count("{}") != 1:
        raise InputError(file, record, field, 'a template string with exactly one "{}" (where the class name goes)',
                         text)
    return text


def custom_template(text: str, group: str = "custom") -> Template:
    """A user template from a literal string; its id is ``custom:<hash of the text>``."""
    validate_text(text, file=None, record="template")
    return Template("custom:" + hashlib.sha1(text.encode()).hexdigest()[:8], group, text)


def _parse_entries(entries: object, file: str | None) -> list[Template]:
    if isinstance(entries, dict):
        entries = entries.get("templates")
    if not isinstance(entries, list):
        raise InputError(file, None, "templates", "a list of {id, group, text} entries (or of template strings)",
                         type(entries).__name__)
    out: list[Template] = []
    seen: set[str] = set()
    for i, entry in enumerate(entries):
        record = f"templates[{i}]"
        if isinstance(entry, str):
            entry = {"text": entry}
        if not isinstance(entry, dict):
            raise InputError(file, record, None, "a mapping with `id`, `group` and `text`, or a template string",
                             entry)
        text = validate_text(entry.get("text"), file=file, record=record)
        tid = str(entry.get("id") or f"T{i + 1}")
        group = str(entry.get("group") or "custom")
        if tid in seen:
            raise InputError(file, record, "id", "unique template ids", tid)
        if tid in GROUPS or tid == "all":
            raise InputError(file, record, "id", f"an id that is not a group name ({', '.join(GROUPS)}, all)", tid)
        seen.add(tid)
        out.append(Template(tid, group, text))
    return out


def load_templates(path: str | Path | None = None) -> list[Template]:
    """Templates from a YAML or JSON file: a list of ``{id, group, text}`` (or bare strings), optionally under a
    ``templates:`` key. ``path=None`` reads ``assets/templates.yaml`` (falling back to the built-ins when the asset
    is not shipped). Every text must contain exactly one ``{}`` (``InputError`` otherwise)."""
    if path is None:
        if not DEFAULT_PATH.exists():
            return list(BUILTIN_TEMPLATES)
        path = DEFAULT_PATH
    path = Path(path)
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(str(path), None, None, "a readable template file", str(exc)) from None
    try:
        if path.suffix.lower() == ".json":
            data = json.loads(raw)
        else:
            import yaml

            data = yaml.safe_load(raw)
    except Exception as exc:  # noqa: BLE001 - parse errors of either format
        raise InputError(str(path), None, None, "valid YAML or JSON", str(exc).splitlines()[0]) from None
    return _parse_entries(data, str(path))


def resolve_templates(spec: str | Template | Iterable[str | Template],
                      templates: Sequence[Template] | None = None) -> list[Template]:
    """Turn a user choice into the templates to use (several = ensemble them).

    ``spec`` may be a template id ("S1"), a group name ("standard"), "all", a comma-separated list of ids and
    groups ("S1,S3"), a literal template string containing ``{}`` ("a photo of a {} on the road."), a ``Template``,
    or a list of any of these.
    """
    pool = list(BUILTIN_TEMPLATES if templates is None else templates)
    by_id = {t.id: t for t in pool}
    if isinstance(spec, Template):
        return [spec]
    if not isinstance(spec, str):
        out: list[Template] = []
        for s in spec:
            out.extend(resolve_templates(s, pool))
        return _dedupe(out)
    s = spec.strip()
    if "{}" in s:
        return [custom_template(s)]
    if "," in s:
        return _dedupe([t for part in s.split(",") if part.strip() for t in resolve_templates(part, pool)])
    if s in by_id:
        return [by_id[s]]
    if s.upper() in by_id:
        return [by_id[s.upper()]]
    if s.lower() == "all":
        return list(pool)
    group = [t for t in pool if t.group == s.lower()]
    if group:
        return group
    groups = sorted({t.group for t in pool})
    raise InputError(None, "template", None,
                     f"a template id ({', '.join(by_id)}), a group ({', '.join(groups)}, all) or a string with "
                     f'exactly one "{{}}"', spec)


def _dedupe(items: list[Template]) -> list[Template]:
    seen: set[Template] = set()
    return [t for t in items if not (t in seen or seen.add(t))]


def prompts_for(template: Template | str, class_names: Sequence[str]) -> list[str]:
    """The prompts of one template for each class name, in class order."""
    if isinstance(template, str):
        template = custom_template(template)
    return [template.format(name) for name in class_names]


def l2_normalize(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Rows scaled to unit L2 norm (all-zero rows stay zero); float32."""
    x = np.asarray(x, dtype=np.float32)
    n = np.linalg.norm(x, axis=axis, keepdims=True)
    return x / np.where(n > 0, n, 1.0)


def ensemble(embeddings: Sequence[np.ndarray]) -> np.ndarray:
    """Ensemble per-template class embeddings ``[(C, d), ...]``: mean of the L2-normalised embeddings, re-normalised.
    One template returns its normalised embeddings unchanged."""
    if len(embeddings) == 0:
        raise ValueError("ensemble() needs at least one embedding array")
    stack = np.stack([l2_normalize(e) for e in embeddings])
    return l2_normalize(stack.mean(axis=0))
