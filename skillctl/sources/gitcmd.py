"""Running Debian's git on hostile repositories: an explicit environment, no configuration of the
user's, bounded output, a deadline and a cap on what a fetch may write.

The binary is ``/usr/bin/git`` (Debian's, what the suite tests), not whatever ``git`` comes first
on PATH; ``SKILLCTL_GIT`` names another one for machines that keep it elsewhere.

Every git child gets an environment built from nothing (the caller's is not inherited):

- no system or global configuration (``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_SYSTEM`` and
  ``GIT_CONFIG_GLOBAL`` on ``/dev/null``) and ``HOME``/``XDG_CONFIG_HOME`` in an empty private
  folder, so no ``url.*.insteadOf``, credential helper, hook path, template, filter or
  ``uploadpack.packObjectsHook`` of the user's (or of an attacker who wrote them) applies; none of
  the caller's ``GIT_*`` variables (``GIT_DIR``, ``GIT_CONFIG_COUNT``, ``GIT_SSH_COMMAND``…) pass;
- ``GIT_TERMINAL_PROMPT=0`` and no askpass: git never asks anyone for anything;
- settings through ``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n`` (so no secret
  is ever in a command line, which any local user can read in ``/proc``): ``protocol.allow=never``
  with only https, ssh and file allowed (git and http with ``insecure``), ``core.hooksPath`` on
  ``/dev/null``, no fsmonitor, no submodule recursion, no credential helper, objects checked on
  fetch (``transfer.fsckObjects``), one pack file per fetch (``transfer.unpackLimit=1``, so the
  size cap below is the cap on the fetch), no background gc or commit-graph writes; ssh runs in
  batch mode (no password or host-key prompts); redirects are not followed while a token is sent;
- passed through from the caller: ``PATH`` and the proxy and CA settings a network may need
  (``https_proxy``, ``no_proxy``, ``GIT_SSL_CAINFO``, ``SSL_CERT_FILE``…, ``SSH_AUTH_SOCK``).

A token is sent as an ``Authorization`` header configured for the repository's origin only
(``http.<origin>/.extraHeader``), never to a mirror or another origin, and is scrubbed from every
message. Each run has a deadline (the whole process group is killed when it passes) and bounded
stdout/stderr; each fetch runs under ``RLIMIT_FSIZE`` (``prlimit``), so a server that ignores the
partial-fetch filter and sends a gigabyte cannot fill the disk.

Repositories live in ``GitStore``: one bare repository per URL, made by hand (no ``git init``, so
no template is ever copied), its ``config`` rewritten by skillctl before every command, under a
file lock, so concurrent processes sharing a cache folder take turns.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import os
import re
import selectors
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from skillctl.errors import SourceError
from skillctl.sources.gitspec import INSECURE_SCHEMES, SECURE_SCHEMES, url_origin

GIT_BINARY_ENV = "SKILLCTL_GIT"
DEFAULT_GIT = "/usr/bin/git"
PRLIMIT = "/usr/bin/prlimit"
DEFAULT_TIMEOUT_S = 300.0
MiB = 1024 * 1024
# What one fetch may write: a skill is at most 50 MiB compressed (BundleLimits), a shallow tree
# of a large repository some more; a gigabyte from a server that ignores filters is not.
DEFAULT_MAX_FETCH_BYTES = 512 * MiB
_STDERR_CAP = 64 * 1024
_PASSTHROUGH = (
    "PATH", "http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY",
    "GIT_SSL_CAINFO", "GIT_SSL_CAPATH", "SSL_CERT_FILE", "SSL_CERT_DIR", "SSH_AUTH_SOCK",
)
_REPO_CONFIG = b"[core]\n\trepositoryformatversion = 0\n\tbare = true\n"

# What git's messages mean for the person reading ours (checked in order, on lower-cased stderr).
MISSING, AUTH, NOT_FOUND, REDIRECT, TOO_BIG, TIMEOUT, REFUSED, OTHER = (
    "missing", "auth", "not-found", "redirect", "too-big", "timeout", "refused", "other",
)
_KINDS = (
    (MISSING, ("not our ref", "no such remote ref", "couldn't find remote ref", "unadvertised object")),
    (AUTH, ("authentication failed", "could not read username", "could not read password", "terminal prompts disabled",
            "returned error: 401", "returned error: 403", "permission denied (publickey", "access denied")),
    (REDIRECT, ("returned error: 301", "returned error: 302", "returned error: 307", "returned error: 308", "redirect")),
    (NOT_FOUND, ("not found", "does not appear to be a git repository", "returned error: 404", "no such file or directory",
                 "repository not exported", "not a git repository")),
    (REFUSED, ("fsck error", "transport '", "not allowed", "object fails fsck", "bad tree object")),
    (TOO_BIG, ("file too large", "index-pack failed", "unpack-objects failed", "invalid index-pack output")),
)


class GitFailed(SourceError):
    """A git command failed; ``kind`` says how (one of the constants above)."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


