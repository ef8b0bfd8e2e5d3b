"""Where an environment's requirements come from, merged in a fixed order.

1. PEP 723 inline script metadata (``# /// script`` … ``# ///``) in any Python script of a skill:
   ``dependencies`` and ``requires-python``;
2. ``requirements.txt`` files anywhere inside a skill: plain requirement lines only — includes
   (``-r``/``-c``), options, editable installs, URLs and local paths are refused, because they
   would make the environment depend on something outside the skill and its index;
3. the consuming project's ``skills.yaml``::

       environment:
         python: ["numpy>=1.26", "pandas"]   # for skills that declare nothing
         debian: ["poppler-utils"]           # system tools some skills call
         isolate: [skill-a]                  # skills that get a venv of their own (or: auto)
         indexes:                            # more package indexes
           - url: https://download.pytorch.org/whl/cpu
             packages: [torch]               # these come only from this index
           - url: https://pypi.example.com/simple   # no packages: an extra index

Everything here only parses (``tomllib``, ``packaging``): no skill code is imported or run. Both
are imported when there is something to parse: the validator reads every skill's scripts, and
most declare nothing.
Every declaration keeps its owner (a skill's name, or ``project``) and its source file so a
conflict can name both sides.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from skillctl.env.pep723 import blocks
from skillctl.errors import EnvError

if TYPE_CHECKING:
    from packaging.requirements import Requirement

PROJECT = "project"
REQUIREMENTS_TXT = "requirements.txt"
# Debian package names (Debian Policy 5.6.1), optionally "=VERSION" is not accepted: the
# mirror's current version is what gets resolved and then locked.
DEBIAN_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9+.-]+$")
MAX_SCRIPT_BYTES = 2 * 1024 * 1024  # larger "scripts" are data, not something to read metadata from


@dataclass(frozen=True)
class Declared:
    """One requirement and who asked for it."""

    requirement: str  # as packaging prints it: "numpy>=1.26", "markitdown[pdf]>=0.1.0"
    owner: str  # a skill's name, or PROJECT
    source: str  # "scripts/x.py (PEP 723)", "scripts/requirements.txt:3", "skills.yaml environment.python"

    @property
    def name(self) -> str:
        from packaging.requirements import Requirement
        from packaging.utils import canonicalize_name

        return canonicalize_name(Requirement(self.requirement).name)

    def to_dict(self) -> dict[str, str]:
        return {"requirement": self.requirement, "owner": self.owner, "source": self.source}


@dataclass(frozen=True)
class DeclaredIndex:
    """A package index skills.yaml names: ``packages`` come only from it (none: an extra index)."""

    url: str  # never with credentials (skills.yaml is shared: they go in ~/.netrc)
    packages: tuple[str, ...]  # canonical names
    owner: str = PROJECT
    source: str = "skills.yaml environment.indexes"

    def to_dict(self) -> dict[str, Any]:
        return {"url": self.url, "packages": list(self.packages), "owner": self.owner, "source": self.source}


@dataclass(frozen=True)
class Declarations:
    """Everything an environment must provide, in merge order."""

    python: tuple[Declared, ...] = ()
    requires_python: tuple[Declared, ...] = ()  # requirement holds the specifier, e.g. ">=3.10"
    debian: tuple[Declared, ...] = ()  # requirement holds the package name
    scripts: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # owner -> scripts seen
    indexes: tuple[DeclaredIndex, ...] = ()  # skills.yaml environment.indexes

    def __add__(self, other: "Declarations") -> "Declarations":
        return Declarations(
            self.python + other.python,
            self.requires_python + other.requires_python,
            self.debian + other.debian,
            {**self.scripts, **other.scripts},
            self.indexes + other.indexes,
        )

    @property
    def empty(self) -> bool:
        return not self.python and not self.debian

    def owners(self) -> list[str]:
        seen: dict[str, None] = {}
        for d in self.python + self.debian + self.requires_python:
            seen.setdefault(d.owner, None)
        return list(seen)

    def for_owners(self, owners: Iterable[str]) -> "Declarations":
        keep = set(owners)
        return Declarations(
            tuple(d for d in self.python if d.owner in keep),
            tuple(d for d in self.requires_python if d.owner in keep),
            tuple(d for d in self.debian if d.owner in keep),
            {k: v for k, v in self.scripts.items() if k in keep},
            self.indexes,  # where packages come from holds for every part
        )

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "python": [d.to_dict() for d in self.python],
            "requires_python": [d.to_dict() for d in self.requires_python],
            "debian": [d.to_dict() for d in self.debian],
        }
        if self.indexes:  # absent when none, so digests of earlier locks stay the same
            doc["indexes"] = [i.to_dict() for i in self.indexes]
        return doc


# ------------------------------------------------------------------------------ PEP 723


def read_script_metadata(text: str, where: str) -> dict[str, Any] | None:
    """The ``script`` block of a Python script as a table, None without one (PEP 723); the
    blocks are found as the PEP's reference regex finds them, in linear time (``pep723``)."""
    matches = [b for b in blocks(text) if b.type == "script"]
    if len(matches) > 1:
        raise EnvError(f"{where}: more than one '# /// script' block; PEP 723 allows one — merge them")
    if not matches:
        return None
    import tomllib

    try:
        return tomllib.loads(matches[0].toml)
    except tomllib.TOMLDecodeError as exc:
        raise EnvError(f"{where}: the '# /// script' block is not valid TOML ({exc})") from None


