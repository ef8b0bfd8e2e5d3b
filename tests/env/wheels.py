"""Real wheels made by the tests themselves: tiny, but complete (METADATA, WHEEL, a RECORD with
every file's hash), so uv installs them exactly as it installs one from PyPI.

``make_wheel`` can give a wheel what a hostile dependency would ship: console and GUI scripts
(``entry_points``), files under ``<name>-<version>.data/<scheme>/`` (``data``: e.g.
``{"scripts/ls": "..."}``) and ``.pth`` files, which Python runs at every interpreter start.
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def make_wheel(folder: Path, name: str, version: str = "1.0", *, files: dict[str, str | bytes] | None = None,
               entry_points: dict[str, dict[str, str]] | None = None, data: dict[str, str] | None = None,
               requires: tuple[str, ...] = (), tag: str = "py3-none-any") -> Path:
    """``name-version-TAG.whl`` in ``folder`` (``py3-none-any`` unless ``tag`` says otherwise,
    e.g. ``cp311-cp311-win_amd64``): ``files`` (text or bytes) at the wheel's root (purelib),
    ``entry_points`` as {"console_scripts": {"ls": "pkg:main"}}, ``data`` under its .data folder
    (executable, as scripts must be), ``requires`` as its Requires-Dist lines."""
    dist = f"{name}-{version}"
    members: dict[str, tuple[bytes, int]] = {
        rel: (text if isinstance(text, bytes) else text.encode(), 0o644)
        for rel, text in (files or {f"{name}/__init__.py": "VALUE = 1\n"}).items()
    }
    for rel, text in (data or {}).items():
        members[f"{dist}.data/{rel}"] = (text.encode(), 0o755)
    if entry_points:
        members[f"{dist}.dist-info/entry_points.txt"] = ("".join(
            f"[{section}]\n" + "".join(f"{key} = {value}\n" for key, value in entries.items()) + "\n"
            for section, entries in entry_points.items()).encode(), 0o644)
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(f"Requires-Dist: {r}\n" for r in requires)
    members[f"{dist}.dist-info/METADATA"] = (metadata.encode(), 0o644)
    members[f"{dist}.dist-info/WHEEL"] = (f"Wheel-Version: 1.0\nGenerator: skillctl-tests\nRoot-Is-Purelib: true\n"
                                          f"Tag: {tag}\n".encode(), 0o644)
    record = "".join(f"{rel},{_record_hash(body)},{len(body)}\n" for rel, (body, _) in members.items())
    members[f"{dist}.dist-info/RECORD"] = ((record + f"{dist}.dist-info/RECORD,,\n").encode(), 0o644)
    path = folder / f"{dist}-{tag}.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as whl:
        for rel, (body, mode) in members.items():
            info = zipfile.ZipInfo(rel, (2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            whl.writestr(info, body)
    return path
