"""A file as the rules see it: its kind, its text, and offsets turned into line:column."""

from __future__ import annotations

import bisect
import posixpath
import re
from functools import cached_property

# Kinds a rule can restrict itself to (``files:`` in the rules file).
KINDS = ("markdown", "shell", "python", "powershell", "javascript", "text", "binary")

_BY_SUFFIX = {
    ".md": "markdown", ".markdown": "markdown", ".mdx": "markdown", ".txt": "markdown", ".rst": "markdown",
    ".sh": "shell", ".bash": "shell", ".zsh": "shell", ".ksh": "shell", ".fish": "shell", ".command": "shell",
    ".py": "python", ".pyw": "python",
    ".ps1": "powershell", ".psm1": "powershell", ".psd1": "powershell", ".bat": "powershell", ".cmd": "powershell",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".ts": "javascript", ".mts": "javascript",
    ".jsx": "javascript", ".tsx": "javascript",
}
_SHEBANG = re.compile(rb"#![^\n]{0,100}?\b(python|bash|zsh|sh|node|deno|bun|pwsh|powershell)\b")
_SHEBANG_KIND = {b"python": "python", b"bash": "shell", b"zsh": "shell", b"sh": "shell", b"node": "javascript",
                 b"deno": "javascript", b"bun": "javascript", b"pwsh": "powershell", b"powershell": "powershell"}
# Magic numbers of native executables: a skill has no reason to ship one.
EXECUTABLE_MAGIC = (b"\x7fELF", b"MZ", b"\xfe\xed\xfa\xce", b"\xfe\xed\xfa\xcf", b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe",
                    b"\xca\xfe\xba\xbe")


_FENCE = re.compile(r"^[ \t]{0,3}(`{3,20}|~{3,20})", re.MULTILINE)
_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def _decode(data: bytes) -> str | None:
    """Text, or None for a binary file. UTF-16 with a BOM is text (Windows editors write it)."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace")
    if b"\x00" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace")


def kind_of(path: str, data: bytes) -> str:
    suffix = posixpath.splitext(path)[1].lower()
    kind = _BY_SUFFIX.get(suffix)
    if kind is None and data.startswith(b"#!"):
        m = _SHEBANG.match(data[:120])
        if m:
            kind = _SHEBANG_KIND[m.group(1)]
    return kind or "text"


class TextFile:
    """One file's text plus what rules need about it, computed once and only when asked."""

    def __init__(self, path: str, data: bytes) -> None:
        self.path = path
        self.data = data
        text = _decode(data)
        self.is_binary = text is None
        self.text = text or ""
        self.kind = "binary" if text is None else kind_of(path, data)

    @cached_property
    def lower(self) -> str:
        """Lowercased text with the same length as ``text``, so offsets line up."""
        lowered = self.text.lower()
        if len(lowered) != len(self.text):  # "İ".lower() is two characters; fall back to ASCII only
            lowered = self.text.translate(_ASCII_LOWER)
        return lowered

    def keyword_lines(self, keywords: tuple[str, ...]) -> list[tuple[int, int]]:
        """(start, end) of every line holding one of ``keywords`` (lowercase), in order."""
        lower = self.lower
        spans: set[tuple[int, int]] = set()
        for k in keywords:
            pos = lower.find(k)
            while pos != -1:
                span = self.line_span(pos)
                spans.add(span)
                pos = lower.find(k, span[1])
        return sorted(spans)

    @cached_property
    def _line_starts(self) -> list[int]:
        starts = [0]
        find = self.text.find
        pos = find("\n")
        while pos != -1:
            starts.append(pos + 1)
            pos = find("\n", pos + 1)
        return starts

    def position(self, offset: int) -> tuple[int, int]:
        """1-based (line, column) of a character offset."""
        index = bisect.bisect_right(self._line_starts, offset) - 1
        return index + 1, offset - self._line_starts[index] + 1

    def line_span(self, offset: int) -> tuple[int, int]:
        """Start and end offsets of the line holding ``offset`` (end excludes the newline)."""
        index = bisect.bisect_right(self._line_starts, offset) - 1
        start = self._line_starts[index]
        end = self.text.find("\n", start)
        return start, len(self.text) if end == -1 else end

    def line_of(self, offset: int) -> int:
        return self.position(offset)[0]

    @cached_property
    def _code_blocks(self) -> list[tuple[int, int]]:
        """Offsets of fenced code blocks (``` or ~~~ at the start of a line) in Markdown."""
        blocks: list[tuple[int, int]] = []
        opened: int | None = None
        fence = ""
        for m in _FENCE.finditer(self.text):
            mark = m.group(1)
            if opened is None:
                opened, fence = m.start(), mark[0] * 3
            elif mark.startswith(fence):
                blocks.append((opened, m.end()))
                opened = None
        if opened is not None:
            blocks.append((opened, len(self.text)))
        return blocks

    def in_code_block(self, offset: int) -> bool:
        blocks = self._code_blocks
        index = bisect.bisect_right(blocks, (offset, len(self.text) + 1)) - 1
        return index >= 0 and blocks[index][0] <= offset < blocks[index][1]