def parse_requirement(text: str, where: str) -> Requirement:
    """A plain PEP 508 requirement; direct references (``name @ URL``) are refused."""
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        raise EnvError(f"{where}: '{text}' is not a valid requirement ({exc})") from None
    if req.url:
        raise EnvError(
            f"{where}: '{text}' names a URL; environments resolve from the package index only — "
            "write the distribution name and a version range instead"
        )
    return req


def printed_requirement(text: str, where: str) -> str:
    """Requirement ``text`` as packaging prints it (``Declared.requirement``)."""
    return str(parse_requirement(text, where))


# Requirements as most skills write them — a name, extras, version bounds ("markitdown[pdf]>=0.1.0",
# "numpy>=1.26,<2", "PyYAML") — and requires-python as plain bounds (">=3.10"): packaging accepts
# every text these match (tests/env/test_declare.py checks it against packaging itself), so their
# names are known without importing packaging, which costs a validation process about 15 ms.
_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_BOUND = r"(?:(?:==|!=|<=|>=|<|>)[ \t]*[0-9]+(?:\.[0-9]+)*|~=[ \t]*[0-9]+(?:\.[0-9]+)+)"
_BOUNDS = rf"{_BOUND}(?:[ \t]*,[ \t]*{_BOUND})*"
PLAIN_REQUIREMENT_RE = re.compile(rf"[ \t]*({_NAME})(?:\[{_NAME}(?:,[ \t]*{_NAME})*\])?[ \t]*(?:{_BOUNDS})?[ \t]*")
_PLAIN_PYTHON_RE = re.compile(rf"[ \t]*{_BOUNDS}[ \t]*")
_NAME_ONLY = re.compile(_NAME)


def requirement_name(text: str, where: str) -> str:
    """The distribution name requirement ``text`` declares (as written, not normalised), refusing
    what ``parse_requirement`` refuses, with the same message."""
    plain = PLAIN_REQUIREMENT_RE.fullmatch(text)
    return plain.group(1) if plain else parse_requirement(text, where).name


def _script_declarations(
    owner: str, rel: str, text: str, parse: Callable[[str, str], str] = printed_requirement
) -> tuple[list[Declared], list[Declared]]:
    where = f"{owner}: {rel}"
    meta = read_script_metadata(text, where)
    if meta is None:
        return [], []
    deps = meta.get("dependencies", [])
    if not isinstance(deps, list) or not all(isinstance(d, str) for d in deps):
        raise EnvError(f"{where}: PEP 723 'dependencies' must be a list of strings")
    source = f"{rel} (PEP 723)"
    python = [Declared(parse(d, where), owner, source) for d in deps]
    pins = []
    rp = meta.get("requires-python")
    if rp is not None:
        if not isinstance(rp, str):
            raise EnvError(f"{where}: PEP 723 'requires-python' must be a string such as '>=3.10'")
        if not _PLAIN_PYTHON_RE.fullmatch(rp):
            from packaging.specifiers import InvalidSpecifier, SpecifierSet

            try:
                SpecifierSet(rp)
            except InvalidSpecifier:
                raise EnvError(f"{where}: requires-python '{rp}' is not a version specifier") from None
        pins.append(Declared(rp, owner, source))
    return python, pins


# ------------------------------------------------------------------------------ requirements.txt

_LOOKS_LIKE_PATH = re.compile(r"^(\.{1,2}/|/|~|[A-Za-z]:[\\/])|\.(whl|zip|tar\.gz|tgz|tar\.bz2)$")


