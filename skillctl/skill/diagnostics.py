"""Diagnostics: located, coded findings about a skill.

Codes are stable (tools and CI configs may match on them) and documented in ``CODES``.
``SK0xx`` file-level errors, ``SK1xx`` front-matter errors (what the Agent Skills spec forbids),
``SK2xx`` warnings (what the spec recommends, plus packaging hygiene), ``SK3xx`` notes (worth
knowing, never a failure, not even under ``--strict``). SK251–SK259 belong to the skill
environments checker (imports that no declared requirement provides).
"""

from __future__ import annotations

from skillctl.words import SEVERITY_WORD

import re
from dataclasses import dataclass
from typing import Any, Literal

Severity = Literal["error", "warning", "info"]

# code -> (severity, short title). The title is documentation; messages carry the details.
CODES: dict[str, tuple[Severity, str]] = {
    "SK001": ("error", "SKILL.md is missing"),
    "SK002": ("error", "SKILL.md has the wrong file-name case"),
    "SK003": ("error", "SKILL.md has no front matter"),
    "SK004": ("error", "front matter is not closed"),
    "SK005": ("error", "front matter is not valid YAML"),
    "SK006": ("error", "front matter is not a mapping"),
    "SK007": ("error", "SKILL.md is not UTF-8"),
    "SK008": ("error", "SKILL.md is binary"),
    "SK009": ("error", "SKILL.md is too large to read"),
    "SK010": ("error", "front matter repeats a key"),
    "SK011": ("error", "path cannot be read"),
    "SK012": ("error", "path is not a skill"),
    "SK101": ("error", "name is missing"),
    "SK102": ("error", "name is not a non-empty string"),
    "SK103": ("error", "name is longer than 64 characters"),
    "SK104": ("error", "name has characters other than a-z, 0-9 and '-'"),
    "SK105": ("error", "name starts or ends with '-'"),
    "SK106": ("error", "name contains '--'"),
    "SK107": ("error", "name differs from the folder name"),
    "SK111": ("error", "description is missing"),
    "SK112": ("error", "description is not a non-empty string"),
    "SK113": ("error", "description is longer than 1024 characters"),
    "SK121": ("error", "compatibility is not a non-empty string"),
    "SK122": ("error", "compatibility is longer than 500 characters"),
    "SK131": ("error", "metadata is not a mapping"),
    "SK132": ("error", "metadata has a key or value that is not a string"),
    "SK141": ("error", "allowed-tools is not a string"),
    "SK151": ("error", "license is not a string"),
    "SK161": ("error", "unknown top-level field"),
    "SK162": ("error", "field does not fit the type or limit its client documents"),
    "SK201": ("warning", "body is longer than 500 lines"),
    "SK202": ("warning", "body is longer than 5,000 tokens"),
    "SK203": ("warning", "body is empty"),
    "SK204": ("warning", "SKILL.md starts with a byte-order mark"),
    "SK211": ("warning", "referenced file does not exist"),
    "SK212": ("warning", "reference chain deeper than one level from SKILL.md"),
    "SK213": ("warning", "reference points outside the skill folder"),
    "SK221": ("warning", "directly executed script has no shebang line"),
    "SK222": ("warning", "directly executed script is not executable"),
    "SK231": ("warning", "symbolic link"),
    "SK232": ("warning", "file is larger than 5 MiB"),
    "SK233": ("warning", "hidden or OS junk file"),
    "SK234": ("warning", "file cannot be read or is not a regular file"),
    "SK235": ("warning", "folder nesting too deep"),
    "SK236": ("warning", "folder has too many entries to scan"),
    "SK237": ("warning", "search for skills stopped at its folder budget"),
    "SK241": ("warning", "metadata.version is not SemVer"),
    "SK251": ("warning", "script imports a module that no declared requirement provides"),
    "SK252": ("warning", "the skill's requirements declaration cannot be used"),
    "SK301": ("info", "metadata.version MAJOR.MINOR is read as MAJOR.MINOR.0"),
    "SK302": ("info", "search for skills stopped at its depth limit"),
    "SK303": ("info", "no metadata.version: pack and publish need --version"),
}


# Line breaks and terminal control characters (C0, DEL, C1, U+2028/9).
_CONTROL_RE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _escape_controls(text: str) -> str:
    return _CONTROL_RE.sub(lambda m: repr(m.group())[1:-1], text)


@dataclass(frozen=True)
class Diagnostic:
    code: str
    message: str
    file: str  # path as shown to the user
    line: int = 0  # 1-based; 0 = the whole file
    column: int = 0  # 1-based; 0 = unknown

    def __post_init__(self) -> None:
        # Messages quote what the author wrote (keys, values, link targets). A newline or an
        # escape sequence in it must not split one problem over several lines, or forge a
        # "path:1:1: SK… " line in a CI log: shown escaped, as Python would (\n, \x1b).
        if _CONTROL_RE.search(self.message):
            object.__setattr__(self, "message", _escape_controls(self.message))

    @property
    def severity(self) -> Severity:
        return CODES[self.code][0]

    def format(self) -> str:
        # Always path:line:col so editors' problem matchers read every line; 0:0 = the whole file
        # (the same values the JSON output carries).
        loc = _escape_controls(self.file)  # file names may hold newlines too; JSON keeps them as-is
        col = (self.column or 1) if self.line else 0
        return f"{loc}:{self.line}:{col}: {self.code} {SEVERITY_WORD[self.severity]} {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity,
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "message": self.message,
        }
