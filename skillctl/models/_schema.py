"""JSON Schema problems as short, person-facing lines.

jsonschema's own messages quote whole instances ("{'answer': 42} is not valid under any of the
given schemas"); an author needs the place and the rule instead: ``steps[2]: 'answer' must be a
string``. Every problem is reported, not only the first (an author fixes them in one go).

A schema may carry ``"x-message"`` on any subschema: it is used for problems that have no
better wording of their own (``oneOf``, ``not``…).
"""

from __future__ import annotations

from typing import Any, Iterable

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

_TYPE_WORDS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "array": "a list",
    "object": "a mapping",
    "null": "null",
}

MAX_REPORTED = 6


def format_path(parts: Iterable[Any]) -> str:
    """``["steps", 2, "shell", 0]`` → ``steps[2].shell[0]``; the empty path is the top level."""
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "top level"


def _nearest_message(error: ValidationError) -> str | None:
    e: ValidationError | None = error
    while e is not None:
        if isinstance(e.schema, dict) and "x-message" in e.schema:
            return str(e.schema["x-message"])
        e = e.parent
    return None


def _describe(error: ValidationError) -> tuple[list[Any], str]:
    """(path to print, what is wrong there)."""
    path = list(error.absolute_path)
    kind, want = error.validator, error.validator_value
    # A problem with a named key reads better from the mapping that holds it.
    subject = ""
    if path and isinstance(path[-1], str):
        subject = f"'{path.pop()}' "
    if kind == "type":
        types = [want] if isinstance(want, str) else list(want)
        what = " or ".join(_TYPE_WORDS.get(t, t) for t in types)
        return path, f"{subject}must be {what}"
    if kind == "required":
        missing = [k for k in want if isinstance(error.instance, dict) and k not in error.instance]
        return path + ([subject.strip(" '")] if subject else []), f"missing '{missing[0] if missing else want[0]}'"
    if kind == "additionalProperties":
        known = set(error.schema.get("properties", {}))
        extra = sorted(k for k in error.instance if k not in known) if isinstance(error.instance, dict) else []
        where = path + ([subject.strip(" '")] if subject else [])
        return where, f"unknown key {', '.join(repr(k) for k in extra)} (allowed: {', '.join(sorted(known))})"
    if kind == "enum":
        return path, f"{subject}is {error.instance!r}; use one of {', '.join(map(str, want))}"
    if kind == "const":
        return path, f"{subject}must be {want!r}"
    if kind in ("minItems", "minLength"):
        return path, f"{subject}must not be empty" if want == 1 else f"{subject}needs at least {want}"
    if kind in ("maxItems", "maxLength"):
        return path, f"{subject}is too long (at most {want})"
    if kind in ("minimum", "exclusiveMinimum"):
        return path, f"{subject}must be {'at least' if kind == 'minimum' else 'more than'} {want}"
    if kind == "dependentRequired":
        key = next((k for k, deps in want.items() if k in error.instance and any(d not in error.instance for d in deps)), "?")
        where = path + ([subject.strip(" '")] if subject else [])
        return where, f"'{key}' is only allowed together with {' or '.join(repr(d) for d in want.get(key, []))}"
    custom = _nearest_message(error)
    where = path + ([subject.strip(" '")] if subject else [])
    return where, custom or error.message


def schema_problems(instance: Any, schema: dict[str, Any]) -> list[str]:
    """Every problem of ``instance`` against ``schema``, as ``path: what is wrong`` lines,
    in document order. Empty when the instance is valid."""
    validator = Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(instance), key=lambda e: [str(p).zfill(8) for p in e.absolute_path])
    lines: list[str] = []
    for err in errors:
        path, what = _describe(err)
        line = f"{format_path(path)}: {what}"
        if line not in lines:
            lines.append(line)
    return lines


def summarize(problems: list[str]) -> str:
    """Several problems on one line, capped so a wholly wrong file does not flood the terminal."""
    shown = "; ".join(problems[:MAX_REPORTED])
    more = len(problems) - MAX_REPORTED
    return shown + (f"; and {more} more" if more > 0 else "")