def parse_requirements_txt(
    owner: str, rel: str, text: str, parse: Callable[[str, str], str] = printed_requirement
) -> list[Declared]:
    """Plain requirement lines; anything that reaches outside the skill or the index is refused."""
    out: list[Declared] = []
    logical: list[tuple[int, str]] = []
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        if not pending:
            start = number
        if raw.endswith("\\"):
            pending += raw[:-1] + " "
            continue
        logical.append((start, pending + raw))
        pending = ""
    if pending:
        logical.append((start, pending))
    for number, line in logical:
        # A comment starts at "#" at the line start or after whitespace (pip's rule).
        line = re.sub(r"(^|\s)#.*$", "", line).strip()
        if not line:
            continue
        where = f"{owner}: {rel}:{number}"
        if line.startswith("-"):
            raise EnvError(
                f"{where}: '{line.split()[0]}' is not allowed in a skill's requirements.txt (no -r/-c includes, "
                "-e editable installs, index or other options); list plain requirements like 'numpy>=1.26'"
            )
        if "://" in line or _LOOKS_LIKE_PATH.search(line.split(";")[0].strip()):
            raise EnvError(
                f"{where}: '{line}' is a URL or a local path; a skill's requirements must come from the "
                "package index — write the distribution name and a version range"
            )
        out.append(Declared(parse(line, where), owner, f"{rel}:{number}"))
    return out


# ------------------------------------------------------------------------------ skills


def is_python_script(rel: str, head: bytes) -> bool:
    if rel.endswith(".py"):
        return True
    first = head.split(b"\n", 1)[0]
    return first.startswith(b"#!") and b"python" in first


def skill_declarations(
    owner: str, paths: Iterable[str], read: Callable[[str], bytes], parse: Callable[[str, str], str] = printed_requirement
) -> Declarations:
    """What skill ``owner`` declares: PEP 723 blocks first, then its requirements.txt files.

    ``paths`` are the skill's files (POSIX, relative to its root); ``read`` returns a file's bytes.
    ``parse`` makes ``Declared.requirement`` of a requirement's text (and refuses a bad one): as
    packaging prints it, or only its name (``requirement_name``, for a caller that needs no more).
    """
    python: list[Declared] = []
    pins: list[Declared] = []
    reqs_txt: list[Declared] = []
    scripts: list[str] = []
    for rel in sorted(paths):
        base = rel.rsplit("/", 1)[-1]
        if base != REQUIREMENTS_TXT and rel.endswith((".md", ".txt", ".json", ".yaml", ".yml", ".csv")):
            continue
        try:
            data = read(rel)
        except OSError:
            continue  # unreadable: the validator reports it (SK234), packing refuses it
        if base == REQUIREMENTS_TXT:
            reqs_txt += parse_requirements_txt(owner, rel, _text(data, f"{owner}: {rel}"), parse)
            continue
        if len(data) > MAX_SCRIPT_BYTES or not is_python_script(rel, data[:256]):
            continue
        scripts.append(rel)
        deps, rp = _script_declarations(owner, rel, data.decode("utf-8", errors="replace"), parse)
        python += deps
        pins += rp
    return Declarations(tuple(python + reqs_txt), tuple(pins), (), {owner: tuple(scripts)})


