"""Network policies: what a run's container may reach, in the hosted shell tool's shape.

    {type: disabled}                                   the default: no network at all
    {type: allowlist,
     allowed_domains: [api.github.com, "*.example.com"],
     domain_secrets: [{domain: api.github.com, name: GITHUB_TOKEN, value: env:GITHUB_TOKEN}]}

A secret's ``value`` says where skillctl reads it on the host — ``env:VAR`` or ``file:PATH``
(relative to the file that names it) — and is never the secret itself, so a policy can be
committed. Policies come from a file (JSON or YAML, ``--network-policy``), from ``network:`` in
a project's ``skills.yaml``, and from the command line's shorthands (``--allow-domain``,
``--domain-secret NAME@DOMAIN``), which extend whichever of the first two applies.

Every problem of a policy is reported at once, on one line, naming the place and the fix. The
schema ships as ``schemas/network-policy.schema.json`` (usable by editors too).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Mapping

from skillctl.egress.rules import check_pattern, first_match, normalize_host, pattern_within
from skillctl.errors import ConfigError
from skillctl.models._schema import schema_problems, summarize
from skillctl.yamlfile import read_yaml

_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Set by the session for the agent's commands; a secret may not take one of these names.
RESERVED_NAMES = frozenset(
    n.upper()
    for n in (
        "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "PIP_CERT", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO",
        "PATH", "HOME", "LANG", "USER",
    )
)
# Shorter values would be replaced wherever those few characters happen to occur in a response.
MIN_SECRET_CHARS = 8


@lru_cache(maxsize=1)
def policy_schema() -> dict[str, Any]:
    text = resources.files("skillctl.egress").joinpath("schemas/network-policy.schema.json").read_text("utf-8")
    return json.loads(text)


@dataclass(frozen=True)
class DomainSecret:
    domain: str
    name: str
    value: str  # "env:VAR" or "file:/absolute/path": where the secret is read, never the secret

    def to_dict(self) -> dict[str, str]:
        return {"domain": self.domain, "name": self.name, "value": self.value}


@dataclass(frozen=True)
class NetworkPolicy:
    type: str = "disabled"
    allowed_domains: tuple[str, ...] = ()
    domain_secrets: tuple[DomainSecret, ...] = ()
    origin: str = "default"  # where it was read, for messages (a file, "skills.yaml", "command line")

    @property
    def enabled(self) -> bool:
        return self.type == "allowlist"

    def allows(self, host: str) -> str | None:
        """The allowed_domains entry that lets ``host`` through, or None."""
        return first_match(self.allowed_domains, host) if self.enabled else None

    def to_dict(self) -> dict[str, Any]:
        """The hosted API's shape; values stay references, so this is safe to print or store."""
        if not self.enabled:
            return {"type": "disabled"}
        return {
            "type": "allowlist",
            "allowed_domains": list(self.allowed_domains),
            "domain_secrets": [s.to_dict() for s in self.domain_secrets],
        }

    def describe(self) -> str:
        if not self.enabled:
            return f"network disabled ({self.origin})"
        return f"allowlist of {len(self.allowed_domains)} domain(s) from {self.origin}"


DISABLED = NetworkPolicy()


def _absolute_source(value: str, base_dir: Path) -> str:
    kind, _, ref = value.partition(":")
    if kind == "file":
        return f"file:{(base_dir / Path(ref).expanduser()).resolve()}"
    return value


def _semantic_problems(allowed: list[str], secrets: list[DomainSecret]) -> list[str]:
    problems: list[str] = []
    for i, pattern in enumerate(allowed):
        why = check_pattern(pattern)
        if why:
            problems.append(f"allowed_domains[{i}]: {why}")
    sources: dict[str, str] = {}
    for i, s in enumerate(secrets):
        where = f"domain_secrets[{i}]"
        why = check_pattern(s.domain)
        if why:
            problems.append(f"{where}.domain: {why}")
        elif not pattern_within(s.domain, allowed):
            problems.append(f"{where}: {s.domain} is not in allowed_domains; allow it too (--allow-domain {s.domain})")
        if s.name.upper() in RESERVED_NAMES:
            problems.append(f"{where}.name: {s.name} is set by skillctl for the run; choose another name")
        if sources.setdefault(s.name, s.value) != s.value:
            problems.append(f"{where}: {s.name} is read from two places; one name is one secret (list its domains with the same value)")
    return problems


