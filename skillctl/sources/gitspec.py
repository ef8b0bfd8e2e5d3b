"""Git source strings, parsed strictly, and the mirrors that say where their bytes are fetched.

Accepted shapes (REF a tag, a branch or a 40-hex commit; left out: the remote's default branch):

    github:OWNER/REPO[/PATH…][@REF]             https://github.com/OWNER/REPO.git
    gitlab:GROUP/REPO[/PATH…][@REF]             https://gitlab.com/GROUP/REPO.git
    gitlab:GROUP/SUB/…/REPO[//PATH…][@REF]      a GitLab subgroup: ``//`` ends the repository
    git+https://HOST[:PORT]/REPO[@REF][#path=PATH]
    git+ssh://[USER@]HOST[:PORT]/REPO[@REF][#path=PATH]
    git+file:///ABSOLUTE/REPO[@REF][#path=PATH]
    git+git://… and git+http://…                only with ``insecure=True`` (``--insecure``)

REF is what follows the last ``@`` of the repository part (a path holding ``@`` must be given as
``#path=``). Every part is checked before git sees it: a ref or URL that could read as an option
(``-…``), control characters, credentials in an http(s) URL (they would end up in the lock: give a
token instead), ``..`` or ``.`` in a path, and any other scheme are refused in one line that shows
the accepted shapes.

Mirrors (``SKILLCTL_GIT_MIRRORS``): whitespace-separated ``PREFIX=TARGET`` pairs, e.g.
``https://github.com/=file:///srv/mirrors/github/``. A URL starting with PREFIX is fetched from
TARGET plus the rest; the longest prefix wins. Both sides end with ``/`` (so ``https://github.com``
cannot also capture ``https://github.com.example.net``). Mirrors change only where bytes come from:
a lock records the original URL, so it works with or without the mirror, and the fetched scheme
must still be allowed (a ``git://`` mirror needs ``insecure``). For air-gapped teams, and for the
tests, which map ``github:`` to a loopback ``git daemon``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from skillctl.bundle.limits import BundleLimits
from skillctl.bundle.paths import member_path_problem
from skillctl.errors import ConfigError, SourceError

MIRRORS_ENV = "SKILLCTL_GIT_MIRRORS"
SECURE_SCHEMES = ("https", "ssh", "file")
INSECURE_SCHEMES = ("git", "http")
SHORTHANDS = {"github": "https://github.com", "gitlab": "https://gitlab.com"}

ACCEPTED = (
    "use github:OWNER/REPO[/PATH][@REF], gitlab:GROUP/REPO[//PATH][@REF], "
    "or git+https://HOST/REPO[@REF][#path=PATH] (also git+ssh:// and git+file:///)"
)

_COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")
_GITHUB_OWNER_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$")
_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*$")  # a repository or group name
_REF_FORBIDDEN = set(" ~^:?*[\\") | {chr(c) for c in range(0x20)} | {"\x7f"}
_MAX_REF = 255
# Generous for a path inside a repository; the skill's own files are held to BundleLimits.
_SUBDIR_LIMITS = BundleLimits(max_path_length=1024, max_depth=64)


@dataclass(frozen=True)
class GitLocation:
    """A parsed git source: ``url`` as git takes it (``https://…``, ``ssh://…``, ``file:///…``),
    ``ref`` ("" for the default branch), ``subdir`` the folder inside the repository ("" for all)."""

    url: str
    ref: str = ""
    subdir: str = ""

    def __str__(self) -> str:
        ref = f"@{self.ref}" if self.ref else ""
        path = f"#path={self.subdir}" if self.subdir else ""
        return f"{self.url}{ref}{path}"


def is_git_source(text: str) -> bool:
    """Whether ``text`` is meant as a git source (cheap: its prefix only; parsing may still refuse it)."""
    return text.startswith(("github:", "gitlab:", "git+"))


def is_commit(ref: str) -> bool:
    return bool(_COMMIT_RE.match(ref))


def masked(text: str) -> str:
    """``text`` with the credentials of any URL in it replaced by ``***`` (an ssh user name stays):
    a refusal must not print the secret it refuses."""

    def mask(m: re.Match[str]) -> str:
        userinfo = m.group(2)
        keep = m.group(1).endswith("ssh://") and ":" not in userinfo
        return f"{m.group(1)}{userinfo if keep else '***'}@"

    return re.sub(r"([a-z+]*://)([^/@]*)@", mask, text)


def _refuse(text: str, why: str) -> SourceError:
    return SourceError(f"git source {masked(text)!r}: {why}; {ACCEPTED}")


def ref_problem(ref: str) -> str | None:
    """Why ``ref`` is not a usable tag, branch or commit name (git's ``check-ref-format`` rules,
    plus: no leading ``-``, so it can never read as an option), or None."""
    if not ref:
        return "the ref after '@' is empty"
    if len(ref) > _MAX_REF:
        return f"the ref is {len(ref)} characters long, over {_MAX_REF}"
    if ref.startswith("-"):
        return f"the ref {ref!r} starts with '-'"
    if any(c in _REF_FORBIDDEN for c in ref):
        return f"the ref {ref!r} holds a space, a control character or one of ~^:?*[\\"
    parts = ref.split("/")
    if ref == "@" or "@{" in ref or ".." in ref or any(not p or p.startswith(".") or p.endswith(".lock") for p in parts):
        return f"the ref {ref!r} is not a valid git ref name"
    if ref.endswith("."):
        return f"the ref {ref!r} ends with '.'"
    return None


def subdir_problem(subdir: str) -> str | None:
    """Why ``subdir`` cannot name a folder inside a repository (the bundle path rules: no ``..``,
    ``.``, empty parts, backslashes, ``:`` or control characters), or None. "" is the whole repository."""
    if subdir == "":
        return None
    problem = member_path_problem(subdir, _SUBDIR_LIMITS)
    return None if problem is None else f"the path {subdir!r} is refused ({problem.what})"


def check_ref(ref: str, where: str) -> str:
    """``ref`` when it is usable; SourceError naming ``where`` otherwise ("" is the default branch)."""
    if ref:
        problem = ref_problem(ref)
        if problem is not None:
            raise SourceError(f"{where}: {problem}; give a tag, a branch or a full 40-hex commit")
    return ref


def check_subdir(subdir: str, where: str) -> str:
    subdir = subdir.strip("/")
    problem = subdir_problem(subdir)
    if problem is not None:
        raise SourceError(f"{where}: {problem}; give a folder inside the repository, like skills/pdf")
    return subdir


def _split_ref(text: str, body: str) -> tuple[str, str]:
    head, at, ref = body.rpartition("@")
    if not at:
        return body, ""
    problem = ref_problem(ref)
    if problem is not None:
        raise _refuse(text, problem)
    return head, ref


def _parse_shorthand(text: str, kind: str, body: str) -> GitLocation:
    body, ref = _split_ref(text, body)
    if "//" in body:
        if kind != "gitlab":
            raise _refuse(text, "'//' separates a GitLab subgroup repository from its path; github: has no subgroups")
        repo_part, _, subdir = body.partition("//")
        names = repo_part.split("/")
    else:
        parts = body.split("/")
        names, subdir = parts[:2], "/".join(parts[2:])
    if len(names) < 2 or any(not _NAME_RE.match(n) or n.endswith(".") for n in names):
        raise _refuse(text, f"expected {kind}:OWNER/REPO with plain names")
    if kind == "github" and (len(names) != 2 or not _GITHUB_OWNER_RE.match(names[0])):
        raise _refuse(text, "a GitHub owner is letters, digits and '-'")
    problem = subdir_problem(subdir.strip("/"))
    if problem is not None:
        raise _refuse(text, problem)
    repo = "/".join(names)
    suffix = "" if repo.endswith(".git") else ".git"
    return GitLocation(f"{SHORTHANDS[kind]}/{repo}{suffix}", ref, subdir.strip("/"))


def _parse_url(text: str, body: str, insecure: bool) -> GitLocation:
    base, hashmark, fragment = body.partition("#")
    subdir = ""
    if hashmark:
        key, eq, value = fragment.partition("=")
        if key != "path" or not eq:
            raise _refuse(text, f"the fragment '#{fragment}' is not '#path=PATH'")
        subdir = value.strip("/")
        problem = subdir_problem(subdir)
        if problem is not None:
            raise _refuse(text, problem)
    scheme, sep, rest = base.partition("://")
    if not sep:
        raise _refuse(text, "not a URL")
    netloc, slash, path = rest.partition("/")
    path, ref = _split_ref(text, slash + path)  # '@' in the host part is a user name, not a ref
    return GitLocation(check_url(f"{scheme}://{netloc}{path}", insecure=insecure, shown=text), ref, subdir)


def check_url(url: str, *, insecure: bool, shown: str | None = None) -> str:
    """``url`` (a repository address as git takes it: ``https://``, ``ssh://``, ``file:///``, or
    ``git://``/``http://`` with ``insecure``) when skillctl may fetch it; SourceError otherwise.
    Also applied to a lock's URL and to a mirror's target before git sees them."""
    shown = url if shown is None else shown
    if any(c.isspace() or ord(c) < 0x20 or ord(c) == 0x7F for c in url):
        raise _refuse(shown, "it holds white space or a control character")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError as exc:
        raise _refuse(shown, f"not a URL ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme in INSECURE_SCHEMES and not insecure:
        raise SourceError(
            f"git source {masked(shown)!r}: {scheme}:// is neither encrypted nor authenticated; "
            "use git+https:// or git+ssh://, or pass --insecure to fetch it anyway"
        )
    if scheme not in SECURE_SCHEMES + INSECURE_SCHEMES:
        raise _refuse(shown, f"the scheme {parts.scheme or '(none)'!r} is not one skillctl fetches from")
    if parts.query or parts.fragment:
        raise _refuse(shown, "a query ('?…') or fragment ('#…') is not part of a repository address")
    if scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise _refuse(shown, "a file URL names no host: git+file:///absolute/path")
    else:
        if not parts.hostname:
            raise _refuse(shown, "the URL names no host")
        if "@" in parts.netloc and scheme != "ssh":
            raise SourceError(
                f"git source {masked(shown)!r}: credentials in the URL would be written into skills.lock; "
                "remove them and give a token with SKILLCTL_GIT_TOKEN or --token-stdin"
            )
        if parts.password is not None:
            raise _refuse(shown, "an ssh URL carries no password (use your ssh agent or keys)")
    path = parts.path
    if not path.strip("/") or not path.startswith("/"):
        raise _refuse(shown, "the URL names no repository path")
    if "//" in path or any(seg in (".", "..") for seg in path.split("/")):
        raise _refuse(shown, "the repository path holds '.', '..' or an empty part")
    netloc = parts.netloc if scheme != "file" else ""
    return f"{scheme}://{netloc}{path}"


def parse_git_source(text: str, *, insecure: bool = False) -> GitLocation:
    """``text`` (one of the shapes in this module's docstring) as a ``GitLocation``; SourceError in
    one line saying what is wrong and which shapes are accepted."""
    if not isinstance(text, str) or not text:
        raise SourceError(f"empty git source; {ACCEPTED}")
    if any(c.isspace() or ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        raise _refuse(text, "it holds white space or a control character")
    kind, colon, body = text.partition(":")
    if colon and kind in SHORTHANDS:
        return _parse_shorthand(text, kind, body)
    if text.startswith("git+"):
        return _parse_url(text, text[len("git+"):], insecure)
    if text.startswith(("https://", "http://", "ssh://", "file://", "git://")):
        raise _refuse(text, f"a repository URL starts with 'git+' (git+{text.partition('://')[0]}://…)")
    if re.match(r"^[\w.-]+@[\w.-]+:", text):
        raise _refuse(text, "scp-style addresses are not accepted; write git+ssh://USER@HOST/PATH")
    raise _refuse(text, "not a git source")


# ----------------------------------------------------------------------------- mirrors


@dataclass(frozen=True)
class Mirror:
    prefix: str
    target: str


def parse_mirrors(text: str, *, where: str = MIRRORS_ENV) -> tuple[Mirror, ...]:
    """``PREFIX=TARGET`` pairs separated by white space; ConfigError naming the bad pair."""
    mirrors = []
    for pair in text.split():
        prefix, eq, target = pair.partition("=")
        if not eq or "://" not in prefix or "://" not in target:
            raise ConfigError(f"{where}: {pair!r} is not PREFIX=TARGET (e.g. https://github.com/=file:///srv/mirrors/github/)")
        if not prefix.endswith("/") or not target.endswith("/"):
            raise ConfigError(f"{where}: {pair!r}: end both sides with '/', so a prefix cannot capture another host")
        mirrors.append(Mirror(prefix, target))
    return tuple(sorted(mirrors, key=lambda m: -len(m.prefix)))


def mirrors_from_env(environ: Mapping[str, str]) -> tuple[Mirror, ...]:
    return parse_mirrors(environ.get(MIRRORS_ENV, ""))


def apply_mirrors(url: str, mirrors: tuple[Mirror, ...]) -> str:
    """Where ``url`` is fetched from: the longest matching mirror's target plus the rest, or ``url``."""
    for mirror in mirrors:  # longest prefix first
        if url.startswith(mirror.prefix):
            return mirror.target + url[len(mirror.prefix):]
    return url


def url_origin(url: str) -> str:
    """``scheme://host[:port]`` of ``url``, lower-cased, the scheme's default port left out: what a
    token is bound to."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    default = {"https": 443, "http": 80, "ssh": 22, "git": 9418}.get(scheme)
    return f"{scheme}://{host}" + (f":{port}" if port is not None and port != default else "")


def url_scheme(url: str) -> str:
    return urlsplit(url).scheme.lower()
