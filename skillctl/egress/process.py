"""The egress proxy process as the run sees it: start, wait until ready, sync, stop.

The process is ``skillctl.egress.proxy_main`` under an interpreter with mitmproxy (``launch``).
Its configuration — real secret values included — goes in on stdin; its records come out on
stdout and are handed to ``on_record`` from a reader thread (which must keep reading: a full
pipe would stall the proxy); the last lines of its stderr are kept for error messages. Both are
scrubbed of the real secret values as they are read — a second line behind the proxy's own
scrubbing, so no future field or library message can carry a value into a record or an error.
Closing its stdin stops it, and so does the death of this process, whatever killed it.
"""

from __future__ import annotations

import collections
import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable, Mapping

from skillctl.egress.launch import egress_python, proxy_command, proxy_environment
from skillctl.egress.policy import NetworkPolicy
from skillctl.egress.rules import Replacements, Rewriter
from skillctl.errors import EgressError


def proxy_config(
    policy: NetworkPolicy,
    *,
    listen: tuple[str, int],
    confdir: Path,
    values: Mapping[str, str],
    placeholders: Mapping[str, str],
    resolve: Mapping[str, tuple[str, int]],
    extra_ca: list[str],
) -> dict[str, Any]:
    """What ``proxy_main`` reads on its first stdin line."""
    return {
        "listen_host": listen[0],
        "listen_port": listen[1],
        "confdir": str(confdir),
        "allowed_domains": list(policy.allowed_domains),
        "passthrough_domains": list(policy.passthrough_domains),
        "policy": f"skillctl's network policy ({policy.describe()})",
        "secrets": [
            {
                "name": name,
                "domains": [s.domain for s in policy.domain_secrets if s.name == name],
                "placeholder": placeholders[name],
                "value": value,
            }
            for name, value in values.items()
        ],
        "resolve": {host: list(target) for host, target in resolve.items()},
        "extra_ca": list(extra_ca),
    }


class ProxyProcess:
    def __init__(self, config: dict[str, Any], *, on_record: Callable[[dict[str, Any]], None], cwd: Path,
                 python: str | None = None) -> None:
        self.config = config
        self.on_record = on_record
        self.cwd = cwd
        self.python = python or egress_python()
        self.ready_info: dict[str, Any] = {}
        self.failure: str | None = None  # set when it exits on its own during the run
        self._proc: subprocess.Popen[bytes] | None = None
        self._threads: list[threading.Thread] = []
        self._stderr: collections.deque[str] = collections.deque(maxlen=20)
        self._ready = threading.Event()
        self._synced = threading.Condition()
        self._sync_seen = 0
        self._sync_next = 0
        self._stopping = False
        self._scrub = Replacements.scrubbing({s["value"].encode(): s["placeholder"].encode() for s in config.get("secrets", [])})

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def start(self) -> None:
        try:
            self._proc = subprocess.Popen(
                proxy_command(self.python),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=proxy_environment(),
                cwd=str(self.cwd),
                start_new_session=True,  # Ctrl-C in the terminal is the run's to handle, not the proxy's
            )
        except OSError as exc:
            raise EgressError(f"cannot start the egress proxy with {self.python}: {exc}") from None
        for target, name in ((self._read_records, "egress-records"), (self._read_stderr, "egress-stderr")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        try:
            self._write({**self.config})
        except OSError:
            self.wait_ready()  # it exited at once: raises with what it printed

    def _write(self, message: dict[str, Any]) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write(json.dumps(message).encode() + b"\n")
        self._proc.stdin.flush()

    def _tail(self) -> str:
        return " | ".join(list(self._stderr)[-3:])

    def wait_ready(self, timeout_s: float = 90.0) -> dict[str, Any]:
        """The ready record (``listen``, ``ca_cert``); ``EgressError`` if it never comes."""
        deadline = time.monotonic() + timeout_s
        while not self._ready.wait(0.1):
            if self._proc is None or self._proc.poll() is not None:
                for thread in self._threads:  # what it printed before it exited, read to the end
                    thread.join(timeout=5)
                raise EgressError(f"the egress proxy exited before it was ready: {self._tail() or 'no output'}")
            if time.monotonic() > deadline:
                raise EgressError(f"the egress proxy was not ready after {timeout_s:.0f} s; the machine may be overloaded")
        return self.ready_info

    def sync(self, timeout_s: float = 10.0) -> bool:
        """Wait until every request finished so far has been delivered; False on timeout."""
        if self._proc is None or self._proc.poll() is not None:
            return False
        with self._synced:
            self._sync_next += 1
            n = self._sync_next
        try:
            self._write({"sync": n})
        except OSError:
            return False
        with self._synced:
            return self._synced.wait_for(lambda: self._sync_seen >= n, timeout=timeout_s)

    def stop(self) -> None:
        """Close its stdin (its signal to shut down), wait, kill if it lingers; every record it
        wrote has been delivered when this returns. Idempotent."""
        self._stopping = True
        if self._proc is None:
            return
        try:
            if self._proc.stdin is not None:
                self._proc.stdin.close()
            self._proc.wait(timeout=15)
        except (OSError, subprocess.TimeoutExpired):
            self._proc.kill()
            self._proc.wait()
        for thread in self._threads:
            thread.join(timeout=10)

    def _read_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        for raw in self._proc.stderr:
            line = Rewriter(self._scrub).replace(raw).decode("utf-8", "replace").rstrip()
            if line:
                self._stderr.append(line)

    def _read_records(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for raw in self._proc.stdout:
            try:
                record = json.loads(Rewriter(self._scrub).replace(raw))
            except ValueError:
                continue
            kind = record.get("type")
            if kind == "ready":
                self.ready_info = record
                self._ready.set()
            elif kind == "synced":
                with self._synced:
                    self._sync_seen = max(self._sync_seen, int(record["n"]))
                    self._synced.notify_all()
            else:
                self.on_record(record)
        if not self._stopping and self._ready.is_set():
            self._proc.wait()
            self.failure = f"the egress proxy stopped during the run: {self._tail() or f'exit code {self._proc.returncode}'}"
            self.on_record({"type": "egress_proxy_exit", "error": self.failure})
