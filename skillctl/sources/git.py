"""``GitSource``: skills read from git repositories, as hostile input, without a work tree.

    resolve_ref(url, ref)   → the commit a tag, branch or commit names now ("" = default branch)
    discover(spec)          → every skill in the repository (or ``spec.subdir``) at that commit
    resolve(spec)           → the skill named ``spec.name`` there
    fetch(pin)              → exactly the pinned commit's files; IntegrityError if they differ
    newest(spec)            → the skill at the head of the default branch (for ``outdated``)

How a skill is read (each step refuses in one line, before the next runs):

1. ``git ls-remote`` resolves the ref (a name that is both a tag and a branch is refused as ambiguous);
2. ``git fetch --depth 1 --filter=blob:none`` of that one commit: commits and trees, no file data;
3. ``git ls-tree -r -z`` lists the tree: the skill search and ``pack``'s choice of files run on the
   listing (``skillctl.sources.gittree``), so links, submodules, bad names and counts are refused
   before a blob is fetched;
4. one ``git fetch`` of exactly the blobs the chosen skills need, then ``git cat-file
   --batch-check`` for their sizes (object headers only) against ``BundleLimits``, then ``git
   cat-file --batch`` reads them. No checkout ever happens, so no ``.gitattributes`` filter, smudge
   command, ``export-subst`` or end-of-line conversion runs: the files are the committed bytes.
5. The files are held to the bundle rules again (``read_file_parts``), SKILL.md's front matter is
   checked (its ``name`` is the folder's name, as for any skill), and ``tar_digest``/``digest`` are
   those of the bundle ``pack`` would make of them (fixed mtime, so they are the same on every
   machine and day).

Everything git runs with is in ``skillctl.sources.gitcmd`` (no user configuration, no hooks, no
prompts, allowed protocols only, bounded output, deadlines, a cap on what a fetch writes). The
``token`` (or ``SKILLCTL_GIT_TOKEN``) goes only to the repository's own origin, never to a mirror.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import tempfile
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from skillctl.bundle import BundleContents, BundleLimits, BundleRejected, read_file_parts, repack
from skillctl.bundle.canonical import DEFAULT_MTIME
from skillctl.bundle.members import SKILL_FILE, Refused
from skillctl.errors import IntegrityError, SkillctlError, SourceError
from skillctl.protocols import SourcePin, SourceSpec
from skillctl.skill.document import parse_skill_md
from skillctl.skill.ignore import IgnoreRules
from skillctl.skill.model import as_semver
from skillctl.skill.rules import check_front_matter
from skillctl.sources import gittree
from skillctl.sources.gitcmd import (
    DEFAULT_MAX_FETCH_BYTES,
    DEFAULT_TIMEOUT_S,
    MISSING,
    TOO_BIG,
    MiB,
    GitFailed,
    GitRunner,
    GitStore,
    reset_config,
)
from skillctl.sources.gitspec import (
    apply_mirrors,
    check_ref,
    check_subdir,
    check_url,
    is_commit,
    mirrors_from_env,
    url_origin,
)

TOKEN_ENV = "SKILLCTL_GIT_TOKEN"
KIND = "git"
TAG, BRANCH, COMMIT, DEFAULT = "tag", "branch", "commit", "default"
MAX_LISTING_BYTES = 64 * MiB  # a tree listing beyond this is not a skills repository
_LIMIT_RULES = {"max_files", "max_dirs", "max_file_size", "max_total_size", "max_path_length", "max_depth"}
Progress = Callable[[str], None]


class GitTreeRefused(SourceError):
    """A skill in a repository breaks a bundle rule. ``member`` is the path in the repository
    (None for the skill as a whole), ``rule`` the rule's name (as in ``BundleRejected``)."""

    def __init__(self, message: str, member: str | None, rule: str) -> None:
        super().__init__(message)
        self.member = member
        self.rule = rule


