"""The skills catalog that goes into the model's first context c₁.

Format: the Agent Skills ``<available_skills>`` block (name, description, location of SKILL.md),
HTML-escaped, skills sorted by name, followed by one line telling the agent how to open a skill.
The same skills give byte-identical text — prompt prefix caches depend on it — so nothing here
may depend on dict order, time, or where the bundles came from. No skills → empty string (the
block is left out entirely, as the reference library does).

When the block would exceed its budget it is shortened predictably: descriptions are cut to the
longest common length that fits (with "…"); if names and locations alone do not fit, the last
skills in name order are left out and a final line says how many and where to find them.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Sequence

DEFAULT_BUDGET_CHARS = 8000
READ_HINT = "Each skill is a folder; before using one, read its instructions with `cat` on the location above."
_ELLIPSIS = "…"


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    description: str
    location: str  # path of SKILL.md inside the sandbox


@dataclass(frozen=True)
class Catalog:
    text: str
    shortened: bool = False
    omitted: int = 0
    description_limit: int | None = None

    def warning(self) -> str | None:
        if not self.shortened:
            return None
        if self.omitted:
            return f"skills catalog over budget: {self.omitted} skill(s) left out of the prompt (still under /skills)"
        return f"skills catalog over budget: descriptions cut to {self.description_limit} characters"


def _render(entries: Sequence[CatalogEntry], desc_limit: int | None, omitted: int, root_hint: str) -> str:
    lines = ["<available_skills>"]
    for e in entries:
        desc = e.description
        if desc_limit is not None and len(desc) > desc_limit:
            desc = desc[: max(0, desc_limit - 1)].rstrip() + _ELLIPSIS
        lines.append("<skill>")
        lines.append(f"<name>{html.escape(e.name)}</name>")
        lines.append(f"<description>{html.escape(desc)}</description>")
        lines.append(f"<location>{html.escape(e.location)}</location>")
        lines.append("</skill>")
    lines.append("</available_skills>")
    lines.append(READ_HINT)
    if omitted:
        lines.append(f"{omitted} more skill(s) are not listed here to save space: run `ls {root_hint}` to see them.")
    return "\n".join(lines) + "\n"


def render_catalog(
    entries: Sequence[CatalogEntry], *, budget_chars: int = DEFAULT_BUDGET_CHARS, root_hint: str = "/skills"
) -> Catalog:
    if not entries:
        return Catalog("")
    ordered = sorted(entries, key=lambda e: (e.name, e.location))
    full = _render(ordered, None, 0, root_hint)
    if len(full) <= budget_chars:
        return Catalog(full)
    # Largest description length that fits (binary search; length is monotone in the limit).
    longest = max(len(e.description) for e in ordered)
    lo, hi = 0, longest
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if len(_render(ordered, mid, 0, root_hint)) <= budget_chars:
            lo = mid
        else:
            hi = mid - 1
    MIN_USEFUL = 40  # below this a description no longer tells the agent when to use a skill
    if lo >= MIN_USEFUL:
        return Catalog(_render(ordered, lo, 0, root_hint), True, 0, lo)
    # Keep the first k skills (name order) with short descriptions.
    for k in range(len(ordered) - 1, -1, -1):
        text = _render(ordered[:k], MIN_USEFUL, len(ordered) - k, root_hint)
        if len(text) <= budget_chars:
            return Catalog(text, True, len(ordered) - k, MIN_USEFUL)
    return Catalog(_render([], None, len(ordered), root_hint), True, len(ordered), 0)
