"""Real git repositories and servers on loopback, for the git source's tests and bench.

- ``Repo``: a bare repository built with ``git fast-import`` (no work tree, no hooks, fast even for
  100,000 files), with commits of exact trees — regular and executable files, symbolic links,
  submodules (gitlinks), odd names — tags, branches, force-pushes and ``gc --prune=now``.
- ``GitDaemon``: ``git daemon`` serving a folder of bare repositories on 127.0.0.1.
- ``GitHttpServer``: smart HTTP, ``git http-backend`` run as a CGI behind a small loopback server
  (optionally TLS with a test CA, a required token, or a redirect to another origin), recording
  every request's headers, and, when asked, any process whose command line holds a given secret
  while the request is served (git and its remote helper are running then).

Every git command here runs with Debian's git and no system or global configuration, so the
machine's settings never shape a fixture.
"""

from __future__ import annotations

import base64
import hashlib
import os
import socket
import ssl
import struct
import subprocess
import threading
import time
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

GIT = "/usr/bin/git"
WHEN = 1_700_000_000


def clean_env(**extra: str) -> dict[str, str]:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": "/nonexistent",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "LC_ALL": "C",
    }
    env.update(extra)
    return env


def git(*args: str, cwd: Path | None = None, input: bytes | None = None, env: dict[str, str] | None = None) -> str:
    out = subprocess.run([GIT, *args], cwd=cwd, input=input, capture_output=True, env=env or clean_env(), check=False)
    if out.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {out.stderr.decode(errors='replace')}")
    return out.stdout.decode(errors="replace").strip()


@dataclass(frozen=True)
class Link:
    target: str


@dataclass(frozen=True)
class Gitlink:
    commit: str


@dataclass(frozen=True)
class Exe:
    data: bytes


@dataclass(frozen=True)
class Blob:
    oid: str  # an object already in the repository


def skill_md(name: str, description: str | None = None, version: str | None = None, body: str = "Do the thing.\n") -> bytes:
    meta = f"metadata:\n  version: \"{version}\"\n" if version else ""
    text = f"---\nname: {name}\ndescription: {description or f'The {name} skill; use it in tests.'}\n{meta}---\n\n# {name}\n\n{body}"
    return text.encode()


def _quote(path: str) -> str:
    raw = path.encode("utf-8", "surrogateescape")
    if all(0x20 < b < 0x7F and b not in b'"\\' for b in raw):
        return path
    out = []
    for b in raw:
        if b in b'"\\':
            out.append("\\" + chr(b))
        elif b < 0x20 or b >= 0x7F:
            out.append(f"\\{b:03o}")
        else:
            out.append(chr(b))
    return '"' + "".join(out) + '"'


