"""A real PEP 503 "simple" package index on loopback, serving a folder of wheels and sdists.

The environment tests resolve and download through it exactly as from PyPI — project pages with
``#sha256=`` fragments, files over HTTP — without leaving the machine. ``files`` maps a file name
to the path served for it; a test may point one name at other bytes to play a tampered index
(the page then publishes the new hash, as a compromised index would). ``attributes`` adds PEP
503 link attributes to a file's link (``data-requires-python``, ``data-yanked``); a name in
``unhashed`` is listed without its ``#sha256=``. Files are served with HTTP Range support (one
``bytes=A-B`` or ``bytes=-N`` range, answered 206 with Content-Range), as PyPI's files host
does; ``ranges = False`` plays an index that ignores Range and sends the whole file.
"""

from __future__ import annotations

import hashlib
import html
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from packaging.utils import canonicalize_name, parse_sdist_filename, parse_wheel_filename


def project_of(filename: str) -> str:
    if filename.endswith(".whl"):
        return canonicalize_name(parse_wheel_filename(filename)[0])
    return canonicalize_name(parse_sdist_filename(filename)[0])


class PackageIndex:
    def __init__(self, folder: Path | None = None) -> None:
        self.files: dict[str, Path] = {}
        if folder is not None:
            for path in sorted(folder.iterdir()):
                if path.name.endswith((".whl", ".tar.gz")):
                    self.files[path.name] = path
        self.requests: list[str] = []
        self.authorizations: list[str] = []  # the Authorization header of each request ("" without)
        self.attributes: dict[str, dict[str, str]] = {}
        self.unhashed: set[str] = set()
        self.ranges = True
        index = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet: tests read index.requests instead
                pass

            def do_HEAD(self) -> None:
                self.head_only = True
                self.do_GET()

            def do_GET(self) -> None:
                index.requests.append(self.path)
                index.authorizations.append(self.headers.get("Authorization") or "")
                parts = [p for p in self.path.split("?")[0].split("/") if p]
                if parts == ["simple"]:
                    names = sorted({project_of(f) for f in index.files})
                    links = "".join(f'<a href="/simple/{n}/">{n}</a>\n' for n in names)
                    return self._send(200, f"<!DOCTYPE html><html><body>\n{links}</body></html>", "text/html")
                if len(parts) == 2 and parts[0] == "simple":
                    wanted = canonicalize_name(parts[1])
                    links = ""
                    for name, path in sorted(index.files.items()):
                        if project_of(name) == wanted:
                            digest = hashlib.sha256(path.read_bytes()).hexdigest()
                            extra = "".join(f' {k}="{html.escape(v)}"' for k, v in index.attributes.get(name, {}).items())
                            fragment = "" if name in index.unhashed else f"#sha256={digest}"
                            links += (f'<a href="/files/{html.escape(name)}{fragment}"{extra}>'
                                      f'{html.escape(name)}</a>\n')
                    if not links:
                        return self._send(404, "not found", "text/plain")
                    return self._send(200, f"<!DOCTYPE html><html><body>\n{links}</body></html>", "text/html")
                if len(parts) == 2 and parts[0] == "files" and parts[1] in index.files:
                    data = index.files[parts[1]].read_bytes()
                    wanted = re.fullmatch(r"bytes=(\d*)-(\d*)", self.headers.get("Range", ""))
                    if index.ranges and wanted and (wanted.group(1) or wanted.group(2)):
                        if wanted.group(1):
                            start = int(wanted.group(1))
                            end = min(len(data) - 1, int(wanted.group(2))) if wanted.group(2) else len(data) - 1
                        else:
                            start, end = max(0, len(data) - int(wanted.group(2))), len(data) - 1
                        if start > end:
                            return self._send(416, "range not satisfiable", "text/plain")
                        return self._send(206, data[start:end + 1], "application/octet-stream",
                                          {"Content-Range": f"bytes {start}-{end}/{len(data)}"})
                    return self._send(200, data, "application/octet-stream")
                return self._send(404, "not found", "text/plain")

            def _send(self, status: int, body: str | bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
                data = body.encode() if isinstance(body, str) else body
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if not getattr(self, "head_only", False):
                    self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/simple"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "PackageIndex":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
