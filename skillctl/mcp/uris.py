"""Skill resource URIs: ``skill://<skill-path>/<file-path>`` (the extension's Resource Mapping).

``<skill-path>`` is one or more ``/``-separated segments whose last one is the skill's name; the
first sits in the URI's authority. ``<file-path>`` is the file's path in the skill folder. A
server may use another scheme; the structure is the same, so the functions here take any
``scheme://``. What a server sends is hostile: ``file_path`` refuses a URI outside the skill, a
``..``, an empty or ``.`` segment, a backslash, control characters and percent-escapes that
would hide any of these (a ``%2F`` inside a segment), with a one-line reason.
"""

from __future__ import annotations

import re
from urllib.parse import quote, unquote

from skillctl.errors import SourceError

SCHEME = "skill"
SKILL_FILE = "SKILL.md"
DIRECTORY_MIME = "inode/directory"
_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")
# What a segment of ours may hold unescaped: RFC 3986 pchar without "%" (sub-delims, ":", "@").
_SAFE = "!$&'()*+,;=:@-._~"


class UriError(SourceError):
    """A skill URI that breaks the extension's structure or would leave the skill's folder."""


def skill_uri(skill_path: str, scheme: str = SCHEME) -> str:
    """The URI of the ``SKILL.md`` of the skill at ``skill_path`` (segments as they are)."""
    return f"{scheme}://{quote(skill_path, safe='/' + _SAFE)}/{SKILL_FILE}"


def file_uri(skill_path: str, rel: str, scheme: str = SCHEME) -> str:
    return f"{scheme}://{quote(skill_path, safe='/' + _SAFE)}/{quote(rel, safe='/' + _SAFE)}"


def directory_uri(skill_path: str, rel: str = "", scheme: str = SCHEME) -> str:
    """A directory resource: the skill root (``rel`` "") or a folder in it; no trailing slash."""
    base = f"{scheme}://{quote(skill_path, safe='/' + _SAFE)}"
    return f"{base}/{quote(rel, safe='/' + _SAFE)}" if rel else base


def _segments(text: str, what: str, uri: str) -> list[str]:
    """``text``'s ``/``-separated segments, percent-decoded one by one, each a plain name."""
    out = []
    for raw in text.split("/"):
        try:
            seg = unquote(raw, errors="strict") if "%" in raw else raw
        except UnicodeDecodeError:
            raise UriError(f"{_shown(uri)}: the {what} has percent-escapes that are not UTF-8") from None
        if seg in ("", ".", ".."):
            raise UriError(f"{_shown(uri)}: the {what} has an empty, '.' or '..' segment; a skill's files stay in its folder")
        if "/" in seg or "\\" in seg or _CONTROL_RE.search(seg):
            raise UriError(f"{_shown(uri)}: the {what} holds a slash, backslash or control character inside a segment")
        out.append(seg)
    return out


def decode_path(text: str, uri: str) -> str:
    """``text`` (the part of ``uri`` after ``scheme://``) with each segment percent-decoded and
    checked: the path the URI names, or ``UriError``."""
    return "/".join(_segments(text, "path", uri))


def split_skill_uri(uri: str) -> tuple[str, str]:
    """``(scheme, skill_path)`` of the URI of a skill's ``SKILL.md``; ``UriError`` when ``uri`` is
    not ``scheme://<skill-path>/SKILL.md``."""
    if not isinstance(uri, str) or len(uri) > 4096:
        raise UriError("a skill URI must be a string of at most 4096 characters")
    m = _SCHEME_RE.match(uri)
    if m is None:
        raise UriError(f"{_shown(uri)}: not a URI (scheme://<skill-path>/SKILL.md)")
    rest = uri[m.end():]
    if "?" in rest or "#" in rest:
        raise UriError(f"{_shown(uri)}: a skill URI has no query or fragment")
    if not rest.endswith("/" + SKILL_FILE):
        raise UriError(f"{_shown(uri)}: a skill is named by the URI of its SKILL.md (…/<name>/SKILL.md)")
    path = rest[: -len(SKILL_FILE) - 1]
    return m.group(1).lower(), "/".join(_segments(path, "skill path", uri))


def skill_name(skill_path: str) -> str:
    """The skill's name: the last segment of its path."""
    return skill_path.rsplit("/", 1)[-1]


def file_path(skill_uri_: str, uri: str) -> str:
    """The path, in the skill's folder, of the file ``uri`` of the skill whose ``SKILL.md`` is at
    ``skill_uri_``; ``UriError`` when ``uri`` is not inside that skill or its path is unsafe."""
    if not isinstance(uri, str) or len(uri) > 4096:
        raise UriError("a resource URI must be a string of at most 4096 characters")
    root = skill_uri_[: -len(SKILL_FILE)]  # "scheme://path/"
    if not uri.startswith(root) or uri == root:
        raise UriError(f"{_shown(uri)}: not a file of the skill {_shown(skill_uri_)}")
    rest = uri[len(root):]
    if "?" in rest or "#" in rest:
        raise UriError(f"{_shown(uri)}: a file URI has no query or fragment")
    return "/".join(_segments(rest, "file path", uri))


def _shown(uri: object) -> str:
    """``uri`` as safe to print: control characters escaped, at most 200 characters."""
    text = uri if isinstance(uri, str) else repr(uri)
    text = _CONTROL_RE.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    return text if len(text) <= 200 else text[:199] + "…"


shown = _shown
