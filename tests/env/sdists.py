"""Real source distributions made by the tests themselves (tiny packages, real build backends).

``setup_py_sdist`` makes the dangerous kind: a ``setup.py`` with *dynamic* metadata (its
PKG-INFO carries no dependencies, so a resolver must run it to learn them) that writes a marker
file at an absolute host path the moment it is executed anywhere that path exists — the test
machine. When it runs in the throwaway build container it cannot reach that path; instead it
records where it ran (uid, network) into the package it builds, so a run can prove that the
wheel it imports is the one built in the container.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

_SETUP_PY = '''\
import os, pathlib, socket

# Executed on the machine that runs the tests, this leaves the marker behind.
try:
    pathlib.Path({marker!r}).write_text("setup.py of {name} ran here\\n")
except OSError:
    pass


def network():
    try:
        socket.create_connection(("1.1.1.1", 53), timeout=2).close()
        return "on"
    except OSError:
        return "off"


pathlib.Path("{name}/_built.py").write_text(
    f"BUILD_UID = {{os.getuid()}}\\nBUILD_NETWORK = {{network()!r}}\\nBUILD_DIR = {{os.getcwd()!r}}\\n"
)

from setuptools import setup

# Computed when setup.py runs: nothing static tells a resolver what this package needs.
requires = [r for r in {requires!r} if r]
{fail}setup(name={name!r}, version={version!r}, packages=[{name!r}], install_requires=requires)
'''


def _write_sdist(path: Path, files: dict[str, str]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for member, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(member)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return path


def setup_py_sdist(folder: Path, name: str, version: str, requires: list[str], marker: Path, body: str = "",
                   fail: str = "") -> Path:
    """``name-version.tar.gz`` built by setuptools from a setup.py with dynamic dependencies
    (``fail``: setup.py exits with this message instead of building)."""
    base = f"{name}-{version}"
    return _write_sdist(folder / f"{base}.tar.gz", {
        f"{base}/setup.py": _SETUP_PY.format(name=name, version=version, requires=requires, marker=str(marker),
                                             fail=f"raise SystemExit({fail!r})\n" if fail else ""),
        f"{base}/{name}/__init__.py": body or "VALUE = 1\n",
        # Metadata-Version 1.0 has no Requires-Dist: the dependencies exist only in setup.py.
        f"{base}/PKG-INFO": f"Metadata-Version: 1.0\nName: {name}\nVersion: {version}\n",
    })


def flit_sdist(folder: Path, name: str = "onlysdist", version: str = "1.0") -> Path:
    """A source distribution with static metadata and a flit_core build backend."""
    base = f"{name}-{version}"
    return _write_sdist(folder / f"{base}.tar.gz", {
        f"{base}/pyproject.toml": (
            f'[build-system]\nrequires = ["flit_core>=3.2,<4"]\nbuild-backend = "flit_core.buildapi"\n\n'
            f'[project]\nname = "{name}"\nversion = "{version}"\ndescription = "test"\n'
        ),
        f"{base}/{name}/__init__.py": "ANSWER = 42\n",
        f"{base}/PKG-INFO": f"Metadata-Version: 2.2\nName: {name}\nVersion: {version}\nSummary: test\n",
    })
