"""A command as the shell would read its words, so approval rules see through spelling tricks.

``\\rm -rf``, ``rm "-rf"``, ``r''m -rf``, ``rm$IFS-rf`` and ``x=rm; $x -rf`` all run
``rm -rf``, but none of them contains that text. ``plain_view`` undoes what the shell itself
undoes before running a word: quotes are removed (``'…'`` literally, ``"…"`` with its four
escapes), backslashes escape the next character (backslash-newline joins lines), ``$IFS`` and
``${IFS…}`` become a space, ``$1``…``$9``, ``$@`` and ``$*`` (empty in ``sh -c``) become nothing,
and a variable assigned earlier in the same command (``NAME=value``, also after ``export``)
is replaced by its value, ``${NAME:-default}`` by the default when NAME was not assigned.
Separators (``; & | ( ) < > ` ``), command substitutions and unknown variables stay as written.

It is a view for matching, not a shell: it does not run or expand anything else. One pass with
one regular expression, so it is linear in the command's length, and expansions are capped
(``x=long; $x$x$x…`` cannot blow up): once variables have added ``4 × len(command) + 4096``
characters, the rest are left as written.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(
    r"""
      '(?P<single>[^']*+)'?                                  # '…' : literal (unterminated: to the end)
    | "(?P<double>(?:[^"\\]|\\.)*+)"?                        # "…" : escapes and $ inside, handled below
    | \\(?P<escaped>.)                                       # \x : x itself; \<newline> : nothing
    | \$\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*+)(?P<modifier>[^}\n]{0,200}+)\}
    | \$(?P<name>[A-Za-z_][A-Za-z0-9_]*+)
    | \$(?P<positional>[0-9@*])
    | (?P<separator>[\s;&|()<>`]++)
    | (?P<other>[^'"\\$\s;&|()<>`]++|\$)
    """,
    re.VERBOSE | re.DOTALL,
)
_IN_DOUBLE = re.compile(
    r"""\\(?P<escaped>[$`"\\\n])|\$\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*+)(?P<modifier>[^}\n]{0,200}+)\}"""
    r"""|\$(?P<name>[A-Za-z_][A-Za-z0-9_]*+)|\$(?P<positional>[0-9@*])|(?P<other>[^\\$]++|[\\$])""",
    re.DOTALL,
)
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")
_SPECIAL = re.compile(r"['\"\\$]")


class _View:
    def __init__(self, limit: int) -> None:
        self.out: list[str] = []  # finished words and separators
        self.word: list[str] = []  # pieces of the word being read
        self.assigning: tuple[str, int] | None = None  # (name, index in word where its value starts)
        self.values: dict[str, str] = {}
        self.room = limit  # characters variables may still add

    def end_word(self) -> None:
        if self.assigning is not None:
            name, start = self.assigning
            self.values[name] = "".join(self.word[start:])
            self.assigning = None
        self.out.extend(self.word)
        self.word = []

    def variable(self, name: str, modifier: str, written: str) -> str:
        """What ``$name`` / ``${name…}`` stands for in the view."""
        if name == "IFS":
            return " "
        if name in self.values:
            value = self.values[name]
        elif modifier[:2] == ":-" or modifier[:1] == "-":
            value = modifier[2:] if modifier[:2] == ":-" else modifier[1:]
        else:
            return written
        if len(value) > self.room:
            return written
        self.room -= len(value)
        return value


def _expand(view: _View, match: re.Match[str]) -> str | None:
    """The text for a variable-like match, or None when the match is not one."""
    if match.group("braced") is not None:
        return view.variable(match.group("braced"), match.group("modifier"), match.group(0))
    if match.group("name") is not None:
        return view.variable(match.group("name"), "", match.group(0))
    if match.group("positional") is not None:
        return ""
    return None


def plain_view(command: str) -> str:
    """``command`` with quoting, escapes, ``$IFS`` and simple variables undone (see above)."""
    if not _SPECIAL.search(command):
        return command  # nothing to undo (most commands)
    view = _View(4 * len(command) + 4096)
    for match in _TOKEN.finditer(command):
        kind = match.lastgroup
        if kind == "separator":
            view.end_word()
            view.out.append(match.group(0))
            continue
        if kind == "other" and not view.word:
            assignment = _ASSIGNMENT.match(match.group(0))
            if assignment is not None:
                view.word.append(assignment.group(0))
                view.assigning = (assignment.group(1), len(view.word))
                view.word.append(match.group(0)[assignment.end():])
                continue
        if kind == "single":
            view.word.append(match.group("single"))
        elif kind == "double":
            for inner in _IN_DOUBLE.finditer(match.group("double")):
                expanded = _expand(view, inner)
                if expanded is not None:
                    view.word.append(expanded)
                elif inner.group("escaped") is not None:
                    view.word.append("" if inner.group("escaped") == "\n" else inner.group("escaped"))
                else:
                    view.word.append(inner.group(0))
        elif kind == "escaped":
            view.word.append("" if match.group("escaped") == "\n" else match.group("escaped"))
        else:
            expanded = _expand(view, match)
            view.word.append(match.group(0) if expanded is None else expanded)
    view.end_word()
    return "".join(view.out)
