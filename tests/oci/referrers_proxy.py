"""An OCI 1.1 registry made of Debian's distribution 2.8 plus the one API it lacks.

Everything goes to the real server behind; this proxy adds what distribution-spec 1.1 asks of a
registry with the referrers API: it answers ``OCI-Subject`` when a manifest with a ``subject``
is pushed, and serves ``GET /v2/NAME/referrers/DIGEST`` (with the ``artifactType`` filter) from
the manifests it saw pushed — so the client's referrers-API path runs against a real store.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from .proxy import forward

_MANIFEST_PUT = re.compile(r"^/v2/(?P<repo>.+)/manifests/(?P<ref>[^/]+)$")
_REFERRERS = re.compile(r"^/v2/(?P<repo>.+)/referrers/(?P<digest>sha256:[0-9a-f]{64})$")


class ReferrersProxy:
    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.referrers: dict[tuple[str, str], list[dict]] = {}
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def _reply(self, status: int, body: bytes, headers: dict) -> None:
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                url = urlsplit(self.path)
                listing = _REFERRERS.match(url.path)
                if listing and self.command == "GET":
                    wanted = parse_qs(url.query).get("artifactType", [None])[0]
                    with proxy.lock:
                        found = list(proxy.referrers.get((listing["repo"], listing["digest"]), []))
                    if wanted:
                        found = [d for d in found if d.get("artifactType") == wanted]
                    index = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": found})
                    headers = {"Content-Type": "application/vnd.oci.image.index.v1+json"}
                    if wanted:
                        headers["OCI-Filters-Applied"] = "artifactType"
                    return self._reply(200, index.encode(), headers)
                status, data, out = forward(proxy.upstream_port, self.command, self.path, self.headers.items(), body)
                put = _MANIFEST_PUT.match(url.path)
                if put and self.command == "PUT" and status in (200, 201) and body:
                    subject = proxy._record(put["repo"], body, self.headers.get("Content-Type", ""))
                    if subject:
                        out["OCI-Subject"] = subject
                self._reply(status, data, out)

            do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _record(self, repo: str, body: bytes, media_type: str) -> str | None:
        try:
            doc = json.loads(body)
        except ValueError:
            return None
        subject = (doc.get("subject") or {}).get("digest") if isinstance(doc, dict) else None
        if not subject:
            return None
        desc = {"mediaType": doc.get("mediaType", media_type), "digest": "sha256:" + hashlib.sha256(body).hexdigest(),
                "size": len(body), "artifactType": doc.get("artifactType") or doc.get("config", {}).get("mediaType"),
                "annotations": doc.get("annotations", {})}
        with self.lock:
            entries = self.referrers.setdefault((repo, subject), [])
            if all(e["digest"] != desc["digest"] for e in entries):
                entries.append(desc)
        return subject

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def __enter__(self) -> "ReferrersProxy":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
