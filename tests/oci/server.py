"""Debian's ``docker-registry`` (distribution 2.8) as a real server for the OCI tests.

Each server gets a free 127.0.0.1 port, a temporary storage folder and its own config file;
``stop()`` kills it. It never uses the Debian service's config or port 5000.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

BINARY = shutil.which("docker-registry") or "/usr/bin/docker-registry"
APT_PACKAGES = "docker-registry apache2-utils"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class DistributionServer:
    def __init__(self, root: Path, *, htpasswd: Path | None = None, port: int | None = None, auth_config: str = "") -> None:
        """``htpasswd``: basic auth with that file; ``auth_config``: any other ``auth:`` block."""
        self.root = root
        self.auth_config = auth_config
        self.storage = root / "storage"
        self.storage.mkdir(parents=True, exist_ok=True)
        self.htpasswd = htpasswd
        self.port = port or free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def url(self, namespace: str) -> str:
        return f"oci://{self.host}/{namespace}"

    def _config(self) -> Path:
        auth = (
            f"auth:\n  htpasswd:\n    realm: skillctl-test\n    path: {self.htpasswd}\n" if self.htpasswd else self.auth_config
        )
        cfg = self.root / "config.yml"
        cfg.write_text(
            "version: 0.1\n"
            "log:\n  level: error\n  accesslog:\n    disabled: true\n"
            f"storage:\n  filesystem:\n    rootdirectory: {self.storage}\n  delete:\n    enabled: true\n"
            f"http:\n  addr: 127.0.0.1:{self.port}\n  secret: skillctl-tests\n"
            + auth,
            "utf-8",
        )
        return cfg

    def start(self, timeout_s: float = 15.0) -> "DistributionServer":
        log = open(self.root / "registry.log", "ab")
        self.proc = subprocess.Popen([BINARY, "serve", str(self._config())], stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"docker-registry exited with {self.proc.returncode}: {(self.root / 'registry.log').read_text()[-500:]}")
            try:
                urllib.request.urlopen(f"http://{self.host}/v2/", timeout=1).close()
                return self
            except urllib.error.HTTPError as exc:
                if exc.code == 401:  # auth enabled: answering is enough
                    return self
            except OSError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"docker-registry did not answer on {self.host} within {timeout_s} s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None

    # -------------------------------------------------------------- behind-the-back access

    def blob_file(self, digest: str) -> Path:
        """Where distribution's filesystem driver keeps a blob's bytes."""
        hexd = digest.split(":", 1)[1]
        return self.storage / "docker" / "registry" / "v2" / "blobs" / "sha256" / hexd[:2] / hexd / "data"

    def raw(self, method: str, path: str, data: bytes | None = None, headers: dict | None = None, auth: str | None = None):
        """One plain HTTP request to the server, bypassing skillctl (for tampering)."""
        req = urllib.request.Request(f"http://{self.host}{path}", data=data, method=method, headers=headers or {})
        if auth:
            req.add_header("Authorization", auth)
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, dict(resp.headers), resp.read()
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers), exc.read()

    def push_blob(self, repo: str, data: bytes) -> str:
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        status, headers, _ = self.raw("POST", f"/v2/{repo}/blobs/uploads/")
        assert status == 202, status
        loc = headers["Location"]
        loc = loc.split(self.host, 1)[1] if self.host in loc else loc
        status, _, body = self.raw("PUT", f"{loc}&digest={digest}", data, {"Content-Type": "application/octet-stream"})
        assert status == 201, (status, body)
        return digest

    def put_manifest(self, repo: str, tag: str, manifest: dict | bytes, media_type: str = "application/vnd.oci.image.manifest.v1+json") -> str:
        body = manifest if isinstance(manifest, bytes) else json.dumps(manifest).encode()
        status, headers, resp = self.raw("PUT", f"/v2/{repo}/manifests/{tag}", body, {"Content-Type": media_type})
        assert status == 201, (status, resp[:300])
        return headers["Docker-Content-Digest"]

    def get_manifest(self, repo: str, tag: str) -> bytes:
        status, _, body = self.raw("GET", f"/v2/{repo}/manifests/{tag}", headers={"Accept": "application/vnd.oci.image.manifest.v1+json"})
        assert status == 200, status
        return body
