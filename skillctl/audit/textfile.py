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
# Where a sentence ends in prose: a line-scope combination of prose signals asks for one sentence.
_SENTENCE_END = re.compile(r"[.!?][\"')\]*_`\u201d\u2019]{0,3}[ \t]{1,8}(?=\S)|[\u3002\uff01\uff1f]")
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t][^\n]{0,300}", re.MULTILINE)
# A line break inside a Markdown paragraph: both lines hold text and the next one starts no block
# of its own (heading, list item, quote, table row, fence, HTML, indented code).
_SOFT_BREAK = re.compile(r"(?<=\S)[ \t]{0,4}\n(?=[ \t]{0,3}(?![-*+>#|<`~ \t]|\d{1,9}[.)][ \t]|\n)\S)")
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
        self._file_line_starts: list[int] | None = None  # set on a prose view: the file's own lines

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
    def prose(self) -> TextFile:
        """Markdown with each paragraph on one line, for rules about what the prose says: authors
        wrap sentences ("save this rule" / "to your memory") and a line-by-line match would miss
        them. Breaks become spaces, so offsets, and the lines ``position`` reports, stay those of
        the file. Code blocks keep their lines. Any other kind is returned as it is."""
        if self.kind != "markdown" or "\n" not in self.text:
            return self
        blocks = self._code_blocks
        chars = list(self.text)
        joined = 0
        for m in _SOFT_BREAK.finditer(self.text):
            start = self.line_span(m.start())[0]
            if self.text[start:start + 4].lstrip()[:1] in ("#", "|"):
                continue  # a heading or a table row ends where its line ends
            if not self.in_code_block(m.start()) and not self.in_code_block(m.end()):
                chars[m.end() - 1] = " "
                joined += 1
        if not joined:
            return self
        view = TextFile.__new__(TextFile)
        view.path, view.data, view.is_binary, view.kind = self.path, self.data, False, self.kind
        view.text = "".join(chars)
        view._file_line_starts = self._line_starts
        view.__dict__["_code_blocks"] = blocks  # the same blocks: fences keep their lines
        view.__dict__["prose"] = view
        return view

    @cached_property
    def _sentence_starts(self) -> list[int]:
        if self.kind != "markdown":
            return []
        return [m.end() for m in _SENTENCE_END.finditer(self.text) if not self.in_code_block(m.start())]

    def statement_start(self, offset: int) -> int:
        """Where the statement holding ``offset`` starts: its line, or in Markdown prose its sentence."""
        line_start = self.line_span(offset)[0]
        starts = self._sentence_starts
        index = bisect.bisect_right(starts, offset) - 1
        return max(line_start, starts[index]) if index >= 0 else line_start

    def statement_span(self, offset: int) -> tuple[int, int]:
        """Start and end of the statement holding ``offset``: its line, or in Markdown prose its sentence."""
        start = self.statement_start(offset)
        end = self.line_span(offset)[1]
        starts = self._sentence_starts
        index = bisect.bisect_right(starts, offset)
        return start, min(end, starts[index]) if index < len(starts) else end

    @cached_property
    def _headings(self) -> list[tuple[int, str]]:
        if self.kind != "markdown":
            return []
        return [(m.start(), m.group(0)) for m in _HEADING.finditer(self.text) if not self.in_code_block(m.start())]

    def heading_over(self, offset: int) -> str | None:
        """The nearest Markdown heading above ``offset``, if any."""
        headings = self._headings
        index = bisect.bisect_right(headings, (offset, "")) - 1
        return headings[index][1] if index >= 0 else None

    def position(self, offset: int) -> tuple[int, int]:
        """1-based (line, column) of a character offset, in the file's own lines."""
        starts = self._file_line_starts or self._line_starts
        index = bisect.bisect_right(starts, offset) - 1
        return index + 1, offset - starts[index] + 1

    @cached_property
    def _line_starts(self) -> list[int]:
        starts = [0]
        find = self.text.find
        pos = find("\n")
        while pos != -1:
            starts.append(pos + 1)
            pos = find("\n", pos + 1)
        return starts

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
