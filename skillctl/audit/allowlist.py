"""``.skillaudit``: the findings a skill's authors reviewed and accept, each with a reason.

Format (YAML, at the skill's root; schema in ``allowlist.schema.json``)::

    accept:
      - rule: SA301                  # required
        path: scripts/install.sh     # optional: glob on the path within the skill
        line: 12                     # optional
        reason: installs our own CLI from our release server, checksum verified on the next line

An entry without a reason (or otherwise malformed) is refused: it accepts nothing and becomes
a finding itself (``allowlist.invalid``), so the finding it meant to hide stays visible and
``--fail-on`` still sees it. Entries that match nothing are reported as ``allowlist.unused``.
Accepted findings are kept in the report with their reason, never dropped.

A bundle's ``.skillaudit`` was written by whoever published it: callers auditing other
people's skills for a trust decision can ignore it (``use_allowlist=False``).
"""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import jsonschema
import yaml

from skillctl.nesting import NestingError, check_yaml
from skillctl.schema import schema_problems, summarize, validator

ALLOWLIST_FILE = ".skillaudit"
MIN_REASON = 10
_MAX_BYTES = 256 * 1024


@dataclass(frozen=True)
class Entry:
    rule: str
    reason: str
    path: str | None
    line: int | None
    at_line: int  # where the entry is in .skillaudit

    def matches(self, rule: str, path: str, line: int) -> bool:
        if rule != self.rule:
            return False
        if self.path is not None and not fnmatch.fnmatchcase(path, self.path):
            return False
        return self.line is None or self.line == line


@dataclass(frozen=True)
class Problem:
    line: int
    column: int
    evidence: str
    detail: str


@lru_cache(maxsize=1)
def _schema() -> dict[str, Any]:
    return json.loads(resources.files("skillctl.audit").joinpath("allowlist.schema.json").read_text(encoding="utf-8"))


class _LineLoader(yaml.SafeLoader):
    """SafeLoader that remembers the line of each mapping (to point at a bad entry)."""


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> dict[str, Any]:
    mapping = loader.construct_mapping(node, deep=True)
    mapping["__line__"] = node.start_mark.line + 1
    return mapping


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def parse(data: bytes) -> tuple[list[Entry], list[Problem]]:
    """Valid entries, and a problem for each refused one (or for the whole file)."""
    if len(data) > _MAX_BYTES:
        return [], [Problem(1, 1, "", f"{ALLOWLIST_FILE} is over {_MAX_BYTES} bytes; nothing in it is applied")]
    try:
        text = data.decode("utf-8")
        check_yaml(text, loader=_LineLoader)
        doc = yaml.load(text, Loader=_LineLoader)  # noqa: S506 - a SafeLoader subclass
    except NestingError as exc:
        return [], [Problem(exc.line, exc.column, "", f"{ALLOWLIST_FILE} is {exc.problem}; nothing in it is applied")]
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        return [], [Problem(line, 1, "", f"{ALLOWLIST_FILE} is not valid UTF-8 YAML; nothing in it is applied")]
    if doc is None:
        return [], []
    if not isinstance(doc, dict) or not isinstance(doc.get("accept", []), list):
        return [], [Problem(1, 1, "", f"{ALLOWLIST_FILE} must be a mapping with an 'accept' list; nothing in it is applied")]
    entries: list[Entry] = []
    problems: list[Problem] = []
    check = jsonschema.Draft202012Validator(_schema()["$defs"]["entry"])
    for index, raw in enumerate(doc.get("accept", []), start=1):
        line = raw.pop("__line__", 1) if isinstance(raw, dict) else 1
        clean = _strip_lines(raw)
        errors = schema_problems(clean, check, wording=validator, top="entry")
        reason = clean.get("reason") if isinstance(clean, dict) else None
        rule = clean.get("rule", "?") if isinstance(clean, dict) else "?"
        if not isinstance(reason, str) or len(reason.strip()) < MIN_REASON:
            problems.append(Problem(line, 1, f"entry {index} ({rule})",
                                    f"entry {index} accepts {rule} without a reason (at least {MIN_REASON} characters "
                                    "saying why the finding is acceptable); it is not applied"))
            continue
        if errors:
            problems.append(Problem(line, 1, f"entry {index} ({rule})", f"entry {index}: {summarize(errors)}; it is not applied"))
            continue
        entries.append(Entry(clean["rule"], reason.strip(), clean.get("path"), clean.get("line"), line))
    return entries, problems


def _strip_lines(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_lines(v) for k, v in value.items() if k != "__line__"}
    if isinstance(value, list):
        return [_strip_lines(v) for v in value]
    return value
