"""Skill versions (SemVer 2) and version ranges.

A skill version is a SemVer 2 string: ``MAJOR.MINOR.PATCH`` with an optional pre-release
(``-alpha.N``, ``-beta.N``, ``-rc.N``, ``-dev.N``; the number may be omitted) and optional build
metadata (``+build.5``), which is kept for display but ignored for ordering and identity —
``1.2.3+a`` and ``1.2.3+b`` are the same version, as in npm. Ordering maps each version onto
``packaging.version.Version`` (``1.2.3-rc.1`` → ``1.2.3rc1``), so it agrees with PEP 440 tools.

Ranges (resolved client-side, the same for every registry backend):

    latest, *, ""          the newest release (no pre-releases)
    1.2.3                  exactly that version
    1.2, 1.2.x, 1.2.*      any 1.2.z              (like npm)
    1, 1.x                 any 1.y.z
    ^1.2.3                 >=1.2.3 <2.0.0         (^0.2.3 → <0.3.0, ^0.0.3 → <0.0.4)
    ~1.2.3                 >=1.2.3 <1.3.0         (~1 → <2.0.0)
    >=1,<2  >1.0.0 <=2 !=1.5.0 =1.2.3 ==1.2.3   comparators, comma- or space-separated

Each number (major, minor, patch, a pre-release's N, and every number in a range) is at most
``MAX_VERSION_PART`` = 2^53 - 1, the bound npm's ``semver`` applies (the largest integer a
JSON reader in JavaScript holds exactly). Larger numbers are valid SemVer (``is_semver``) but
refused by the parsers here, in one line: they would not fit the registry's SQLite INTEGER
columns (nor ``part + 1`` the bound of a range) and no real release needs them.

Pre-releases are only candidates when asked for (``prereleases=True``) or when the range itself
names one (``^2.0.0-rc.1``). As in PEP 440, ``<2.0.0`` never admits a pre-release of 2.0.0.
``packaging`` changed its own pre-release rules across releases, so we never rely on its
defaults: comparisons are done here on ``Version`` keys.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Sequence

from packaging.version import Version

from skillctl.errors import VersionError

# The official SemVer 2 regular expression (semver.org), verbatim in meaning.
SEMVER_RE = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)
_PRE_RE = re.compile(r"^(alpha|beta|rc|dev)(?:\.(0|[1-9]\d*))?$")
_PRE_TO_PEP440 = {"alpha": "a", "beta": "b", "rc": "rc", "dev": ".dev"}
# PEP 440 order of pre-release kinds; a final release sorts above all of them.
PRE_RANK = {"dev": 0, "alpha": 1, "beta": 2, "rc": 3}
RELEASE_RANK = 4
MAX_VERSION_LENGTH = 128
MAX_VERSION_PART = 2**53 - 1


def _number(digits: str, what: str, where: str) -> int:
    """``digits`` as an int within ``MAX_VERSION_PART``; a VersionError naming ``what`` (the
    part) and ``where`` (the version or range it is in) otherwise."""
    if int(digits) > MAX_VERSION_PART:  # at most MAX_RANGE_LENGTH digits: int() is cheap
        shown = digits if len(digits) <= 24 else f"{digits[:20]}…"
        raise VersionError(f"invalid {where}: {what} {shown} is over {MAX_VERSION_PART} (2^53-1), "
                           "the largest version number skillctl accepts")
    return int(digits)


def is_semver(text: str) -> bool:
    """True for any valid SemVer 2 string (even one skillctl cannot order)."""
    return isinstance(text, str) and len(text) <= MAX_VERSION_LENGTH and SEMVER_RE.match(text) is not None


@dataclass(frozen=True, order=False)
class SemVer:
    major: int
    minor: int
    patch: int
    pre: str = ""  # e.g. "rc.1"
    build: str = ""  # e.g. "build.5" (ignored for ordering)

    @classmethod
    def parse(cls, text: str) -> "SemVer":
        if not isinstance(text, str):
            raise VersionError(f"version must be a string like 1.2.3, got {type(text).__name__}")
        text = text.strip()
        if text.startswith("v") and SEMVER_RE.match(text[1:]):
            raise VersionError(f"invalid version '{text}': drop the leading 'v' (write {text[1:]})")
        m = SEMVER_RE.match(text) if len(text) <= MAX_VERSION_LENGTH else None
        if m is None:
            raise VersionError(f"invalid version '{text[:80]}': expected SemVer like 1.2.3 or 1.2.3-rc.1")
        pre = m.group(4) or ""
        if pre and not _PRE_RE.match(pre):
            raise VersionError(
                f"unsupported pre-release '{pre}' in version '{text}': use alpha.N, beta.N, rc.N or dev.N"
            )
        where = f"version '{text[:80]}'"
        major, minor, patch = (_number(m.group(i), part, where) for i, part in ((1, "major"), (2, "minor"), (3, "patch")))
        if pre.count(".") == 1:
            _number(pre.partition(".")[2], "pre-release number", where)
        return cls(major, minor, patch, pre, m.group(5) or "")

    @property
    def key(self) -> Version:
        """Ordering key as a PEP 440 version (build metadata dropped)."""
        base = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            m = _PRE_RE.match(self.pre)
            assert m is not None
            base += f"{_PRE_TO_PEP440[m.group(1)]}{m.group(2) or 0}"
        return Version(base)

    @property
    def order(self) -> tuple[int, int, int, int, int]:
        """The same ordering as ``key`` as a plain tuple: cheap to compare and to store in SQL
        columns, so a registry can resolve a range among 10,000 versions without parsing them."""
        if not self.pre:
            return (self.major, self.minor, self.patch, RELEASE_RANK, 0)
        kind, _, num = self.pre.partition(".")
        return (self.major, self.minor, self.patch, PRE_RANK[kind], int(num or 0))

    @classmethod
    def from_order(cls, order: Sequence[int], build: str = "") -> "SemVer":
        major, minor, patch, rank, num = order
        if rank == RELEASE_RANK:
            return cls(major, minor, patch, "", build)
        kind = next(k for k, r in PRE_RANK.items() if r == rank)
        return cls(major, minor, patch, f"{kind}.{num}", build)

    @property
    def is_prerelease(self) -> bool:
        return bool(self.pre)

    @property
    def core(self) -> tuple[int, int, int]:
        return (self.major, self.minor, self.patch)

    @property
    def public(self) -> str:
        """The version without build metadata: what identifies it."""
        return f"{self.major}.{self.minor}.{self.patch}" + (f"-{self.pre}" if self.pre else "")

    def __str__(self) -> str:
        return self.public + (f"+{self.build}" if self.build else "")

    def __lt__(self, other: "SemVer") -> bool:
        return self.order < other.order

    def __le__(self, other: "SemVer") -> bool:
        return self.order <= other.order

    def __gt__(self, other: "SemVer") -> bool:
        return self.order > other.order

    def __ge__(self, other: "SemVer") -> bool:
        return self.order >= other.order

    def same_as(self, other: "SemVer") -> bool:
        return self.order == other.order

    def _bumped(self, part: str) -> "SemVer":
        if part == "major":
            if self.pre and self.minor == 0 and self.patch == 0:
                return SemVer(self.major, 0, 0)
            return SemVer(self.major + 1, 0, 0)
        if part == "minor":
            if self.pre and self.patch == 0:
                return SemVer(self.major, self.minor, 0)
            return SemVer(self.major, self.minor + 1, 0)
        if part == "patch":
            if self.pre:
                return SemVer(self.major, self.minor, self.patch)
            return SemVer(self.major, self.minor, self.patch + 1)
        raise VersionError(f"cannot bump '{part}': use major, minor, patch or an explicit X.Y.Z")

    def bump(self, part: str) -> "SemVer":
        """npm semantics: bumping a pre-release releases it (2.0.0-rc.1 → major → 2.0.0)."""
        bumped = self._bumped(part)
        if max(bumped.core) > MAX_VERSION_PART:
            raise VersionError(f"cannot bump {self} ({part}): the {part} number would be over {MAX_VERSION_PART} "
                               "(2^53-1), the largest version number skillctl accepts")
        return bumped


# ------------------------------------------------------------------------------------ ranges

_OPS = ("==", ">=", "<=", "!=", ">", "<", "=")
_PARTIAL_RE = re.compile(r"^(0|[1-9]\d*)(?:\.(0|[1-9]\d*|[xX*]))?(?:\.(0|[1-9]\d*|[xX*]))?$")
MAX_RANGE_LENGTH = 256


@dataclass(frozen=True)
class _Comparator:
    op: str  # one of >=, >, <=, <, ==, !=
    version: SemVer

    def matches(self, v: SemVer) -> bool:
        a, b = v.order, self.version.order
        return {
            ">=": a >= b,
            ">": a > b,
            "<=": a <= b,
            "<": a < b,
            "==": a == b,
            "!=": a != b,
        }[self.op]


def _v(major: int, minor: int = 0, patch: int = 0) -> SemVer:
    return SemVer(major, minor, patch)


# The smallest version of a release line: "<2.0.0" must also exclude 2.0.0-alpha.
def _floor(major: int, minor: int = 0, patch: int = 0) -> SemVer:
    return SemVer(major, minor, patch, "dev.0")


@dataclass(frozen=True)
class VersionRange:
    """A parsed range. ``text`` is what the user wrote; ``comparators`` all must match."""

    text: str
    comparators: tuple[_Comparator, ...]
    names_prerelease: bool = False

    @property
    def is_exact(self) -> bool:
        return len(self.comparators) == 1 and self.comparators[0].op == "=="

    def matches(self, v: SemVer, *, prereleases: bool = False) -> bool:
        if v.is_prerelease and not (prereleases or self.names_prerelease):
            return False
        return all(c.matches(v) for c in self.comparators)

    def select(
        self, versions: Iterable[SemVer], *, prereleases: bool = False
    ) -> SemVer | None:
        """The highest matching version, or None."""
        best: SemVer | None = None
        for v in versions:
            if self.matches(v, prereleases=prereleases) and (best is None or v.order > best.order):
                best = v
        return best

    def upper_bound(self) -> tuple[tuple[int, ...], bool] | None:
        """The tightest ``<``/``<=`` bound as (order, inclusive), for index range scans."""
        bound: tuple[tuple[int, ...], bool] | None = None
        for c in self.comparators:
            if c.op in ("<", "<=", "=="):
                cand = (c.version.order, c.op != "<")
                if bound is None or cand[0] < bound[0] or (cand[0] == bound[0] and not cand[1]):
                    bound = cand
        return bound

    def lower_bound(self) -> tuple[tuple[int, ...], bool] | None:
        """The tightest ``>``/``>=`` bound as (order, inclusive), for index range scans."""
        bound: tuple[tuple[int, ...], bool] | None = None
        for c in self.comparators:
            if c.op in (">", ">=", "=="):
                cand = (c.version.order, c.op != ">")
                if bound is None or cand[0] > bound[0] or (cand[0] == bound[0] and not cand[1]):
                    bound = cand
        return bound

    def __str__(self) -> str:
        return self.text


def _partial(text: str, whole: str) -> tuple[int, int | None, int | None]:
    m = _PARTIAL_RE.match(text)
    if not m:
        raise VersionError(f"invalid version range '{whole}': '{text}' is not a version")
    parts = [m.group(1), m.group(2), m.group(3)]
    out: list[int | None] = []
    wild = False
    for p in parts:
        if p is None or p in ("x", "X", "*") or wild:
            wild = True
            out.append(None)
        else:
            out.append(_number(p, "number", f"version range '{whole[:80]}'"))
    return out[0], out[1], out[2]  # type: ignore[return-value]


def _line(major: int, minor: int | None) -> list[_Comparator]:
    """All versions of a partial line: 1 → [1.0.0, 2.0.0), 1.2 → [1.2.0, 1.3.0)."""
    if minor is None:
        return [_Comparator(">=", _v(major)), _Comparator("<", _floor(major + 1))]
    return [_Comparator(">=", _v(major, minor)), _Comparator("<", _floor(major, minor + 1))]


def _caret(text: str, whole: str) -> list[_Comparator]:
    full = SEMVER_RE.match(text)
    if full:
        v = SemVer.parse(text)
        if v.major > 0:
            upper = _floor(v.major + 1)
        elif v.minor > 0:
            upper = _floor(0, v.minor + 1)
        else:
            upper = _floor(0, 0, v.patch + 1)
        return [_Comparator(">=", v), _Comparator("<", upper)]
    major, minor, _ = _partial(text, whole)
    if minor is None:
        return _line(major, None)
    if major > 0:
        return [_Comparator(">=", _v(major, minor)), _Comparator("<", _floor(major + 1))]
    return _line(0, minor)


def _tilde(text: str, whole: str) -> list[_Comparator]:
    if SEMVER_RE.match(text):
        v = SemVer.parse(text)
        return [_Comparator(">=", v), _Comparator("<", _floor(v.major, v.minor + 1))]
    major, minor, _ = _partial(text, whole)
    return _line(major, minor)


def parse_range(text: str) -> VersionRange:
    """Parse a range (see module docstring). Raises VersionError naming the bad part."""
    if not isinstance(text, str):
        raise VersionError("version range must be a string")
    whole = text.strip()
    if len(whole) > MAX_RANGE_LENGTH:
        raise VersionError(f"version range is {len(whole)} characters long; the limit is {MAX_RANGE_LENGTH}")
    if whole in ("", "*", "latest", "x", "X"):
        return VersionRange(whole or "latest", ())
    comparators: list[_Comparator] = []
    names_pre = False
    # "^1.2" or "~1" alone, or a list of comparators separated by commas and/or spaces.
    tokens = [t for t in re.split(r"[,\s]+", whole) if t]
    # Allow ">= 1.2" (operator separated from its version by a space).
    merged: list[str] = []
    for t in tokens:
        if merged and merged[-1] in _OPS:
            merged[-1] += t
        else:
            merged.append(t)
    for tok in merged:
        if tok.startswith("^"):
            comparators += _caret(tok[1:], whole)
            names_pre |= "-" in tok
            continue
        if tok.startswith("~"):
            comparators += _tilde(tok[1:].lstrip(">"), whole)  # "~>" is a common alias
            names_pre |= "-" in tok
            continue
        op = next((o for o in _OPS if tok.startswith(o)), "")
        rest = tok[len(op):]
        if not rest:
            raise VersionError(f"invalid version range '{whole}': operator '{op}' has no version")
        if rest.startswith("v") and rest[1:2].isdigit():
            raise VersionError(f"invalid version range '{whole}': drop the leading 'v' in '{rest}'")
        op = {"=": "==", "": "=="}.get(op, op)
        if SEMVER_RE.match(rest):
            v = SemVer.parse(rest)
            names_pre |= v.is_prerelease
            if op == "<" and not v.is_prerelease:
                # PEP 440: "<V" never admits a pre-release of V itself (<2.0.0 excludes
                # 2.0.0-alpha.1 even with prereleases=True), as packaging's SpecifierSet does.
                v = _floor(*v.core)
            comparators.append(_Comparator(op, v))
            continue
        major, minor, patch = _partial(rest, whole)
        if op == "==":
            comparators += _line(major, minor)
        elif op == ">=":
            comparators.append(_Comparator(op, _v(major, minor or 0, patch or 0)))
        elif op == "<":
            comparators.append(_Comparator(op, _floor(major, minor or 0, patch or 0)))  # see PEP 440 note above
        elif op == ">":
            # >1.2 means above the whole 1.2 line
            nxt = _v(major + 1) if minor is None else _v(major, minor + 1)
            comparators.append(_Comparator(">=", nxt))
        elif op == "<=":
            nxt = _floor(major + 1) if minor is None else _floor(major, minor + 1)
            comparators.append(_Comparator("<", nxt))
        else:
            raise VersionError(f"invalid version range '{whole}': '!=' needs a full version like 1.2.3")
    return VersionRange(whole, tuple(comparators), names_pre)


def resolve(
    range_text: str, versions: Sequence[str], *, prereleases: bool = False
) -> str | None:
    """Highest version string in ``versions`` matching ``range_text``; None if none does."""
    rng = parse_range(range_text)
    parsed = []
    for s in versions:
        try:
            parsed.append((SemVer.parse(s), s))
        except VersionError:
            continue
    best = rng.select((p for p, _ in parsed), prereleases=prereleases)
    if best is None:
        return None
    return next(s for p, s in parsed if p is best)
