"""Host firewall rules that confine a run's Docker network (iptables, ``filter`` table).

Why they are needed: Docker's ``internal`` networks stop forwarding — a container on one cannot
reach other networks or the outside — but the host itself still answers on the network's
gateway address (and on its other addresses) for every service listening on ``0.0.0.0``. So a
run's container could talk to the host's SSH, databases or other engineers' servers. These rules
let the run's bridge reach exactly one host port (the egress proxy) and drop everything else it
sends to the host; a third rule keeps everything but the host itself (and the run's bridge) away
from that port, so no other container uses the run's proxy. Each rule carries a comment naming
the run, and is recorded in the run's leftovers so the reaper can delete it after a SIGKILL.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from typing import Iterable, Sequence

from skillctl.errors import EgressError

BINARIES = ("iptables", "ip6tables")
CHAINS = ("INPUT", "FORWARD")
COMMENT_PREFIX = "skillctl-egress"


def log_prefix(run_id: str) -> str:
    """What the kernel log lines of a run's dropped packets start with (at most 29 characters)."""
    return f"skillctl-{run_id[:16]} "


@dataclass(frozen=True)
class Rule:
    binary: str  # "iptables" or "ip6tables"
    chain: str  # "INPUT" or "FORWARD"
    spec: tuple[str, ...]  # everything after the chain name
    required: bool = True  # a failure to add it aborts the run

    def to_list(self) -> list[str]:
        return [self.binary, self.chain, *self.spec]

    @classmethod
    def from_list(cls, items: Sequence[str]) -> "Rule":
        if len(items) < 3 or items[0] not in BINARIES or items[1] not in CHAINS or not all(isinstance(i, str) for i in items):
            raise ValueError(f"not a firewall rule: {items!r}")
        return cls(items[0], items[1], tuple(items[2:]))


def confine_rules(bridge: str, gateway: str, port: int, run_id: str) -> list[Rule]:
    """The rules for one run, in the order they must end up at the top of their chains.

    Besides confining, two rules log (rate-limited, to the kernel log) what the container sends
    anywhere but the proxy — to the host (INPUT) or past it (FORWARD, where Docker's own rules
    for internal networks then drop it) — so the run can report each direct attempt.
    """
    tag = ("-m", "comment", "--comment", f"{COMMENT_PREFIX} {run_id}")
    proxy = ("-p", "tcp", "-d", gateway, "--dport", str(port))
    log = ("-m", "limit", "--limit", "20/second", "--limit-burst", "50", *tag, "-j", "LOG", "--log-prefix", log_prefix(run_id))
    return [
        Rule("iptables", "INPUT", ("-i", bridge, *proxy, *tag, "-j", "ACCEPT")),
        Rule("iptables", "INPUT", ("-i", bridge, *log), required=False),
        Rule("iptables", "INPUT", ("-i", bridge, *tag, "-j", "DROP")),
        Rule("iptables", "INPUT", ("!", "-i", "lo", *proxy, *tag, "-j", "DROP")),
        Rule("iptables", "FORWARD", ("-i", bridge, *log), required=False),
        # Docker disables IPv6 inside containers on a network without IPv6; this is a second
        # guard against the host's link-local addresses, added where ip6tables works.
        Rule("ip6tables", "INPUT", ("-i", bridge, *tag, "-j", "DROP"), required=False),
    ]


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def insert_rules(rules: Sequence[Rule]) -> list[Rule]:
    """Put ``rules`` at the top of their chains in the given order; return the ones added.

    On a failure of a required rule, the ones already added are removed again and
    ``EgressError`` says why.
    """
    added: list[Rule] = []
    for rule in reversed(rules):  # each goes to position 1, so insert the last one first
        binary = shutil.which(rule.binary)
        result = _run([binary, "-w", "30", "-I", rule.chain, "1", *rule.spec]) if binary else None
        if result is not None and result.returncode == 0:
            added.append(rule)
            continue
        if not rule.required:
            continue
        delete_rules(added)
        reason = (result.stderr.strip().splitlines() or ["failed"])[-1] if result else f"{rule.binary} is not installed"
        raise EgressError(
            f"cannot add the firewall rules that confine the run's network ({rule.binary}: {reason}); "
            "network egress needs root and iptables on the Docker host"
        )
    return list(reversed(added))


def delete_rules(rules: Iterable[Rule]) -> list[str]:
    """Delete each rule; a rule that is already gone is fine. Returns the errors, one per rule
    that could not be deleted (cleanup goes on regardless)."""
    errors = []
    for rule in rules:
        binary = shutil.which(rule.binary)
        if binary is None:
            continue
        result = _run([binary, "-w", "30", "-D", rule.chain, *rule.spec])
        if result.returncode != 0 and "does a matching rule exist" not in result.stderr and "No chain/target/match" not in result.stderr:
            errors.append(f"{rule.binary} -D {rule.chain} {' '.join(rule.spec)}: {result.stderr.strip()}")
    return errors
