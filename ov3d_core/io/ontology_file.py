"""User super-category ontology files (YAML or JSON): read, bounded (``ov3d_core.io.yaml_safe``) and validated into
an ``ov3d_core.ontology.Ontology``; every problem is one ``InputError`` line naming the file and the field."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from ov3d_core.errors import InputError
from ov3d_core.io.yaml_safe import Kind, load_yaml_file
from ov3d_core.ontology import BUILTIN_ONTOLOGIES, Ontology

__all__ = ["load_ontology"]

_FILE_KEYS = ("name", "description", "extends", "super_categories", "classes", "rules")
_FILE_EXPECT = ("a mapping with `super_categories` (a list of names) and `classes` (name -> super-category) "
                "and/or `rules` (super-category -> list of substrings), or `extends` (a built-in ontology)")


def _kind(value: Any) -> Kind:
    if value is None:
        return Kind("null (nothing)")
    if isinstance(value, str):
        return Kind("an empty string" if not value else "a string")
    if isinstance(value, bool):
        return Kind("a boolean")
    if isinstance(value, (int, float)):
        return Kind("a number")
    if isinstance(value, (list, dict)) and not value:
        return Kind("an empty list" if isinstance(value, list) else "an empty mapping")
    if isinstance(value, list):
        return Kind("a list")
    if isinstance(value, dict):
        return Kind("a mapping")
    return Kind(f"a value of type {type(value).__name__}")


def _names_list(file: str, fld: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise InputError(file, None, fld, "a non-empty list of names (strings)", _kind(value))
    for i, v in enumerate(value):
        if not isinstance(v, str) or not v.strip():
            raise InputError(file, None, f"{fld}[{i}]", "a non-empty string", _kind(v))
    return tuple(value)


def load_ontology(path: str | Path, *, file: str | None = None) -> Ontology:
    """Read and validate a user ontology file (YAML or JSON); ``InputError`` in one line naming the file and the
    field on any problem.

    Keys (all optional but one of ``super_categories`` / ``extends``)::

        name: my-ontology                 # shown in tables (default: the file name without extension)
        description: one line             # how it was made
        extends: ov3d-bench               # start from a built-in: its categories, rules and table
        super_categories: [vehicle, ...]  # the super-categories, in display order (default: those of `extends`)
        classes: {lamp: electronics}      # exact class names -> super-category (checked first)
        rules: {storage: [cabinet, shelf]} # substring rules, checked in this order after `classes` and before
                                           # those of `extends`

    There is no fallback bucket: a class of the evaluated vocabulary that nothing maps is an error naming the
    file, the field (``classes``) and the classes (:meth:`Ontology.require`).
    """
    label = file if file is not None else str(path)
    doc = load_yaml_file(path, file=label)
    if not isinstance(doc, dict):
        raise InputError(label, None, None, f"the document to be {_FILE_EXPECT}",
                         Kind("an empty document") if doc is None else _kind(doc))
    for k in doc:
        if k not in _FILE_KEYS:
            close = difflib.get_close_matches(str(k), _FILE_KEYS, n=1, cutoff=0.6)
            hint = f" (did you mean `{close[0]}`?)" if close else f" (one of: {', '.join(_FILE_KEYS)})"
            raise InputError(label, None, str(k) if isinstance(k, str) else None, f"a known key{hint}",
                             Kind("an unknown key"))
    base = None
    if "extends" in doc:
        ext = doc["extends"]
        if not isinstance(ext, str) or ext not in BUILTIN_ONTOLOGIES:
            raise InputError(label, None, "extends", f"one of {', '.join(BUILTIN_ONTOLOGIES)}",
                             Kind("another string") if isinstance(ext, str) else _kind(ext))
        base = BUILTIN_ONTOLOGIES[ext]
    if "super_categories" in doc:
        supers = _names_list(label, "super_categories", doc["super_categories"])
        dup = [s for i, s in enumerate(supers) if s in supers[:i]]
        if dup:
            raise InputError(label, None, "super_categories", "a list of distinct names",
                             Kind(f"{dup[0]!r} twice"))
    elif base is not None:
        supers = base.super_categories
    else:
        raise InputError(label, None, "super_categories", "a non-empty list of names (required without "
                         "`extends`)", Kind("nothing"))
    known = set(supers)
    choices = ", ".join(supers)

    def check_super(fld: str, sup: Any) -> str:
        if not isinstance(sup, str) or sup not in known:
            raise InputError(label, None, fld, f"one of the super_categories ({choices})",
                             Kind("another string") if isinstance(sup, str) else _kind(sup))
        return sup

    classes: list[tuple[str, str]] = []
    if "classes" in doc:
        cl = doc["classes"]
        if not isinstance(cl, dict) or not cl:
            raise InputError(label, None, "classes", "a non-empty mapping of class name -> super-category", _kind(cl))
        for k, sup in cl.items():
            if not isinstance(k, str) or not k.strip():
                raise InputError(label, None, "classes", "a mapping whose keys are class names (strings)",
                                 Kind(f"a key that is {_kind(k)}"))
            classes.append((k, check_super(f"classes.{k}", sup)))
    rules: list[tuple[str, tuple[str, ...]]] = []
    if "rules" in doc:
        rl = doc["rules"]
        if not isinstance(rl, dict) or not rl:
            raise InputError(label, None, "rules", "a non-empty mapping of super-category -> list of substrings",
                             _kind(rl))
        for sup, keys in rl.items():
            check_super(f"rules.{sup}" if isinstance(sup, str) else "rules", sup)
            rules.append((sup, _names_list(label, f"rules.{sup}", keys)))
    if base is not None:
        for sup, keys in base.rules:
            if sup not in known:
                raise InputError(label, None, "super_categories", f"every super-category of {base.name} it "
                                 "extends", Kind(f"a list without {sup!r}"))
        rules += list(base.rules)
        classes = list(base.classes) + classes
    if not classes and not rules:
        raise InputError(label, None, "classes", "at least one class under `classes` or one rule under `rules`",
                         Kind("nothing"))
    name = doc.get("name", Path(path).stem)
    if not isinstance(name, str) or not name.strip():
        raise InputError(label, None, "name", "a non-empty string", _kind(name))
    how = doc.get("description", "")
    if not isinstance(how, str):
        raise InputError(label, None, "description", "a string", _kind(how))
    how = how or (f"{Path(path).name}: " + (f"extends {base.name}; " if base is not None else "")
                  + f"{len(classes)} classes by name, {sum(len(k) for _, k in rules)} substrings")
    return Ontology(name=name, super_categories=supers, rules=tuple(rules), classes=tuple(classes), fallback=None,
                    how=how, source=label)
