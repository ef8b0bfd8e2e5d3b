"""Refusing regular expressions that could take more than linear time on a hostile file.

Python's ``re`` backtracks. ``(a+)+$`` on a line of ``a``s is exponential, and even ``\\s+x`` or
``curl.*sh`` are quadratic on one long line without the final character. Skills are written by
strangers, so every rule pattern (shipped or the user's) must keep the work done at one starting
position bounded by a constant; the scan is then linear in the file's size. The checks, on the
parsed pattern:

- every quantifier is bounded, at most ``{0,1000}`` (``+``, ``*`` and ``{n,}`` are refused);
- a quantifier that may repeat a variable number of times does not contain another one that does
  (``(a{1,5}){1,9}``: many ways to split the same text);
- no back-references;
- the estimated steps per starting position stay under ``MAX_STEPS``. The estimate multiplies
  the spans of quantifiers met in sequence (each choice of one may restart the next), except
  where a quantifier over one character class is followed by something that cannot start with
  a character of that class (``[^|]{0,300}\\|``): backtracking into it then fails at once, so its
  span adds instead of multiplying. Alternatives add, unless they start with different
  characters (then at most one of them goes further than its first character).
"""

from __future__ import annotations

import re
from re import _constants as C  # type: ignore[attr-defined]
from re import _parser  # type: ignore[attr-defined]

MAX_BOUND = 1000
MAX_STEPS = 1_000_000_000
_REPEATS = (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT)
_OTHER = 256  # stands for "some character beyond Latin-1" in character sets
_ALL = frozenset(range(257))
_CATEGORY_TESTS = {
    C.CATEGORY_DIGIT: lambda c: c.isdigit(),
    C.CATEGORY_SPACE: lambda c: c.isspace(),
    C.CATEGORY_WORD: lambda c: c.isalnum() or c == "_",
    C.CATEGORY_LINEBREAK: lambda c: c == "\n",
}
_NEGATED = {
    C.CATEGORY_NOT_DIGIT: C.CATEGORY_DIGIT,
    C.CATEGORY_NOT_SPACE: C.CATEGORY_SPACE,
    C.CATEGORY_NOT_WORD: C.CATEGORY_WORD,
    C.CATEGORY_NOT_LINEBREAK: C.CATEGORY_LINEBREAK,
}


class UnsafePattern(ValueError):
    pass


def _category(cat: object) -> frozenset[int]:
    if cat in _NEGATED:
        return _ALL - _category(_NEGATED[cat])
    test = _CATEGORY_TESTS.get(cat)
    if test is None:
        return _ALL
    # Beyond Latin-1 there are digits, spaces and letters too.
    return frozenset(i for i in range(256) if test(chr(i))) | {_OTHER}


def _fold(codes: set[int], ignorecase: bool) -> set[int]:
    if ignorecase:
        for i in list(codes):
            if i < 256:
                codes |= {ord(ch) for ch in (chr(i).lower(), chr(i).upper()) if len(ch) == 1 and ord(ch) < 256}
    return codes


def _charset(op: object, av: object, ignorecase: bool) -> frozenset[int] | None:
    """The characters one item can match, or None when it is not a single-character item."""
    if op is C.LITERAL:
        return frozenset(_fold({av if av < 256 else _OTHER}, ignorecase))  # type: ignore[operator]
    if op is C.NOT_LITERAL:
        return _ALL - frozenset(_fold({av if av < 256 else _OTHER}, ignorecase))  # type: ignore[operator]
    if op is C.ANY:
        return _ALL
    if op is C.CATEGORY:
        return _category(av)
    if op is C.IN:
        codes: set[int] = set()
        negate = False
        for sub_op, sub_av in av:  # type: ignore[union-attr]
            if sub_op is C.NEGATE:
                negate = True
            elif sub_op is C.LITERAL:
                codes.add(sub_av if sub_av < 256 else _OTHER)
            elif sub_op is C.RANGE:
                lo, hi = sub_av
                codes |= set(range(lo, min(hi, 255) + 1))
                if hi > 255:
                    codes.add(_OTHER)
            elif sub_op is C.CATEGORY:
                codes |= _category(sub_av)
            else:
                codes |= _ALL
        codes = _fold(codes, ignorecase)
        return _ALL - frozenset(codes) if negate else frozenset(codes)
    return None


