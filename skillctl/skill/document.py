"""Reading SKILL.md: bytes → front matter + body, with line numbers, or located diagnostics.

The metadata is read with the YAML loader python-frontmatter uses (libyaml's ``CSafeLoader`` when
PyYAML has it), so a skill reads the same here as in any python-frontmatter tool; the text is
parsed once into nodes (for locations) and the values are built from those nodes, not parsed a
second time. We find the ``---`` fences ourselves: python-frontmatter reports "no front matter"
and "front matter never closed" alike (empty metadata), and its boundary regex may swallow blank
lines, which would shift every line number we report.

Hostile input is expected: undecodable bytes, binary files, huge files, YAML alias bombs and
duplicate keys all end as diagnostics, never as exceptions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

# The loader python-frontmatter's YAML handler uses: libyaml's when PyYAML was built with it.
# Named here rather than imported from python-frontmatter, whose import also loads its JSON and
# TOML handlers; tests/skill/test_document.py checks that the two are the same class.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

from skillctl.nesting import NestingError, check_yaml
from skillctl.skill.diagnostics import Diagnostic

# SKILL.md is instructions for a model: past 1 MiB (~250k tokens) it cannot be one. We stop
# reading there instead of parsing 50 MB of YAML/Markdown.
MAX_SKILL_MD_BYTES = 1024 * 1024
# Front matter is ~100 tokens by the spec; a generous cap keeps YAML parsing cheap.
MAX_FRONT_MATTER_BYTES = 64 * 1024
_MAX_YAML_NODES = 10_000


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
    # "name" / "metadata.version" -> location of the key itself.
    key_locations: dict[str, Location] = field(default_factory=dict)
    # fields whose value is a block collection: it starts on a later line than its key, so a
    # problem with the value as a whole is shown at the key (the line that introduces it).
    block_values: frozenset[str] = frozenset()
    had_crlf: bool = False
    # plain (unquoted) scalar values exactly as written, for hints such as "quote it: 1.10"
    plain_text: dict[str, str] = field(default_factory=dict)

    def where(self, key: str) -> Location:
        """Where a problem with the *value* of ``key`` is shown."""
        if key in self.block_values:
            return self.key_at(key)
        return self.locations.get(key) or self.locations.get(key.split(".")[0]) or Location(1, 1)

    def key_at(self, key: str) -> Location:
        """Where a problem with the *field* ``key`` itself (unknown, misplaced) is shown."""
        return self.key_locations.get(key) or self.key_locations.get(key.split(".")[0]) or Location(1, 1)


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


@dataclass
class _Index:
    values: dict[str, Location] = field(default_factory=dict)
    keys: dict[str, Location] = field(default_factory=dict)
    blocks: set[str] = field(default_factory=set)
    plain: dict[str, str] = field(default_factory=dict)


def _index_nodes(node: yaml.Node, offset: int) -> tuple[_Index, list[Diagnostic], str | None]:
    """Locations of top-level and metadata.* keys and values; duplicate keys; alias/size problems."""
    index = _Index()
    problems: list[Diagnostic] = []
    seen: set[int] = set()
    stack = [node]
    count = 0
    while stack:
        n = stack.pop()
        if id(n) in seen:
            return index, problems, "YAML aliases (*name) are not allowed in front matter; write the value out"
        seen.add(id(n))
        count += 1
        if count > _MAX_YAML_NODES:
            return index, problems, f"front matter has more than {_MAX_YAML_NODES} YAML nodes"
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
            index.values[prefix + key] = loc(v) if has_value else loc(k)
            index.keys[prefix + key] = loc(k)
            if isinstance(v, (yaml.MappingNode, yaml.SequenceNode)) and not v.flow_style:
                index.blocks.add(prefix + key)
            elif isinstance(v, yaml.ScalarNode) and not v.style:  # libyaml says "" for plain, PyYAML None
                index.plain[prefix + key] = v.value  # as written: `1.10`, not the float 1.1
            if not prefix and key == "metadata" and isinstance(v, yaml.MappingNode):
                walk_mapping(v, "metadata.")

    if isinstance(node, yaml.MappingNode):
        walk_mapping(node, "")
    return index, problems, None


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
    had_crlf = "\r" in text
    if had_crlf:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    # The text's lines, read one by one up to the closing fence: the body after it is taken whole
    # (splitting a long body into lines only to join them again cost more than the YAML).
    first_end = text.find("\n")
    if (text if first_end < 0 else text[:first_end]).rstrip() != "---":
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
    close = None  # the closing fence's line number (0-based), and where its line starts and ends
    if first_end >= 0:
        number, start = 1, first_end + 1
        while True:
            end = text.find("\n", start)
            if (text[start:] if end < 0 else text[start:end]).rstrip() == "---":
                close, close_start, close_end = number, start, end
                break
            if end < 0:
                break
            number, start = number + 1, end + 1
    if close is None:
        diags.append(Diagnostic("SK004", "front matter opened on line 1 is never closed: add a '---' line after it", shown, 1, 1))
        return None, diags
    fm_text = text[first_end + 1 : close_start - 1]
    if len(fm_text.encode("utf-8")) > MAX_FRONT_MATTER_BYTES:
        diags.append(Diagnostic("SK005", "front matter is larger than 64 KiB; keep metadata short and move text to the body", shown, 2, 1))
        return None, diags
    offset = 1  # YAML line 0 is SKILL.md line 2
    try:
        check_yaml(fm_text, loader=_Loader)  # composing recurses once per level
    except NestingError as exc:
        diags.append(Diagnostic("SK005", f"front matter is {exc.problem}", shown, exc.line + offset, exc.column))
        return None, diags
    except yaml.YAMLError:
        pass  # located below, by the load itself
    loader = _Loader(fm_text)
    try:
        node = loader.get_single_node()
    except yaml.YAMLError as exc:
        loader.dispose()
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = mark.line + 1 + offset if mark else 2
        col = mark.column + 1 if mark else 1
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        diags.append(Diagnostic("SK005", f"front matter is not valid YAML: {problem}", shown, line, col))
        return None, diags
    if node is None:
        loader.dispose()
        diags.append(Diagnostic("SK006", "front matter is empty: add name: and description:", shown, 1, 1))
        return None, diags
    index, dup, fatal = _index_nodes(node, offset)
    diags += [Diagnostic(d.code, d.message, shown, d.line, d.column) for d in dup]
    if fatal:
        loader.dispose()
        diags.append(Diagnostic("SK005", fatal, shown, 2, 1))
        return None, diags
    if not isinstance(node, yaml.MappingNode):
        loader.dispose()
        diags.append(
            Diagnostic("SK006", "front matter must be a YAML mapping of fields (name: …, description: …)", shown, 2, 1)
        )
        return None, diags
    try:
        # the values, built from the nodes just composed (what yaml.load would return)
        metadata = loader.construct_document(node)
    except Exception as exc:  # noqa: BLE001 - any constructor failure is bad input, not a crash
        # e.g. an unhashable mapping key, a timestamp out of range, or `!!timestamp x`
        # (PyYAML's constructor raises AttributeError on it)
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        diags.append(Diagnostic("SK005", f"front matter is not valid YAML: {first}", shown, 2, 1))
        return None, diags
    finally:
        loader.dispose()
    body = "" if close_end < 0 else text[close_end + 1 :]
    return (
        SkillDocument(
            metadata=metadata,
            body=body,
            body_start_line=close + 2,
            front_matter_end_line=close + 1,
            locations=index.values,
            had_bom=had_bom,
            key_locations=index.keys,
            block_values=frozenset(index.blocks),
            had_crlf=had_crlf,
            plain_text=index.plain,
        ),
        diags,
    )
