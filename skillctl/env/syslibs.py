"""System libraries an environment's wheels need and the image lacks, with the Debian package for each.

Two ways to look, one rule (``elfcheck``):

- **in the environment image**, after it is built (``image_check``): one short container of the
  image — no network, read-only, no capabilities, no new privileges, the agent's uid, a time
  limit — runs ``elfcheck`` with the image's ``python3 -I -S`` over every shared object under
  ``/opt/skills-env``; the answer is cached by image id (an id is a digest of the image's
  content), so a reused image is not checked again;
- **on the host, in the wheels** (``wheel_check``, for ``env infer``): the shared objects inside
  each wheel's zip are read member by member (headers only, never extracted), against the names
  in the agent image's library folders (listed once by a container of it, cached by image id).

Each missing name is then looked up in the suite's Contents index (``contents.soname_index``).
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from skillctl.env import elfcheck
from skillctl.env.target import cache_dir
from skillctl.errors import EnvError

Progress = Callable[[str], None]
VENV = "/opt/skills-env"
CHECK_TIMEOUT_S = 120
MAX_MEMBERS = 100000
MAX_MEMBER_SIZE = 4 << 30


@dataclass(frozen=True)
class MissingLibrary:
    """``file`` (of ``distribution`` ``version``) needs ``needs``; ``packages`` ship it (best first)."""

    distribution: str
    version: str
    file: str  # relative to site-packages (or to the venv, for a file no RECORD names)
    needs: str
    packages: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"packages": list(self.packages)}

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> "MissingLibrary":
        return cls(str(doc["distribution"]), str(doc["version"]), str(doc["file"]), str(doc["needs"]),
                   tuple(str(p) for p in doc.get("packages", [])))


def _source_digest() -> str:
    return hashlib.sha256(Path(elfcheck.__file__).read_bytes()).hexdigest()[:16]


def _cached(name: str, image_id: str) -> Path:
    return cache_dir() / "env" / "syslibs" / f"{image_id.replace(':', '-')}.{name}-{_source_digest()}.json"


def _write(path: Path, doc: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc, sort_keys=True), "utf-8")
    os.replace(tmp, path)


def _run_checker(client: Any, image: str, args: Sequence[str]) -> dict[str, Any]:
    """``elfcheck`` run in a hardened, network-less, read-only container of ``image``."""
    from skillctl.sandbox.programs import PYTHON3, TIMEOUT

    source = Path(elfcheck.__file__).read_text("utf-8")
    try:
        out = client.containers.run(
            image, entrypoint=[TIMEOUT, "-k", "5s", f"{CHECK_TIMEOUT_S}s", PYTHON3, "-I", "-S", "-c", source, *args],
            command=[], network_mode="none", read_only=True, cap_drop=["ALL"], security_opt=["no-new-privileges"],
            user="1000:1000", pids_limit=32, mem_limit="512m", remove=True, stdout=True, stderr=False,
            labels={"org.skillctl.env-probe": "1"},
        )
        return json.loads(out.decode("utf-8", errors="replace"))
    except ValueError as exc:
        raise EnvError(f"the library check in {image} printed no report ({exc})") from None
    except Exception as exc:  # docker's ContainerError (exit 124: the time limit), APIError…
        raise EnvError(f"the library check in {image} failed ({str(exc).splitlines()[0][:300]})") from None


def image_check(client: Any, image: str) -> dict[str, Any]:
    """``elfcheck.check_tree`` of ``image``'s venv (cached by image id)."""
    return _checked_once(client, image, "check", ["check", VENV])


def image_libraries(client: Any, image: str) -> dict[str, Any]:
    """``elfcheck.list_libraries`` of ``image`` (the agent image; cached by image id)."""
    return _checked_once(client, image, "libraries", ["list"])


def _checked_once(client: Any, image: str, kind: str, argv: list[str]) -> dict[str, Any]:
    """The checker's report ``argv`` on ``image``, run once per image id and kept under ``kind``."""
    path = _cached(kind, client.images.get(image).id)
    try:
        return json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        pass
    doc = _run_checker(client, image, argv)
    _write(path, doc)
    return doc


def _relative(path: str, python_minor: str) -> str:
    site = f"{VENV}/lib/python{python_minor}/site-packages/"
    return path[len(site):] if path.startswith(site) else path[len(VENV) + 1:] if path.startswith(VENV + "/") else path