@dataclass(frozen=True)
class Ref:
    """What a ref names now: ``commit`` (40 hex), ``kind`` (tag, branch, commit, default) and
    ``name`` (the tag or branch; for the default branch, its name)."""

    commit: str
    kind: str
    name: str

    def describe(self) -> str:
        if self.kind == DEFAULT:
            return f"default branch {self.name}" if self.name else "default branch"
        return f"{self.kind} {self.name or self.commit}"


@dataclass
class Loaded:
    folder: str  # in the repository
    contents: BundleContents | None = None
    description: str = ""
    version: str = ""
    error: SkillctlError | None = None
    notes: list[str] = field(default_factory=list)


class _Remote:
    """One repository, used while its store lock is held: every git command it runs."""

    def __init__(self, source: "GitSource", url: str, repo: Path) -> None:
        self.url = url
        self.fetch_url = apply_mirrors(url, source.mirrors)
        self.shown = url  # how messages name the repository
        if self.fetch_url != url:
            check_url(self.fetch_url, insecure=source.insecure, shown=f"mirror of {url}: {self.fetch_url}")
            self.shown = f"{url} (mirror {self.fetch_url})"
        self.repo = repo
        self.runner = GitRunner(
            home=source.store.home,
            environ=source.environ,
            insecure=source.insecure,
            token=source.token,
            origin=url_origin(url),
            fetch_url=self.fetch_url,
            timeout_s=source.timeout_s,
            max_fetch_bytes=source.max_fetch_bytes,
        )

    def git(self, args: list[str], what: str, **kwargs) -> bytes:
        reset_config(self.repo)  # before every command: no promisor remote, so reads never fetch
        return self.runner.run(args, git_dir=self.repo, what=what, **kwargs).stdout

    # -- refs

    def resolve(self, ref: str) -> Ref:
        if is_commit(ref):
            return Ref(ref, COMMIT, "")
        if ref == "":
            refs, head = self.ls_remote(["HEAD"])
            if "HEAD" not in refs:
                raise SourceError(f"{self.url}: the repository has no default branch; name a tag or branch with @REF")
            return Ref(refs["HEAD"], DEFAULT, head.removeprefix("refs/heads/"))
        if ref.startswith("refs/"):
            names = [ref, f"{ref}^{{}}"]
        else:
            names = [f"refs/tags/{ref}", f"refs/tags/{ref}^{{}}", f"refs/heads/{ref}"]
        refs, _ = self.ls_remote(names)
        tag = next((n for n in names if n.startswith("refs/tags/") and not n.endswith("}") and n in refs), None)
        branch = next((n for n in names if n.startswith("refs/heads/") and n in refs), None)
        if tag and branch and not ref.startswith("refs/"):
            raise SourceError(
                f"{self.url}: {ref!r} is both a tag and a branch; write refs/tags/{ref} or refs/heads/{ref}"
            )
        if tag:
            return Ref(refs.get(f"{tag}^{{}}", refs[tag]), TAG, tag.removeprefix("refs/tags/"))
        if branch:
            return Ref(refs[branch], BRANCH, branch.removeprefix("refs/heads/"))
        if ref.startswith("refs/") and ref in refs:
            return Ref(refs.get(f"{ref}^{{}}", refs[ref]), BRANCH, ref)
        raise SourceError(
            f"{self.url}: no tag or branch named {ref!r}; list them with: git ls-remote {self.url}"
        )

    def ls_remote(self, patterns: list[str]) -> tuple[dict[str, str], str]:
        out = self.git(["ls-remote", "--symref", self.fetch_url, *patterns], f"{self.shown}: listing its refs")
        refs: dict[str, str] = {}
        head = ""
        for line in out.decode("utf-8", "replace").splitlines():
            left, _, name = line.partition("\t")
            if left.startswith("ref: "):
                head = left[len("ref: "):] if name == "HEAD" else head
            elif is_commit(left):
                refs[name] = left
        return refs, head

    # -- objects

    def objects(self, oids: list[str]) -> dict[str, tuple[str, int] | None]:
        """(type, size) of each object from its header (its data is not read), None if absent."""
        if not oids:
            return {}
        out = self.git(["cat-file", "--batch-check"], f"{self.shown}: reading object sizes", stdin=_lines(oids))
        info: dict[str, tuple[str, int] | None] = {}
        for line in out.decode("ascii", "replace").splitlines():
            parts = line.split()
            if len(parts) == 3:
                info[parts[0]] = (parts[1], int(parts[2]))
            elif len(parts) == 2 and parts[1] == "missing":
                info[parts[0]] = None
        return info

    def ensure_commit(self, commit: str, where: str) -> None:
        if self.objects([commit]).get(commit) is None:
            self.git(
                ["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules", "--depth=1",
                 "--filter=blob:none", self.fetch_url, commit],
                f"{where}: fetching commit {commit}",
                fetch=True,
            )
        found = self.objects([commit]).get(commit)
        if found is None or found[0] != "commit":
            raise SourceError(f"{where}: {commit} is not a commit on the server; name a tag, a branch or a commit")

    def listing(self, commit: str, base: str, where: str) -> list[gittree.Entry]:
        tree = f"{commit}:{base}" if base else commit
        try:
            out = self.git(["ls-tree", "-r", "-z", tree], f"{where}: listing the tree", max_stdout=MAX_LISTING_BYTES)
        except GitFailed as exc:
            if base and exc.kind != TOO_BIG:
                raise SourceError(f"{where}: there is no folder {base!r} at commit {commit}; check the path") from None
            raise
        return gittree.parse_listing(out)

    def sizes(self, oids: list[str], where: str) -> dict[str, int]:
        """Sizes of blobs, fetching the missing ones first, in one fetch."""
        info = self.objects(oids)
        missing = [oid for oid in oids if info.get(oid) is None]
        if missing:
            self.git(
                ["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--no-recurse-submodules", "--stdin",
                 self.fetch_url],
                f"{where}: fetching {len(missing)} files",
                stdin=_lines(missing),
                fetch=True,
            )
            info.update(self.objects(missing))
        sizes = {}
        for oid in oids:
            found = info.get(oid)
            if found is None or found[0] != "blob":
                raise SourceError(f"{where}: the server did not send file object {oid}; try again, or report it to the repository's host")
            sizes[oid] = found[1]
        return sizes

    def read(self, sizes: dict[str, int], where: str) -> dict[str, bytes]:
        """The blobs whose sizes were checked, in one ``cat-file --batch``."""
        if not sizes:
            return {}
        oids = list(sizes)
        expected = sum(sizes.values()) + 100 * len(oids)
        out = self.git(["cat-file", "--batch"], f"{where}: reading files", stdin=_lines(oids), max_stdout=expected)
        blobs: dict[str, bytes] = {}
        pos = 0
        view = memoryview(out)
        for oid in oids:
            eol = out.index(b"\n", pos)
            header = out[pos:eol].split()
            size = int(header[2]) if len(header) == 3 else -1
            if header[:2] != [oid.encode(), b"blob"] or size != sizes[oid]:
                raise SourceError(f"{where}: git returned something else for file object {oid}; try again")
            blobs[oid] = bytes(view[eol + 1 : eol + 1 + size])
            pos = eol + 1 + size + 1
        return blobs


