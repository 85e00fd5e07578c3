"""YAML for files a stranger may have written: bounded in size, depth and alias expansion; errors in one line.

``load_yaml_file(path)`` / ``load_yaml_bytes(data, file=...)`` return plain Python data (dicts, lists, str, int,
float, bool, None, and the YAML 1.1 scalars PyYAML's safe loader builds: dates, bytes, sets) or raise
``InputError`` naming the file and the line. What is refused, and why:

* files over ``max_bytes`` (1 MiB by default: a benchmark config is a few KB);
* text that is not UTF-8 (a BOM is accepted);
* nesting deeper than ``max_depth`` (64) collections: PyYAML's composer recurses, so 100k levels end in a
  ``RecursionError`` today;
* aliases that expand to more than ``max_alias_nodes`` (100,000) nodes, and recursive aliases: a 1 KB
  "billion laughs" file is tiny as parsed (aliases share their node) but every consumer that walks it (a schema
  check, ``str()``) expands it exponentially;
* a key given twice in one mapping (PyYAML keeps the last one silently).

Messages never quote the file's content: PyYAML problems that would (an unknown tag, an odd character) are reworded.
The event parser is libyaml's (``yaml.CParser``) when PyYAML was built with it, else PyYAML's pure-Python parser;
the composer (where the bounds are enforced) is PyYAML's Python one in both cases.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import yaml
import yaml.reader
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent, MappingStartEvent, SequenceStartEvent
from yaml.resolver import Resolver

from ov3d_core.errors import InputError

MAX_BYTES = 1 << 20
MAX_DEPTH = 64
MAX_ALIAS_NODES = 100_000


class Kind(str):
    """A description of what was found ("a string", "an integer"): shown bare in ``InputError`` messages (its
    ``repr`` is its text), so that a message names the kind of a value and never the value itself."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str(self)


class _Refused(yaml.YAMLError):
    """A bound of this module was exceeded (carries the line of the node that crossed it)."""

    def __init__(self, expected: str, got: str, mark):
        super().__init__(expected)
        self.expected, self.got, self.mark = expected, got, mark


class _BoundedComposer(Composer):
    """PyYAML's composer with a depth bound, an alias-expansion bound and no recursive aliases.

    Every composed node's expanded size (1 + the sizes of its children, aliases counted at the size of their target)
    is kept by node id; the alias bound is on the sum of the sizes that aliases bring in.
    """

    def __init__(self, max_depth: int, max_alias_nodes: int):
        Composer.__init__(self)
        self._max_depth, self._max_alias_nodes = max_depth, max_alias_nodes
        self._depth = 0
        self._alias_nodes = 0
        self._sizes: dict[int, int] = {}

    def compose_node(self, parent, index):
        if self.check_event(AliasEvent):
            event = self.get_event()
            node = self.anchors.get(event.anchor)
            if node is None:
                raise _Refused("every alias (*name) to follow its anchor (&name)", "an undefined alias",
                               event.start_mark)
            size = self._sizes.get(id(node))
            if size is None:  # the anchored collection is still open: the alias points into itself
                raise _Refused("aliases that do not contain themselves", "a recursive alias", event.start_mark)
            self._alias_nodes += size
            if self._alias_nodes > self._max_alias_nodes:
                raise _Refused(f"aliases that expand to at most {self._max_alias_nodes:,} values",
                               "more (an alias bomb?)", event.start_mark)
            return node
        collection = self.check_event(SequenceStartEvent, MappingStartEvent)
        if collection:
            self._depth += 1
            if self._depth > self._max_depth:
                raise _Refused(f"at most {self._max_depth} nested levels of lists and mappings", "deeper nesting",
                               self.peek_event().start_mark)
        node = Composer.compose_node(self, parent, index)
        if collection:
            self._depth -= 1
            children = [n for kv in node.value for n in kv] if isinstance(node, yaml.MappingNode) else node.value
            self._sizes[id(node)] = 1 + sum(self._sizes.get(id(c), 1) for c in children)
        else:
            self._sizes[id(node)] = 1
        return node


