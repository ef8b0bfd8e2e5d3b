#!/usr/bin/env python3
"""Download the real wheels the environment tests serve from a loopback package index.

Run once by scripts/test.sh (it needs PyPI; the tests never do, nor does the demo). Resolves, with uv, for the
agent image's Python and platform — the same target the tests resolve for — and keeps each
file only if its sha256 matches what the index published. Idempotent: files already present
with the right hash are kept.

    python scripts/fetch_test_wheels.py DIR [IMAGE]

It also fetches, for each import name in MAP_CHECKS, the file list of the newest wheel of the
distribution the shipped import-name map gives for it — only the zip's central directory (and
top_level.txt), by HTTP Range requests — into DIR/metadata/<distribution>.json; the tests
check that each of those wheels provides its import name. A few seconds; kept when present.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from urllib.parse import unquote, urlparse

import requests

# markitdown[xlsx]: what the real convert-excel-to-md skill declares (pandas, numpy, openpyxl and
# a binary-heavy closure); pyyaml: a skill's PEP 723 block; python-dateutil/six: small pure-Python
# wheels; six 1.16.0 beside 1.17: two versions to conflict over; flit_core and setuptools: the
# build backends of the --allow-sdist tests' source distributions (the tests make those sdists
# themselves; setuptools runs their setup.py in the throwaway build container).
# Import-name map entries checked against real wheels (tests/env/test_provides.py): the ones
# whose distribution name says little about its module, and those corrected after real skills
# got unrelated packages (tdc -> PyTDC has no wheel on PyPI, only an sdist, so it is not here).
MAP_CHECKS = ["yaml", "PIL", "fitz", "docx", "pptx", "bs4", "dateutil", "sklearn", "skimage", "cv2", "jwt", "dotenv",
              "serial", "attr", "Bio", "google.protobuf", "mpl_toolkits", "umap", "esm", "parallel", "multipart",
              "magic", "Crypto"]
WANTED = [["markitdown[xlsx]>=0.1.0", "pyyaml", "python-dateutil"], ["six==1.16.0"], ["flit_core>=3.2,<4"],
          ["setuptools>=70.1"]]


def main() -> int:
    dest = Path(sys.argv[1])
    image = sys.argv[2] if len(sys.argv) > 2 else "skillctl-agent:latest"
    from skillctl.env.resolve import UV_TLS_ENV, uv_binary
    from skillctl.env.target import probe_image
    from skillctl.sandbox.client import docker_client

    target = probe_image(docker_client(), image)
    dest.mkdir(parents=True, exist_ok=True)
    for group in WANTED:
        with tempfile.TemporaryDirectory() as tmp:
            req = Path(tmp) / "requirements.in"
            req.write_text("\n".join(group) + "\n")
            out = Path(tmp) / "pylock.toml"
            subprocess.run(
                [uv_binary(), "pip", "compile", str(req), "-o", str(out), "--format", "pylock.toml", "--quiet",
                 "--python-version", target.python, "--python-platform", target.uv_platform, "--only-binary", ":all:",
                 "--no-config"], check=True, env={**os.environ, **UV_TLS_ENV})
            lock = tomllib.loads(out.read_text())
        for pkg in lock["packages"]:
            for wheel in pkg.get("wheels", []):
                name = unquote(Path(urlparse(wheel["url"]).path).name)
                path = dest / name
                sha = wheel["hashes"]["sha256"]
                if path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == sha:
                    continue
                data = requests.get(wheel["url"], timeout=120).content
                if hashlib.sha256(data).hexdigest() != sha:
                    print(f"sha256 mismatch for {name}", file=sys.stderr)
                    return 1
                path.write_bytes(data)
                print(f"fetched {name} ({len(data) / 1e6:.1f} MB)", file=sys.stderr)
    return fetch_map_metadata(dest / "metadata")


def _newest_wheel(session: requests.Session, dist: str) -> dict | None:
    """The newest non-yanked wheel of ``dist`` on PyPI, preferring a pure or x86_64 Linux one."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename
    from packaging.version import Version

    resp = session.get(f"https://pypi.org/simple/{dist}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"},
                       timeout=30)
    resp.raise_for_status()
    best = None
    for f in resp.json()["files"]:
        if not f["filename"].endswith(".whl") or f.get("yanked"):
            continue
        try:
            _name, version, _build, tags = parse_wheel_filename(f["filename"])
        except InvalidWheelFilename:
            continue
        fits = any(t.platform == "any" or ("x86_64" in t.platform and "linux" in t.platform) for t in tags)
        key = (version, fits)
        if version.is_prerelease:
            key = (Version("0"), fits)
        if best is None or key > best[0]:
            best = (key, f)
    return None if best is None else best[1]


def fetch_map_metadata(dest: Path) -> int:
    import json
    from concurrent.futures import ThreadPoolExecutor

    from skillctl.env.imports import mapped
    from skillctl.env.provides import RangeFile, RangeUnsupported

    dest.mkdir(parents=True, exist_ok=True)
    session = requests.Session()

    def one(module: str) -> str | None:
        import zipfile

        dist = mapped(module)
        wheel = _newest_wheel(session, dist)
        if wheel is None:
            return f"{dist}: no wheel on PyPI"
        out = dest / f"{dist}.json"
        if out.is_file() and json.loads(out.read_text()).get("filename") == wheel["filename"]:
            return None
        remote = RangeFile(wheel["url"], wheel.get("size"), session)
        try:
            with zipfile.ZipFile(remote) as zf:
                members = zf.namelist()
                top = [m for m in members if m.count("/") == 1 and m.endswith(".dist-info/top_level.txt")]
                top_level = zf.read(top[0]).decode("utf-8", "replace") if top else None
        except (RangeUnsupported, zipfile.BadZipFile) as exc:
            return f"{dist}: {exc}"
        out.write_text(json.dumps({"import": module, "distribution": dist, "filename": wheel["filename"],
                                   "sha256": wheel["hashes"]["sha256"], "top_level": top_level, "members": members}))
        print(f"fetched the file list of {wheel['filename']} ({remote.fetched / 1e3:.0f} kB read)", file=sys.stderr)
        return None

    with ThreadPoolExecutor(4) as pool:
        problems = [p for p in pool.map(one, MAP_CHECKS) if p]
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
