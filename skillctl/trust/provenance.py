"""What an attestation records about a bundle: who built it, from which source, what the audit saw.

``source`` comes from git when the skill folder is inside a work tree: the ``origin`` URL
(credentials removed: a token in a remote URL must never end up in a signed, published
statement), the commit, the skill's path in the repository, and whether that path has
uncommitted changes (``dirty``: the bundle may then hold bytes no commit has). A bundle file or
an already-published version has no source: ``null``.

``audit`` is the shipped rules' verdict on the bundle with the publisher's ``.skillaudit``
ignored — the view a consumer's policy takes — and names the rules by the hash of the rule
file, so a reader knows exactly which rules said so.
"""

from __future__ import annotations

import hashlib
import subprocess
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from skillctl import __version__

BUILDER_ID = "skillctl"
GIT_TIMEOUT_S = 30


def _git(folder: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=GIT_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return None  # no git here: the skill simply has no recorded source
    return out.stdout.strip() if out.returncode == 0 else None


def public_url(url: str) -> str:
    """A remote URL without user name or password (``https://TOKEN@host/…`` is common)."""
    if "://" not in url:
        return url  # scp-like git@host:org/repo — the user part is a fixed login, not a secret
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def git_source(folder: Path) -> dict[str, Any] | None:
    """Repository, commit, path and dirtiness of ``folder``; None outside a git work tree."""
    folder = Path(folder).resolve()
    top = _git(folder, "rev-parse", "--show-toplevel")
    commit = _git(folder, "rev-parse", "--verify", "HEAD") if top else None
    if not top or not commit:
        return None  # not in git, or a repository without commits
    status = _git(folder, "status", "--porcelain", "--untracked-files=normal", "--", ".")
    remote = _git(folder, "remote", "get-url", "origin")
    try:
        path = folder.relative_to(Path(top).resolve()).as_posix()
    except ValueError:
        path = "."
    return {
        "repository": public_url(remote) if remote else None,
        "commit": commit,
        "path": path or ".",
        "dirty": bool(status),
    }


def rules_version() -> str:
    """The shipped audit rules, named by their format and the sha256 of the rule file."""
    text = resources.files("skillctl.audit").joinpath("rules.yaml").read_bytes()
    fmt = next((line.split(":", 1)[1].strip() for line in text.decode("utf-8").splitlines() if line.startswith("schema:")), "?")
    return f"{fmt} sha256:{hashlib.sha256(text).hexdigest()}"


def audit_summary(data: bytes) -> dict[str, Any]:
    from skillctl.audit import audit_bundle

    report = audit_bundle(data, use_allowlist=False)
    worst = report.worst_severity
    return {
        "rules": rules_version(),
        "allowlist": "ignored",
        "counts": report.counts(),
        "worst_severity": str(worst) if worst is not None else None,
    }


def predicate(*, data: bytes, tar_digest: str, files: int, source: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "builder": {"id": BUILDER_ID, "version": __version__},
        "bundle": {"tar_digest": tar_digest, "size": len(data), "files": files},
        "source": source,
        "audit": audit_summary(data),
    }
