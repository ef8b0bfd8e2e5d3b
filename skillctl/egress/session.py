"""One run's network egress, from set-up to tear-down.

    session = EgressSession(policy, resolve=["api.example.test=127.0.0.1:8443"], log_path=...)
    with session:                                            # network, firewall, proxy, CA
        sandbox = open_sandbox("docker", image=..., **session.sandbox_settings())
        with sandbox:
            session.attach(sandbox)                          # the CA into the container
            ...                                              # commands; session.sync() after each
    print(session.summary.line())

Making a session reads every secret's real value (a missing one fails before anything exists);
``start`` then creates, in this order, each written down in the run's leftovers record as it is
made: a temporary folder (the per-run CA and its key), an internal Docker network, the firewall
rules that confine it, and the proxy process listening on the network's gateway. The container gets
the network, a placeholder per secret (``skillctl-secret-NAME-<random>``) and the proxy/CA
variables; the real values go to the proxy process on its stdin and nowhere else. ``stop``
removes everything, in reverse; after a SIGKILL the proxy exits by itself (its stdin closes) and
the reaper removes the rest at the next start.
"""

from __future__ import annotations

import io
import json
import shutil
import tarfile
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import IO, Any, Callable, Iterable

from skillctl.egress.dropped import DropWatcher
from skillctl.egress.launch import egress_python
from skillctl.egress.network import RunNetwork
from skillctl.egress.process import ProxyProcess, proxy_config
from skillctl.egress.policy import NetworkPolicy, read_secret_values
from skillctl.egress.rules import make_placeholder, parse_resolve
from skillctl.egress.summary import EgressSummary
from skillctl.errors import ConfigError, SandboxError
from skillctl.fsutil import open_private
from skillctl.protocols import Sandbox
from skillctl.sandbox import cleanup
from skillctl.sandbox.client import docker_client
from skillctl.sandbox.firewall import confine_rules, delete_rules, insert_rules
from skillctl.sandbox.leftovers import FOLDER_PREFIX, Leftovers
from skillctl.sandbox.reaper import Owner, process_start_time, reap
from skillctl.sandbox.settings import DEFAULT_SETTINGS, LABEL_EXPIRES, LABEL_MANAGED, LABEL_OWNER, LABEL_RUN_ID

CA_DIR_IN_SANDBOX = "/tmp/skillctl-egress"  # root-owned in the sticky /tmp: the agent cannot swap it
CA_IN_SANDBOX = f"{CA_DIR_IN_SANDBOX}/ca.pem"
# Variables that make common tools use the proxy and trust its CA.
CA_VARIABLES = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "PIP_CERT", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO")
NO_PROXY = "localhost,127.0.0.1,::1"


def _check_ca_file(path: Path) -> str:
    try:
        text = path.read_text("ascii")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--egress-ca {path}: cannot read it ({type(exc).__name__})") from None
    if "-----BEGIN CERTIFICATE-----" not in text:
        raise ConfigError(f"--egress-ca {path}: no PEM certificate in it (expected -----BEGIN CERTIFICATE-----)")
    return str(path.resolve())


