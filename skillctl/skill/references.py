"""File references in a SKILL.md body: Markdown links and bare ``scripts/…``-style paths.

The spec puts references relative to the skill root and recommends keeping them one level deep
(``references/api.md``, not ``references/v2/api/spec.md``). A reference to a file that does not
exist is the most common defect in published skills: the agent is told to run a script that is
not there.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from urllib.parse import unquote

# [text](target) and ![alt](target "title"); targets in <...> may contain spaces.
_LINK_RE = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+[\"'(][^)]*)?\)")
# bare paths into the conventional folders, e.g. `python scripts/tally.py` or ./references/x.md
_BARE_RE = re.compile(r"(?<![\w/.\-~$])(?:\./)?((?:scripts|references|assets)/[\w.\-/]*[\w\-])")
_SCHEME_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.\-]*:")


@dataclass(frozen=True)
class Reference:
    target: str  # normalised POSIX path relative to the skill root ("" when it escapes)
    raw: str  # as written
    line: int  # 0-based line within the body
    column: int  # 0-based
    escapes: bool = False


def _normalise(raw: str) -> tuple[str, bool]:
    path = unquote(raw.split("#", 1)[0].split("?", 1)[0]).strip()
    if path.startswith("./"):
        path = path[2:]
    norm = posixpath.normpath(path) if path else ""
    escapes = norm == ".." or norm.startswith("../") or path.startswith("/")
    return ("" if escapes else norm), escapes


def find_references(body: str) -> list[Reference]:
    refs: list[Reference] = []
    for i, line in enumerate(body.split("\n")):
        linked_spans: list[tuple[int, int]] = []
        for m in _LINK_RE.finditer(line):
            raw = m.group(1)
            linked_spans.append(m.span())
            if raw.startswith("<") and raw.endswith(">"):
                raw = raw[1:-1]
            if not raw or raw.startswith("#") or _SCHEME_RE.match(raw) or raw.startswith("//"):
                continue  # anchors, URLs, mailto:
            target, escapes = _normalise(raw)
            if target or escapes:
                refs.append(Reference(target, raw, i, m.start(1), escapes))
        for m in _BARE_RE.finditer(line):
            if any(a <= m.start() < b for a, b in linked_spans):
                continue
            raw = m.group(1)
            target, escapes = _normalise(raw)
            refs.append(Reference(target, raw, i, m.start(1), escapes))
    return refs


def depth(target: str) -> int:
    """Folder levels below the skill root: references/api.md → 1."""
    return target.count("/")
