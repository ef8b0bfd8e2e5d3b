"""A nesting bound for every JSON and YAML document skillctl reads, checked before parsing.

Python's ``json`` and PyYAML's composer and constructor recurse once per level, so a document
nested 200,000 deep (a few hundred KB of ``[``) escapes as a ``RecursionError`` — or, with
libyaml or a small thread stack, worse. Code that walks what was parsed (schema checks,
``json.dumps``) recurses too, through YAML aliases as well. So every reader checks its text here
first, in one linear pass that does not recurse:

- JSON (``loads_json``, a drop-in ``json.loads``): strings are skipped, the brackets outside
  them counted. For valid JSON this is exactly the nesting depth; for invalid JSON it is never
  less than the depth the parser reaches before it fails.
- YAML (``check_yaml``): the loader's own scanner and parser, which keep an explicit stack
  instead of recursing, yield the event stream; collections open and close in it, so flow
  (``[[[[``), block (indentation, compact ``- - -``) and any mix are counted exactly as the
  composer will nest them. An alias counts as deep as its anchor's node where it is used, and
  aliases may add at most ``MAX_ALIAS_NODES`` nodes (a "billion laughs" document adds 10⁹);
  an alias to a node that is still open (a recursive document) is refused. The pass stops at
  the first violation, so its cost is at most the cost of the load itself.

``MAX_NESTING`` (64) is far above any document skillctl's formats define (a skills.yaml or an
index.json nests under 8 levels) and far below what the parsers survive. Violations are
``NestingError``, a ``ValueError`` like ``json.JSONDecodeError``, so every reader's existing
"not valid JSON" handling turns it into one line.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any, Iterable

MAX_NESTING = 64
MAX_ALIAS_NODES = 100_000


class NestingError(ValueError):
    """A document past a bound. ``problem`` completes "the document is …" (``nested too deeply:
    over 64 levels``); ``line`` and ``column`` (1-based) say where."""

    def __init__(self, message: str, line: int = 0, column: int = 0) -> None:
        where = f", at line {line}, column {column}" if line else ""
        super().__init__(message + where)
        self.problem, self.line, self.column = message, line, column


# A JSON string, escapes included: the parser's own notion of where each string ends.
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def json_depth(text: str, *, limit: int = MAX_NESTING) -> int:
    """The deepest nesting of ``[``/``{`` outside strings (C-level passes, no recursion); any
    value up to ``limit`` when there are no more brackets than that at all."""
    if text.count("[") + text.count("{") <= limit:
        return min(limit, text.count("[") + text.count("{"))
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def check_json(text: str, *, limit: int = MAX_NESTING) -> None:
    """Raise ``NestingError`` when ``text`` nests deeper than ``limit``."""
    if json_depth(text, limit=limit) <= limit:
        return
    depth = 0
    for m in _JSON_TOKEN.finditer(text):  # only on refusal: find where, to say so
        token = m.group()
        depth += _STEP.get(token, 0)
        if depth > limit:
            line = text.count("\n", 0, m.start()) + 1
            raise NestingError(f"nested too deeply: over {limit} levels", line, m.start() - text.rfind("\n", 0, m.start()))
    raise NestingError(f"nested too deeply: over {limit} levels")  # not reached: the passes agree


def loads_json(data: str | bytes, *, limit: int = MAX_NESTING) -> Any:
    """``json.loads`` with the nesting bound; bytes must be UTF-8. Every failure is a
    ``ValueError`` (``json.JSONDecodeError``, ``UnicodeDecodeError`` or ``NestingError``)."""
    text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
    check_json(text, limit=limit)
    return json.loads(text)


def check_yaml(text: str, *, loader: Any = None, limit: int = MAX_NESTING, max_alias_nodes: int = MAX_ALIAS_NODES) -> None:
    """Raise ``NestingError`` when ``text`` nests deeper than ``limit`` or its aliases expand
    past ``max_alias_nodes`` extra nodes or into themselves. ``loader`` is the Loader class the
    caller will load with (default ``yaml.SafeLoader``), so both read the same events; a syntax
    error is left to that load (or is a ``yaml.YAMLError`` from here)."""
    # Every collection starts at an indicator of its own ([ { for flow, - for a block sequence,
    # : or ? after a block mapping's first key): with fewer of them than the bound, and no alias
    # to repeat what they open, no path can pass it. Most documents stop here.
    if "*" not in text and sum(map(text.count, "[{-:?")) <= limit:
        return
    import yaml

    loader = loader or yaml.SafeLoader
    c_loader = getattr(yaml, "CSafeLoader", None)
    if c_loader is not None and loader in (yaml.SafeLoader, c_loader):
        # libyaml yields the same events twenty times faster. A document it refuses is read
        # again by PyYAML's parser: the two differ at a few edges, and libyaml's scanner, which
        # reads ahead, stops at its own nesting limit (1000) before this bound is reached.
        try:
            return _check_events(yaml.parse(text, Loader=c_loader), limit, max_alias_nodes)
        except yaml.YAMLError:
            loader = yaml.SafeLoader
    _check_events(yaml.parse(text, Loader=loader), limit, max_alias_nodes)


def _check_events(events: Iterable[Any], limit: int, max_alias_nodes: int) -> None:
    import yaml

    open_: list[list[Any]] = []  # per open collection: [anchor, depth it opened at, deepest depth inside, nodes]
    anchors: dict[str, tuple[int, int]] = {}  # anchor -> (levels its node spans, nodes it expands to)
    added = 0  # nodes aliases add beyond the document's own

    def fail(message: str, event: Any) -> None:
        mark = event.start_mark
        raise NestingError(message, mark.line + 1, mark.column + 1)

    for event in events:
        if isinstance(event, yaml.CollectionStartEvent):
            open_.append([event.anchor, len(open_) + 1, len(open_) + 1, 1])
            if len(open_) > limit:
                fail(f"nested too deeply: over {limit} levels", event)
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, level, deepest, nodes = open_.pop()
            if anchor is not None:
                anchors[anchor] = (deepest - level + 1, nodes)
            if open_:
                open_[-1][2] = max(open_[-1][2], deepest)
                open_[-1][3] += nodes
        elif isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent)):
            levels, nodes = 0, 1
            if isinstance(event, yaml.AliasEvent):
                if event.anchor not in anchors:
                    if any(frame[0] == event.anchor for frame in open_):
                        fail(f"recursive: the alias *{event.anchor} is inside the node it names", event)
                    continue  # an undefined alias: the load reports it
                levels, nodes = anchors[event.anchor]
                added += nodes
                if added > max_alias_nodes:
                    fail(f"too big: its aliases expand to more than {max_alias_nodes} nodes", event)
                if len(open_) + levels > limit:
                    fail(f"nested too deeply: over {limit} levels through the alias *{event.anchor}", event)
            elif event.anchor is not None:
                anchors[event.anchor] = (0, 1)
            if open_:
                open_[-1][2] = max(open_[-1][2], len(open_) + levels)
                open_[-1][3] += nodes
