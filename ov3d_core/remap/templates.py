"""Prompt templates: the 15 built-in templates in three groups, user templates, and template ensembling.

The built-ins are reference/siglip_metrics_prompts.md §4.3 (underdetailed U1-U5, standard S1-S5, overdetailed
O1-O5); ``assets/templates.yaml`` holds the same list in editable form. A template has exactly one ``{}`` where the
class name goes. Encoders lowercase prompts themselves (SigLIP was trained on lowercased text), so templates keep
their natural case here.

Ensembling (CLIP's recipe): L2-normalise each template's class embeddings, average over templates, re-normalise.

**Pro-Bench's eight prompt types** (seeds/003 §III.B: categorical, attributive, relational, affordance, state,
part-whole, negative, compositional) as a template family: :data:`PROBENCH_TEMPLATES`, ids ``PB-<type>`` in groups
``probench-<type>``, one template each, and :data:`PROBENCH_WRAPPED`, Pro-Bench's "template-wrapped" formulation of
each ("a photo of " + the query; ids ``PB-<type>-wrapped``). Pro-Bench's queries are free-form, per target and
written by annotators; ours are **our class-name adaptations** of its query types, one fixed wording per type that
keeps the referent (the object of the class), so that every formulation is target-preserving as Pro-Bench requires:
the negative type negates a property of the object ("a {} that is not broken"), not the class (which would change the
referent), and the part-whole type names the whole with its parts rather than a part. ``categorical`` is the bare
class name (Pro-Bench's categorical form of a query). They resolve by id or group (``"PB-state"``,
``"probench-state"``, ``"probench"`` for all eight, ``"probench-wrapped"``) but are not among the 15 built-ins (so
``"all"`` stays the paper's 15). :func:`probench_roles` gives each type's (categorical, original, wrapped) triple for
``diagnostics.prompts.formulation_type_table``.

**Where the encoder allows them**: :class:`PromptCapabilities` states what an encoder can consume, and
:func:`template_support` is the one place that checks templates against it and says why a template is left out:

- *length*: a prompt longer than the encoder's text length (SigLIP: 64 tokens, CLIP: its position count, the demo
  proxy: 128) is truncated by the encoder, so a template whose prompt exceeds it for any class is unsupported; tokens
  are counted with the encoder's own tokenizer on the lowercased prompt, special tokens included. Without a tokenizer
  or a known limit the length is not checked, and the table says so.
- *negation*: an encoder that ranks classes by the cosine similarity of text embeddings (SigLIP, CLIP, the proxy:
  every remapping encoder here) does not represent negation, so a template with a negation word (not, no, never,
  without, nor, n't) is unsupported for it, unless the encoder declares ``honours_negation = True``.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

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


#: Pro-Bench's prompt types (seeds/003 §III.B), in the paper's order.
PROBENCH_TYPES = ("categorical", "attributive", "relational", "affordance", "state", "part-whole", "negative",
                  "compositional")

#: Our class-name wording of each type (module docstring).
PROBENCH_TEXTS = {
    "categorical": "{}",
    "attributive": "a {} with its usual colour and material",
    "relational": "a {} next to other objects",
    "affordance": "something one can use as a {}",
    "state": "a {} in its usual state",
    "part-whole": "a whole {} with all of its parts",
    "negative": "a {} that is not broken",
    "compositional": "a {} with its usual colour, standing next to other objects",
}

#: Pro-Bench's template-wrapped formulation: "a photo of" before the query (seeds/003 §III.C).
PROBENCH_WRAP = "a photo of "

PROBENCH_TEMPLATES: tuple[Template, ...] = tuple(Template(f"PB-{t}", f"probench-{t}", PROBENCH_TEXTS[t])
                                                 for t in PROBENCH_TYPES)
PROBENCH_WRAPPED: tuple[Template, ...] = tuple(Template(f"PB-{t}-wrapped", f"probench-{t}-wrapped",
                                                        PROBENCH_WRAP + PROBENCH_TEXTS[t]) for t in PROBENCH_TYPES)


def probench_roles(types: Sequence[str] = PROBENCH_TYPES) -> dict[str, dict[str, str]]:
    """Per Pro-Bench type, the template ids of its three formulations: ``categorical`` (the bare class name),
    ``original`` (the type's wording) and ``wrapped`` ("a photo of " + it)."""
    bad = [t for t in types if t not in PROBENCH_TYPES]
    if bad:
        raise ValueError(f"types: expected Pro-Bench types {list(PROBENCH_TYPES)}, got {bad}")
    return {t: {"categorical": "PB-categorical", "original": f"PB-{t}", "wrapped": f"PB-{t}-wrapped"} for t in types}


def _probench_lookup(s: str) -> list[Template] | None:
    """Pro-Bench templates by id, group, "probench" or "probench-wrapped" (case-insensitive), else None."""
    low = s.lower()
    if low == "probench":
        return list(PROBENCH_TEMPLATES)
    if low == "probench-wrapped":
        return list(PROBENCH_WRAPPED)
    for t in PROBENCH_TEMPLATES + PROBENCH_WRAPPED:
        if low in (t.id.lower(), t.group):
            return [t]
    return None


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
    pb = _probench_lookup(s)  # after the pool: a user template of the same id or group wins
    if pb is not None:
        return pb
    groups = sorted({t.group for t in pool})
    raise InputError(None, "template", None,
                     f"a template id ({', '.join(by_id)}), a group ({', '.join(groups)}, all), a Pro-Bench type "
                     f'(PB-<type>, probench-<type>, probench) or a string with exactly one "{{}}"', spec)


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


# ---------------------------------------------------------------------------------------------------- capabilities
_NEGATION = re.compile(r"(?<![a-z])(not|no|never|without|nor)(?![a-z])|n't", re.IGNORECASE)


def uses_negation(template: Template | str) -> bool:
    """True if the template's own words (outside ``{}``) contain a negation: not, no, never, without, nor, n't."""
    text = template.text if isinstance(template, Template) else str(template)
    return bool(_NEGATION.search(text.replace("{}", " ")))


@dataclass(frozen=True)
class PromptCapabilities:
    """What an encoder's text side can consume (checked by :func:`template_support`).

    Attributes:
        encoder: the encoder's name, for the reasons shown.
        max_tokens: the text length it feeds its text tower (longer prompts are truncated); None: not known.
        negation: whether it honours negation (False for cosine-ranking text embeddings).
        count_tokens: texts -> token counts with the encoder's own tokenizer (lowercased, special tokens
            included); None: lengths cannot be counted.
    """

    encoder: str
    max_tokens: int | None
    negation: bool = False
    count_tokens: Callable[[Sequence[str]], Sequence[int]] | None = field(default=None, compare=False, repr=False)


def prompt_capabilities(encoder) -> PromptCapabilities:
    """The capabilities of an encoder object (``HFEncoder``, ``ProxyEncoder`` or anything like them): its
    ``max_length`` (the padded text length it tokenizes to), its ``tokenizer`` for counting, and ``honours_negation``
    (default False: every encoder here ranks classes by cosine similarity)."""
    tok = getattr(encoder, "tokenizer", None)
    count = None
    if tok is not None:
        def count(texts: Sequence[str]) -> list[int]:
            ids = tok([str(t).lower() for t in texts], add_special_tokens=True, truncation=False)["input_ids"]
            return [len(x) for x in ids]
    max_len = getattr(encoder, "max_length", None)
    return PromptCapabilities(encoder=str(getattr(encoder, "name", type(encoder).__name__)),
                              max_tokens=None if max_len is None else int(max_len),
                              negation=bool(getattr(encoder, "honours_negation", False)), count_tokens=count)


def template_support(templates: Sequence[Template], class_names: Sequence[str],
                     capabilities: PromptCapabilities) -> "pd.DataFrame":
    """Which templates the encoder can take, and why not (the one place this is decided).

    Returns one row per template: ``template``, ``group``, ``text``, ``supported`` (bool), ``reason`` (why not, or
    ""), ``max_tokens_used`` (the longest prompt over ``class_names``, nullable), ``token_limit`` (nullable),
    ``longest_class`` and ``note`` (e.g. that the length was not checked).
    """
    import pandas as pd

    names = list(class_names)
    rows = []
    for t in templates:
        reasons, note = [], ""
        if uses_negation(t) and not capabilities.negation:
            reasons.append(f"{capabilities.encoder} ranks classes by the cosine similarity of text embeddings, which "
                           f"do not represent negation")
        used, longest = None, None
        if capabilities.count_tokens is not None and names:
            counts = list(capabilities.count_tokens(prompts_for(t, names)))
            i = int(np.argmax(counts))
            used, longest = int(counts[i]), names[i]
        if capabilities.max_tokens is None:
            note = f"length not checked: no text length known for {capabilities.encoder}"
        elif used is None:
            note = f"length not checked: no tokenizer for {capabilities.encoder}"
        elif used > capabilities.max_tokens:
            reasons.append(f"{used} tokens for {longest!r} > {capabilities.max_tokens}: {capabilities.encoder} "
                           f"truncates longer prompts")
        rows.append({"template": t.id, "group": t.group, "text": t.text, "supported": not reasons,
                     "reason": "; ".join(reasons), "max_tokens_used": used, "token_limit": capabilities.max_tokens,
                     "longest_class": longest, "note": note})
    df = pd.DataFrame(rows, columns=["template", "group", "text", "supported", "reason", "max_tokens_used",
                                     "token_limit", "longest_class", "note"])
    for col in ("max_tokens_used", "token_limit"):
        df[col] = pd.array([None if v is None else int(v) for v in df[col]], dtype="Int64")
    df["longest_class"] = pd.Series([r["longest_class"] for r in rows], dtype=object)
    df["supported"] = df["supported"].astype(bool)
    return df


def supported_templates(templates: Sequence[Template], class_names: Sequence[str],
                        capabilities: PromptCapabilities) -> tuple[list[Template], "pd.DataFrame"]:
    """The templates :func:`template_support` accepts, and its table (to report the others with their reason)."""
    table = template_support(templates, class_names, capabilities)
    ok = set(table.loc[table["supported"], "template"])
    return [t for t in templates if t.id in ok], table