def parse_policy(data: Any, *, origin: str, base_dir: Path | None = None) -> NetworkPolicy:
    """A validated policy from parsed JSON/YAML; ``ConfigError`` naming every problem otherwise."""
    if data is None:
        raise ConfigError(f"{origin}: empty network policy; write at least 'type: disabled' or 'type: allowlist'")
    problems = schema_problems(data, policy_schema())
    if problems:
        raise ConfigError(f"{origin}: invalid network policy: {summarize(problems)}")
    base = base_dir or Path.cwd()
    allowed = [normalize_host(d) for d in data.get("allowed_domains", [])]
    secrets = [
        DomainSecret(normalize_host(s["domain"]), s["name"], _absolute_source(s["value"], base))
        for s in data.get("domain_secrets", [])
    ]
    problems = _semantic_problems(allowed, secrets)
    if problems:
        raise ConfigError(f"{origin}: invalid network policy: {summarize(problems)}")
    return NetworkPolicy(data["type"], tuple(dict.fromkeys(allowed)), tuple(secrets), origin)


def load_policy(path: Path) -> NetworkPolicy:
    """A policy file, JSON or YAML (YAML reads both)."""
    data = read_yaml(path, error=ConfigError, missing=f"network policy {path} not found")
    return parse_policy(data, origin=str(path), base_dir=path.resolve().parent)


def project_policy(skills_yaml: Path) -> NetworkPolicy | None:
    """The ``network:`` section of a project's ``skills.yaml``; None when it has none."""
    if not skills_yaml.is_file():
        return None
    doc = read_yaml(skills_yaml, error=ConfigError, missing=f"{skills_yaml} not found")
    if not isinstance(doc, dict) or "network" not in doc:
        return None
    return parse_policy(doc["network"], origin=f"{skills_yaml} (network:)", base_dir=skills_yaml.resolve().parent)


def parse_domain_secret(spec: str) -> DomainSecret:
    """``NAME@DOMAIN`` → a secret read from the host's environment variable NAME."""
    name, sep, domain = spec.partition("@")
    if not sep or not _NAME_RE.match(name) or not domain:
        raise ConfigError(f"--domain-secret {spec}: write NAME@DOMAIN, e.g. GITHUB_TOKEN@api.github.com (the value comes from $NAME)")
    return DomainSecret(normalize_host(domain), name, f"env:{name}")


def with_shorthands(base: NetworkPolicy, allow_domains: Iterable[str], domain_secrets: Iterable[str]) -> NetworkPolicy:
    """``base`` extended by ``--allow-domain`` and ``--domain-secret``; any of them turns the
    network on (a disabled base becomes an allowlist)."""
    allow_domains, domain_secrets = list(allow_domains), list(domain_secrets)
    if not allow_domains and not domain_secrets:
        return base
    data = base.to_dict() if base.enabled else {"type": "allowlist", "allowed_domains": []}
    data["allowed_domains"] = [*data["allowed_domains"], *allow_domains]
    secrets = [parse_domain_secret(s) for s in domain_secrets]
    if secrets and not data["allowed_domains"]:
        raise ConfigError(f"--domain-secret {domain_secrets[0]}: {secrets[0].domain} is not in allowed_domains; "
                          f"allow it too (--allow-domain {secrets[0].domain})")
    data["domain_secrets"] = [*data.get("domain_secrets", []), *(s.to_dict() for s in secrets)]
    origin = "the command line" if base.origin == "default" else f"{base.origin} and the command line"
    return parse_policy(data, origin=origin)


def choose_policy(
    policy_file: Path | None,
    project_file: Path | None,
    allow_domains: Iterable[str] = (),
    domain_secrets: Iterable[str] = (),
) -> NetworkPolicy:
    """The run's policy: the file if given, else the project's ``network:``, else disabled;
    then the shorthands on top."""
    base = load_policy(policy_file) if policy_file else (project_policy(project_file) if project_file else None)
    return with_shorthands(base or DISABLED, allow_domains, domain_secrets)


def read_secret_values(policy: NetworkPolicy, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Each secret's real value by name, read now from the host. Messages never contain a value."""
    environ = os.environ if environ is None else environ
    values: dict[str, str] = {}
    for s in policy.domain_secrets:
        if s.name in values:
            continue
        kind, _, ref = s.value.partition(":")
        what = f"secret {s.name} (for {s.domain})"
        if kind == "env":
            if ref not in environ:
                raise ConfigError(f"{what}: environment variable {ref} is not set; export it before the run")
            value = environ[ref]
        else:
            try:
                value = Path(ref).read_text("utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise ConfigError(f"{what}: cannot read {ref} ({type(exc).__name__}); check the path in {policy.origin}") from None
            value = value.removesuffix("\n").removesuffix("\r")
        if any(c in value for c in "\r\n\0"):
            raise ConfigError(f"{what}: the value from {s.value} contains a line break or NUL byte; it could not go into a header")
        if len(value) < MIN_SECRET_CHARS:
            raise ConfigError(
                f"{what}: the value from {s.value} is shorter than {MIN_SECRET_CHARS} characters; "
                "it could not be told apart from ordinary text in responses"
            )
        values[s.name] = value
    return values
