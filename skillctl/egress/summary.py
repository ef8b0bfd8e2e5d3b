"""Counting a run's egress records into the one-line summary ``skillctl run`` prints."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    raise AssertionError("unreachable")  # pragma: no cover


@dataclass
class EgressSummary:
    requests: int = 0
    allowed: int = 0
    denied: int = 0
    failed: int = 0  # allowed, but the upstream or the TLS handshake failed
    injected: int = 0  # requests that carried at least one real secret value
    passthrough: int = 0  # records of spliced connections (host, port and bytes only)
    secrets: set[str] = field(default_factory=set)
    warnings: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0
    proxy_failure: str | None = None

    def add(self, record: dict[str, Any]) -> None:
        if record.get("type") == "egress_tls_error":
            self.failed += 1
            return
        if record.get("type") != "egress":
            return
        self.requests += 1
        if record.get("mode") == "passthrough":
            self.passthrough += 1
        if record["decision"] == "denied":
            self.denied += 1
        elif record.get("error"):
            self.failed += 1
        else:
            self.allowed += 1
        if record.get("secrets"):
            self.injected += 1
            self.secrets.update(record["secrets"])
        self.warnings += len(record.get("warnings") or [])
        self.bytes_sent += int(record.get("request_bytes") or 0)
        self.bytes_received += int(record.get("response_bytes") or 0)

    def line(self) -> str:
        text = (
            f"egress: {self.requests} request(s): {self.allowed} allowed, {self.denied} denied, {self.failed} failed; "
            f"{_size(self.bytes_sent)} sent, {_size(self.bytes_received)} received"
        )
        if self.passthrough:
            text += f"; {self.passthrough} passthrough connection(s), not inspected (host, port and bytes only)"
        if self.secrets:
            text += f"; secrets injected into {self.injected} ({', '.join(sorted(self.secrets))})"
        if self.warnings:
            text += f"; {self.warnings} warning(s)"
        if self.proxy_failure:
            text += f"; the proxy failed: {self.proxy_failure}"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "allowed": self.allowed,
            "denied": self.denied,
            "failed": self.failed,
            "requests_with_secrets": self.injected,
            "passthrough_connections": self.passthrough,
            "secrets_injected": sorted(self.secrets),
            "warnings": self.warnings,
            "bytes_sent": self.bytes_sent,
            "bytes_received": self.bytes_received,
            "proxy_failure": self.proxy_failure,
            "summary": self.line(),
        }
