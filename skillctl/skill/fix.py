"""``validate --fix``: mechanical repairs of SKILL.md, each one verified before it is kept.

What is fixed (and nothing else):

- a UTF-8 byte-order mark is removed and CRLF line ends become LF;
- a number or boolean under ``metadata:`` is quoted exactly as written (``build: 1.10`` becomes
  ``build: "1.10"``, not the float 1.1);
- an ``allowed-tools`` list becomes the space-separated string the spec defines (only when every
  item is a plain word: ``Bash(git add:*)`` cannot be written space-separated, so it is left);
- ``metadata.version`` is added when missing: a top-level ``version:`` is moved there, otherwise
  ``"0.1.0"`` is set (the version ``skillctl init`` starts from);
- under a profile whose client documents ``argument-hint`` as text, ``argument-hint: [file]``
  (a YAML list, because of the brackets) is quoted.

Every edit touches only the lines of the value it repairs. After each edit the file is parsed
again and must read exactly as intended — same body, same fields, only the repaired value changed;
an edit that does not is dropped. Running the fixes twice changes nothing the second time.
"""

from __future__ import annotations

import copy
import difflib
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import yaml

from skillctl.skill.document import _Loader, MAX_SKILL_MD_BYTES, parse_skill_md
from skillctl.skill.profiles import PROFILES, STRING, Profile

DEFAULT_VERSION = "0.1.0"
_WORD_RE = re.compile(r"^[^\s#'\"]+$")


@dataclass(frozen=True)
class FileFix:
    path: Path
    before: bytes
    after: bytes
    changes: tuple[str, ...]

    def diff(self, shown: str) -> str:
        a = self.before.decode("utf-8", errors="replace").replace("\r\n", "\n").lstrip("\ufeff").splitlines(keepends=True)
        b = self.after.decode("utf-8").splitlines(keepends=True)
        if a == b:  # only the BOM or the line ends changed: show that in words
            return f"--- {shown}\n+++ {shown}\n# {'; '.join(self.changes)}\n"
        return "".join(difflib.unified_diff(a, b, f"a/{shown}", f"b/{shown}"))


@dataclass
class _Text:
    lines: list[str]  # SKILL.md lines, LF, no BOM
    close: int  # index of the closing '---'

    def render(self) -> str:
        return "\n".join(self.lines)


@dataclass
class _Edit:
    description: str
    apply: Callable[[_Text], bool]  # edits in place; False when not applicable after all
    expect: Callable[[dict[str, Any]], None]  # the same change on the parsed front matter


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _compose(text: _Text) -> yaml.MappingNode | None:
    loader = _Loader("\n".join(text.lines[1 : text.close]))
    try:
        node = loader.get_single_node()
    except yaml.YAMLError:
        return None
    finally:
        loader.dispose()
    return node if isinstance(node, yaml.MappingNode) else None


def _pairs(node: yaml.MappingNode) -> dict[str, tuple[yaml.Node, yaml.Node]]:
    return {str(k.value): (k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode)}


def _replace_scalar(text: _Text, node: yaml.Node, new: str) -> bool:
    """Replace a single-line scalar's text (marks are relative to the front matter: line 0 is
    SKILL.md's line 1)."""
    if node.start_mark.line != node.end_mark.line:
        return False
    i = node.start_mark.line + 1
    line = text.lines[i]
    text.lines[i] = line[: node.start_mark.column] + new + line[node.end_mark.column :]
    return True


def _value_region(node: yaml.Node, key: yaml.Node) -> tuple[int, int]:
    """SKILL.md line indexes [first, last] holding the key and its (block) value."""
    end = node.end_mark.line + (0 if node.end_mark.column else -1)
    return key.start_mark.line + 1, max(end, key.start_mark.line) + 1


