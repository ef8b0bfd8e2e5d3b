"""Front-matter rules of the Agent Skills specification.

The JSON Schema in ``schemas/frontmatter.schema.json`` is the single statement of what a valid
front matter is; this module runs it and turns each schema error into a coded, located, specific
message (a bare "does not match '^[a-z0-9]+(-[a-z0-9]+)*$'" tells an author nothing).

Deliberate differences from the reference validator (PyPI ``skills-ref``), documented in README:
- names must be lowercase ASCII (the spec's text); skills-ref accepts any Unicode letter after
  NFKC normalisation. ``café`` or ``ｐｄｆ`` is an error here.
- values keep their YAML types (PyYAML) instead of strictyaml's "everything is a string", so
  ``metadata: {version: 1.0}`` is reported: write ``version: "1.0"``.
- ``allowed-tools`` must be a string as the spec says; newer skills-ref also accepts a list.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

import jsonschema

from skillctl.skill.diagnostics import Diagnostic
from skillctl.skill.document import SkillDocument
from skillctl.versioning import SEMVER_RE, SemVer
from skillctl.errors import VersionError

MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500
ALLOWED_FIELDS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")


@lru_cache(maxsize=1)
def frontmatter_schema() -> dict[str, Any]:
    text = resources.files("skillctl.skill").joinpath("schemas/frontmatter.schema.json").read_text("utf-8")
    return json.loads(text)


@lru_cache(maxsize=1)
def _validator() -> jsonschema.protocols.Validator:
    schema = frontmatter_schema()
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _type_name(value: Any) -> str:
    return {bool: "a boolean", int: "a number", float: "a number", list: "a list", dict: "a mapping", type(None): "empty"}.get(
        type(value), type(value).__name__
    )


def name_problems(name: str) -> list[tuple[str, str]]:
    """Every way ``name`` breaks the naming rules, as (code, message)."""
    out: list[tuple[str, str]] = []
    if len(name) > MAX_NAME:
        out.append(("SK103", f"name is {len(name)} characters long; the limit is {MAX_NAME}"))
    bad = sorted({c for c in name if not (c.isascii() and (c.islower() or c.isdigit() or c == "-"))})
    if bad:
        shown = "".join(bad[:10])
        hint = f"; try '{name.lower()}'" if name.lower() != name and not name.lower().strip("-").count("--") and all(
            c.isascii() and (c.isalnum() or c == "-") for c in name
        ) else ""
        out.append(
            (
                "SK104",
                f"name '{name}' has characters other than lowercase ASCII letters, digits and '-': {shown!r}{hint}",
            )
        )
    if name.startswith("-") or name.endswith("-"):
        out.append(("SK105", f"name '{name}' must not start or end with '-'"))
    if "--" in name:
        out.append(("SK106", f"name '{name}' must not contain '--'"))
    return out


def check_front_matter(doc: SkillDocument, folder_name: str | None, shown: str) -> list[Diagnostic]:
    """All front-matter diagnostics for ``doc``; ``folder_name`` None skips the folder check."""
    meta = doc.metadata
    diags: list[Diagnostic] = []

    reported: set[tuple[str, str, str]] = set()

    def at(code: str, message: str, key: str) -> None:
        # One value can fail several schema keywords (an empty name fails minLength and
        # pattern, with the same message): the author needs to hear about it once.
        if (code, key, message) in reported:
            return
        reported.add((code, key, message))
        loc = doc.where(key)
        diags.append(Diagnostic(code, message, shown, loc.line, loc.column))

    for err in sorted(_validator().iter_errors(meta), key=lambda e: (list(map(str, e.path)), e.validator)):
        path = [str(p) for p in err.absolute_path]
        field = path[0] if path else ""
        value = err.instance
        v = err.validator
        if v == "required":
            continue  # reported per field below, in a stable order
        elif v == "additionalProperties" and not path:
            for extra in sorted(set(map(str, meta)) - set(ALLOWED_FIELDS)):
                hint = " (put custom data under metadata:)" if extra not in ("version", "author", "tags") else (
                    f" (move it to metadata.{extra})"
                )
                at("SK161", f"unknown field '{extra}'; the spec allows only {', '.join(ALLOWED_FIELDS)}{hint}", extra)
        elif field == "name":
            if v in ("type", "minLength") or (v == "pattern" and isinstance(value, str) and not value.strip()):
                at("SK102", f"name must be a non-empty string, got {_type_name(value) if v == 'type' else 'an empty string'}", "name")
            elif v in ("maxLength", "pattern"):
                pass  # reported once, in detail, below
        elif field == "description":
            if v == "maxLength":
                at("SK113", f"description is {len(value)} characters long; the limit is {MAX_DESCRIPTION} — move detail into the body", "description")
            else:
                what = _type_name(value) if v == "type" else "blank text"
                at("SK112", f"description must be a non-empty string saying what the skill does and when to use it, got {what}", "description")
        elif field == "compatibility":
            if v == "maxLength":
                at("SK122", f"compatibility is {len(value)} characters long; the limit is {MAX_COMPATIBILITY}", "compatibility")
            else:
                what = _type_name(value) if v == "type" else "blank text"
                at("SK121", f"compatibility must be a non-empty string, got {what}", "compatibility")
        elif field == "metadata":
            if len(path) == 1:
                at("SK131", f"metadata must be a mapping of string keys to string values, got {_type_name(value)}", "metadata")
            else:
                key = path[1]
                at(
                    "SK132",
                    f"metadata.{key} must be a string, got {_type_name(value)}"
                    + (f"; quote it: {key}: \"{value}\"" if isinstance(value, (int, float)) and not isinstance(value, bool) else ""),
                    f"metadata.{key}",
                )
        elif field == "allowed-tools":
            at("SK141", f"allowed-tools must be one space-separated string (e.g. \"Bash Read\"), got {_type_name(value)}", "allowed-tools")
        elif field == "license":
            at("SK151", f"license must be a string (a license name or a bundled file), got {_type_name(value)}", "license")
        else:  # pragma: no cover - a schema keyword we did not map is a bug in this module
            at("SK161", f"front matter problem at '{'.'.join(path)}': {err.message}", field or "name")

    for missing, code in (("name", "SK101"), ("description", "SK111")):
        if missing not in meta:
            diags.append(Diagnostic(code, f"required field '{missing}' is missing from the front matter", shown, 1, 1))

    # metadata keys that are not strings (YAML allows `1: x`); JSON Schema only sees str keys
    md = meta.get("metadata")
    if isinstance(md, dict):
        for k in md:
            if not isinstance(k, str):
                at("SK132", f"metadata key {k!r} must be a string; quote it", "metadata")
    # Non-string top-level keys (`1: x`) need no check of their own: additionalProperties
    # already reports them above as unknown fields, at their own line.

    name = meta.get("name")
    if isinstance(name, str) and name.strip():
        for code, message in name_problems(name):
            at(code, message, "name")
        if folder_name is not None and name != folder_name:
            at("SK107", f"name '{name}' must equal the folder name '{folder_name}'; rename one of them", "name")

    version = md.get("version") if isinstance(md, dict) else None
    if isinstance(version, str):
        if not SEMVER_RE.match(version):
            at("SK241", f"metadata.version '{version}' is not SemVer (MAJOR.MINOR.PATCH, e.g. 1.0.0)", "metadata.version")
        else:
            try:
                SemVer.parse(version)
            except VersionError as exc:
                at("SK241", str(exc), "metadata.version")
    return diags