class EgressSession:
    """See the module docstring. Use as a context manager, or ``start``/``stop`` in ``try/finally``."""

    def __init__(
        self,
        policy: NetworkPolicy,
        *,
        resolve: Iterable[str] = (),
        extra_ca: Iterable[Path] = (),
        log_path: Path | None = None,
        on_record: Callable[[dict[str, Any]], None] | None = None,
        environ: dict[str, str] | None = None,
        client: Any | None = None,
        run_id: str | None = None,
        ttl_s: int = DEFAULT_SETTINGS.ttl_s,
        labels: dict[str, str] | None = None,
    ) -> None:
        if not policy.enabled:
            raise ConfigError("the network policy is disabled: a run without network needs no egress session")
        self.policy = policy
        self.values = read_secret_values(policy, environ)
        self.resolve: dict[str, tuple[str, int]] = {}
        for spec in resolve:
            try:
                host, addr, port = parse_resolve(spec)
            except ValueError as exc:
                raise ConfigError(f"--egress-resolve {exc}") from None
            self.resolve[host] = (addr, port)
        self.extra_ca = [_check_ca_file(Path(p)) for p in extra_ca]
        self.placeholders = {name: make_placeholder(name) for name in self.values}
        self.log_path = log_path
        self.on_record = on_record
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self.ttl_s = ttl_s
        self.extra_labels = dict(labels or {})
        self.summary = EgressSummary()
        self.problems: list[str] = []  # cleanup and callback failures, for the caller to report
        self._client = client
        self._network: RunNetwork | None = None
        self._leftovers: Leftovers | None = None
        self._rules: list[Any] = []
        self._proxy: ProxyProcess | None = None
        self._drops: DropWatcher | None = None
        self._deliver_lock = threading.Lock()
        self._workdir: Path | None = None
        self._log: IO[str] | None = None
        self._port = 0
        self._stopping = False
        self._started = False

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> "EgressSession":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def start(self) -> None:
        if self._started:
            return
        self._started = True
        python = egress_python()  # before anything exists: a missing mitmproxy creates nothing
        client = self._client or docker_client()
        self._client = client
        reap(client)
        labels = {
            **self.extra_labels,
            LABEL_MANAGED: "1",
            LABEL_RUN_ID: self.run_id,
            LABEL_OWNER: Owner.current().label(),
            LABEL_EXPIRES: str(int(time.time()) + self.ttl_s),
        }
        cleanup.register(self)
        try:
            if self.log_path is not None:
                try:
                    self._log = open_private(self.log_path)  # its records name hosts, paths and secrets
                except OSError as exc:
                    raise ConfigError(f"--egress-log {self.log_path}: cannot write it ({exc.strerror or exc})") from None
            workdir = Path(tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}egress-"))
            self._workdir = workdir
            self._leftovers = Leftovers(self.run_id, labels, folders=[str(workdir)])
            self._leftovers.save()
            self._network = RunNetwork(client, f"skillctl-net-{self.run_id}", labels)
            self._network.create()
            self._port = self._network.free_port()
            rules = confine_rules(self._network.bridge, self._network.gateway, self._port, self.run_id)
            self._leftovers.firewall = [r.to_list() for r in rules]
            self._leftovers.save()
            self._rules = insert_rules(rules)
            self._drops = DropWatcher(self.run_id, self._deliver)
            if not self._drops.start():
                self.problems.append("direct connection attempts are dropped but not logged: cannot read the kernel log (/dev/kmsg)")
            self._start_proxy(python, workdir)
        except BaseException:
            self.stop()
            raise

    def _start_proxy(self, python: str, workdir: Path) -> None:
        assert self._network is not None and self._leftovers is not None
        confdir = workdir / "mitmproxy"
        confdir.mkdir(mode=0o700)
        config = proxy_config(
            self.policy,
            listen=(self._network.gateway, self._port),
            confdir=confdir,
            values=self.values,
            placeholders=self.placeholders,
            resolve=self.resolve,
            extra_ca=self.extra_ca,
        )
        self._proxy = ProxyProcess(config, on_record=self._deliver, cwd=workdir, python=python)
        self._proxy.start()
        assert self._proxy.pid is not None
        self._leftovers.processes.append((self._proxy.pid, process_start_time(self._proxy.pid) or ""))
        self._leftovers.save()

    def stop(self) -> list[str]:
        """Stop the proxy and remove network, firewall rules and CA. Idempotent; returns the
        problems met (also kept in ``problems``), so a failing cleanup never hides the run's
        own outcome."""
        if self._stopping:
            return self.problems
        self._stopping = True
        cleanup.unregister(self)
        if self._proxy is not None:
            self._proxy.stop()
            self.summary.proxy_failure = self._proxy.failure
        if self._drops is not None:
            self._drops.stop()
        failures = delete_rules(self._rules)
        if self._network is not None:
            try:
                self._network.remove()
            except SandboxError as exc:
                failures.append(str(exc))
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
        if self._leftovers is not None and not failures:
            self._leftovers.discard()  # otherwise the reaper tries again later
        self.problems += failures
        if self._log is not None:
            self._log.close()
            self._log = None
        return self.problems

    # ------------------------------------------------------------------ for the sandbox

    @property
    def proxy_url(self) -> str:
        assert self._network is not None, "start the session first"
        return f"http://{self._network.gateway}:{self._port}"

    def container_env(self) -> dict[str, str]:
        """The run's container environment: proxy, CA and one placeholder per secret."""
        env = {name: self.proxy_url for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")}
        env.update(NO_PROXY=NO_PROXY, no_proxy=NO_PROXY)
        env.update({name: CA_IN_SANDBOX for name in CA_VARIABLES})
        env.update(self.placeholders)
        return env

    def sandbox_settings(self) -> dict[str, Any]:
        """Keyword arguments for ``open_sandbox("docker", ...)``: network, DNS, environment, run id.

        DNS points at the gateway, where the firewall drops it: Docker's embedded resolver would
        otherwise forward the container's queries to the host's resolvers — from the host itself
        when those are on loopback — and DNS alone can carry data out. Tools that honour the
        proxy variables never resolve names themselves; the proxy does, under the policy.
        """
        assert self._network is not None, "start the session first"
        return {"network": self._network.name, "dns": [self._network.gateway], "env": self.container_env(), "run_id": self.run_id}

    def attach(self, sandbox: Sandbox) -> None:
        """Wait for the proxy, then copy its CA certificate into the sandbox (root-owned, read-only)."""
        assert self._proxy is not None, "start the session first"
        cert = Path(self._proxy.wait_ready()["ca_cert"]).read_bytes()
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            folder = tarfile.TarInfo(CA_DIR_IN_SANDBOX.rsplit("/", 1)[1])
            folder.type, folder.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(folder)
            member = tarfile.TarInfo(f"{folder.name}/ca.pem")
            member.size, member.mode = len(cert), 0o444
            tar.addfile(member, io.BytesIO(cert))
        sandbox.put_archive(CA_DIR_IN_SANDBOX.rsplit("/", 1)[0], buf.getvalue())

    def sync(self, timeout_s: float = 10.0) -> bool:
        """Wait until every request finished so far has been logged; False on timeout."""
        return self._proxy.sync(timeout_s) if self._proxy is not None else False

    # ------------------------------------------------------------------ records

    def _deliver(self, record: dict[str, Any]) -> None:
        """One record from the proxy or the drop watcher (two threads): count, log, hand on."""
        line = json.dumps(record, ensure_ascii=False)
        with self._deliver_lock:
            self.summary.add(record)
            if self._log is not None:
                self._log.write(line + "\n")
                self._log.flush()
        if self.on_record is not None:
            try:
                self.on_record(record)
            except Exception as exc:  # the reader must go on, or the proxy blocks on a full pipe
                self.problems.append(f"egress record handler failed: {exc}")