def git_binary(environ: Mapping[str, str]) -> str:
    return environ.get(GIT_BINARY_ENV) or DEFAULT_GIT


def auth_header(token: str) -> str:
    """The header a token travels in: HTTP Basic with the user ``x-access-token``, which GitHub,
    GitLab (any user name with a personal or project token), Gitea and Forgejo all accept."""
    raw = base64.b64encode(f"x-access-token:{token}".encode()).decode("ascii")
    return f"Authorization: Basic {raw}"


def config_entries(*, insecure: bool, token: str | None, token_origin: str, token_sent: bool) -> list[tuple[str, str]]:
    """The settings every git child runs with (as ``GIT_CONFIG_KEY_n``/``VALUE_n``)."""
    entries = [("protocol.allow", "never")]
    for scheme in SECURE_SCHEMES + (INSECURE_SCHEMES if insecure else ()):
        entries.append((f"protocol.{scheme}.allow", "always"))
    entries += [
        ("core.hooksPath", "/dev/null"),
        ("core.fsmonitor", "false"),
        ("core.sshCommand", "ssh -o BatchMode=yes"),
        ("credential.helper", ""),
        ("submodule.recurse", "false"),
        ("fetch.recurseSubmodules", "false"),
        ("transfer.fsckObjects", "true"),
        ("transfer.unpackLimit", "1"),
        ("fetch.writeCommitGraph", "false"),
        ("gc.auto", "0"),
        ("maintenance.auto", "false"),
        ("advice.detachedHead", "false"),
        # Read by the upload-pack a file:// fetch starts on this machine: lets it filter and
        # serve commits by id as remote servers do; remote servers never see these.
        ("uploadpack.allowFilter", "true"),
        ("uploadpack.allowAnySHA1InWant", "true"),
        # A redirect elsewhere would carry the header; without a token "initial" is harmless
        # (a redirected request is still held to protocol.allow).
        ("http.followRedirects", "false" if token_sent else "initial"),
    ]
    if token is not None and token_sent:
        entries.append((f"http.{token_origin}/.extraHeader", auth_header(token)))
    return entries


def git_environment(home: Path, environ: Mapping[str, str], entries: list[tuple[str, str]]) -> dict[str, str]:
    env = {key: environ[key] for key in _PASSTHROUGH if environ.get(key)}
    env.setdefault("PATH", "/usr/bin:/bin")
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_SYSTEM=os.devnull,
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_TERMINAL_PROMPT="0",
        GIT_PROTOCOL_FROM_USER="0",
        GIT_NO_REPLACE_OBJECTS="1",
        GIT_NO_LAZY_FETCH="1",  # honoured by git >= 2.45; older ones see a config without promisor
        GIT_ATTR_NOSYSTEM="1",
        LC_ALL="C",
        LANG="C",
        GIT_CONFIG_COUNT=str(len(entries)),
    )
    for i, (key, value) in enumerate(entries):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    return env


@dataclass
class Output:
    stdout: bytes
    stderr: bytes
    returncode: int