def from_check(doc: Any, python_minor: str) -> list[MissingLibrary]:
    if not isinstance(doc, dict) or not isinstance(doc.get("missing", []), list) or not all(
            isinstance(m, dict) for m in doc.get("missing", [])):
        raise EnvError("the library check printed a report of an unexpected shape")
    return [MissingLibrary(str(m.get("distribution", "")), str(m.get("version", "")),
                           _relative(str(m.get("file", "")), python_minor), str(m.get("needs", "")))
            for m in doc.get("missing", [])]


# ------------------------------------------------------------------------------ wheels, on the host


def _installed(member: str, site: str) -> str | None:
    """Where uv puts a wheel member (platlib/purelib under site-packages, data under the venv)."""
    parts = member.split("/")
    if len(parts) > 2 and parts[0].endswith(".data"):
        scheme, rest = parts[1], "/".join(parts[2:])
        root = {"purelib": site, "platlib": site, "data": VENV}.get(scheme)
        return posixpath.normpath(posixpath.join(root, rest)) if root else None
    return posixpath.normpath(posixpath.join(site, member))


def wheel_shared_objects(path: Path, site: str) -> dict[str, Any]:
    """{"files": every installed path, "elves": [[installed path, ElfInfo fields]], "unreadable": [...]}
    of one wheel; each member read as a stream, headers only."""
    files, elves, unreadable = [], [], []
    with zipfile.ZipFile(path) as whl:
        for info in whl.infolist()[:MAX_MEMBERS]:
            if info.is_dir():
                continue
            installed = _installed(info.filename, site)
            if installed is None or not installed.startswith(VENV + "/"):
                continue
            files.append(installed)
            if not elfcheck.is_shared_object_name(posixpath.basename(info.filename)) or info.file_size > MAX_MEMBER_SIZE:
                continue
            try:
                with whl.open(info) as fh:
                    elf = elfcheck.read_elf(fh, info.file_size)
            except (elfcheck.ElfError, zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
                unreadable.append({"file": installed, "error": str(exc)[:200]})
                continue
            if elf is not None and elf.type == elfcheck.ET_DYN:
                elves.append([installed, {s: getattr(elf, s) for s in elfcheck.ElfInfo.__slots__}])
    return {"files": files, "elves": elves, "unreadable": unreadable}


def _wheel_doc(path: Path, sha256: str, site: str) -> dict[str, Any]:
    cached = cache_dir() / "env" / "syslibs" / "wheels" / f"{sha256}.{hashlib.sha256(site.encode()).hexdigest()[:8]}-{_source_digest()}.json"
    try:
        return json.loads(cached.read_text("utf-8"))
    except (OSError, ValueError):
        pass
    try:
        doc = wheel_shared_objects(path, site)
    except (zipfile.BadZipFile, OSError) as exc:
        raise EnvError(f"{path.name} cannot be read as a wheel ({exc})") from None
    _write(cached, doc)
    return doc


def wheel_check(wheels: Iterable[tuple[str, str, Path, str]], libraries: dict[str, Any],
                python_minor: str) -> list[MissingLibrary]:
    """What the shared objects of ``wheels`` ((name, version, path, sha256) each) need that neither
    the wheels nor the image's library folders (``image_libraries``) provide."""
    site = f"{VENV}/lib/python{python_minor}/site-packages"
    docs = [(name, version, _wheel_doc(path, sha, site)) for name, version, path, sha in wheels]
    present = {posixpath.join(folder, n) for folder, names in libraries.get("libraries", {}).items() for n in names}
    for _, _, doc in docs:
        present.update(doc["files"])
    elves = [(name, version, p, elfcheck.ElfInfo(f["bits"], f["machine"], f["type"], f["soname"], f["needed"],
                                                 f["rpath"], f["runpath"]))
             for name, version, doc in docs for p, f in doc["elves"]]
    provided = {e.soname for *_, e in elves if e.soname} | {posixpath.basename(p) for _, _, p, _ in elves}
    system = list(libraries.get("system_dirs", []))
    lookup = lambda folder, name, _bits, _machine: posixpath.join(folder, name) in present  # noqa: E731
    out = []
    for name, version, p, elf in elves:
        for needs in elfcheck.unresolved(p, elf, system, lookup, provided):
            out.append(MissingLibrary(name, version, _relative(p, python_minor), needs))
    return out


# ------------------------------------------------------------------------------ packages and reports


def with_packages(missing: Sequence[MissingLibrary], arch: str, *, progress: Progress | None = None) -> tuple[list[MissingLibrary], str]:
    """``missing`` with the Debian packages that ship each name, and a note when they could not be
    looked up (the mirror unreachable, no Contents index): then ``packages`` stay empty."""
    if not missing:
        return list(missing), ""
    from skillctl.env.contents import ranked, soname_index

    try:
        index = soname_index(arch, progress=progress)
    except EnvError as exc:
        return list(missing), f"no Debian package named: {exc}"
    return [MissingLibrary(m.distribution, m.version, m.file, m.needs, tuple(ranked(m.needs, index.get(m.needs, []))))
            for m in missing], ""


def proposed(missing: Sequence[MissingLibrary]) -> list[str]:
    """One package per missing name (the best-ranked), each once."""
    return sorted({m.packages[0] for m in missing if m.packages})


def report_lines(missing: Sequence[MissingLibrary], where: str = "skills.yaml environment") -> list[str]:
    """One line per (distribution, name) — "lightgbm 4.5.0: lib_lightgbm.so needs libgomp.so.1,
    not in the image; Debian package libgomp1 provides it" — and the fix."""
    groups: dict[tuple[str, str, str], list[MissingLibrary]] = {}
    for m in missing:
        groups.setdefault((m.distribution, m.version, m.needs), []).append(m)
    lines = []
    for (distribution, version, needs), found in groups.items():
        who = f"{distribution} {version}".strip() or "a package"
        packages = found[0].packages
        if len(packages) == 1:
            provider = f"Debian package {packages[0]} provides it"
        elif packages:
            provider = f"Debian packages {', '.join(packages[:4])} provide it"
        else:
            provider = "no Debian package of the suite's main component ships it"
        files = posixpath.basename(found[0].file) or found[0].file
        if len(found) > 1:
            files += f" (and {len(found) - 1} more file{'s' if len(found) > 2 else ''})"
        lines.append(f"{who}: {files} needs {needs}, not in the image; {provider}")
    chosen = proposed(missing)
    if chosen:
        lines.append(f"add `debian: [{', '.join(chosen)}]` to {where} (or the skill's project)")
    return lines


def environment_check(client: Any, tag: str, env: Any, *, progress: Progress | None = None,
                      image_id: str | None = None) -> list[MissingLibrary] | None:
    """The missing libraries of the built environment image ``tag`` (None when the check could not
    run, said on ``progress``); each with its Debian packages. ``image_id``: the id of ``tag``,
    when the caller has just inspected it."""
    say = progress or (lambda _line: None)
    if not env.python.files:
        return []
    try:
        image_id = image_id or client.images.get(tag).id
        report = _cached("report", image_id)
        if report.is_file():
            return [MissingLibrary.from_dict(d) for d in json.loads(report.read_text("utf-8"))]
        found = from_check(image_check(client, tag), env.target.python_minor)
    except (EnvError, ValueError, KeyError, TypeError) as exc:
        say(f"warning: system libraries not checked: {exc}")
        return None
    except Exception as exc:  # the engine (docker.errors, requests): the image is built; say so, go on
        say(f"warning: system libraries not checked: {str(exc).splitlines()[0][:300]}")
        return None
    missing, note = with_packages(found, env.target.arch, progress=progress)
    if note:
        say(f"warning: {note}")
    else:  # only a complete report is kept: next time the packages are looked up again
        _write(report, [m.to_dict() for m in missing])
    return missing


def warn(missing: Sequence[MissingLibrary] | None, say: Progress) -> None:
    for line in report_lines(missing or []):
        say(f"warning: {line}")


def infer_debian(requirements: Sequence[str], owner: str, *, client: Any, base_image: str, index: str | None = None,
                 progress: Progress | None = None) -> dict[str, Any]:
    """For ``env infer``: resolve ``requirements`` (as ``env show`` does), fetch the wheels
    (hash-checked, cached), read their shared objects on the host against the agent image's
    libraries, and propose the Debian packages for what is missing.
    ``{"packages": [...], "system_libraries": [...], "note": ""}``."""
    from skillctl.env.declare import Declarations, Declared
    from skillctl.env.files import Wanted, ensure_files
    from skillctl.env.prepare import resolve_environment
    from skillctl.env.target import probe_image

    if not requirements:
        return {"packages": [], "system_libraries": [], "note": ""}
    decl = Declarations(python=tuple(Declared(r, owner, "env infer") for r in requirements))
    target = probe_image(client, base_image)
    env = resolve_environment(decl, target, index=index, base_image=base_image, client=client, progress=progress)
    wheels = env.python.wheels
    paths = ensure_files([Wanted(f.filename, f.url, f.sha256, f.size) for f in wheels], progress=progress)
    missing = wheel_check([(f.name, f.version, p, f.sha256) for f, p in zip(wheels, paths)],
                          image_libraries(client, base_image), target.python_minor)
    missing, note = with_packages(missing, target.arch, progress=progress)
    return {"packages": proposed(missing), "system_libraries": [m.to_dict() for m in missing], "note": note}
