"""Clients and skill builders shared by the serve tests."""

from __future__ import annotations

import io
import itertools
import socket
import zipfile
from dataclasses import dataclass
from pathlib import Path


from registry.helpers import write_skill

_folders = itertools.count()


def skill_dir(src: Path, name: str = "demo", version: str | None = "1.0.0", body: str = "", **kwargs) -> Path:
    """A new valid skill folder named ``name`` (``body`` varies the content)."""
    return write_skill(src / str(next(_folders)), name, version, body=f"# {name}\n\n{body}\n", **kwargs)


@dataclass(frozen=True)
class Keys:
    path: Path
    admin: str  # read, publish, admin
    writer: str  # read, publish
    reader: str  # read


def openai_client(server, key: str, **options):
    import openai

    options.setdefault("max_retries", 0)
    return openai.OpenAI(base_url=server.url + "/openai/v1", api_key=key, **options)


def anthropic_client(server, key: str, **options):
    import anthropic

    options.setdefault("max_retries", 0)
    return anthropic.Anthropic(base_url=server.url + "/anthropic", api_key=key, **options)


def skill_files(folder: Path, top: str | None = None) -> list[tuple[str, bytes]]:
    """The files of a skill folder as a directory upload sends them: (TOP/relative path, bytes)."""
    top = top or folder.name
    return [(f"{top}/{p.relative_to(folder).as_posix()}", p.read_bytes()) for p in sorted(folder.rglob("*")) if p.is_file()]


def zip_of(folder: Path, *, root_layout: bool = False) -> bytes:
    """A zip of the skill folder as people make them (Python's zipfile, real timestamps and
    modes, folders listed), with the files in one top folder unless ``root_layout``."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(folder.rglob("*")):
            rel = path.relative_to(folder).as_posix()
            zf.write(path, rel if root_layout else f"{folder.name}/{rel}")
    return out.getvalue()


def files_of_zip(data: bytes) -> dict[str, tuple[bytes, bool]]:
    """path → (bytes, executable) of every file in a zip."""
    out = {}
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        for info in zf.infolist():
            if not info.is_dir():
                out[info.filename] = (zf.read(info), bool((info.external_attr >> 16) & 0o100))
    return out


def multipart(files: list[tuple[str, bytes]]) -> tuple[bytes, bytes]:
    """(body, boundary) of a directory upload of ``files``, as the SDKs encode it."""
    boundary = b"skillctl-test-boundary"
    out = b""
    for name, data in files:
        out += (b"--" + boundary + b'\r\nContent-Disposition: form-data; name="files[]"; filename="' + name.encode()
                + b'"\r\nContent-Type: application/octet-stream\r\n\r\n' + data + b"\r\n")
    return out + b"--" + boundary + b"--\r\n", boundary


def read_until(sock: socket.socket, marker: bytes) -> bytes:
    """What the socket sends until ``marker`` has come (or the connection ends)."""
    data = b""
    while marker not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data