def plan_fixes(folder: Path, profile: Profile | str = "spec") -> FileFix | None:
    """The verified repairs of ``folder``/SKILL.md, or None when there is nothing to repair."""
    profile = PROFILES[profile] if isinstance(profile, str) else profile
    md = folder / "SKILL.md"
    try:
        if md.is_symlink() or not md.is_file():
            return None
        with open(md, "rb") as fh:
            raw = fh.read(MAX_SKILL_MD_BYTES + 1)
    except OSError:
        return None
    doc, _ = parse_skill_md(raw, "SKILL.md")
    if doc is None:
        return None  # nothing is sure about a file that does not parse
    text = raw.decode("utf-8").lstrip("\ufeff").replace("\r\n", "\n")
    current = _Text(text.split("\n"), doc.front_matter_end_line - 1)
    baseline = copy.deepcopy(doc.metadata)
    if not _reads_as(current, baseline, doc.body):
        return None  # e.g. lone CR line ends: not a file to edit line by line
    changes: list[str] = []
    if doc.had_bom:
        changes.append("removed the byte-order mark")
    if b"\r\n" in raw:
        changes.append("CRLF line ends → LF")
    tried: set[str] = set()
    while True:
        # edits are planned on the current text: an accepted edit may move lines
        pending = [e for e in _edits(current, profile) if e.description not in tried]
        if not pending:
            break
        edit = pending[0]
        tried.add(edit.description)
        trial = _Text(list(current.lines), current.close)
        if not edit.apply(trial):
            continue
        expected = copy.deepcopy(baseline)
        edit.expect(expected)
        if _reads_as(trial, expected, doc.body):
            current, baseline = trial, expected
            changes.append(edit.description)
    if not changes:
        return None
    after = current.render().encode("utf-8")
    return FileFix(md, raw, after, tuple(changes))


def _reads_as(text: _Text, expected: dict[str, Any], body: str) -> bool:
    doc, diags = parse_skill_md(text.render().encode("utf-8"), "SKILL.md")
    return doc is not None and doc.metadata == expected and doc.body == body and not any(d.code == "SK010" for d in diags)


def _edits(text: _Text, profile: Profile) -> list[_Edit]:
    node = _compose(text)
    if node is None:
        return []
    top = _pairs(node)
    edits: list[_Edit] = []
    if "metadata" in top and isinstance(top["metadata"][1], yaml.MappingNode):
        for key, value in _pairs(top["metadata"][1]).items():
            edits += _quote_scalar_edit(key, value[1], profile)
    if "allowed-tools" in top:
        edits += _join_list_edit(*top["allowed-tools"], profile)
    edits += _version_edit(top, profile)
    if profile.fields.get("argument-hint") == STRING and "argument-hint" in top:
        edits += _bracket_hint_edit(top["argument-hint"][1])
    return edits


def _quote_scalar_edit(key: str, value: yaml.Node, profile: Profile) -> list[_Edit]:
    if not isinstance(value, yaml.ScalarNode) or value.style or value.tag.endswith((":str", ":null")):
        return []
    if not value.tag.endswith((":int", ":float", ":bool")):
        return []
    written = value.value

    def expect(meta: dict[str, Any]) -> None:
        meta["metadata"][key] = written

    return [_Edit(f"quoted metadata.{key} ({written} → \"{written}\")", lambda t: _replace_scalar(t, value, _quote(written)), expect)]


def _join_list_edit(key: yaml.Node, value: yaml.Node, profile: Profile) -> list[_Edit]:
    if profile.allowed_tools != STRING or not isinstance(value, yaml.SequenceNode) or not value.value:
        return []
    items = [v.value for v in value.value if isinstance(v, yaml.ScalarNode) and v.tag.endswith(":str")]
    if len(items) != len(value.value) or not all(_WORD_RE.match(i) for i in items):
        return []  # a tool spelled with spaces cannot be written space-separated
    joined = " ".join(items)

    def apply(t: _Text) -> bool:
        first, last = _value_region(value, key)
        if any("#" in t.lines[i] for i in range(first, last + 1)):
            return False  # a comment in the list: not ours to drop
        indent = t.lines[first][: len(t.lines[first]) - len(t.lines[first].lstrip())]
        t.lines[first : last + 1] = [f"{indent}allowed-tools: {joined}"]
        t.close -= last - first
        return True

    def expect(meta: dict[str, Any]) -> None:
        meta["allowed-tools"] = joined

    return [_Edit(f"allowed-tools list → \"{joined}\"", apply, expect)]


