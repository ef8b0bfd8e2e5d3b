"""Builders for the trust tests: real key files, real registries, real envelopes."""

from __future__ import annotations

import base64
import json
import os
from dataclasses import replace
from pathlib import Path

import yaml
from click.testing import CliRunner

from skillctl.cli import cli
from skillctl.protocols import Registry
from skillctl.registry import open_registry
from skillctl.registry.prepare import PreparedBundle
from skillctl.registry.records import VersionRecord
from skillctl.trust.keys import PublicKey, SigningKey, generate_key, load_public_key, load_signing_key
from skillctl.trust.sign import attestation, sign_version

from registry.helpers import prepared

from .conftest import open_url

POLICY = {"keys": ["keys/team.pub"], "require_signatures": True, "audit": {"fail_on": "high"}}


def make_key(folder: Path, name: str = "team") -> tuple[SigningKey, PublicKey]:
    folder.mkdir(parents=True, exist_ok=True)
    made = generate_key(folder / name)
    return load_signing_key(made.private_path), load_public_key(made.public_path)


def publish(reg: Registry, root: Path, name: str = "demo", version: str = "1.0.0", content: str = "") -> VersionRecord:
    return reg.publish(prepared(root, name, version, content)).record


def publish_signed(reg: Registry, root: Path, key: SigningKey, name: str = "demo", version: str = "1.0.0",
                   content: str = "") -> VersionRecord:
    rec = publish(reg, root, name, version, content)
    assert sign_version(reg, rec, key).status == "attached"
    return rec


def envelope_for(reg: Registry, rec: VersionRecord, key: SigningKey, **claims: str) -> bytes:
    """A genuine signature by ``key`` over a statement naming ``rec`` with ``claims`` changed
    (name, version, digest): what a signature made for another version looks like."""
    data = reg.fetch(rec.resolved())
    return attestation(replace(rec, **claims), data, key, None)


def tamper_sig(envelope: bytes, *, truncate: int = 0, flip: bool = False) -> bytes:
    doc = json.loads(envelope)
    raw = base64.b64decode(doc["signatures"][0]["sig"])
    if flip:
        raw = bytes([raw[0] ^ 1]) + raw[1:]
    if truncate:
        raw = raw[:-truncate]
    doc["signatures"][0]["sig"] = base64.b64encode(raw).decode()
    return json.dumps(doc).encode()


def tamper_payload(envelope: bytes, edit) -> bytes:
    """``edit(statement dict)`` applied to the signed payload; the signature left as it was."""
    doc = json.loads(envelope)
    stmt = json.loads(base64.b64decode(doc["payload"]))
    edit(stmt)
    doc["payload"] = base64.b64encode(json.dumps(stmt).encode()).decode()
    return json.dumps(doc).encode()


class Project:
    """A project folder (skills.yaml, keys/) whose lock was written against a good registry."""

    def __init__(self, root: Path, bundle: PreparedBundle, policy: dict = POLICY) -> None:
        self.root = root
        self.bundle = bundle
        self.key, self.pub = make_key(root / "keys", "team")
        self.stranger, _ = make_key(root.parent / "elsewhere", "stranger")
        self.good = str(root.parent / "good-registry")
        with open_registry(self.good, create=True) as good:
            self.rec = good.publish(bundle).record
            sign_version(good, self.rec, self.key)
        self.write_requirements(policy)

    def write_requirements(self, policy: dict | None) -> None:
        doc = {"skills": {self.bundle.name: self.bundle.version}, **({"trust": policy} if policy is not None else {})}
        (self.root / "skills.yaml").write_text(yaml.safe_dump(doc), "utf-8")

    def cli(self, *args: str, registry: str | None = None):
        env = {"SKILLCTL_REGISTRY": registry or self.good, "SKILLCTL_INSECURE": "1", "XDG_STATE_HOME": str(self.root / "state")}
        old = os.getcwd()
        os.chdir(self.root)  # paths in skills.yaml, --lock and -o are the project's, as a user types them
        try:
            return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)
        finally:
            os.chdir(old)

    def attestation(self, key: SigningKey | None = None, **claims: str) -> bytes:
        return attestation(replace(self.rec, **claims), self.bundle.data, key or self.key, None)

    def stage(self, url: str, envelopes: list[bytes]) -> None:
        """The same bundle in the registry at ``url``, with exactly ``envelopes`` attached."""
        with open_url(url) as reg:
            rec = reg.publish(self.bundle).record
            for env in envelopes:
                reg.attach_signature(rec.resolved(), env)


def project_beside_evil(tmp_path: Path) -> Project:
    """A team project requiring signatures (``POLICY``) whose registry holds its signed
    ``demo@1.0.0`` and an unsigned ``evil@1.0.0`` that anyone with write access published."""
    root = tmp_path / "project"
    root.mkdir()
    team = Project(root, prepared(tmp_path / "src", "demo", "1.0.0"))
    with open_registry(team.good) as reg:
        reg.publish(prepared(tmp_path / "src", "evil", "1.0.0"))
    return team