def _text(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise EnvError(f"{where}: not UTF-8 text") from None


IGNORE_REQUIRES_PYTHON = "ignore-requires-python"
ENVIRONMENT_KEYS = ("python", "debian", "indexes", "isolate", IGNORE_REQUIRES_PYTHON)


def ignored_requires_python(environment: Any, where: str = "skills.yaml") -> tuple[str, ...]:
    """The skills whose ``requires-python`` skills.yaml tells skillctl not to hold against the agent
    image (``environment.ignore-requires-python``: their scripts run on the image's Python all the
    same, whatever the bound says)."""
    if not isinstance(environment, dict):
        return ()
    names = environment.get(IGNORE_REQUIRES_PYTHON) or []
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise EnvError(f"{where}: environment.{IGNORE_REQUIRES_PYTHON} must be a list of skill names")
    if not names:
        return ()
    from skillctl.registry.refs import NAME_RE  # only when the key is used: this module is a leaf

    for name in names:
        if not NAME_RE.match(name):
            raise EnvError(f"{where}: environment.{IGNORE_REQUIRES_PYTHON}: '{name}' is not a skill name "
                           "(lowercase letters, digits and hyphens)")
    return tuple(dict.fromkeys(names))


def project_declarations(environment: Any, where: str = "skills.yaml") -> Declarations:
    """The ``environment:`` section of a project's skills.yaml (None or missing: nothing)."""
    if environment is None:
        return Declarations()
    if not isinstance(environment, dict):
        raise EnvError(f"{where}: environment must be a mapping with 'python', 'debian' and/or 'indexes' lists")
    unknown = set(environment) - set(ENVIRONMENT_KEYS)
    if unknown:
        raise EnvError(f"{where}: environment: unknown key(s) {', '.join(sorted(map(str, unknown)))}; allowed: "
                       f"{', '.join(ENVIRONMENT_KEYS)}")
    ignored_requires_python(environment, where)  # checked with the rest
    project_isolation(environment, where)
    python: list[Declared] = []
    debian: list[Declared] = []
    for key, out in (("python", python), ("debian", debian)):
        items = environment.get(key) or []
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise EnvError(f"{where}: environment.{key} must be a list of strings")
        for item in items:
            spot = f"{where}: environment.{key}"
            if key == "python":
                out.append(Declared(str(parse_requirement(item, spot)), PROJECT, f"{where} environment.python"))
            elif not DEBIAN_NAME_RE.match(item):
                raise EnvError(f"{spot}: '{item}' is not a Debian package name (lowercase letters, digits, + - .)")
            else:
                out.append(Declared(item, PROJECT, f"{where} environment.debian"))
    return Declarations(tuple(python), (), tuple(debian), {}, project_indexes(environment.get("indexes"), where))


def project_indexes(items: Any, where: str = "skills.yaml") -> tuple[DeclaredIndex, ...]:
    """``environment.indexes``: a list of {url, packages?}; a package pinned to two indexes, a
    URL that is not http(s) or one carrying credentials is refused."""
    from urllib.parse import urlsplit

    from packaging.utils import canonicalize_name

    if items is None:
        return ()
    spot = f"{where}: environment.indexes"
    if not isinstance(items, list):
        raise EnvError(f"{spot} must be a list of {{url: URL, packages: [NAME, ...]}}")
    out: list[DeclaredIndex] = []
    pinned: dict[str, str] = {}
    for n, item in enumerate(items, 1):
        at = f"{spot}[{n}]"
        if not isinstance(item, dict) or not isinstance(item.get("url"), str) or set(item) - {"url", "packages"}:
            raise EnvError(f"{at} must be a mapping with 'url' (a string) and optionally 'packages' (a list of names)")
        url = item["url"].strip().rstrip("/")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise EnvError(f"{at}: '{url}' is not an http(s) URL of a package index")
        if "@" in parts.netloc:
            raise EnvError(f"{at}: the URL carries credentials, and skills.yaml is shared; put them in ~/.netrc "
                           f"(machine {parts.hostname} login USER password TOKEN) and write the URL without them")
        names = item.get("packages") or []
        if not isinstance(names, list) or not all(isinstance(x, str) and _NAME_ONLY.fullmatch(x) for x in names):
            raise EnvError(f"{at}: packages must be a list of distribution names such as 'torch'")
        canonical = tuple(sorted({canonicalize_name(x) for x in names}))
        for name in canonical:
            if name in pinned and pinned[name] != url:
                raise EnvError(f"{at}: {name} is pinned to {pinned[name]} already; a package comes from one index")
            pinned[name] = url
        out.append(DeclaredIndex(url, canonical, PROJECT, f"{where} environment.indexes"))
    return tuple(out)



# ------------------------------------------------------------------------------ isolation

AUTO = "auto"
_SKILL_NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")  # Agent Skills names: also safe as a folder name


@dataclass(frozen=True)
class Isolation:
    """Which skills get a venv of their own instead of sharing the merged one: ``skills``
    named in skills.yaml (``environment.isolate``), ``required`` named for one run
    (``--isolate-env``: each must be a skill of the run), and with ``auto`` every skill the merge
    would downgrade."""

    skills: tuple[str, ...] = ()
    auto: bool = False
    required: tuple[str, ...] = ()

    def __add__(self, other: "Isolation") -> "Isolation":
        return Isolation(tuple(dict.fromkeys(self.skills + other.skills)), self.auto or other.auto,
                         tuple(dict.fromkeys(self.required + other.required)))

    @property
    def named(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.skills + self.required))

    @property
    def empty(self) -> bool:
        return not self.named and not self.auto


def check_skill_name(name: str, where: str) -> str:
    if not isinstance(name, str) or not _SKILL_NAME_RE.match(name):
        raise EnvError(f"{where}: {name!r} is not a skill name (lowercase letters, digits and single hyphens)")
    return name


def project_isolation(environment: Any, where: str = "skills.yaml") -> Isolation:
    """``environment.isolate`` of a project's skills.yaml: a list of skill names, or ``auto``."""
    value = environment.get("isolate") if isinstance(environment, dict) else None
    if value is None:
        return Isolation()
    if value == AUTO:
        return Isolation(auto=True)
    if not isinstance(value, list):
        raise EnvError(f"{where}: environment.isolate must be a list of skill names or 'auto', got {value!r}")
    return Isolation(tuple(check_skill_name(v, f"{where}: environment.isolate") for v in value))
