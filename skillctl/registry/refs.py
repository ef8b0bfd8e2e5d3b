"""Skill references: how users name what they want.

    tally                 latest release of the skill named tally
    tally@^1.2            highest version in a range (see skillctl.versioning)
    tally@1.2.3           exactly that version (also yanked ones)
    skill_0123abcd…       by stable id, latest release
    skill_0123abcd…@1.2.3 by id and version or range
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from skillctl.errors import VersionError
from skillctl.versioning import SEMVER_RE, VersionRange, parse_range

SKILL_ID_RE = re.compile(r"^skill_[0-9a-f]{24}$")
NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


@dataclass(frozen=True)
class SkillRef:
    text: str
    name: str | None  # set when the ref names a skill
    skill_id: str | None  # set when the ref uses an id
    range: VersionRange

    @property
    def exact_version(self) -> str | None:
        """The version string when the ref pins one exactly (``name@1.2.3``)."""
        _, _, ver = self.text.partition("@")
        return ver.strip() if ver and SEMVER_RE.match(ver.strip()) else None

    @property
    def subject(self) -> str:
        return self.skill_id or self.name or "?"


def parse_ref(text: str) -> SkillRef:
    if not isinstance(text, str) or not text.strip():
        raise VersionError("empty skill reference: write NAME, NAME@RANGE, skill_ID or skill_ID@VERSION")
    text = text.strip()
    head, sep, rng = text.partition("@")
    if sep and not rng.strip():
        raise VersionError(f"skill reference '{text}' has an empty version after '@'")
    try:
        parsed = parse_range(rng if sep else "latest")
    except VersionError as exc:
        raise VersionError(f"skill reference '{text}': {exc}") from None
    if SKILL_ID_RE.match(head):
        return SkillRef(text, None, head, parsed)
    if not NAME_RE.match(head) or len(head) > 64:
        raise VersionError(
            f"skill reference '{text}': '{head}' is neither a skill name (lowercase letters, digits, '-') nor an id (skill_…)"
        )
    return SkillRef(text, head, None, parsed)


def require_exact(ref: str, verb: str) -> SkillRef:
    """``ref`` parsed, refused unless it pins one version (yank, unyank and remove need one)."""
    r = parse_ref(ref)
    if r.exact_version is None:
        raise VersionError(f"{verb} needs an exact version, e.g. {r.subject}@1.2.3 (got '{ref}')")
    return r
