"""JSON Schema problems as one line each, located: the one place skillctl words them.

Every problem is reported, not only the first (an author fixes them in one go), ordered by
place (list items by number), each as ``place: what is wrong`` with the place written ``steps[2].shell[0]``
(``format_path``); ``summarize`` puts several on one capped line.

What is wrong is worded by a *wording*, a function of the error:

- ``plain`` (the default), for files people write: jsonschema's own messages quote whole
  instances ("{'answer': 42} is not valid under any of the given schemas"); an author needs the
  rule instead: ``steps[2]: 'answer' must be a string``. A schema may carry ``"x-message"`` on
  any subschema: it is used for problems that have no better wording of their own (``oneOf``,
  ``not``…).
- ``validator``, jsonschema's own sentence (``5 is less than the minimum of 1``): for tool
  arguments a model sends, which models know in that form, and for formats whose readers
  expect it.

A caller with words of its own for a few rules passes a wording that falls back on one of these.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Protocol

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError


class _Validator(Protocol):
    def iter_errors(self, instance: Any) -> Iterable[ValidationError]: ...


# (path to print, what is wrong there) for one error.
Wording = Callable[[ValidationError], "tuple[list[Any], str]"]

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


def format_path(parts: Iterable[Any], top: str = "top level", *, pointer: bool = False) -> str:
    """``["steps", 2, "shell", 0]`` → ``steps[2].shell[0]`` (``pointer``: ``steps/2/shell/0``,
    as a JSON Pointer without its leading slash); the empty path is ``top``."""
    if pointer:
        return "/".join(map(str, parts)) or top
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or top


def _nearest_message(error: ValidationError) -> str | None:
    e: ValidationError | None = error
    while e is not None:
        if isinstance(e.schema, dict) and "x-message" in e.schema:
            return str(e.schema["x-message"])
        e = e.parent
    return None


def validator(error: ValidationError) -> tuple[list[Any], str]:
    """jsonschema's own sentence, at the error's place."""
    return list(error.absolute_path), error.message


def plain(error: ValidationError) -> tuple[list[Any], str]:
    """Our words for the rules authors meet, at the mapping that holds the key concerned."""
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


def schema_problems(
    instance: Any,
    schema: dict[str, Any] | _Validator,
    *,
    wording: Wording = plain,
    top: str = "top level",
    prefix: str = "",
    pointer: bool = False,
) -> list[str]:
    """Every problem of ``instance`` against ``schema`` (a schema, or a validator built once by
    the caller), as ``place: what is wrong`` lines ordered by place; empty when it is valid.
    ``top`` names the place of the whole document; ``prefix`` is where the document itself
    sits in a larger one (``trust`` gives ``trust.keys``); ``pointer`` writes places as
    ``rules/0/id``, for formats documented that way."""
    check = Draft202012Validator(schema) if isinstance(schema, dict) else schema
    errors = sorted(check.iter_errors(instance), key=lambda e: [str(p).zfill(8) for p in e.absolute_path])
    lines: list[str] = []
    for err in errors:
        path, what = wording(err)
        line = f"{format_path([prefix, *path] if prefix else path, top, pointer=pointer)}: {what}"
        if line not in lines:
            lines.append(line)
    return lines


def summarize(problems: list[str], most: int = MAX_REPORTED) -> str:
    """Several problems on one line, capped so a wholly wrong file does not flood the terminal."""
    shown = "; ".join(problems[:most])
    more = len(problems) - most
    return shown + (f"; and {more} more" if more > 0 else "")