class Repo:
    """A bare repository at ``path`` (served by its parent folder's servers)."""

    def __init__(self, path: Path, *, allow_filter: bool = True, create: bool = True) -> None:
        self.path = Path(path)
        if not create:
            return
        git("init", "-q", "--bare", "-b", "main", "--template=", str(self.path))
        if allow_filter:
            git("config", "uploadpack.allowFilter", "true", cwd=self.path)
        # What GitHub and GitLab allow: fetching any commit they still have by its id.
        git("config", "uploadpack.allowAnySHA1InWant", "true", cwd=self.path)

    def commit(self, files: dict[str, bytes | Exe | Link | Gitlink | Blob], *, message: str = "commit",
               parent: str | None = None, ref: str = "refs/heads/main", when: int = WHEN) -> str:
        """A commit whose tree is exactly ``files`` (on ``ref``, after ``parent``); its id."""
        chunks = [f"commit {ref}\nmark :1\ncommitter Test <test@example.com> {when} +0000\n".encode()]
        msg = message.encode()
        chunks.append(b"data %d\n%s\n" % (len(msg), msg))
        if parent:
            chunks.append(f"from {parent}\n".encode())
        chunks.append(b"deleteall\n")
        for path, item in sorted(files.items()):
            quoted = _quote(path).encode("utf-8", "surrogateescape")
            if isinstance(item, Gitlink):
                chunks.append(b"M 160000 %s %s\n" % (item.commit.encode(), quoted))
            elif isinstance(item, Blob):
                chunks.append(b"M 100644 %s %s\n" % (item.oid.encode(), quoted))
            else:
                mode, data = (b"120000", item.target.encode()) if isinstance(item, Link) else (
                    (b"100755", item.data) if isinstance(item, Exe) else (b"100644", item))
                chunks.append(b"M %s inline %s\ndata %d\n%s\n" % (mode, quoted, len(data), data))
        chunks.append(b"\n")
        self.fast_import(b"".join(chunks), force=parent is None)
        return self.rev(ref)

    def fast_import(self, stream: bytes, *, force: bool = True) -> None:
        args = ["fast-import", "--quiet"] + (["--force"] if force else [])
        git(*args, cwd=self.path, input=stream)

    def rev(self, name: str) -> str:
        return git("rev-parse", name, cwd=self.path)

    def tag(self, name: str, target: str, *, annotated: bool = False) -> None:
        if annotated:
            env = clean_env(GIT_COMMITTER_NAME="Test", GIT_COMMITTER_EMAIL="test@example.com",
                            GIT_COMMITTER_DATE=f"{WHEN} +0000")
            git("tag", "-f", "-a", "-m", f"release {name}", name, target, cwd=self.path, env=env)
        else:
            git("update-ref", f"refs/tags/{name}", target, cwd=self.path)

    def branch(self, name: str, target: str) -> None:
        git("update-ref", f"refs/heads/{name}", target, cwd=self.path)

    def delete_ref(self, ref: str) -> None:
        git("update-ref", "-d", ref, cwd=self.path)

    def prune(self) -> None:
        """Forget everything no ref reaches, as a server's gc eventually does after a force-push."""
        git("reflog", "expire", "--expire=now", "--all", cwd=self.path)
        git("gc", "-q", "--prune=now", cwd=self.path)

    def zero_blob(self, size: int, chunk: int = 8 << 20) -> str:
        """A blob of ``size`` zero bytes, written as a ready pack (about 1/230 of its size) in
        about a second: ``git hash-object`` of a sparse gigabyte takes ten. Zeros compress to
        the same deflate bytes chunk after chunk once the compressor is fully flushed, so one
        compressed chunk is repeated and only the Adler-32 (of zeros: 1 + n << 16) is computed;
        sending a packed object, the server reuses those bytes instead of deflating a gigabyte."""
        assert size % chunk == 0
        zeros = bytes(chunk)
        sha = hashlib.sha1(b"blob %d\0" % size)
        for _ in range(size // chunk):
            sha.update(zeros)
        oid = sha.hexdigest()
        comp = zlib.compressobj(1)
        first = comp.compress(zeros) + comp.flush(zlib.Z_FULL_FLUSH)
        piece = comp.compress(zeros) + comp.flush(zlib.Z_FULL_FLUSH)
        tail = comp.flush()[:-4] + struct.pack(">I", ((size % 65521) << 16) | 1)
        header, rest = bytearray(), size >> 4
        byte = (3 << 4) | (size & 0x0F)  # type 3: blob
        while rest:
            header.append(byte | 0x80)
            byte, rest = rest & 0x7F, rest >> 7
        header.append(byte)
        parts = [bytes(header), first] + [piece] * (size // chunk - 1) + [tail]
        start = b"PACK" + struct.pack(">II", 2, 1)
        crc, pack_sha = 0, hashlib.sha1(start)
        for part in parts:
            crc = zlib.crc32(part, crc)
            pack_sha.update(part)
        trailer = pack_sha.digest()
        folder = self.path / "objects" / "pack"
        with open(folder / f"pack-{trailer.hex()}.pack", "wb") as fh:
            fh.write(start)
            fh.writelines(parts)
            fh.write(trailer)
        raw = bytes.fromhex(oid)
        fanout = b"".join(struct.pack(">I", 1 if i >= raw[0] else 0) for i in range(256))
        idx = b"\377tOc" + struct.pack(">I", 2) + fanout + raw + struct.pack(">II", crc, len(start)) + trailer
        (folder / f"pack-{trailer.hex()}.idx").write_bytes(idx + hashlib.sha1(idx).digest())
        return oid

    def many_files(self, folder: str, count: int, *, ref: str = "refs/heads/main") -> str:
        """One commit with ``folder/SKILL.md`` and ``count`` small files under it (one blob for all)."""
        lines = [b"blob\nmark :1\ndata 3\nhi\n\n", f"commit {ref}\ncommitter Test <t@example.com> {WHEN} +0000\ndata 4\nmany\n".encode()]
        md = skill_md(folder.rsplit("/", 1)[-1])
        lines.append(b"M 100644 inline %s/SKILL.md\ndata %d\n%s\n" % (folder.encode(), len(md), md))
        for i in range(count):
            lines.append(b"M 100644 :1 %s/d%03d/f%06d.txt\n" % (folder.encode(), i // 1000, i))
        lines.append(b"\n")
        self.fast_import(b"".join(lines))
        return self.rev(ref)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, deadline_s: float = 20.0) -> None:
    end = time.monotonic() + deadline_s
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            if time.monotonic() > end:
                raise
            time.sleep(0.02)


class GitDaemon:
    """``git daemon`` serving every repository under ``root`` (read-only) on 127.0.0.1."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.proc: subprocess.Popen | None = None
        self.port = 0

    def url(self, name: str) -> str:
        return f"git://127.0.0.1:{self.port}/{name}"

    def start(self) -> "GitDaemon":
        for _ in range(5):
            self.port = free_port()
            self.proc = subprocess.Popen(
                [GIT, "daemon", "--reuseaddr", "--listen=127.0.0.1", f"--port={self.port}", f"--base-path={self.root}",
                 "--export-all", "--informative-errors", str(self.root)],
                env=clean_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
            )
            try:
                wait_for_port(self.port, 10)
                return self
            except OSError:
                self.stop()
        raise RuntimeError("git daemon did not start")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            self.proc = None


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]


def basic_token(token: str) -> str:
    return "Basic " + base64.b64encode(f"x-access-token:{token}".encode()).decode()


def processes_holding(secret: bytes) -> list[str]:
    """The command lines of running processes that hold ``secret``."""
    hits = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmdline = fh.read()
        except OSError:
            continue
        if secret in cmdline:
            hits.append(cmdline.replace(b"\0", b" ").decode(errors="replace"))
    return hits


@dataclass
class GitHttpServer:
    """Smart HTTP for every repository under ``root``. ``token``: requests without
    ``Authorization: Basic x-access-token:TOKEN`` get 401. ``redirect_to``: every request is
    answered with a 302 to that origin (same path). ``watch``: a secret whose presence in any
    process's command line is recorded in ``argv_hits`` while requests are served."""

    root: Path
    token: str | None = None
    tls: tuple[Path, Path] | None = None  # (certificate, key)
    redirect_to: str | None = None
    watch: str | None = None
    log: list[Request] = field(default_factory=list)
    argv_hits: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                server._serve(self)

            def do_POST(self) -> None:  # noqa: N802
                server._serve(self)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        if self.tls is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(str(self.tls[0]), str(self.tls[1]))
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def origin(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.httpd.server_address[1]}"

    def url(self, name: str) -> str:
        return f"{self.origin}/{name}"

    def start(self) -> "GitHttpServer":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def authorizations(self) -> list[str | None]:
        return [{k.lower(): v for k, v in r.headers.items()}.get("authorization") for r in self.log]

    def _serve(self, h: BaseHTTPRequestHandler) -> None:
        self.log.append(Request(h.command, h.path, dict(h.headers.items())))
        if self.watch:
            self.argv_hits += processes_holding(self.watch.encode())
        body = _read_body(h)
        if self.redirect_to is not None:
            return _reply(h, 302, b"", {"Location": self.redirect_to + h.path})
        if self.token is not None and h.headers.get("Authorization") != basic_token(self.token):
            return _reply(h, 401, b"who are you?\n", {"WWW-Authenticate": 'Basic realm="git"'})
        path, _, query = h.path.partition("?")
        env = clean_env(
            GIT_PROJECT_ROOT=str(self.root), GIT_HTTP_EXPORT_ALL="1", PATH_INFO=path, QUERY_STRING=query,
            REQUEST_METHOD=h.command, CONTENT_TYPE=h.headers.get("Content-Type", ""), CONTENT_LENGTH=str(len(body)),
            REMOTE_ADDR="127.0.0.1", GATEWAY_INTERFACE="CGI/1.1", SERVER_PROTOCOL="HTTP/1.1",
        )
        for header, var in (("Git-Protocol", "HTTP_GIT_PROTOCOL"), ("Content-Encoding", "HTTP_CONTENT_ENCODING")):
            if h.headers.get(header):
                env[var] = h.headers[header]
        out = subprocess.run([GIT, "http-backend"], input=body, capture_output=True, env=env, check=False).stdout
        head, _, payload = out.partition(b"\r\n\r\n")
        if not _:
            head, _, payload = out.partition(b"\n\n")
        status, headers = 200, {}
        for line in head.decode("latin-1").splitlines():
            key, _, value = line.partition(":")
            if key.lower() == "status":
                status = int(value.split()[0])
            elif key:
                headers[key] = value.strip()
        _reply(h, status, payload, headers)


def _read_body(h: BaseHTTPRequestHandler) -> bytes:
    if h.headers.get("Transfer-Encoding", "").lower() == "chunked":
        data = bytearray()
        while True:
            size = int(h.rfile.readline().split(b";")[0].strip(), 16)
            if size == 0:
                while h.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return bytes(data)
            data += h.rfile.read(size)
            h.rfile.readline()
    length = int(h.headers.get("Content-Length") or 0)
    return h.rfile.read(length) if length else b""


def _reply(h: BaseHTTPRequestHandler, status: int, body: bytes, headers: dict[str, str]) -> None:
    h.send_response(status)
    for key, value in headers.items():
        if key.lower() != "content-length":
            h.send_header(key, value)
    h.send_header("Content-Length", str(len(body)))
    h.end_headers()
    try:
        h.wfile.write(body)
    except OSError:
        pass
