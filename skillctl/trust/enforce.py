"""Applying a project's trust policy to skill versions: at ``lock``, ``install`` and every run
that loads skills in a project (``run``, ``batch``, ``eval``), however the skills were named.

For each version, before anything is written anywhere (a lock, an install folder, a container):

1. the bundle is fetched and must hash to the digest the lock (or the registry) names;
2. with keys in the policy, the registry's signature envelopes for the version are verified
   (``skillctl.trust.verify``); under ``require_signatures`` a version without a valid one by a
   trusted key is refused, and a locked version must still be signed by the key the lock
   recorded for it;
3. with ``audit.fail_on``, the bundle is audited (the publisher's ``.skillaudit`` ignored) and a
   finding at or above the threshold refuses it.

Every version is checked; the error names each refused one with its one-line reason. At install
and run time the policy is the one the lock was written with, and every key file must still have
the key id the lock recorded (a changed key file is refused, never trusted silently); a skill a
run names beside the lock (``--skill``) passes the same policy. A run without a lock in a project
applies the ``trust:`` section of its ``skills.yaml`` as it is now (``project_gate``). A skill
folder cannot be signed: under a policy that requires signatures it is refused unless the caller
allows folders, and then only the audit applies to it (``Gate.for_folders``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

from skillctl.bundle import sha256_digest
from skillctl.errors import BundleError, ConfigError, IntegrityError, TrustError
from skillctl.protocols import RegistryReader, ResolvedSkill
from skillctl.trust.keys import PublicKey, short_id
from skillctl.trust.policy import TrustPolicy, load_keys, parse_policy
from skillctl.trust.statement import Subject
from skillctl.trust.verify import verify_envelopes
from skillctl.yamlfile import read_yaml

Progress = Callable[[str], None]


def refused(problems: Sequence[str]) -> TrustError:
    """One line for one or many refusals."""
    if len(problems) == 1:
        return TrustError(f"refused by the trust policy: {problems[0]}")
    return TrustError(f"{len(problems)} skill versions refused by the trust policy: " + "; ".join(problems))


@dataclass
class Gate:
    policy: TrustPolicy
    keys: list[PublicKey]
    progress: Progress | None = None
    fetched: dict[str, bytes] = field(default_factory=dict)  # bundles check_all passed, by name

    @classmethod
    def open(cls, trust_doc: Any, base: Path, *, where: str, recorded: dict[str, str] | None = None,
             progress: Progress | None = None) -> "Gate":
        """The gate for a ``trust:`` section whose key paths are relative to ``base``.
        ``recorded`` (a lock's ``trust.keys``) must match the key files as they are now."""
        policy = parse_policy(trust_doc, where)
        keys = load_keys(policy, base)
        if recorded is not None:
            for rel, key in zip(policy.keys, keys):
                if recorded.get(rel) != key.keyid:
                    was = f"it was {short_id(recorded[rel])}" if rel in recorded else "it is not in the lock"
                    raise TrustError(
                        f"refused by the trust policy: key file {rel} now holds key {short_id(key.keyid)} but {was} when "
                        "skills.lock was written; restore it, or run skillctl lock if the change is intended"
                    )
        return cls(policy, keys, progress)

    def key_ids(self) -> dict[str, str]:
        return {rel: key.keyid for rel, key in zip(self.policy.keys, self.keys)}

    @property
    def requires_signatures(self) -> bool:
        return bool(self.keys) and self.policy.require_signatures

    def for_folders(self) -> "Gate":
        """The gate for skills packed from a folder the user named, once they allowed that: a
        folder has no signature to check, so only the policy's audit applies to it."""
        return Gate(replace(self.policy, require_signatures=False), [], self.progress)

    def check(self, skill: ResolvedSkill, data: bytes, envelopes: Sequence[bytes], *, locked_signer: str | None = None) -> str | None:
        """The key id that signed ``skill`` (None without keys in the policy), or TrustError with
        the one reason it is refused."""
        label = f"{skill.name}@{skill.version}"
        if sha256_digest(data) != skill.digest:
            raise IntegrityError(f"{label}: the bundle does not hash to {skill.digest[:19]}…")
        signer = None
        if self.keys:
            verdict = verify_envelopes(envelopes, Subject(skill.name, skill.version, skill.digest), self.keys)
            if locked_signer is not None and not verdict.signed_by(locked_signer):
                now = verdict.reason or f"it is signed by {short_id(verdict.signers[0].keyid)} instead"
                raise TrustError(f"{label}: skills.lock records signer {short_id(locked_signer)}, but no valid signature by it is attached ({now})")
            if verdict.ok:
                signer = locked_signer or verdict.signers[0].keyid
            elif self.policy.require_signatures:
                raise TrustError(verdict.reason)
        if self.policy.fail_on is not None:
            from skillctl.audit import audit_source, default_rules
            from skillctl.audit.sources import from_bundle_contents
            from skillctl.bundle import read_artifact

            # Whatever the artifact's layout (a bundle, a site's archive or lone SKILL.md), its
            # files pass the hostile-archive checks and the audit sees them; the publisher's
            # .skillaudit is not theirs to apply to our decision.
            contents = read_artifact(data, skill.artifact_type, expected_name=skill.name, source=label)
            report = audit_source(from_bundle_contents(contents, label), default_rules(), use_allowlist=False)
            hits = report.at_or_above(self.policy.fail_on)
            if hits:
                f = hits[0]
                more = f" and {len(hits) - 1} more" if len(hits) > 1 else ""
                raise TrustError(
                    f"{label}: audit finding at or above {self.policy.fail_on}: {f.rule.id} {f.rule.title} "
                    f"({f.severity}) at {f.location()}{more}"
                )
        if self.progress:
            by = f"signed by {short_id(signer)}" if signer else "no signature required"
            self.progress(f"trusted {label} ({by}{', audit passed' if self.policy.fail_on else ''})")
        return signer

    def check_all(self, registry: RegistryReader, skills: Sequence[ResolvedSkill],
                  locked_signers: dict[str, str | None] | None = None) -> dict[str, str | None]:
        """Fetch and check every version; their signers by name, or one TrustError naming each
        refused version."""
        signers, problems = {}, []
        for skill in skills:
            try:
                data = registry.fetch(skill)
                envelopes = registry.signatures(skill) if self.keys else []  # an audit-only policy reads none
                signers[skill.name] = self.check(skill, data, envelopes, locked_signer=(locked_signers or {}).get(skill.name))
                self.fetched[skill.name] = data
            except (TrustError, IntegrityError, BundleError) as exc:
                problems.append(str(exc))
        if problems:
            raise refused(problems)
        return signers


def gate_for_trust(trust: Any, base: Path, *, where: str, progress: Progress | None = None) -> Gate | None:
    """The gate for a ``trust:`` section (key files relative to ``base``) while locking; None
    without one."""
    if trust is None:
        return None
    return Gate.open(trust, base, where=where, progress=progress)


def project_gate(skills_yaml: Path, *, progress: Progress | None = None) -> Gate | None:
    """The gate for the ``trust:`` section of a project's ``skills.yaml`` as it is now (key files
    relative to its folder, read now); None when the file has no such section."""
    doc = read_yaml(skills_yaml, error=ConfigError, missing=f"project file {skills_yaml} not found")
    if not isinstance(doc, dict) or "trust" not in doc:
        return None
    return Gate.open(doc["trust"], skills_yaml.parent, where=str(skills_yaml), progress=progress)


def folder_gate(gate: Gate, folder: str, *, where: str, allowed: bool) -> Gate:
    """The gate for a skill packed from ``folder`` on this machine: a folder has no signature,
    so under a policy that requires signatures it is refused unless the user ``allowed``
    folders; then only the policy's audit applies to it."""
    if gate.requires_signatures and not allowed:
        raise TrustError(
            f"refused by the trust policy: {folder} is a skill folder, which cannot be signed, and {where} requires "
            "signatures; pass --allow-local-skills to load it anyway (the audit threshold still applies)"
        )
    return gate.for_folders()


def lock_gate(trust: Any, recorded: dict[str, str], base: Path, *, where: str, progress: Progress | None = None,
              current_trust: Any = ...) -> Gate | None:
    """The gate for the policy a lock was written with (``trust``, its copy of skills.yaml's
    section; key files relative to ``base``, each still holding the key id ``recorded`` for it);
    None when the lock has no policy. ``current_trust`` is skills.yaml's ``trust:`` section now,
    when there is a skills.yaml: it must not differ."""
    if current_trust is not ... and current_trust != trust:
        raise TrustError(
            f"refused by the trust policy: the trust section of {where} changed since skills.lock was written; run skillctl lock"
        )
    if trust is None:
        return None
    return Gate.open(trust, base, where=where, recorded=recorded, progress=progress)