def _lines(items: list[str]) -> bytes:
    return "".join(f"{item}\n" for item in items).encode()


class GitSource:
    """Skills from git repositories (``Source`` of kind ``git``); see the module docstring.

    A spec's ``location`` is a repository URL as git takes it: ``parse_git_source(text).url``
    (``SourceSpec("git", loc.url, loc.ref, loc.subdir, name)``); it is checked again here, so a
    lock's URL is held to the same rules as a source string.

    ``cache_dir``: where fetched repositories are kept between uses (one bare repository per URL,
    locked while used, so processes may share it); None keeps them in a private temporary folder
    removed by ``close()``. ``limits`` hold each skill to bundle limits; ``progress`` receives
    notes (a submodule left out, a search bound reached, a skill of a repository refused while
    others were found). ``environ`` (default ``os.environ``) is read for ``SKILLCTL_GIT_TOKEN``,
    ``SKILLCTL_GIT_MIRRORS``, ``SKILLCTL_GIT`` and the network settings git may pass on; nothing
    else of it reaches git.
    """

    kind = KIND

    def __init__(
        self,
        *,
        insecure: bool = False,
        token: str | None = None,
        cache_dir: Path | None = None,
        limits: BundleLimits = BundleLimits(),
        progress: Progress | None = None,
        environ: Mapping[str, str] | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_fetch_bytes: int = DEFAULT_MAX_FETCH_BYTES,
    ) -> None:
        self.environ = dict(os.environ if environ is None else environ)
        self.insecure = insecure
        self.token = token if token is not None else (self.environ.get(TOKEN_ENV) or None)
        if self.token is not None and (not self.token.strip() or any(c in self.token for c in "\r\n")):
            raise SourceError("the git token is empty or holds a line break; give the token alone")
        self.mirrors = mirrors_from_env(self.environ)
        self.limits = limits
        self.progress = progress
        self.timeout_s = timeout_s
        self.max_fetch_bytes = max_fetch_bytes
        if cache_dir is None:
            self.store = GitStore(Path(tempfile.mkdtemp(prefix="skillctl-git-")))
            self._finalizer = weakref.finalize(self, self.store.remove)
        else:
            self.store = GitStore(Path(cache_dir))
            self._finalizer = None

    def close(self) -> None:
        if self._finalizer is not None:
            self._finalizer()

    def __enter__(self) -> "GitSource":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------- the Source protocol

    def resolve_ref(self, url: str, ref: str) -> str:
        """The commit ``ref`` names now in the repository at ``url``."""
        with self._remote(url) as remote:
            return remote.resolve(check_ref(ref, url)).commit

    def discover(self, spec: SourceSpec, *, prereleases: bool = False) -> list[SourcePin]:
        """Every skill in ``spec.subdir`` (or the repository) at the commit ``spec.ref`` names now.
        A skill refused there is left out with a note through ``progress``; SourceError when none
        is left."""
        with self._remote(spec.location) as remote:
            ref, base, where = self._checkout(remote, spec)
            entries = remote.listing(ref.commit, base, where)
            search = gittree.find_skill_folders(entries)
            self._note(where, search.notes)
            if not search.folders:
                raise SourceError(f"{where}: no skills found: no folder holds a SKILL.md")
            loaded = self._load(remote, entries, base, search.folders, where)
        pins = []
        for item in loaded:
            if item.error is not None:
                if len(loaded) == 1:
                    raise item.error
                if self.progress is not None:
                    self.progress(f"left out: {item.error}")
                continue
            pins.append(self._pin(spec, ref, item))
        if not pins:
            raise SourceError(f"{where}: none of its {len(loaded)} skills can be installed (first: {loaded[0].error})")
        return pins

    def resolve(self, spec: SourceSpec, *, prereleases: bool = False) -> SourcePin:
        """The skill named ``spec.name`` at the commit ``spec.ref`` names now: found in the folder of
        that name (searched in ``spec.subdir``), or in ``spec.subdir`` itself when it is the skill."""
        if not spec.name:
            raise SourceError(f"{spec.location}: which skill? give its name (the repository may hold several)")
        with self._remote(spec.location) as remote:
            ref, base, where = self._checkout(remote, spec)
            return self._pin(spec, ref, self._find(remote, ref, base, spec.name, where))

    def fetch(self, pin: SourcePin) -> BundleContents:
        """The files of ``pin.revision`` in ``pin.subdir``, checked, and refused with
        IntegrityError unless their ``tar_digest`` is the pinned one. A commit the server no
        longer has (history rewritten) is one line saying so, and when the ref now names other
        files, an IntegrityError with both digests."""
        spec = pin.spec
        if spec.kind != KIND:
            raise SourceError(f"skill {pin.name}: a {spec.kind} pin given to the git source")
        if not is_commit(pin.revision):
            raise SourceError(f"skill {pin.name}: the lock's git revision {pin.revision!r} is not a 40-hex commit; run skillctl lock again")
        subdir = check_subdir(pin.subdir, f"skill {pin.name}")
        ref_text = _ref_text(pin)
        with self._remote(spec.location) as remote:
            where = f"skill {pin.name} ({spec.location}, {ref_text}, commit {pin.revision})"
            try:
                remote.ensure_commit(pin.revision, where)
            except GitFailed as exc:
                if exc.kind != MISSING:
                    raise
                self._gone(remote, pin, ref_text)
            item = self._load_one(remote, pin.revision, subdir, where)
        if item.error is not None:
            raise item.error
        assert item.contents is not None
        if item.contents.name != pin.name:
            raise IntegrityError(f"{where}: the skill there is named {item.contents.name!r}, not {pin.name!r}")
        if item.contents.tar_digest != pin.tar_digest:
            raise IntegrityError(
                f"{where}: the files differ from the lock (locked {pin.tar_digest}, fetched {item.contents.tar_digest}); "
                "do not install them — run skillctl update if the change is expected"
            )
        return item.contents

    def newest(self, spec: SourceSpec) -> SourcePin | None:
        """The skill ``spec.name`` at the head of the remote's default branch, whatever ``spec.ref`` says."""
        return self.resolve(SourceSpec(KIND, spec.location, "", spec.subdir, spec.name))

    # ---------------------------------------------------------------- steps

    @contextlib.contextmanager
    def _remote(self, url: str) -> Iterator[_Remote]:
        url = check_url(url, insecure=self.insecure)
        with self.store.locked(url) as repo:
            yield _Remote(self, url, repo)

    def _checkout(self, remote: _Remote, spec: SourceSpec) -> tuple[Ref, str, str]:
        """Resolve ``spec.ref`` and fetch its commit's trees: (ref, subdir, how messages name it)."""
        if spec.kind != KIND:
            raise SourceError(f"{spec.location}: a {spec.kind} source given to the git source")
        ref = remote.resolve(check_ref(spec.ref, spec.location))
        base = check_subdir(spec.subdir, spec.location)
        parts = ([] if ref.kind == COMMIT else [ref.describe()]) + [f"commit {ref.commit[:12]}"] + ([base] if base else [])
        where = f"{remote.shown} ({', '.join(parts)})"
        remote.ensure_commit(ref.commit, where)
        return ref, base, where

    def _find(self, remote: _Remote, ref: Ref, base: str, name: str, where: str) -> Loaded:
        entries = remote.listing(ref.commit, base, where)
        search = gittree.find_skill_folders(entries)
        self._note(where, search.notes)
        named = [f for f in search.folders if posixpath.basename(posixpath.join(base, f)) == name]
        if not named and search.folders == [""]:
            named = [""]  # the folder searched is the skill itself; its SKILL.md says its name
        if len(named) > 1:
            raise SourceError(f"{where}: {len(named)} skills are named {name!r} ({', '.join(named[:5])}); give the folder with path")
        if not named:
            found = ", ".join(posixpath.basename(f) or "(top)" for f in search.folders[:20]) or "none"
            raise SourceError(f"{where}: no skill named {name!r}; skills there: {found}")
        item = self._load(remote, entries, base, named, where)[0]
        if item.error is not None:
            raise item.error
        assert item.contents is not None
        if item.contents.name != name:
            raise SourceError(f"{where}: the skill in {item.folder or 'the top folder'!r} is named {item.contents.name!r}, not {name!r}")
        return item

    def _load_one(self, remote: _Remote, commit: str, subdir: str, where: str) -> Loaded:
        entries = remote.listing(commit, subdir, where)
        if not any(e.path == SKILL_FILE for e in entries):
            return Loaded(subdir, error=SourceError(f"{where}: there is no SKILL.md in {subdir or 'the top folder'!r}"))
        return self._load(remote, entries, subdir, [""], where)[0]

    def _gone(self, remote: _Remote, pin: SourcePin, ref_text: str) -> None:
        """The pinned commit is not on the server any more: say so, and compare what the ref names now."""
        gone = f"skill {pin.name}: commit {pin.revision} ({ref_text}) is no longer on {remote.url}"
        ref_kind = pin.extra.get("ref_kind")
        if ref_kind == COMMIT or (ref_kind is None and is_commit(pin.spec.ref)):
            raise SourceError(f"{gone} (history was rewritten); pin another commit with skillctl update {pin.name}")
        try:
            now = remote.resolve(pin.spec.ref)
            remote.ensure_commit(now.commit, gone)
            item = self._load_one(remote, now.commit, pin.subdir, gone)
        except SourceError:
            raise SourceError(f"{gone}, and {ref_text} no longer holds the skill; the history was rewritten") from None
        if item.contents is None:
            raise SourceError(f"{gone}, and {ref_text} no longer holds the skill; the history was rewritten")
        if item.contents.tar_digest != pin.tar_digest:
            raise IntegrityError(
                f"{gone}: {ref_text} now points at {now.commit} with other files (locked {pin.tar_digest}, "
                f"now {item.contents.tar_digest}); run skillctl update {pin.name} only if you trust the change"
            )
        raise SourceError(
            f"{gone}; {ref_text} now points at {now.commit} with the same files: run skillctl update {pin.name} to pin that commit"
        )

    def _load(self, remote: _Remote, entries: list[gittree.Entry], base: str, folders: list[str], where: str) -> list[Loaded]:
        """The skills in ``folders`` (relative to ``base``) read and checked, in two fetches at most:
        the ``.skillignore`` files, then every file the skills need."""
        groups = gittree.group_by_folder(entries, folders)
        results = {f: Loaded(posixpath.join(base, f) if f else base) for f in folders}
        ignores = {f: gittree.ignore_entry(es) for f, es in groups.items()}
        ignore_oids = sorted({e.oid for e in ignores.values() if e is not None})
        ignore_text: dict[str, bytes] = {}
        if ignore_oids:
            sizes = remote.sizes(ignore_oids, where)
            small = {o: s for o, s in sizes.items() if s <= self.limits.max_file_size}
            ignore_text = remote.read(small, where)
        plans: dict[str, list[gittree.Entry]] = {}
        for folder, group in groups.items():
            item = results[folder]
            try:
                rules = _ignore_rules(ignores[folder], ignore_text, item.folder)
                chosen = gittree.choose_files(group, rules)
                item.notes = chosen.notes
                gittree.precheck(_folder_name(item.folder), chosen.files, self.limits)
                plans[folder] = chosen.files
            except Refused as refused:
                item.error = self._refusal(where, item.folder, refused)
            except SourceError as exc:
                item.error = exc
        oids = sorted({e.oid for files in plans.values() for e in files})
        sizes = remote.sizes(oids, where) if oids else {}
        for folder in list(plans):
            item = results[folder]
            try:
                gittree.check_sizes(_folder_name(item.folder), plans[folder], sizes, self.limits)
            except Refused as refused:
                item.error = self._refusal(where, item.folder, refused)
                del plans[folder]
        blobs = remote.read({e.oid: sizes[e.oid] for files in plans.values() for e in files}, where)
        for folder, files in plans.items():
            item = results[folder]
            self._note(where, item.notes)
            try:
                self._build(item, files, blobs, where)
            except SourceError as exc:
                item.error = exc
        return [results[f] for f in folders]

    def _build(self, item: Loaded, files: list[gittree.Entry], blobs: dict[str, bytes], where: str) -> None:
        skill_md = next(blobs[e.oid] for e in files if e.path == SKILL_FILE)
        shown = posixpath.join(item.folder, SKILL_FILE)
        doc, diags = parse_skill_md(skill_md, shown)
        folder_name = _folder_name(item.folder)
        if doc is not None:
            diags += check_front_matter(doc, folder_name, shown)
        errors = [d for d in diags if d.severity == "error"]
        if doc is None or errors:
            first = errors[0].format() if errors else "SKILL.md cannot be read"
            raise SourceError(f"{where}: the skill in {item.folder or 'the top folder'!r} is invalid: {first}")
        name = doc.metadata["name"]
        executables = {e.path for e in files if gittree.FILE_MODES[e.mode]}
        try:
            contents = read_file_parts(
                ((f"{name}/{e.path}", blobs[e.oid]) for e in files),
                lambda rel, _data: rel in executables,
                limits=self.limits,
                source=where,
            )
        except BundleRejected as exc:
            raise self._refusal(where, item.folder, gittree.in_skill(exc.refused, name)) from None
        packed = repack(contents, mtime=DEFAULT_MTIME)
        item.contents = BundleContents(
            contents.name, contents.files, contents.executables, contents.dirs, packed.digest, packed.tar_digest, packed.size
        )
        item.description = doc.metadata.get("description", "")
        metadata = doc.metadata.get("metadata") or {}
        version = metadata.get("version") if isinstance(metadata, dict) else None
        item.version = as_semver(version) if isinstance(version, str) else ""

    def _refusal(self, where: str, folder: str, refused: Refused) -> GitTreeRefused:
        """``refused`` (its member a path in the skill) as one line naming the path in the repository."""
        member = None if refused.member is None else posixpath.join(folder, refused.member)
        shown = f"'{_printable(member)}'" if member is not None else f"the skill in '{folder or '.'}'"
        hint = "raise the limit if this is intended" if refused.rule in _LIMIT_RULES else "ask the repository's maintainers to fix it"
        return GitTreeRefused(f"{where}: {shown}: {refused.what} (rule: {refused.rule}); {hint}", member, refused.rule)

    def _pin(self, spec: SourceSpec, ref: Ref, item: Loaded) -> SourcePin:
        contents = item.contents
        assert contents is not None
        extra = {"ref_kind": ref.kind}
        if ref.kind in (TAG, BRANCH, DEFAULT) and ref.name:
            extra["ref_name"] = ref.name
        return SourcePin(
            spec=SourceSpec(KIND, check_url(spec.location, insecure=self.insecure), spec.ref, spec.subdir, contents.name),
            name=contents.name,
            version=item.version,
            revision=ref.commit,
            digest=contents.digest,
            tar_digest=contents.tar_digest,
            size=contents.size,
            subdir=item.folder,
            description=item.description,
            extra=extra,
        )

    def _note(self, where: str, notes: list[str]) -> None:
        if self.progress is not None:
            for note in notes:
                self.progress(f"{where}: {note}")


