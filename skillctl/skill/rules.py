"""Front-matter rules of the Agent Skills specification, and of each client profile.

``schemas/frontmatter.schema.json`` states what a valid front matter is, for editors
(yaml-language-server) and other tools. This module checks the same rules directly in Python,
one field at a time, so each problem gets its own code, location and advice — and so validating
one skill does not pay for importing a JSON Schema engine (~120 ms, more than the whole check).
``tests/skill/test_rules_schema_agreement.py`` runs the schema beside these checks on generated
front matter and on the real-skills corpus: they must agree on every verdict.

Deliberate differences from the reference validator (PyPI ``skills-ref``), documented in README:
- names must be lowercase ASCII (the spec's text); skills-ref accepts any Unicode letter after
  NFKC normalisation. ``café`` or ``ｐｄｆ`` is an error here.
- values keep their YAML types (PyYAML) instead of strictyaml's "everything is a string", so
  ``metadata: {version: 1.0}`` is reported: write ``version: "1.0"``.
- ``allowed-tools`` must be a string as the spec says; newer skills-ref also accepts a list.

Where a diagnostic points: a problem with a *field* (unknown, missing from its place) at its key;
a problem with a *value* at the value — except a block collection, which starts on the line after
its key, where the key is shown.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Callable

from skillctl.skill.diagnostics import Diagnostic
from skillctl.skill.document import SkillDocument
from skillctl.skill.model import as_semver
from skillctl.skill.profiles import PROFILES, STRING, Profile, kind_matches

MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500
# MAJOR.MINOR.PATCH(+build) with numbers of at most 15 digits: valid SemVer within the bound of
# skillctl.versioning (2^53-1), nothing more to check (most skills). Longer numbers go to its parser.
_PLAIN_RELEASE_RE = re.compile(r"^(0|[1-9]\d{0,14})\.(0|[1-9]\d{0,14})\.(0|[1-9]\d{0,14})(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$")
# Fields people put at the top level that belong under metadata.
_METADATA_FIELDS = ("version", "author", "tags")


@lru_cache(maxsize=1)
def frontmatter_schema() -> dict[str, Any]:
    """The published JSON Schema (for editors, other tools and the agreement tests)."""
    import json
    from importlib import resources  # not needed to validate: imported when asked for

    text = resources.files("skillctl.skill").joinpath("schemas/frontmatter.schema.json").read_text("utf-8")
    return json.loads(text)


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


def _text_problem(value: Any, limit: int) -> str | None:
    """What is wrong with a required-non-blank text value: None, 'long', or what it is instead."""
    if not isinstance(value, str):
        return _type_name(value)
    if len(value) > limit:
        return "long"
    if not value.strip():
        return "blank text"
    return None


def _others_documenting(field: str, profile: Profile) -> list[str]:
    return [p.title for p in PROFILES.values() if p is not profile and field in p.fields]


def check_front_matter(doc: SkillDocument, folder_name: str | None, shown: str, profile: Profile | None = None) -> list[Diagnostic]:
    """All front-matter diagnostics for ``doc``; ``folder_name`` None skips the folder check."""
    profile = profile or PROFILES["spec"]
    meta = doc.metadata
    diags: list[Diagnostic] = []

    def at(code: str, message: str, key: str, where: Callable[[str], Any] = doc.where) -> None:
        loc = where(key)
        diags.append(Diagnostic(code, message, shown, loc.line, loc.column))

    allowed = profile.allowed_fields()
    for key in meta:
        skey = str(key)
        if isinstance(key, str) and key in allowed:
            continue
        if skey in _METADATA_FIELDS:
            hint = f" (move it to metadata.{skey}" + ("; skillctl validate --fix does" if skey == "version" else "") + ")"
        else:
            others = _others_documenting(skey, profile)
            hint = f" ({' and '.join(others)} document{'s' * (len(others) == 1)} it: check with --profile)" if others else (
                " (put custom data under metadata:)"
            )
        where = "the spec allows only" if profile.name == "spec" else f"{profile.title} documents only"
        at("SK161", f"unknown field '{skey}'; {where} {', '.join(allowed)}{hint}", skey, doc.key_at)

    for missing, code in (("name", "SK101"), ("description", "SK111")):
        if missing not in meta:
            diags.append(Diagnostic(code, f"required field '{missing}' is missing from the front matter", shown, 1, 1))

    if "name" in meta:
        name = meta["name"]
        if not isinstance(name, str) or not name.strip():
            got = _type_name(name) if not isinstance(name, str) else "an empty string"
            at("SK102", f"name must be a non-empty string, got {got}", "name")
        else:
            for code, message in name_problems(name):
                at(code, message, "name")
            if folder_name is not None and name != folder_name:
                at("SK107", f"name '{name}' must equal the folder name '{folder_name}'; rename one of them", "name")

    # description and compatibility: non-blank text up to a length
    for key, limit, long_code, bad_code, advice, what in (
        ("description", MAX_DESCRIPTION, "SK113", "SK112", " — move detail into the body",
         "a non-empty string saying what the skill does and when to use it"),
        ("compatibility", MAX_COMPATIBILITY, "SK122", "SK121", "", "a non-empty string"),
    ):
        if key not in meta:
            continue
        value = meta[key]
        problem = _text_problem(value, limit)
        if problem == "long":
            at(long_code, f"{key} is {len(value)} characters long; the limit is {limit}{advice}", key)
            problem = None if value.strip() else "blank text"
        if problem:
            at(bad_code, f"{key} must be {what}, got {problem}", key)

    if "metadata" in meta:
        diags += _metadata_checks(doc, meta["metadata"], shown, profile)

    if "allowed-tools" in meta and not kind_matches(meta["allowed-tools"], profile.allowed_tools):
        value = meta["allowed-tools"]
        hint = ""
        if isinstance(value, list) and profile.allowed_tools == STRING:
            hint = " (Claude Code also reads a YAML list: --profile claude-code; skillctl validate --fix joins it)"
        what = "one space-separated string (e.g. \"Bash Read\")" if profile.allowed_tools == STRING else "a string or a list of strings"
        at("SK141", f"allowed-tools must be {what}, got {_type_name(value)}{hint}", "allowed-tools")

    if "license" in meta and not isinstance(meta["license"], str):
        at("SK151", f"license must be a string (a license name or a bundled file), got {_type_name(meta['license'])}", "license")

    for key, kind in sorted(profile.fields.items()):
        if key in meta and not kind_matches(meta[key], kind):
            value = meta[key]
            hint = ""
            if kind == STRING and isinstance(value, list) and len(value) == 1 and isinstance(value[0], str):
                hint = f"; the brackets made it a YAML list — quote it: {key}: \"[{value[0]}]\""
            at("SK162", f"{key} must be a {kind} for {profile.title}, got {_type_name(value)}{hint}", key)
    return diags


def _metadata_checks(doc: SkillDocument, md: Any, shown: str, profile: Profile) -> list[Diagnostic]:
    diags: list[Diagnostic] = []

    def at(code: str, message: str, loc: Any) -> None:
        diags.append(Diagnostic(code, message, shown, loc.line, loc.column))

    if not isinstance(md, dict):
        at("SK131", f"metadata must be a mapping of string keys to string values, got {_type_name(md)}", doc.where("metadata"))
        return diags
    for k, v in md.items():
        if not isinstance(k, str):
            # YAML allows `1: x`; the spec's map has string keys
            at("SK132", f"metadata key {k!r} must be a string; quote it", doc.key_at(f"metadata.{k}"))
            continue
        if isinstance(v, dict) and k in profile.metadata_mappings:
            continue
        documented = profile.metadata_fields.get(k)
        if isinstance(v, str):
            if documented and len(v) > documented[1]:
                at("SK162", f"metadata.{k} is {len(v)} characters long; {profile.title} reads at most {documented[1]}", doc.where(f"metadata.{k}"))
            continue
        message = f"metadata.{k} must be a string, got {_type_name(v)}"
        written = doc.plain_text.get(f"metadata.{k}")
        if isinstance(v, (int, float, bool)) and written is not None:
            message += f"; quote it: {k}: \"{written}\" (skillctl validate --fix does)"
        elif isinstance(v, list):
            message += "; write it as one string (e.g. \"a, b\")"
        elif isinstance(v, dict):
            clients = [p.title for p in PROFILES.values() if p.metadata_mappings and k in p.metadata_mappings]
            if clients and profile.name == "spec":
                message += f" ({' and '.join(clients)} read{'s' * (len(clients) == 1)} it: check with --profile)"
            else:
                message += f"; flatten it into string values (e.g. {k}-name: \"…\") or move it out of metadata"
        elif v is None:
            message += "; give it a value in quotes or delete the key"
        at("SK132", message, doc.where(f"metadata.{k}"))

    version = md.get("version")
    if isinstance(version, str):
        diags += _version_checks(doc, version, shown)
    return diags


def _version_checks(doc: SkillDocument, version: str, shown: str) -> list[Diagnostic]:
    loc = doc.where("metadata.version")
    diags = []
    if as_semver(version) != version:  # "1.0", the spec's own example, reads as 1.0.0
        diags.append(
            Diagnostic(
                "SK301",
                f"metadata.version '{version}' is read as {version}.0 where a SemVer is needed (pack, publish); "
                f"write \"{version}.0\" to say so exactly",
                shown,
                loc.line,
                loc.column,
            )
        )
        version = as_semver(version)  # still checked: its numbers may be over the bound
    if _PLAIN_RELEASE_RE.match(version):
        return diags
    # versioning imports packaging; only a version that needs a closer look pays for it
    from skillctl.errors import VersionError
    from skillctl.versioning import SEMVER_RE, SemVer

    if not SEMVER_RE.match(version):
        hint = f"; drop the leading 'v': {version[1:]}" if version[:1] in "vV" and SEMVER_RE.match(version[1:]) else ""
        message = f"metadata.version '{version}' is not SemVer (MAJOR.MINOR.PATCH, e.g. 1.0.0){hint}"
    else:
        try:
            SemVer.parse(version)
            return diags
        except VersionError as exc:
            message = str(exc)
    return [*diags, Diagnostic("SK241", message, shown, loc.line, loc.column)]
