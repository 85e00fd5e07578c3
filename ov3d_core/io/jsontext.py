"""Whole-document JSON parsing with one-line errors.

msgspec parses; what it refuses is handed to the standard library, which defines what this project accepts (as the
loaders always have): its ``NaN``/``Infinity`` literals, lone surrogates, UTF-16/32 text. Whatever the standard
library refuses too becomes an ``InputError`` naming the file: malformed JSON (with line and column), text that is
not UTF-8, integers longer than Python converts (``sys.get_int_max_str_digits()``), nesting too deep to parse.
"""

from __future__ import annotations

import json
import sys

import msgspec

from ov3d_core.errors import InputError


def too_deep(file: str) -> InputError:
    return InputError(file, None, None, "a JSON document nested at most ~1000 levels deep")


def stdlib_error(file: str, exc: Exception) -> InputError:
    """The one-line ``InputError`` for an exception of ``json.loads``."""
    if isinstance(exc, json.JSONDecodeError):
        return InputError(file, f"line {exc.lineno} column {exc.colno}", None, f"valid JSON ({exc.msg})")
    if isinstance(exc, UnicodeDecodeError):
        return InputError(file, f"byte {exc.start}", None, "UTF-8 encoded JSON text")
    if isinstance(exc, RecursionError):
        return too_deep(file)
    return huge_integer(file)


def huge_integer(file: str) -> InputError:
    return InputError(file, None, None, f"integers of at most {sys.get_int_max_str_digits()} digits (Python's limit "
                      "for converting text to int; sys.set_int_max_str_digits raises it)")


def loads_stdlib(file: str, data: bytes):
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as e:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise stdlib_error(file, e) from None


def parse_json(file: str, data: bytes):
    """The Python value of a whole JSON document (``file`` names it in errors)."""
    if not data.strip():
        raise InputError(file, None, None, "a JSON document, got an empty file")
    try:
        return msgspec.json.decode(data)
    except RecursionError:
        raise too_deep(file) from None
    except (msgspec.DecodeError, msgspec.ValidationError):
        pass
    return loads_stdlib(file, data)