class GitRunner:
    """Runs git with the hardened environment; every failure is a one-line GitFailed."""

    def __init__(
        self,
        *,
        home: Path,
        environ: Mapping[str, str],
        insecure: bool,
        token: str | None,
        origin: str,
        fetch_url: str,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_fetch_bytes: int = DEFAULT_MAX_FETCH_BYTES,
    ) -> None:
        self.git = git_binary(environ)
        self.origin = origin
        self.timeout_s = timeout_s
        self.max_fetch_bytes = max_fetch_bytes
        # The token goes only where the repository itself is: never to a mirror's origin.
        self.token_sent = token is not None and url_origin(fetch_url) == origin and origin.startswith(("https://", "http://"))
        self.secrets = tuple(s for s in (token, auth_header(token).partition(" ")[2] if token else None) if s)
        entries = config_entries(insecure=insecure, token=token, token_origin=origin, token_sent=self.token_sent)
        self.env = git_environment(home, environ, entries)

    def scrub(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return text

    def run(
        self,
        args: list[str],
        *,
        git_dir: Path,
        what: str,
        stdin: bytes = b"",
        max_stdout: int = 16 * MiB,
        fetch: bool = False,
        check: bool = True,
    ) -> Output:
        argv = [self.git, *args]
        if fetch and os.path.exists(PRLIMIT):
            argv = [PRLIMIT, f"--fsize={self.max_fetch_bytes}", "--", *argv]
        if any(secret in arg for secret in self.secrets for arg in argv):  # any local user can read argv
            raise GitFailed(f"{what}: refusing to put a token in a command line", OTHER)
        env = dict(self.env, GIT_DIR=str(git_dir))
        try:
            proc = subprocess.Popen(
                argv, cwd=git_dir, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                start_new_session=True,  # the deadline kills git and everything it started
                preexec_fn=None if not fetch or os.path.exists(PRLIMIT) else self._limit_fsize,
            )
        except OSError as exc:
            raise GitFailed(
                f"cannot run git ({self.git}: {exc.strerror}); install Debian's git or set {GIT_BINARY_ENV}", OTHER
            ) from None
        out = _communicate(proc, stdin, max_stdout, time.monotonic() + self.timeout_s)
        if out is None:
            raise GitFailed(f"{what}: git did not finish within {self.timeout_s:g} s; try again, or check the network", TIMEOUT)
        if isinstance(out, str):
            raise GitFailed(f"{what}: {out}", TOO_BIG)
        if check and out.returncode != 0:
            raise self.failure(what, out)
        return out

    def _limit_fsize(self) -> None:  # only where prlimit is missing
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (self.max_fetch_bytes, self.max_fetch_bytes))

    def failure(self, what: str, out: Output) -> GitFailed:
        text = self.scrub(out.stderr.decode("utf-8", "replace"))
        lowered = text.lower()
        kind = OTHER
        if out.returncode == -signal.SIGXFSZ:
            kind = TOO_BIG
        else:
            for name, needles in _KINDS:
                if any(n in lowered for n in needles):
                    kind = name
                    break
        return GitFailed(f"{what}: {_advice(kind, self, text)}", kind)


def _advice(kind: str, runner: GitRunner, stderr: str) -> str:
    said = last_line(stderr)
    if kind == MISSING:
        return f"the server does not have it ({said})"
    if kind == AUTH:
        if runner.token_sent:
            return f"the server refused the token ({said}); check that it may read the repository"
        return f"the server asks for credentials ({said}); give a token with SKILLCTL_GIT_TOKEN or --token-stdin"
    if kind == REDIRECT:
        return f"the server redirects elsewhere ({said}); skillctl does not follow redirects with a token: use the repository's current address"
    if kind == NOT_FOUND:
        return f"no repository there ({said}); check the address"
    if kind == TOO_BIG:
        return (
            f"the fetch wrote more than {runner.max_fetch_bytes} bytes or git stopped unpacking it ({said}); "
            "the repository is too large or its server ignores partial fetches"
        )
    if kind == REFUSED:
        return f"git refused what the server sent ({_first_error(stderr) or said}); do not use this repository"
    return f"git failed ({said})"


def _first_error(stderr: str) -> str:
    """git's first ``error:`` line (for fsck: which object broke which rule), printable."""
    line = next((ln for ln in stderr.splitlines() if ln.lower().startswith("error:")), "")
    return last_line(line) if line else ""