def _has_variable_repeat(seq: list) -> bool:
    for op, av in seq:
        if op in _REPEATS:
            lo, hi, sub = av
            if lo != hi or _has_variable_repeat(sub):
                return True
        elif op is C.SUBPATTERN and _has_variable_repeat(av[3]):
            return True
        elif op is C.BRANCH and any(_has_variable_repeat(b) for b in av[1]):
            return True
        elif op in (C.ASSERT, C.ASSERT_NOT) and _has_variable_repeat(av[1]):
            return True
        elif op is C.ATOMIC_GROUP and _has_variable_repeat(av):
            return True
    return False


def _pairwise_disjoint(sets: list[frozenset[int] | None]) -> bool:
    seen: set[int] = set()
    for chars in sets:
        if chars is None or seen & chars:
            return False
        seen |= chars
    return True


def _cap(n: int) -> int:
    if n > MAX_STEPS:
        raise UnsafePattern(f"too much backtracking possible (estimated over {MAX_STEPS} steps per position); use fewer or shorter gaps")
    return n


def _seq(items: list, tail_cost: int, tail_first: frozenset[int] | None, ic: bool) -> tuple[int, frozenset[int] | None]:
    """Cost of matching ``items`` then the tail, and the characters the whole can start with."""
    cost, first = tail_cost, tail_first
    for op, av in reversed(items):
        if op in _REPEATS:
            lo, hi, sub = av
            if hi is C.MAXREPEAT or hi > MAX_BOUND:
                raise UnsafePattern(f"unbounded quantifier (+, * or {{n,}}); bound it, e.g. {{0,{MAX_BOUND}}} at most")
            # An optional group ({0,1}) cannot split text two ways; only real repetition can.
            if hi > 1 and lo != hi and _has_variable_repeat(sub):
                raise UnsafePattern("a variable quantifier inside another variable quantifier; flatten it")
            one, sub_first = _seq(list(sub), 1, None, ic)
            span = (hi - lo + 1) * one
            single = _charset(*sub[0], ic) if len(sub) == 1 else None
            if single is not None and first is not None and not (single & first):
                cost = _cap(span + cost)
            else:
                cost = _cap(span * cost)
            if lo >= 1:
                first = sub_first
            else:
                first = None if sub_first is None or first is None else sub_first | first
        elif op is C.SUBPATTERN:
            cost, first = _seq(list(av[3]), cost, first, ic)
        elif op is C.ATOMIC_GROUP:
            inner, inner_first = _seq(list(av), 1, None, ic)
            cost, first = _cap(inner + cost), inner_first
        elif op is C.BRANCH:
            results = [_seq(list(b), cost, first, ic) for b in av[1]]
            firsts = [r[1] for r in results]
            # Alternatives that start with different characters: at most one gets past its
            # first character, the others fail at once.
            if _pairwise_disjoint(firsts):
                cost = _cap(max(r[0] for r in results) + len(results))
            else:
                cost = _cap(sum(r[0] for r in results))
            first = None if any(f is None for f in firsts) else frozenset().union(*firsts)
        elif op in (C.ASSERT, C.ASSERT_NOT):
            cost = _cap(_seq(list(av[1]), 1, None, ic)[0] + cost)
        elif op in (C.GROUPREF, C.GROUPREF_EXISTS):
            raise UnsafePattern("back-references are not allowed")
        elif op is C.AT:
            continue
        else:
            cost += 1
            first = _charset(op, av, ic)
    return cost, first


def compile_safe(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """Compile ``pattern`` or raise UnsafePattern saying what to change."""
    try:
        compiled = re.compile(pattern, flags)
    except re.error as exc:
        raise UnsafePattern(f"not a valid regular expression ({exc})") from None
    estimate_steps(pattern, flags)
    return compiled


def estimate_steps(pattern: str, flags: int = 0) -> int:
    parsed = _parser.parse(pattern, flags)
    return _seq(list(parsed.data), 1, None, bool(parsed.state.flags & re.IGNORECASE))[0]