def _version_edit(top: dict[str, tuple[yaml.Node, yaml.Node]], profile: Profile) -> list[_Edit]:
    if "version" in profile.fields:
        return []  # the client reads the top-level version: leave it where it is
    md = top.get("metadata")
    if md is not None:
        value = md[1]
        empty = isinstance(value, yaml.ScalarNode) and value.tag.endswith(":null") and value.value == ""
        if not (isinstance(value, yaml.MappingNode) and not value.flow_style) and not empty:
            return []  # flow or malformed metadata: not sure how to add to it
        if isinstance(value, yaml.MappingNode) and "version" in _pairs(value):
            return []
    moved = top.get("version")
    if moved is not None and not (isinstance(moved[1], yaml.ScalarNode) and moved[1].start_mark.line == moved[1].end_mark.line):
        return []
    version = moved[1].value if moved is not None else DEFAULT_VERSION

    def apply(t: _Text) -> bool:
        if moved is not None:
            first, last = _value_region(moved[1], moved[0])
            if first != last or not t.lines[first].startswith("version:"):
                return False
            del t.lines[first]
            t.close -= 1
        node = _compose(t)
        pairs = _pairs(node) if node is not None else {}
        if "metadata" not in pairs:
            t.lines[t.close : t.close] = ["metadata:", f"  version: {_quote(version)}"]
            t.close += 2
            return True
        key, value = pairs["metadata"]
        at = key.start_mark.line + 1
        if isinstance(value, yaml.MappingNode) and value.value:
            child = value.value[0][0]
            indent = " " * child.start_mark.column
            if child.start_mark.line == key.start_mark.line:
                return False
        else:
            indent = "  "
        t.lines.insert(at + 1, f"{indent}version: {_quote(version)}")
        t.close += 1
        return True

    def expect(meta: dict[str, Any]) -> None:
        meta.pop("version", None)
        if not isinstance(meta.get("metadata"), dict):
            meta["metadata"] = {}
        meta["metadata"]["version"] = version

    what = f"moved version {version} to metadata.version" if moved is not None else f"added metadata.version \"{version}\""
    return [_Edit(what, apply, expect)]


def _bracket_hint_edit(value: yaml.Node) -> list[_Edit]:
    if not (isinstance(value, yaml.SequenceNode) and value.flow_style and len(value.value) == 1):
        return []
    item = value.value[0]
    if not (isinstance(item, yaml.ScalarNode) and not item.style and item.tag.endswith(":str")):
        return []
    hint = f"[{item.value}]"

    def expect(meta: dict[str, Any]) -> None:
        meta["argument-hint"] = hint

    return [_Edit(f"quoted argument-hint ({hint})", lambda t: _replace_scalar(t, value, _quote(hint)), expect)]


def write_fix(fix: FileFix) -> None:
    """Replace SKILL.md with the repaired text atomically, keeping its permissions."""
    mode = os.stat(fix.path).st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(prefix=".SKILL.md.", dir=fix.path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(fix.after)
        os.chmod(tmp, mode)
        os.replace(tmp, fix.path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def plan_fixes_under(
    paths: list[Path], *, exclude: Sequence[str] = (), profile: Profile | str = "spec"
) -> list[tuple[str, FileFix]]:
    """(shown folder, repairs) for every skill under ``paths`` that has something to repair,
    found the way ``validate`` finds them."""
    from skillctl.skill.discovery import Excludes, discover

    excludes = Excludes(exclude)
    out: list[tuple[str, FileFix]] = []
    seen: set[str] = set()
    for p in paths:
        for found in discover(p, excludes):
            if found.folder is None:
                continue
            key = str(found.folder.resolve())
            if key in seen:
                continue
            seen.add(key)
            fix = plan_fixes(found.folder, profile)
            if fix is not None:
                out.append((found.shown, fix))
    return out
