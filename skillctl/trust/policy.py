"""The trust policy a project writes in ``skills.yaml``::

    trust:
      keys: [keys/team.pub]        # public keys, relative to the folder of skills.yaml
      require_signatures: true     # default: true when keys are listed
      audit: {fail_on: high}       # refuse a finding at or above this severity

Checked against ``policy.schema.json``. The section is copied into ``skills.lock`` with the
rest of the requirements, so any change to it makes the lock stale, and the lock records the
key id each listed file had: a key file that changes afterwards is refused too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jsonschema

from skillctl.errors import ConfigError
from skillctl.schema import schema_problems, validator

if TYPE_CHECKING:
    from skillctl.trust.keys import PublicKey


@dataclass(frozen=True)
class TrustPolicy:
    keys: tuple[str, ...]  # as written: paths relative to the folder of skills.yaml
    require_signatures: bool
    fail_on: str | None  # a severity name, or None for no audit


# Plainer words than jsonschema's for the two rules people meet most.
_MESSAGES = {
    ("minItems", "1"): "list at least one public key file, e.g. [keys/team.pub]",
    ("required", "['keys']"): "require_signatures: true needs keys: [FILE.pub, …] to check signatures with",
}


@lru_cache(maxsize=1)
def _validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(resources.files("skillctl.trust").joinpath("policy.schema.json").read_text("utf-8"))
    return jsonschema.Draft202012Validator(schema)


def _wording(error: jsonschema.ValidationError) -> tuple[list[Any], str]:
    path, what = validator(error)
    return path, _MESSAGES.get((error.validator, str(error.validator_value)), what)


def parse_policy(doc: Any, where: str) -> TrustPolicy:
    """A ``trust:`` section as written, or ConfigError naming every problem in it."""
    errors = schema_problems(doc, _validator(), wording=_wording, prefix="trust")
    if errors:
        raise ConfigError(f"{where}: invalid trust policy: {'; '.join(errors)}")
    keys = tuple(doc.get("keys", ()))
    audit = doc.get("audit")
    return TrustPolicy(keys, bool(doc.get("require_signatures", bool(keys))), audit["fail_on"] if audit else None)


def load_keys(policy: TrustPolicy, base: Path) -> list["PublicKey"]:
    """The policy's keys, read from files relative to ``base``; TrustError names a bad one."""
    from skillctl.trust.keys import load_public_key  # cryptography only for projects that sign

    return [load_public_key(base / rel) if not Path(rel).is_absolute() else load_public_key(rel) for rel in policy.keys]