class _StrictConstructor(SafeConstructor):
    """PyYAML's safe constructor, refusing a key that appears twice in one mapping."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: set = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = (key_node.tag, key_node.value) if isinstance(key_node, yaml.ScalarNode) else None
                if key is not None:
                    if key in seen:
                        raise _Refused("each key once per mapping", "a key given twice", key_node.start_mark)
                    seen.add(key)
        return super().construct_mapping(node, deep=deep)


try:
    from yaml._yaml import CParser as _Parser

    class _Loader(_BoundedComposer, _Parser, _StrictConstructor, Resolver):
        def __init__(self, text: str, max_depth: int, max_alias_nodes: int):
            _Parser.__init__(self, text)
            _BoundedComposer.__init__(self, max_depth, max_alias_nodes)
            _StrictConstructor.__init__(self)
            Resolver.__init__(self)

        # The C parser also implements composition; use the bounded Python composer instead.
        check_node = Composer.check_node
        get_node = Composer.get_node
        get_single_node = Composer.get_single_node

except ImportError:  # PyYAML without libyaml
    from yaml.parser import Parser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class _Loader(Reader, Scanner, Parser, _BoundedComposer, _StrictConstructor, Resolver):  # type: ignore[no-redef]
        def __init__(self, text: str, max_depth: int, max_alias_nodes: int):
            Reader.__init__(self, text)
            Scanner.__init__(self)
            Parser.__init__(self)
            _BoundedComposer.__init__(self, max_depth, max_alias_nodes)
            _StrictConstructor.__init__(self)
            Resolver.__init__(self)


# Quoted fragments PyYAML's messages may carry: keep token names (<block end>) and single YAML indicators, drop the
# rest (an unknown escape, a tag, a character: all content of the file).
_QUOTED = re.compile(r"'([^']*)'")
_KEEP = re.compile(r"<[a-z ]+>|[-,\[\]{}:?|>#&*!%@`\"]")


def _scrub(text: str) -> str:
    text = re.sub(r"could not determine a constructor for the tag \S+", "a tag this reader does not construct (only "
                  "plain YAML: no !tags)", text)
    text = _QUOTED.sub(lambda m: m.group(0) if _KEEP.fullmatch(m.group(1)) else "", text)
    return re.sub(r" +([,)])", r"\1", re.sub(r"  +", " ", text)).strip()


def _where(mark) -> str | None:
    return None if mark is None else f"line {mark.line + 1}, column {mark.column + 1}"


#: PyYAML >= 6.0.4's own nesting guard in its scanner ("while increasing flow level: exceeded maximum nesting
#: depth"): it can fire before this module's composer bound, and is reported in this module's words.
_PYYAML_DEPTH = "exceeded maximum nesting depth"


def _yaml_error(file: str, exc: yaml.YAMLError, text: str, max_depth: int = MAX_DEPTH) -> InputError:
    """One line: the file, the line and column, PyYAML's problem in its context, scrubbed of file content."""
    if isinstance(exc, _Refused):
        return InputError(file, _where(exc.mark), None, exc.expected, Kind(exc.got))
    if _PYYAML_DEPTH in str(getattr(exc, "problem", None) or ""):
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        return InputError(file, _where(mark), None, f"at most {max_depth} nested levels of lists and mappings",
                          Kind("deeper nesting"))
    if isinstance(exc, yaml.reader.ReaderError):  # a character YAML does not allow (NUL, other controls)
        line = text.count("\n", 0, max(0, int(exc.position))) + 1
        return InputError(file, f"line {line}", None, "valid YAML (printable characters only)",
                          Kind(f"the control character #x{exc.character:04x}" if isinstance(exc.character, int)
                               else "a control character"))
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or (str(exc).splitlines() or ["a syntax error"])[0]
    context = getattr(exc, "context", None)
    detail = " ".join(str(problem).split())
    if context:
        detail = f"{' '.join(str(context).split())}: {detail}"
    return InputError(file, _where(mark), None, f"valid YAML ({_scrub(detail)})")


def _decode(file: str, data: bytes) -> str:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(file, f"line {line}", None, "UTF-8 text",
                         Kind(f"a byte that is not UTF-8 (byte offset {exc.start})")) from None
    return text


def load_yaml_bytes(data: bytes, *, file: str, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH,
                    max_alias_nodes: int = MAX_ALIAS_NODES):
    """Parse one YAML document from ``data`` under the bounds of this module (``file`` names it in errors)."""
    if len(data) > max_bytes:
        raise InputError(file, None, None, f"a YAML file of at most {_size(max_bytes)}", Kind(f"{_size(len(data))}"))
    text = _decode(file, data)
    loader = _Loader(text, max_depth, max_alias_nodes)
    try:
        return loader.get_single_data()
    except yaml.YAMLError as exc:
        raise _yaml_error(file, exc, text, max_depth) from None
    except RecursionError:  # a bound above Python's recursion limit was asked for
        raise InputError(file, None, None, "a YAML document nested less deeply", Kind("deeper nesting")) from None
    finally:
        loader.dispose()


def load_yaml_file(path: str | os.PathLike, *, file: str | None = None, max_bytes: int = MAX_BYTES,
                   max_depth: int = MAX_DEPTH, max_alias_nodes: int = MAX_ALIAS_NODES):
    """Read and parse a YAML file under the bounds of this module; ``file`` (default: the path as given) names it in
    errors. Reads at most ``max_bytes + 1`` bytes, whatever the file claims to be."""
    p = Path(path)
    file = str(p) if file is None else file
    try:
        if p.is_dir():
            raise InputError(file, None, None, "a YAML file", Kind("a folder"))
        if not p.is_file():
            raise InputError(file, None, None, "an existing YAML file",
                             Kind("not a regular file" if p.exists() else "no such file"))
        with open(p, "rb") as fh:
            data = fh.read(max_bytes + 1)
    except PermissionError:
        raise InputError(file, None, None, "a readable YAML file", Kind("permission denied")) from None
    except OSError as exc:
        raise InputError(file, None, None, "a readable YAML file", Kind(exc.strerror or type(exc).__name__)) from None
    if len(data) > max_bytes:
        try:
            size = _size(p.stat().st_size)
        except OSError:
            size = f"more than {_size(max_bytes)}"
        raise InputError(file, None, None, f"a YAML file of at most {_size(max_bytes)}", Kind(size))
    return load_yaml_bytes(data, file=file, max_bytes=max_bytes, max_depth=max_depth,
                           max_alias_nodes=max_alias_nodes)


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    if n < 1 << 20:
        return f"{n / 1024:.1f} KiB"
    return f"{n / (1 << 20):.1f} MiB"


__all__ = ["Kind", "load_yaml_bytes", "load_yaml_file", "MAX_BYTES", "MAX_DEPTH", "MAX_ALIAS_NODES"]
