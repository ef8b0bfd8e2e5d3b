"""No package may take the name of a command of the image: the check, run inside the build.

``/opt/skills-env/bin`` comes first on every command's PATH, so that ``python3`` is the
environment's interpreter. A package's script there named like one of the image's commands
would be what the agent gets for ``ls`` or ``timeout``, and what a skill's script gets when it
calls them. So the environment image's build runs, once the venv and the Debian packages are in
place, as root but with no site-packages (no package's ``.pth`` runs):

    /usr/bin/python3 -I -S shadow.py VENV "$PATH"

Every entry of ``VENV/bin`` whose name is also in a folder of that PATH (the image's own
folders: /usr/local/bin … /bin) is refused: one line per entry, ``skillctl-shadow {json}``,
naming the command, what it would shadow and the package whose RECORD lists it; exit status 1.
The only entries allowed such a name are the venv's own interpreter links (``python3``,
``python3.11`` → the image's python3); uv already refuses wheels whose scripts use those names.

Why here and not by reading the wheels on the host: this sees what the installer really put in
``bin`` — console and GUI scripts, ``.data/scripts``, ``.data/data/bin`` — and the commands of
the final image, the environment's Debian packages included; a second reading of wheels could
disagree with the installer's. Standard library only: it runs on the image's Python.
The host side (``refusal``) turns those lines into one error naming the wheels.
"""

from __future__ import annotations

import csv
import json
import os
import re
import sys
from pathlib import Path

MARK = "skillctl-shadow "
_INTERPRETER_NAME = re.compile(r"^python(3(\.\d+)?)?$")


def _owners(venv: Path) -> dict[str, tuple[str, str]]:
    """bin entry name -> (package, version), from the installed RECORD files."""
    bin_dir = os.path.normpath(venv / "bin")
    out: dict[str, tuple[str, str]] = {}
    for info in sorted(venv.glob("lib/python*/site-packages/*.dist-info")):
        meta: dict[str, str] = {}
        try:
            for line in (info / "METADATA").read_text("utf-8", "replace").splitlines():
                if not line.strip():
                    break
                key, _, value = line.partition(":")
                meta.setdefault(key.strip().lower(), value.strip())
            with open(info / "RECORD", newline="", encoding="utf-8", errors="replace") as fh:
                rows = list(csv.reader(fh))
        except OSError:
            continue
        site = info.parent
        for row in rows:
            if row and os.path.dirname(os.path.normpath(os.path.join(site, row[0]))) == bin_dir:
                out.setdefault(os.path.basename(row[0]), (meta.get("name", info.name), meta.get("version", "")))
    return out


def _own_interpreter(entry: Path) -> bool:
    """One of the links ``uv venv`` made to the image's python3 (where this check runs)."""
    return (_INTERPRETER_NAME.match(entry.name) is not None and entry.is_symlink()
            and os.path.realpath(entry) == os.path.realpath(sys.executable))


def shadowing(venv: Path, path: str) -> list[dict[str, str]]:
    """What in ``venv/bin`` has the name of a command in ``path``'s folders, in name order."""
    folders = [d for d in path.split(os.pathsep) if d.startswith("/")]
    owners = _owners(venv)
    found = []
    for entry in sorted((venv / "bin").iterdir()):
        if _own_interpreter(entry):
            continue
        shadowed = next((f"{d}/{entry.name}" for d in folders if os.path.lexists(f"{d}/{entry.name}")), None)
        if shadowed is not None:
            package, version = owners.get(entry.name, ("", ""))
            found.append({"command": entry.name, "shadows": shadowed, "package": package, "version": version})
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python3 -I -S shadow.py VENV PATH", file=sys.stderr)
        return 2
    found = shadowing(Path(argv[0]), argv[1])
    for item in found:
        print(MARK + json.dumps(item, sort_keys=True), flush=True)
    return 1 if found else 0


# ------------------------------------------------------------------------------ on the host


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def parse(line: str) -> dict[str, str] | None:
    """One of ``main``'s lines as printed in the build's output, else None."""
    at = line.find(MARK)
    if at < 0:
        return None
    try:
        item = json.loads(line[at + len(MARK):])
    except ValueError:
        return None
    return {k: str(v) for k, v in item.items()} if isinstance(item, dict) else None


def refusal(found: list[dict[str, str]], wheels: dict[str, str]) -> str:
    """One line for everything ``found``; ``wheels``: "name==version" pin -> wheel file name."""
    by_pin = {}
    for pin, filename in wheels.items():
        name, _, version = pin.partition("==")
        by_pin[(_canonical(name), version)] = filename
    groups: dict[str, list[str]] = {}
    for item in found:
        key = (_canonical(item.get("package", "")), item.get("version", ""))
        owner = by_pin.get(key) or (f"{item['package']} {item['version']}".strip() if item.get("package") else
                                    "a package")
        groups.setdefault(owner, []).append(f"'{item['command']}' (would shadow {item['shadows']})")
    parts = [f"{owner} installs {', '.join(items)}" for owner, items in groups.items()]
    return ("refusing the environment: " + "; ".join(parts) + ". A package's script named like one of the "
            "image's commands would run instead of it for every command (its folder comes first on PATH); "
            "drop the requirement that brings it, or pin a version without that script")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