def last_line(stderr: str) -> str:
    """The line of git's stderr that says what happened (its last fatal/error line), printable."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    chosen = next((ln for ln in reversed(lines) if ln.lower().startswith(("fatal:", "error:"))), lines[-1] if lines else "no message")
    chosen = re.sub(r"^(fatal|error):\s*", "", chosen, flags=re.I)
    chosen = "".join(c if c.isprintable() else "?" for c in chosen)
    return chosen[:300]


def _communicate(proc: subprocess.Popen, stdin: bytes, max_stdout: int, deadline: float) -> Output | str | None:
    """Feed ``stdin`` and collect stdout/stderr without deadlocking on full pipes. None when the
    deadline passed, a message when stdout went over ``max_stdout`` (the process group is killed)."""
    sel = selectors.DefaultSelector()
    assert proc.stdin and proc.stdout and proc.stderr
    pending = memoryview(stdin)
    if pending:
        os.set_blocking(proc.stdin.fileno(), False)
        sel.register(proc.stdin, selectors.EVENT_WRITE)
    else:
        proc.stdin.close()
    sel.register(proc.stdout, selectors.EVENT_READ)
    sel.register(proc.stderr, selectors.EVENT_READ)
    chunks: list[bytes] = []
    size = 0
    err = bytearray()
    problem: str | None = None
    try:
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                _kill(proc)
                return None
            for key, _ in sel.select(timeout=min(left, 1.0)):
                if key.fileobj is proc.stdin:
                    try:
                        written = os.write(proc.stdin.fileno(), pending[:65536])
                    except BrokenPipeError:
                        written = len(pending)
                    pending = pending[written:]
                    if not pending:
                        sel.unregister(proc.stdin)
                        proc.stdin.close()
                    continue
                data = os.read(key.fileobj.fileno(), 65536)  # type: ignore[union-attr]
                if not data:
                    sel.unregister(key.fileobj)
                    continue
                if key.fileobj is proc.stdout:
                    size += len(data)
                    if size > max_stdout:
                        problem = f"git's output went over {max_stdout} bytes; the repository is too large for this"
                        _kill(proc)
                        return problem
                    chunks.append(data)
                elif len(err) < _STDERR_CAP:
                    err += data[: _STDERR_CAP - len(err)]
        left = max(deadline - time.monotonic(), 0.1)
        try:
            proc.wait(timeout=left)
        except subprocess.TimeoutExpired:
            _kill(proc)
            return None
    finally:
        sel.close()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            with contextlib.suppress(OSError):
                stream.close()
    return Output(b"".join(chunks), bytes(err), proc.returncode)


def _kill(proc: subprocess.Popen) -> None:
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)


# ----------------------------------------------------------------------------- the store


class GitStore:
    """Bare repositories, one per fetched URL, under ``root`` (0700). ``locked(url)`` yields the
    repository's folder with its config rewritten, holding an exclusive lock on it."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(self.root, 0o700)
        self.home = self.root / "home"  # HOME for git: empty, private, never the user's
        self.home.mkdir(exist_ok=True, mode=0o700)

    def path(self, url: str) -> Path:
        return self.root / f"{hashlib.sha256(url.encode()).hexdigest()[:32]}.git"

    @contextlib.contextmanager
    def locked(self, url: str) -> Iterator[Path]:
        repo = self.path(url)
        with open(repo.with_suffix(".lock"), "a+b") as lock:
            os.fchmod(lock.fileno(), 0o600)
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            try:
                _make_bare(repo)
                yield repo
            finally:
                fcntl.flock(lock.fileno(), fcntl.LOCK_UN)

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _make_bare(repo: Path) -> None:
    """The smallest bare repository git accepts, written by hand: no template, no hook, no
    config but ours."""
    if not (repo / "objects").is_dir():
        for sub in ("objects/info", "objects/pack", "refs/heads", "refs/tags"):
            (repo / sub).mkdir(parents=True, exist_ok=True, mode=0o700)
        (repo / "HEAD").write_bytes(b"ref: refs/heads/main\n")
    reset_config(repo)


def reset_config(repo: Path) -> None:
    """Put back skillctl's own config: a fetch with a filter records its URL as a promisor
    remote, which would let a later read fetch missing objects behind our back."""
    (repo / "config").write_bytes(_REPO_CONFIG)
