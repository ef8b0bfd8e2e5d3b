"""Reading and rewriting ``metadata.version`` in SKILL.md, touching only that line."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from skillctl.errors import SkillError, VersionError
from skillctl.skill.document import parse_skill_md
from skillctl.skill.model import as_semver
from skillctl.versioning import SemVer

_BUMPS = ("major", "minor", "patch")


def _skill_md(path: Path) -> Path:
    md = path if path.name == "SKILL.md" else path / "SKILL.md"
    if not md.is_file():
        raise SkillError(f"no SKILL.md at {path}")
    return md


def read_version(path: Path) -> str | None:
    md = _skill_md(path)
    doc, diags = parse_skill_md(md.read_bytes(), str(md))
    if doc is None:
        raise SkillError(f"cannot read the version: {diags[0].format() if diags else 'invalid SKILL.md'}")
    meta = doc.metadata.get("metadata")
    v = meta.get("version") if isinstance(meta, dict) else None
    return None if v is None else str(v)


def set_version(path: Path, new: str) -> tuple[str | None, str]:
    """Set (X.Y.Z) or bump (major/minor/patch) the version; returns (old, new)."""
    md = _skill_md(path)
    raw = md.read_bytes()
    doc, diags = parse_skill_md(raw, str(md))
    if doc is None:
        raise SkillError(f"cannot update the version: {diags[0].format() if diags else 'invalid SKILL.md'}")
    meta = doc.metadata.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        raise SkillError(f"{md}: metadata is not a mapping; fix it before setting a version")
    old = meta.get("version") if isinstance(meta, dict) else None
    if new in _BUMPS:
        if old is None:
            raise VersionError(f"{md} has no version to bump; set one first: skillctl version {path} 0.1.0")
        updated = str(SemVer.parse(as_semver(str(old))).bump(new))
    else:
        updated = str(SemVer.parse(new))
    text = raw.decode("utf-8")
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.split(newline)
    quoted = f'"{updated}"'
    if old is not None:
        loc = doc.where("metadata.version")
        i = loc.line - 1
        line = lines[i]
        m = re.match(r"^(\s*version\s*:\s*)(\"[^\"]*\"|'[^']*'|[^#\s]+)(.*)$", line)
        if m is None:
            raise SkillError(f"{md}:{loc.line}: cannot rewrite this version line safely; edit it by hand")
        lines[i] = m.group(1) + quoted + m.group(3)
    elif isinstance(meta, dict) or "metadata" in doc.metadata:
        # An empty "metadata:" key (YAML null) gets the line under it; adding a second
        # "metadata:" key would silently shadow the first.
        meta = meta or {}
        loc = doc.where("metadata")
        key_line = next(i for i in range(doc.front_matter_end_line - 1) if re.match(r"^metadata\s*:", lines[i]))
        if re.match(r"^metadata\s*:\s*\{", lines[key_line]):
            raise SkillError(f"{md}:{key_line + 1}: metadata is written inline ({{...}}); add version: by hand")
        indent = "  "
        if meta:
            nxt = lines[key_line + 1]
            indent = nxt[: len(nxt) - len(nxt.lstrip())] or "  "
        lines.insert(key_line + 1, f"{indent}version: {quoted}")
        del loc
    else:
        end = doc.front_matter_end_line - 1
        lines[end:end] = ["metadata:", f"  version: {quoted}"]
    out = newline.join(lines).encode("utf-8")
    check, check_diags = parse_skill_md(out, str(md))
    # Any new parse problem (e.g. a duplicate key) means the edit changed more than one value.
    new_problems = {d.code for d in check_diags} - {d.code for d in diags}
    if check is None or new_problems or (check.metadata.get("metadata") or {}).get("version") != updated:
        raise SkillError(f"{md}: rewriting the version line would break the front matter; edit it by hand")
    fd, tmp = tempfile.mkstemp(prefix=".SKILL.md.", dir=md.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(out)
        os.chmod(tmp, md.stat().st_mode & 0o7777)
        os.replace(tmp, md)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return (None if old is None else str(old)), updated
