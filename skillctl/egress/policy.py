"""Network policies: what a run's container may reach, in the hosted shell tool's shape.

    {type: disabled}                                   the default: no network at all
    {type: allowlist,
     allowed_domains: [api.github.com, "*.example.com"],
     domain_secrets: [{domain: api.github.com, name: GITHUB_TOKEN, value: env:GITHUB_TOKEN}],
     passthrough_domains: ["*.example.com"]}         # optional: TLS spliced, not intercepted

A secret's ``value`` says where skillctl reads it on the host — ``env:VAR`` or ``file:PATH``
(relative to the file that names it) — and is never the secret itself, so a policy can be
committed. Policies come from a file (JSON or YAML, ``--network-policy``), from ``network:`` in
a project's ``skills.yaml``, and from the command line's shorthands (``--allow-domain``,
``--domain-secret NAME@DOMAIN``), which extend whichever of the first two applies.

A project file is not the user's own choice the way a file named on the command line is: it
comes with a cloned repository. So its ``domain_secrets`` are refused unless the caller opts
in (``project_policy(..., allow_secrets=True)``, ``skillctl run --project-secrets``), and its
``file:`` values must resolve inside the project's folder even then.

``passthrough_domains`` (skillctl's own field, not the hosted shape) names allowed domains whose
TLS the proxy splices through unopened instead of intercepting: faster, but those responses are
not scrubbed and their requests are logged by host, port and bytes only. Opt-in because the
scrubbing promise covers every domain (any upstream can echo a value another one was sent). A
host that a secret is bound to is intercepted even when a passthrough wildcard covers it; naming
a secret's domain itself as passthrough is an error.

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
from typing import Any, Callable, Iterable, Mapping

from skillctl.egress.rules import check_pattern, first_match, normalize_host, parse_ip, pattern_within
from skillctl.errors import ConfigError
from skillctl.schema import schema_problems, summarize
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
    passthrough_domains: tuple[str, ...] = ()
    origin: str = "default"  # where it was read, for messages (a file, "skills.yaml", "command line")

    @property
    def enabled(self) -> bool:
        return self.type == "allowlist"

    def allows(self, host: str) -> str | None:
        """The allowed_domains entry that lets ``host`` through, or None."""
        return first_match(self.allowed_domains, host) if self.enabled else None

    def passes_through(self, host: str) -> bool:
        """Whether ``host``'s TLS is spliced through unopened: a passthrough domain that no
        secret is bound to (a secret's host is always intercepted, to inject and scrub)."""
        return (
            self.allows(host) is not None
            and first_match(self.passthrough_domains, host) is not None
            and first_match([s.domain for s in self.domain_secrets], host) is None
        )

    def to_dict(self) -> dict[str, Any]:
        """The hosted API's shape; values stay references, so this is safe to print or store."""
        if not self.enabled:
            return {"type": "disabled"}
        data: dict[str, Any] = {
            "type": "allowlist",
            "allowed_domains": list(self.allowed_domains),
            "domain_secrets": [s.to_dict() for s in self.domain_secrets],
        }
        if self.passthrough_domains:  # skillctl's own field: absent unless used
            data["passthrough_domains"] = list(self.passthrough_domains)
        return data

    def report(self) -> dict[str, Any]:
        """``to_dict`` with where the policy was read: for a run's summary."""
        return {**self.to_dict(), "origin": self.origin}

    def describe(self) -> str:
        if not self.enabled:
            return f"network disabled ({self.origin})"
        text = f"allowlist of {len(self.allowed_domains)} domain(s) from {self.origin}"
        if self.passthrough_domains:
            text += f", {len(self.passthrough_domains)} passed through uninspected"
        return text


DISABLED = NetworkPolicy()


def _absolute_source(value: str, base_dir: Path) -> str:
    """``file:`` values as the absolute path they end at: ``~``, ``..`` and links resolved."""
    kind, _, ref = value.partition(":")
    if kind != "file":
        return value
    try:
        return f"file:{(base_dir / Path(ref).expanduser()).resolve()}"
    except (OSError, RuntimeError, ValueError):  # an unknown ~user, a link loop, a NUL byte
        return f"file:{os.path.normpath(base_dir / ref)}"  # reading it then fails in one line


def _outside(secret: DomainSecret, root: Path) -> bool:
    """A ``file:`` secret whose (resolved) path ends outside ``root``."""
    kind, _, path = secret.value.partition(":")
    return kind == "file" and not Path(path).is_relative_to(root)


def _files_outside(written: list[dict[str, str]], secrets: Iterable[DomainSecret], root: Path) -> list[str]:
    """``file:`` values that end outside ``root``, the folder of the project file naming them."""
    problems = []
    for i, (raw, s) in enumerate(zip(written, secrets)):
        path = s.value.partition(":")[2]
        if _outside(s, root):
            problems.append(
                f"domain_secrets[{i}].value: {raw['value']} resolves to {path}, outside the project folder {root}; a "
                "project file reads secret files from its own folder only (name others in a --network-policy file of your own)"
            )
    return problems


def _passthrough_problems(passthrough: list[str], allowed: list[str], secrets: list[DomainSecret]) -> list[str]:
    problems: list[str] = []
    secret_domains = [s.domain for s in secrets]
    for i, pattern in enumerate(passthrough):
        where = f"passthrough_domains[{i}]"
        why = check_pattern(pattern)
        if why:
            problems.append(f"{where}: {why}")
        elif parse_ip(pattern) is not None:
            problems.append(f"{where}: {pattern} is an IP address; passthrough checks the TLS server name against the "
                            "CONNECT host, and TLS names no IP address: name a host, or leave it intercepted")
        elif not pattern_within(pattern, allowed):
            problems.append(f"{where}: {pattern} is not in allowed_domains; allow it too (--allow-domain {pattern})")
        elif pattern_within(pattern, secret_domains):
            names = ", ".join(dict.fromkeys(s.name for s in secrets if pattern_within(pattern, [s.domain]))) or "a domain_secrets entry"
            problems.append(f"{where}: {pattern} is the domain of {names}; a secret's domain is "
                            "always intercepted (to inject and scrub it): remove it from passthrough_domains")
    return problems


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
    passthrough = [normalize_host(d) for d in data.get("passthrough_domains", [])]
    problems = _semantic_problems(allowed, secrets) + _passthrough_problems(passthrough, allowed, secrets)
    if problems:
        raise ConfigError(f"{origin}: invalid network policy: {summarize(problems)}")
    return NetworkPolicy(data["type"], tuple(dict.fromkeys(allowed)), tuple(secrets), tuple(dict.fromkeys(passthrough)), origin)


def load_policy(path: Path) -> NetworkPolicy:
    """A policy file, JSON or YAML (YAML reads both)."""
    data = read_yaml(path, error=ConfigError, missing=f"network policy {path} not found")
    return parse_policy(data, origin=str(path), base_dir=path.resolve().parent)


def project_policy(skills_yaml: Path, *, allow_secrets: bool = False) -> NetworkPolicy | None:
    """The ``network:`` section of a project's ``skills.yaml``; None when it has none.

    Its ``file:`` values must resolve inside the project's folder; its ``domain_secrets`` at all
    are a ``ConfigError`` unless ``allow_secrets`` (the user's opt-in), naming each secret, where
    its value would be read from, and how to opt in."""
    if not skills_yaml.is_file():
        return None
    doc = read_yaml(skills_yaml, error=ConfigError, missing=f"{skills_yaml} not found")
    if not isinstance(doc, dict) or "network" not in doc:
        return None
    folder = skills_yaml.resolve().parent
    policy = parse_policy(doc["network"], origin=f"{skills_yaml} (network:)", base_dir=folder)
    if policy.domain_secrets and not allow_secrets:
        raise ConfigError(project_secrets_refusal(policy, folder))
    outside = _files_outside(doc["network"].get("domain_secrets", []), policy.domain_secrets, folder)
    if outside:
        raise ConfigError(f"{policy.origin}: invalid network policy: {summarize(outside)}")
    return policy


def project_secrets_refusal(policy: NetworkPolicy, folder: Path) -> str:
    """One line: which host secrets a project file asks for, read from where (and which of
    those lie outside ``folder``, its own), sent where, and how to allow it."""
    domains: dict[str, list[str]] = {}
    sources: dict[str, str] = {}
    for s in policy.domain_secrets:
        domains.setdefault(s.name, []).append(s.domain)
        kind, _, ref = s.value.partition(":")
        sources[s.name] = f"${ref}" if kind == "env" else ref
        if _outside(s, folder):
            sources[s.name] += ", outside the project folder: refused even then"
    asked = "; ".join(f"{name} (read from {sources[name]}; sent to {', '.join(ds)})" for name, ds in domains.items())
    return (
        f"{policy.origin} asks for host secrets: {asked}; a project file's secrets are used only when you allow them: "
        "pass --project-secrets (or set SKILLCTL_PROJECT_SECRETS=1), or name your own policy with --network-policy FILE"
    )


def project_network_notice(policy: NetworkPolicy) -> str:
    """What a project file's ``network:`` turns on, for people to see before the run starts."""
    secrets = ", ".join(dict.fromkeys(s.name for s in policy.domain_secrets)) or "none"
    passthrough = f"; passed through uninspected: {', '.join(policy.passthrough_domains)}" if policy.passthrough_domains else ""
    return (f"notice: {policy.origin} turns the network on for {', '.join(policy.allowed_domains)} "
            f"(host secrets: {secrets}{passthrough}); --network-policy FILE replaces it")


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
    *,
    project_secrets: bool = False,
    notice: Callable[[str], None] | None = None,
) -> NetworkPolicy:
    """The run's policy: the file if given, else the project's ``network:`` (its secrets only
    with ``project_secrets``; ``notice`` is told when it turns the network on), else disabled;
    then the shorthands on top."""
    if policy_file:
        base: NetworkPolicy | None = load_policy(policy_file)
    else:
        base = project_policy(project_file, allow_secrets=project_secrets) if project_file else None
        if base is not None and base.enabled and notice is not None:
            notice(project_network_notice(base))
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
