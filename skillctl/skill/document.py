"""Reading SKILL.md: bytes → front matter + body, with line numbers, or located diagnostics.

python-frontmatter's YAML handler loads the metadata (so a skill reads the same here as in any
python-frontmatter tool), but we find the ``---`` fences ourselves: python-frontmatter reports
"no front matter" and "front matter never closed" alike (empty metadata), and its boundary regex
may swallow blank lines, which would shift every line number we report.

Hostile input is expected: undecodable bytes, binary files, huge files, YAML alias bombs and
duplicate keys all end as diagnostics, never as exceptions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import frontmatter
import yaml

from skillctl.skill.diagnostics import Diagnostic

# SKILL.md is instructions for a model: past 1 MiB (~250k tokens) it cannot be one. We stop
# reading there instead of parsing 50 MB of YAML/Markdown.
MAX_SKILL_MD_BYTES = 1024 * 1024
# Front matter is ~100 tokens by the spec; a generous cap keeps YAML parsing cheap.
MAX_FRONT_MATTER_BYTES = 64 * 1024
_MAX_YAML_NODES = 10_000

_HANDLER = frontmatter.YAMLHandler()


@dataclass(frozen=True)
class Location:
    line: int  # 1-based line in SKILL.md
    column: int  # 1-based


@dataclass(frozen=True)
class SkillDocument:
    """A parsed SKILL.md: the metadata mapping, the Markdown body and where things are."""

    metadata: dict[str, Any]
    body: str
    body_start_line: int  # line number of the body's first line
    front_matter_end_line: int  # line number of the closing fence
    # "name" / "metadata.version" -> location of the value (or of the key when no value).
    locations: dict[str, Location] = field(default_factory=dict)
    had_bom: bool = False

    def where(self, key: str) -> Location:
        return self.locations.get(key) or self.locations.get(key.split(".")[0]) or Location(1, 1)


# UTF-32 first: its little-endian BOM starts with UTF-16's.
_OTHER_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"), (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"))


def _decode(raw: bytes, shown: str) -> tuple[str | None, list[Diagnostic]]:
    # Windows editors save "Unicode" as UTF-16 with a BOM; its NUL bytes would otherwise make
    # it look binary, and "re-save as UTF-8" is the fix the author needs.
    for bom, encoding in _OTHER_BOMS:
        if raw.startswith(bom):
            return None, [Diagnostic("SK007", f"SKILL.md is {encoding}, not UTF-8; re-save it as UTF-8", shown, 1, 1)]
    if b"\x00" in raw[:8192]:
        return None, [Diagnostic("SK008", "SKILL.md contains NUL bytes: it is a binary file, not Markdown", shown)]
    try:
        return raw.decode("utf-8"), []
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        # columns count characters, like every other diagnostic (the line's prefix is valid UTF-8)
        col = len(raw[raw.rfind(b"\n", 0, exc.start) + 1 : exc.start].decode("utf-8")) + 1
        return None, [
            Diagnostic(
                "SK007",
                f"SKILL.md is not valid UTF-8 (byte 0x{raw[exc.start]:02x}); re-save it as UTF-8",
                shown,
                line,
                col,
            )
        ]


def _index_nodes(node: yaml.Node, offset: int) -> tuple[dict[str, Location], list[Diagnostic], str | None]:
    """Locations of top-level keys and metadata.* values; duplicate keys; alias/size problems."""
    locations: dict[str, Location] = {}
    problems: list[Diagnostic] = []
    seen: set[int] = set()
    stack = [node]
    count = 0
    while stack:
        n = stack.pop()
        if id(n) in seen:
            return locations, problems, "YAML aliases (*name) are not allowed in front matter; write the value out"
        seen.add(id(n))
        count += 1
        if count > _MAX_YAML_NODES:
            return locations, problems, f"front matter has more than {_MAX_YAML_NODES} YAML nodes"
        if isinstance(n, yaml.MappingNode):
            stack.extend(v for pair in n.value for v in pair)
        elif isinstance(n, yaml.SequenceNode):
            stack.extend(n.value)

    def loc(n: yaml.Node) -> Location:
        return Location(n.start_mark.line + 1 + offset, n.start_mark.column + 1)

    def walk_mapping(m: yaml.MappingNode, prefix: str) -> None:
        keys_seen: dict[str, Location] = {}
        for k, v in m.value:
            key = str(k.value) if isinstance(k, yaml.ScalarNode) else "<complex key>"
            if key in keys_seen:
                first = keys_seen[key]
                problems.append(
                    Diagnostic(
                        "SK010",
                        f"key '{prefix}{key}' appears twice (first on line {first.line}); YAML keeps only the last, delete one",
                        "",
                        loc(k).line,
                        loc(k).column,
                    )
                )
            keys_seen[key] = loc(k)
            has_value = not (isinstance(v, yaml.ScalarNode) and v.value == "" and v.tag.endswith(":null"))
            locations[prefix + key] = loc(v) if has_value else loc(k)
            if not prefix and key == "metadata" and isinstance(v, yaml.MappingNode):
                walk_mapping(v, "metadata.")

    if isinstance(node, yaml.MappingNode):
        walk_mapping(node, "")
    return locations, problems, None


def parse_skill_md(raw: bytes, shown: str) -> tuple[SkillDocument | None, list[Diagnostic]]:
    """Parse SKILL.md bytes. ``shown`` is the path used in diagnostics.

    Returns the document (None when the front matter is unusable) and every problem found.
    """
    if len(raw) > MAX_SKILL_MD_BYTES:
        return None, [
            Diagnostic(
                "SK009",
                # callers read at most the cap + 1 byte, so the real size is unknown here
                "SKILL.md is larger than 1 MiB, the most skillctl reads — move detail into references/ files",
                shown,
            )
        ]
    text, diags = _decode(raw, shown)
    if text is None:
        return None, diags
    had_bom = text.startswith("\ufeff")
    if had_bom:
        text = text[1:]
        diags.append(Diagnostic("SK204", "SKILL.md starts with a UTF-8 byte-order mark; save it without one", shown, 1, 1))
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if not lines or lines[0].rstrip() != "---":
        diags.append(
            Diagnostic(
                "SK003",
                "SKILL.md must start with YAML front matter: a '---' line, name: and description:, then '---'",
                shown,
                1,
                1,
            )
        )
        return None, diags
    close = next((i for i in range(1, len(lines)) if lines[i].rstrip() == "---"), None)
    if close is None:
        diags.append(Diagnostic("SK004", "front matter opened on line 1 is never closed: add a '---' line after it", shown, 1, 1))
        return None, diags
    fm_text = "\n".join(lines[1:close])
    if len(fm_text.encode("utf-8")) > MAX_FRONT_MATTER_BYTES:
        diags.append(Diagnostic("SK005", "front matter is larger than 64 KiB; keep metadata short and move text to the body", shown, 2, 1))
        return None, diags
    offset = 1  # YAML line 0 is SKILL.md line 2
    try:
        node = yaml.compose(fm_text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = mark.line + 1 + offset if mark else 2
        col = mark.column + 1 if mark else 1
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        diags.append(Diagnostic("SK005", f"front matter is not valid YAML: {problem}", shown, line, col))
        return None, diags
    except RecursionError:
        diags.append(Diagnostic("SK005", "front matter is nested too deeply to be YAML metadata", shown, 2, 1))
        return None, diags
    if node is None:
        diags.append(Diagnostic("SK006", "front matter is empty: add name: and description:", shown, 1, 1))
        return None, diags
    locations, dup, fatal = _index_nodes(node, offset)
    diags += [Diagnostic(d.code, d.message, shown, d.line, d.column) for d in dup]
    if fatal:
        diags.append(Diagnostic("SK005", fatal, shown, 2, 1))
        return None, diags
    if not isinstance(node, yaml.MappingNode):
        diags.append(
            Diagnostic("SK006", "front matter must be a YAML mapping of fields (name: …, description: …)", shown, 2, 1)
        )
        return None, diags
    try:
        metadata = _HANDLER.load(fm_text)
    except Exception as exc:  # noqa: BLE001 - any constructor failure is bad input, not a crash
        # e.g. an unhashable mapping key, a timestamp out of range, or `!!timestamp x`
        # (PyYAML's constructor raises AttributeError on it)
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        diags.append(Diagnostic("SK005", f"front matter is not valid YAML: {first}", shown, 2, 1))
        return None, diags
    body_lines = lines[close + 1 :]
    body = "\n".join(body_lines)
    return (
        SkillDocument(
            metadata=metadata,
            body=body,
            body_start_line=close + 2,
            front_matter_end_line=close + 1,
            locations=locations,
            had_bom=had_bom,
        ),
        diags,
    )