def _folder_name(folder: str) -> str | None:
    return posixpath.basename(folder) or None


def _printable(text: str) -> str:
    """A path as one printable line: undecodable bytes and control characters as ``\\xNN``."""
    text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)


def _ignore_rules(entry: gittree.Entry | None, texts: dict[str, bytes], folder: str) -> IgnoreRules:
    """``.skillignore`` as ``pack`` reads it: UTF-8 text in gitignore syntax."""
    if entry is None:
        return IgnoreRules(None)
    raw = texts.get(entry.oid)
    if raw is None:
        raise GitTreeRefused(f"{folder}/.skillignore is over the size limit; shorten it", posixpath.join(folder, entry.path), "max_file_size")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SourceError(f"{folder}/.skillignore is not UTF-8 text; the skill cannot be packed as it is") from None
    import pathspec  # only for skills that have one

    return IgnoreRules(pathspec.GitIgnoreSpec.from_lines(text.splitlines()))


def _ref_text(pin: SourcePin) -> str:
    kind = pin.extra.get("ref_kind")
    ref = pin.spec.ref
    if kind == DEFAULT or (kind is None and not ref):
        name = pin.extra.get("ref_name")
        return f"default branch {name}" if name else "default branch"
    if kind in (TAG, BRANCH):
        return f"{kind} {ref}"
    return f"ref {ref}" if ref and not is_commit(ref) else "a pinned commit"

