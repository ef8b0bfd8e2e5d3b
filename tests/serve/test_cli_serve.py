"""``skillctl serve`` as people run it: a subprocess on a free port, its stderr (the URL, the
access log), SIGTERM with a request in flight, TLS, and start-up refusals in one line."""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
from pathlib import Path
from typing import Iterator
from urllib.parse import quote

import openai
import pytest

from skillctl.registry.local import LocalRegistry
from tools import require_tool
from wellknown.server import make_test_ca

from .helpers import Keys, multipart, openai_client, read_until, skill_dir, skill_files

_OWN = Path(sys.executable).parent / "skillctl"  # this interpreter's (the venv's), else the one on PATH
SKILLCTL = str(_OWN) if _OWN.exists() else shutil.which("skillctl") or "skillctl"
DEADLINE_S = 120


class Served:
    """A ``skillctl serve`` subprocess; stderr lines arrive on a queue as they are written."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([SKILLCTL, "serve", "--port", "0", *args], stderr=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env=env)
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()
        first = self.wait_for("skillctl serve: ")
        self.url = first.split("skillctl serve: ", 1)[1].split(" ", 1)[0]
        self.port = int(self.url.rsplit(":", 1)[1])

    def _pump(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.put(line.rstrip("\n"))
        self.lines.put("")  # end of stream

    def wait_for(self, text: str) -> str:
        """The first stderr line containing ``text`` (failing with everything seen so far)."""
        while True:
            try:
                line = self.lines.get(timeout=DEADLINE_S)
            except queue.Empty:
                pytest.fail(f"no stderr line with {text!r} within {DEADLINE_S}s; seen: {self.seen}")
            if line == "" and self.proc.poll() is not None:
                pytest.fail(f"skillctl serve exited {self.proc.returncode} before printing {text!r}; seen: {self.seen}")
            self.seen.append(line)
            if text in line:
                return line

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=DEADLINE_S)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith(("SKILLCTL_", "OPENAI_", "ANTHROPIC_"))}
    out.update(HOME=str(tmp_path / "home"), SKILLCTL_REGISTRY=str(tmp_path / "registry"))
    LocalRegistry(tmp_path / "registry").close()  # serve serves an existing registry (skillctl registry init makes one)
    return out


@pytest.fixture
def serve(env: dict[str, str]) -> Iterator:
    started: list[Served] = []

    def start(*args: str) -> Served:
        served = Served(list(args), env)
        started.append(served)
        return served

    yield start
    for served in started:
        if served.proc.poll() is None:
            served.proc.kill()
            served.proc.wait()


def test_serves_on_a_free_port_logs_each_request_and_stops_on_sigterm(serve, keys: Keys, tmp_path: Path) -> None:
    served = serve("--keys", str(keys.path))
    assert served.url.startswith("http://127.0.0.1:") and served.port > 0
    assert openai_client(served, keys.reader).skills.list().data == []
    line = served.wait_for('"GET /openai/v1/skills HTTP/1.1" 200')
    assert "key=reader" in line and keys.reader not in line
    assert served.stop() == 0
    served.wait_for("skillctl serve: stopped")


def test_sigterm_lets_a_request_in_flight_finish(serve, keys: Keys, tmp_path: Path) -> None:
    served = serve("--keys", str(keys.path))
    body, boundary = multipart(skill_files(skill_dir(tmp_path / "src")))
    with socket.create_connection(("127.0.0.1", served.port), timeout=DEADLINE_S) as sock:
        sock.sendall(
            b"POST /openai/v1/skills HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + keys.writer.encode()
            + b"\r\nContent-Type: multipart/form-data; boundary=" + boundary + b"\r\nContent-Length: "
            + str(len(body)).encode() + b"\r\nExpect: 100-continue\r\n\r\n"
        )
        # "100 Continue" is sent when the application starts reading the body: the request is in
        # flight in the server when the signal arrives.
        assert read_until(sock, b"\r\n\r\n").startswith(b"HTTP/1.1 100 Continue")
        served.proc.send_signal(signal.SIGTERM)
        served.wait_for("Shutting down")
        sock.sendall(body)
        answer = read_until(sock, b"}")
    assert answer.startswith(b"HTTP/1.1 200 ") and b'"object":"skill"' in answer
    assert served.proc.wait(timeout=DEADLINE_S) == 0
    with LocalRegistry(tmp_path / "registry", create=False) as reg:
        assert [s.name for s in reg.list_skills()] == ["demo"]


def test_serves_https_with_the_given_certificate(serve, keys: Keys, tmp_path: Path) -> None:
    require_tool("openssl")
    ca, cert, key = make_test_ca(tmp_path / "tls")
    served = serve("--keys", str(keys.path), "--ssl-certfile", str(cert), "--ssl-keyfile", str(key))
    assert served.url.startswith("https://127.0.0.1:")
    trusting = ssl.create_default_context(cafile=str(ca))
    client = openai_client(served, keys.writer, http_client=openai.DefaultHttpxClient(verify=trusting))
    assert client.skills.create(files=skill_files(skill_dir(tmp_path / "src"))).name == "demo"
    with pytest.raises(openai.APIConnectionError):  # a client that does not trust the CA
        openai_client(served, keys.reader).skills.list()
    assert served.stop() == 0


def _one_line_error(args: list[str], env: dict[str, str]) -> str:
    done = subprocess.run([SKILLCTL, "serve", "--port", "0", *args], capture_output=True, text=True, env=env, timeout=DEADLINE_S)
    assert done.returncode == 1, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "Traceback" not in done.stderr, done.stderr
    return lines[0]


def test_startup_refusals_are_one_line(env: dict[str, str], keys: Keys, tmp_path: Path) -> None:
    assert "nobody could use this server" in _one_line_error([], env)
    assert "does not exist" in _one_line_error(["--keys", str(tmp_path / "none.json")], env)
    garbage = tmp_path / "bad.pem"
    garbage.write_text("not a certificate")
    assert "TLS certificate" in _one_line_error(["--keys", str(keys.path), "--ssl-certfile", str(garbage)], env)
    assert "not a skillctl registry" in _one_line_error(["--keys", str(keys.path), "--registry", str(tmp_path)], env)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        done = subprocess.run([SKILLCTL, "serve", "--keys", str(keys.path), "--port", port], capture_output=True, text=True,
                              env=env, timeout=DEADLINE_S)
    assert done.returncode == 1 and "cannot listen on 127.0.0.1:" in done.stderr


def test_key_add_output_feeds_a_server(serve, env: dict[str, str], tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    added = subprocess.run([SKILLCTL, "serve", "key", "add", "ci", "--scopes", "read", "--keys", str(path), "--format", "json"],
                           capture_output=True, text=True, env=env, timeout=DEADLINE_S, check=True)
    key = json.loads(added.stdout)["key"]
    served = serve("--keys", str(path))
    assert openai_client(served, key).skills.list().data == []
    assert served.stop() == 0


def test_a_request_path_cannot_forge_a_log_line(serve, keys: Keys) -> None:
    forged = '2026-01-01T00:00:00 INFO 127.0.0.1:1 key=admin "DELETE /openai/v1/skills/demo HTTP/1.1" 200 0 1.0ms'
    served = serve("--keys", str(keys.path))
    target = "/openai/v1/x%0A" + quote(forged) + "%0D%1B%7F%C2%85%E2%80%A8%E2%80%AE%5C"
    with socket.create_connection(("127.0.0.1", served.port), timeout=DEADLINE_S) as sock:
        sock.sendall(f"GET {target} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        assert read_until(sock, b"\r\n").startswith(b"HTTP/1.1 404 ")
    line = served.wait_for('key=- "GET /openai/v1/x')
    assert '\\x0d\\x1b\\x7f\\x85\\u2028\\u202e\\x5c HTTP/1.1" 404 ' in line
    assert "/openai/v1/x\\x0a2026-01-01T00:00:00 INFO 127.0.0.1:1 key=admin \\x22DELETE" in line
    assert served.stop() == 0
    served.wait_for("skillctl serve: stopped")  # every line the server wrote has been seen
    assert not [seen for seen in served.seen if seen.startswith("2026-01-01T00:00:00")]
