#!/usr/bin/env python3
"""Download the real wheels the environment tests serve from a loopback package index.

Run once by scripts/setup.sh (it needs PyPI; the tests never do). Resolves, with uv, for the
agent image's Python and platform — the same target the tests resolve for — and keeps each
file only if its sha256 matches what the index published. Idempotent: files already present
with the right hash are kept.

    python scripts/fetch_test_wheels.py DIR [IMAGE]
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
