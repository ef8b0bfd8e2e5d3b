"""Where a skill lives in an OCI registry: ``oci://`` URLs, repository names and tags.

    oci://HOST[:PORT]/NAMESPACE        the registry and the namespace that holds skills
    NAMESPACE/NAME                     one repository per skill (NAME: a skill name)
    VERSION with '+' mapped to '_'     one tag per version (tags cannot hold '+'; Helm does the same)

Repository names follow the distribution grammar (lowercase path components separated by
``.``, ``_``, ``__`` or dashes, at most 255 characters in all); a name that breaks it is refused
here, before any request, with the rule it broke. SemVer never contains ``_``, so the tag
mapping is reversible.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from skillctl.errors import RegistryError, VersionError
from skillctl.versioning import SemVer

SCHEME = "oci://"
# distribution/reference: path-component = alnum (separator alnum)*, separator = [._] | __ | -+
PATH_COMPONENT_RE = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$")
TAG_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
REPOSITORY_MAX = 255
_HOST_RE = re.compile(r"^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)(?::[0-9]{1,5})?$")


@dataclass(frozen=True)
class OciLocation:
    """A parsed ``oci://HOST[:PORT]/NAMESPACE``."""

    host: str  # "host" or "host:port", as Docker config keys and credential helpers name it
    namespace: str

    @property
    def url(self) -> str:
        return f"{SCHEME}{self.host}/{self.namespace}"

    def repository(self, name: str) -> str:
        """The repository of skill ``name``; refused when the result is not a valid name."""
        repo = f"{self.namespace}/{name}"
        check_repository(repo)
        return repo

    def skill_name(self, repository: str) -> str | None:
        """The skill name of a repository directly under the namespace, else None."""
        prefix = self.namespace + "/"
        if not repository.startswith(prefix):
            return None
        rest = repository[len(prefix):]
        return rest if rest and "/" not in rest else None


def check_repository(repo: str) -> None:
    if len(repo) > REPOSITORY_MAX:
        raise RegistryError(f"repository name '{repo[:60]}…' is {len(repo)} characters; OCI registries allow {REPOSITORY_MAX} — use a shorter namespace")
    for part in repo.split("/"):
        if not PATH_COMPONENT_RE.match(part):
            raise RegistryError(
                f"'{repo}' is not a valid OCI repository name: component '{part}' must be lowercase letters and digits, "
                "separated by single '.', '_', '__' or dashes"
            )


def parse_oci_url(url: str) -> OciLocation:
    """Parse ``oci://HOST[:PORT]/NAMESPACE``; every refusal says what to write instead."""
    if not isinstance(url, str) or not url.startswith(SCHEME):
        raise RegistryError(f"'{url}' is not an OCI registry URL; write oci://HOST[:PORT]/NAMESPACE")
    try:
        parts = urlsplit(url)
    except ValueError as exc:  # an unclosed "[" of an IPv6 address
        raise RegistryError(f"'{url}' is not a URL ({exc}); write oci://HOST[:PORT]/NAMESPACE") from None
    if parts.query or parts.fragment:
        raise RegistryError(f"'{url}': an OCI registry URL has no '?' or '#' part; write oci://HOST[:PORT]/NAMESPACE")
    if "@" in parts.netloc:
        raise RegistryError(
            f"'{url}': do not put credentials in the URL; use docker login, SKILLCTL_REGISTRY_USERNAME/PASSWORD or --username/--password-stdin"
        )
    host = parts.netloc
    if not host or not _HOST_RE.match(host):
        raise RegistryError(f"'{url}': '{host}' is not a registry host; write oci://HOST[:PORT]/NAMESPACE")
    port = host.rsplit(":", 1)[1] if ":" in host and not host.endswith("]") else None
    if port is not None and not 0 < int(port) < 65536:
        raise RegistryError(f"'{url}': port {port} is out of range")
    namespace = parts.path.strip("/")
    if not namespace:
        raise RegistryError(f"'{url}' names no namespace; skills live in NAMESPACE/NAME repositories, e.g. oci://{host}/skills")
    if parts.path.endswith("/") or "//" in parts.path:
        raise RegistryError(f"'{url}': write the namespace without empty path parts, e.g. oci://{host}/{namespace.strip('/')}")
    check_repository(namespace)
    return OciLocation(host, namespace)


def version_tag(version: str) -> str:
    """The tag of a version: ``+`` (not allowed in tags) becomes ``_`` (never in SemVer)."""
    tag = str(SemVer.parse(version)).replace("+", "_")
    if not TAG_RE.match(tag):  # only a version over 128 characters gets here
        raise VersionError(f"version '{version[:60]}' does not fit an OCI tag (at most 128 characters)")
    return tag


def tag_version(tag: str) -> SemVer | None:
    """The version a tag stands for, or None for tags that are not skill versions."""
    try:
        return SemVer.parse(tag.replace("_", "+"))
    except VersionError:
        return None
