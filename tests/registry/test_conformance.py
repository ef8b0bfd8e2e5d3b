"""The ``Registry`` contract, one suite for every backend: the same assertions against the
folder registry, an OCI registry (Debian's real ``docker-registry``), a read-only registry, a
well-known site (built by ``site build`` and served over HTTP on loopback), a private one
(``skillctl serve`` with keys, read with a read key) and an MCP server (``skillctl mcp serve
--registry`` over stdio, read by ``McpRegistry``).

To add a backend: write a ``Backend`` for it in ``backend()`` below (how to open a client on
fresh storage, and how to put bundles there) and add its name to ``BACKENDS``. Reading is checked
for every backend; writes only for backends whose ``capabilities`` include them — a capability a
backend lacks must raise ``UnsupportedError`` and change nothing. Backend-specific behaviour
(SQLite, tags, auth) stays in ``test_local.py`` and ``tests/oci/``.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

import pytest

from skillctl.bundle import BUNDLE, read_artifact, read_bundle, sha256_digest
from skillctl.errors import ImmutableVersionError, IntegrityError, NotFoundError, RegistryError, UnsupportedError, VersionError
from skillctl.protocols import GC, PUBLISH, RECORD_LOCKS, REMOVE, SIGN, WRITE_CAPABILITIES, YANK, Registry, RegistryReader, ResolvedSkill
from skillctl.registry import open_registry
from skillctl.registry.local import LocalRegistry
from skillctl.registry.prepare import PreparedBundle
from skillctl.registry.readonly import ReadOnlyRegistry

from .helpers import prepared

ID_RE = re.compile(r"^skill_[0-9a-f]{24}$")
SEEDED = {"demo": ["0.9.0", "1.0.0", "1.2.0", "1.10.0", "2.0.0-rc.1"], "other": ["1.0.0"]}


class ReadOnlyView(ReadOnlyRegistry):
    """A read-only registry made of real parts: reads go to a folder registry, writes are refused
    by ``ReadOnlyRegistry`` — what a web index or a mirror someone else fills looks like."""

    def __init__(self, inner: LocalRegistry) -> None:
        self.inner = inner
        self.url = f"readonly+{inner.url}"

    def resolve(self, ref, *, prereleases=False, index_url=""):
        return self.inner.resolve(ref, prereleases=prereleases)

    def resolve_record(self, ref, *, prereleases=False):
        return self.inner.resolve_record(ref, prereleases=prereleases)

    def fetch(self, skill):
        return self.inner.fetch(skill)

    def versions(self, name_or_id):
        return self.inner.versions(name_or_id)

    def list_skills(self):
        return self.inner.list_skills()

    def get_skill(self, name_or_id):
        return self.inner.get_skill(name_or_id)

    def verify(self):
        return self.inner.verify()

    def signatures(self, skill):  # a read-only registry may serve the signatures it has
        return self.inner.signatures(skill)

    def close(self) -> None:
        self.inner.close()

    def __enter__(self) -> "ReadOnlyView":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class Backend:
    """How the suite reaches one backend."""

    open: Callable[[], Registry]  # a new client on this test's storage (shares no cache with others)
    seed: Callable[[Sequence[PreparedBundle]], None]  # make these versions exist (writable or not)
    # False for a well-known site: it serves its own artifact of the skill's files (files at the
    # archive root), not the bundle, and publishes no dates, sizes or parsed front matter.
    serves_bundles: bool = True
    # A client that can write this storage's signatures; None when the backend keeps none.
    writer: Callable[[], Registry] | None = None
    # True for an MCP server: it serves one version of each skill (the latest release) and names a
    # skill by its SKILL.md URI, not a skill_… id; what needs older versions is skipped for it.
    one_version: bool = False


BACKENDS = [
    "folder",
    pytest.param("oci", marks=pytest.mark.requires_registry),
    "read-only",
    "well-known",
    "keyed-site",
    "mcp",
]


def _publish_all(reg: Registry, bundles: Sequence[PreparedBundle]) -> None:
    with reg:
        for b in bundles:
            reg.publish(b)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    kind = request.param
    if kind == "folder":
        path = tmp_path / "registry"
        open_registry(str(path), create=True).close()  # made once, as publish makes it; every open after reads it
        return Backend(lambda: open_registry(str(path)), lambda bundles: _publish_all(open_registry(str(path)), bundles),
                       writer=lambda: open_registry(str(path)))
    if kind == "oci":
        url = request.getfixturevalue("registry_server").url(request.getfixturevalue("ns"))
        return Backend(lambda: open_registry(url, insecure=True), lambda bundles: _publish_all(open_registry(url, insecure=True), bundles),
                       writer=lambda: open_registry(url, insecure=True))
    if kind == "well-known":
        return _site_backend(request, tmp_path)
    if kind == "keyed-site":
        return _keyed_site_backend(request, tmp_path)
    if kind == "mcp":
        return _mcp_backend(tmp_path)
    path = tmp_path / "registry"
    return Backend(lambda: ReadOnlyView(LocalRegistry(path)), lambda bundles: _publish_all(LocalRegistry(path), bundles),
                   writer=lambda: LocalRegistry(path))


def _site_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """A folder registry as the publisher, its site in a folder served on loopback: seeding
    publishes there and rebuilds the site; each client gets a cache of its own."""
    from skillctl.registry.wellknown import WellKnownRegistry
    from skillctl.registry.wellknown.site import build_site
    from wellknown.server import SiteServer

    source, site = tmp_path / "publisher", tmp_path / "site"
    with LocalRegistry(source) as reg:
        build_site(site, reg)  # an empty site still has an index
    server = SiteServer(site).start()
    request.addfinalizer(server.stop)
    clients = iter(range(1000))

    def seed(bundles: Sequence[PreparedBundle]) -> None:
        _publish_all(LocalRegistry(source), bundles)
        with LocalRegistry(source) as reg:
            build_site(site, reg)

    def open_client() -> Registry:
        return WellKnownRegistry.from_url(server.url, insecure=True, cache_dir=str(tmp_path / f"cache{next(clients)}"))

    return Backend(open_client, seed, serves_bundles=False)


def _keyed_site_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """``skillctl serve`` over a folder registry, serving nothing without a key; clients read it
    with a read key. ``refresh_s=0``: what seeding publishes behind the server's back shows at
    the next request."""
    import importlib.util

    from sandbox_fixtures import on_ci

    if not on_ci() and any(importlib.util.find_spec(m) is None for m in ("starlette", "uvicorn")):
        pytest.skip("the serve extra is not installed (pip install -e '.[serve,test]')")
    from skillctl.registry.wellknown import WellKnownRegistry
    from skillctl.serve.app import ServeSettings
    from skillctl.serve.keys import READ, add_key
    from skillctl.serve.server import Listen, SkillServer

    source = tmp_path / "publisher"
    LocalRegistry(source).close()
    keys = tmp_path / "keys.json"
    key, _ = add_key(keys, "reader", frozenset({READ}))
    server = SkillServer(ServeSettings(open_registry=lambda: open_registry(str(source)), registry_url=str(source), keys=keys,
                                       refresh_s=0, access_log=False), Listen(port=0, shutdown_timeout_s=5))
    server.start()
    request.addfinalizer(server.stop)
    clients = iter(range(1000))

    def open_client() -> Registry:
        return WellKnownRegistry.from_url(server.url, insecure=True, token=key, cache_dir=str(tmp_path / f"cache{next(clients)}"))

    return Backend(open_client, lambda bundles: _publish_all(LocalRegistry(source), bundles), serves_bundles=False)


def _mcp_backend(tmp_path: Path) -> Backend:
    """``skillctl mcp serve --registry`` over a folder registry, on stdio; a client spawns it on
    first use, so it serves what seeding published before."""
    import shlex
    import sys

    source = tmp_path / "publisher"
    LocalRegistry(source).close()
    url = "mcp+stdio:" + shlex.join([sys.executable, "-m", "skillctl", "mcp", "serve", "--registry", str(source)])
    return Backend(lambda: open_registry(url), lambda bundles: _publish_all(LocalRegistry(source), bundles), one_version=True)


def needs_versions(backend: Backend) -> None:
    if backend.one_version:
        pytest.skip("an MCP server serves one version of each skill (see test_one_version_backends_serve_the_latest_release)")


def one_of(backend: Backend) -> str:
    """A ref to a version every backend serves: an old one where there are several."""
    return "demo" if backend.one_version else "demo@1.0.0"


@pytest.fixture(scope="module")
def bundles(tmp_path_factory) -> dict[tuple[str, str], PreparedBundle]:
    root = tmp_path_factory.mktemp("conformance-src")
    return {(name, v): prepared(root, name, v) for name, versions in SEEDED.items() for v in versions}


@pytest.fixture
def reg(backend: Backend, bundles) -> Iterator[Registry]:
    """A client on a registry holding every SEEDED version (put there by another client)."""
    backend.seed(list(bundles.values()))
    registry = backend.open()
    try:
        yield registry
    finally:
        registry.close()


@pytest.fixture
def empty(backend: Backend) -> Iterator[Registry]:
    registry = backend.open()
    try:
        yield registry
    finally:
        registry.close()


def needs(reg: RegistryReader, capability: str) -> None:
    if capability not in reg.capabilities:
        pytest.skip(f"the backend lacks {capability!r} (see test_missing_capabilities_raise_unsupported_and_change_nothing)")


# --------------------------------------------------------------------------------- reading


def test_it_is_a_registry_and_declares_its_capabilities(reg: Registry) -> None:
    assert isinstance(reg, Registry)
    assert reg.capabilities <= WRITE_CAPABILITIES
    assert isinstance(reg.url, str) and reg.url


def _same_files(reg: Registry, skill: ResolvedSkill, bundle: PreparedBundle) -> bool:
    """The artifact ``reg`` serves for ``skill`` holds exactly the bundle's files and modes."""
    served = read_artifact(reg.fetch(skill), skill.artifact_type, expected_name=skill.name)
    original = read_bundle(bundle.data)
    return (dict(served.files), served.executables) == (dict(original.files), original.executables)


def test_versions_are_newest_first_with_their_records(backend: Backend, reg: Registry, bundles) -> None:
    needs_versions(backend)
    recs = reg.versions("demo")
    assert [r.version for r in recs] == ["2.0.0-rc.1", "1.10.0", "1.2.0", "1.0.0", "0.9.0"]
    for rec in recs:
        b = bundles[("demo", rec.version)]
        assert rec.name == "demo" and rec.description == b.description and not rec.yanked
        if backend.serves_bundles:
            assert (rec.digest, rec.tar_digest, rec.size, rec.files) == (b.digest, b.tar_digest, b.size, len(b.files))
            assert rec.front_matter["name"] == "demo" and rec.created_at > 0
        else:
            assert rec.artifact_type != BUNDLE and _same_files(reg, rec.resolved(), b)
    assert len({r.skill_id for r in recs}) == 1 and ID_RE.match(recs[0].skill_id)
    assert reg.versions("other")[0].skill_id != recs[0].skill_id


def test_ranges_resolve_to_the_highest_match_and_prereleases_only_when_asked(backend: Backend, reg: Registry) -> None:
    needs_versions(backend)
    cases = {"demo": "1.10.0", "demo@latest": "1.10.0", "demo@~1.2": "1.2.0", "demo@<1.2": "1.0.0", "demo@^0.9": "0.9.0",
             "demo@1.2.0": "1.2.0", "demo@1.2": "1.2.0", "demo@^2.0.0-rc.1": "2.0.0-rc.1", "demo@2.0.0-rc.1": "2.0.0-rc.1"}
    assert {ref: reg.resolve(ref).version for ref in cases} == cases
    assert reg.resolve("demo", prereleases=True).version == "2.0.0-rc.1"
    assert reg.resolve("demo@>=1.5", prereleases=True).version == "2.0.0-rc.1"
    assert reg.resolve("demo@>=1.5").version == "1.10.0"
    assert reg.resolve("demo@1.0.0+build.9").version == "1.0.0"  # build metadata is not identity


def test_resolve_and_resolve_record_agree(backend: Backend, reg: Registry) -> None:
    ref = "demo@^1" if backend.one_version else "demo@~1.2"
    rec = reg.resolve_record(ref)
    assert (reg.resolve(ref).id, reg.resolve(ref).digest) == (rec.resolved().id, rec.resolved().digest)
    if not backend.one_version:  # an MCP record carries its manifest besides: one field more than its version record
        assert reg.resolve(ref) == rec.resolved()
    assert isinstance(rec.resolved(), ResolvedSkill)


def test_missing_skills_and_versions_are_one_line_not_found(reg: Registry) -> None:
    for ref, text in [("absent", "absent"), ("demo@>=3", "demo"), ("demo@3.0.0", "demo@3.0.0"), ("demo@^2", "demo")]:
        with pytest.raises(NotFoundError) as exc:
            reg.resolve(ref)
        assert text in str(exc.value) and "\n" not in str(exc.value)
    for call in (lambda: reg.versions("absent"), lambda: reg.get_skill("absent")):
        with pytest.raises(NotFoundError, match="absent"):
            call()


def test_skills_resolve_by_id(backend: Backend, reg: Registry) -> None:
    needs_versions(backend)
    sid = reg.versions("demo")[0].skill_id
    assert reg.resolve(sid).version == "1.10.0"
    assert reg.resolve(f"{sid}@1.0.0").version == "1.0.0"
    assert reg.get_skill(sid).name == "demo"
    with pytest.raises(NotFoundError):
        reg.resolve("skill_" + "f" * 24)


def test_fetch_returns_exactly_the_published_bytes(backend: Backend, reg: Registry, bundles) -> None:
    for ref, version in (("demo@^1", "1.10.0"), ("other", "1.0.0")):
        skill = reg.resolve(ref)
        data = reg.fetch(skill)
        assert sha256_digest(data) == skill.digest
        if backend.serves_bundles:
            assert data == bundles[(skill.name, version)].data
        else:
            assert _same_files(reg, skill, bundles[(skill.name, version)])


def test_fetch_refuses_a_digest_the_registry_does_not_hold(backend: Backend, reg: Registry) -> None:
    skill = reg.resolve(one_of(backend))
    forged = ResolvedSkill(skill.id, skill.name, skill.version, skill.description, "sha256:" + "0" * 64, skill.tar_digest, skill.size)
    with pytest.raises(IntegrityError):
        reg.fetch(forged)


def test_list_and_get_skill_summaries(backend: Backend, reg: Registry, bundles) -> None:
    needs_versions(backend)
    skills = reg.list_skills()
    assert [(s.name, s.default_version, s.latest_version, s.versions) for s in skills] == [
        ("demo", "1.10.0", "2.0.0-rc.1", 5), ("other", "1.0.0", "1.0.0", 1)
    ]
    demo = reg.get_skill("demo")
    assert demo == skills[0]
    assert demo.description == bundles[("demo", "1.10.0")].description
    assert demo.id == reg.versions("demo")[0].skill_id and (demo.created_at > 0 or not backend.serves_bundles)
    assert demo.to_dict()["object"] == "skill"


def test_one_version_backends_serve_the_latest_release(backend: Backend, reg: Registry, bundles) -> None:
    if not backend.one_version:
        pytest.skip("the backend serves every version (test_versions_are_newest_first_with_their_records)")
    assert [(s.name, s.default_version, s.latest_version, s.versions) for s in reg.list_skills()] == [
        ("demo", "1.10.0", "1.10.0", 1), ("other", "1.0.0", "1.0.0", 1)
    ]
    recs = reg.versions("demo")
    b = bundles[("demo", "1.10.0")]
    assert [(r.version, r.digest, r.tar_digest, r.size, r.files) for r in recs] == [("1.10.0", b.digest, b.tar_digest, b.size, len(b.files))]
    assert reg.get_skill(recs[0].skill_id).name == "demo" and reg.resolve(recs[0].skill_id).version == "1.10.0"
    with pytest.raises(NotFoundError, match="demo@1.0.0"):
        reg.resolve("demo@1.0.0")


def test_verify_finds_nothing_wrong_in_a_healthy_registry(reg: Registry) -> None:
    assert reg.verify() == []


def test_an_empty_registry_lists_nothing(empty: Registry) -> None:
    assert empty.list_skills() == []
    with pytest.raises(NotFoundError):
        empty.resolve("demo")


# --------------------------------------------------------------------------------- writing


def test_publish_is_idempotent_and_versions_are_immutable(empty: Registry, tmp_path: Path) -> None:
    needs(empty, PUBLISH)
    one = prepared(tmp_path, "demo", "1.0.0", "one")
    first = empty.publish(one)
    assert first.status == "published" and first.record.digest == one.digest and ID_RE.match(first.record.skill_id)
    again = empty.publish(one)
    assert again.status == "unchanged" and again.record == first.record
    for version in ("1.0.0", "1.0.0+other-build"):
        with pytest.raises(ImmutableVersionError) as exc:
            empty.publish(prepared(tmp_path, "demo", version, "two"))
        assert "demo@1.0.0 is already published with other content" in str(exc.value) and "\n" not in str(exc.value)
    assert empty.fetch(empty.resolve("demo@1.0.0")) == one.data
    assert empty.publish(prepared(tmp_path, "demo", "1.1.0")).record.skill_id == first.record.skill_id


def test_publish_refuses_bytes_that_do_not_match_their_digest(empty: Registry, tmp_path: Path) -> None:
    needs(empty, PUBLISH)
    good = prepared(tmp_path, "demo", "1.0.0")
    forged = PreparedBundle(good.name, good.version, good.description, good.front_matter, good.data + b"x", good.digest,
                            good.tar_digest, good.files)
    with pytest.raises(IntegrityError, match="do not match their digest"):
        empty.publish(forged)
    assert empty.list_skills() == []


def test_publish_keeps_the_original_time_and_id_of_a_copied_skill(empty: Registry, tmp_path: Path) -> None:
    needs(empty, PUBLISH)
    sid = "skill_" + "a1" * 12
    rec = empty.publish(prepared(tmp_path, "demo", "1.0.0"), created_at=1_600_000_000, skill_id=sid).record
    assert (rec.skill_id, rec.created_at) == (sid, 1_600_000_000)
    # Later versions keep the skill's id, whatever id they bring.
    later = empty.publish(prepared(tmp_path, "demo", "1.1.0"), created_at=1_700_000_000, skill_id="skill_" + "b2" * 12).record
    assert (later.skill_id, later.created_at) == (sid, 1_700_000_000)
    assert empty.resolve(f"{sid}@1.0.0").version == "1.0.0"
    assert empty.publish(prepared(tmp_path, "fresh", "1.0.0")).record.created_at > 1_700_000_000  # default: now


@pytest.mark.parametrize("origin, message", [
    ({"created_at": -1}, "created_at must be unix seconds"),
    ({"skill_id": "skill_nothex"}, "skill_id must be 'skill_' and 24 hex digits"),
])
def test_publish_refuses_a_malformed_origin(empty: Registry, tmp_path: Path, origin: dict, message: str) -> None:
    needs(empty, PUBLISH)
    with pytest.raises(RegistryError, match=message):
        empty.publish(prepared(tmp_path, "demo", "1.0.0"), **origin)
    assert empty.list_skills() == []


def test_yank_hides_from_ranges_but_exact_pins_still_fetch(reg: Registry, bundles) -> None:
    needs(reg, YANK)
    rec = reg.set_yanked("demo@1.10.0", True, "broken parser")
    assert (rec.version, rec.yanked, rec.yank_reason) == ("1.10.0", True, "broken parser")
    assert reg.resolve("demo").version == "1.2.0" and reg.get_skill("demo").default_version == "1.2.0"
    pinned = reg.resolve("demo@1.10.0")
    assert pinned.yanked and reg.fetch(pinned) == bundles[("demo", "1.10.0")].data
    assert [r.version for r in reg.versions("demo") if r.yanked] == ["1.10.0"]  # still listed
    with pytest.raises(VersionError, match="needs an exact version"):
        reg.set_yanked("demo@^1", True)
    back = reg.set_yanked("demo@1.10.0", False)
    assert (back.yanked, back.yank_reason) == (False, "")
    assert reg.resolve("demo").version == "1.10.0"


def test_remove_deletes_a_version_nobody_depends_on(reg: Registry) -> None:
    needs(reg, REMOVE)
    removed = reg.remove("demo@0.9.0")
    assert removed.version == "0.9.0"
    assert "0.9.0" not in [r.version for r in reg.versions("demo")]
    with pytest.raises(NotFoundError):
        reg.resolve("demo@0.9.0")


def test_a_locked_version_is_never_removed(reg: Registry) -> None:
    needs(reg, RECORD_LOCKS)
    reg.mark_locked(reg.resolve("demo@1.0.0"))
    if REMOVE in reg.capabilities:
        with pytest.raises(RegistryError, match="yank it instead"):
            reg.remove("demo@1.0.0")
    assert reg.resolve("demo@1.0.0").version == "1.0.0"


def test_gc_keeps_everything_that_is_published(reg: Registry) -> None:
    needs(reg, GC)
    assert reg.gc(grace_s=0) == []
    assert reg.verify() == []
    assert len(reg.versions("demo")) == 5


def _write_calls(reg: Registry, tmp_path: Path, skill: ResolvedSkill) -> dict[str, Callable[[], object]]:
    return {
        PUBLISH: lambda: reg.publish(prepared(tmp_path, "demo", "3.0.0")),
        YANK: lambda: reg.set_yanked("demo@1.0.0", True),
        REMOVE: lambda: reg.remove("demo@0.9.0"),
        GC: lambda: reg.gc(grace_s=0),
        RECORD_LOCKS: lambda: reg.mark_locked(skill),
        SIGN: lambda: reg.attach_signature(skill, envelope(0)),
    }


def test_missing_capabilities_raise_unsupported_and_change_nothing(backend: Backend, reg: Registry, tmp_path: Path) -> None:
    before = [(r.version, r.digest, r.yanked) for r in reg.versions("demo")]
    calls = _write_calls(reg, tmp_path, reg.resolve(one_of(backend)))
    assert set(calls) == WRITE_CAPABILITIES  # every write of the protocol is covered here
    missing = WRITE_CAPABILITIES - reg.capabilities
    for capability in sorted(missing):
        with pytest.raises(UnsupportedError) as exc:
            calls[capability]()
        assert reg.url in str(exc.value) and "\n" not in str(exc.value)
    assert [(r.version, r.digest, r.yanked) for r in reg.versions("demo")] == before
    assert reg.signatures(reg.resolve(one_of(backend))) == []
    if not missing:
        pytest.skip("the backend has every capability")


# --------------------------------------------------------------------------------- signatures


def envelope(n: int) -> bytes:
    """Bytes shaped like a DSSE envelope; a registry keeps them without judging the signature
    (``skillctl.trust`` does that, and has its own tests)."""
    sig = base64.b64encode(bytes([n % 256]) * 64).decode()
    return json.dumps({"payload": base64.b64encode(b"statement %d" % n).decode(), "payloadType": "application/vnd.in-toto+json",
                       "signatures": [{"keyid": f"k{n}", "sig": sig}]}).encode()


def test_signatures_are_served_with_their_exact_version(backend: Backend, reg: Registry) -> None:
    if backend.writer is None:  # a backend that keeps no signatures has none for any version
        assert all(reg.signatures(r.resolved()) == [] for r in reg.versions("demo"))
        pytest.skip("the backend keeps no signatures")
    with backend.writer() as writer:
        for n in (1, 2):
            assert writer.attach_signature(writer.resolve("demo@1.0.0"), envelope(n)) == "attached"
    assert reg.signatures(reg.resolve("demo@1.0.0")) == [envelope(1), envelope(2)]  # oldest first
    assert reg.signatures(reg.resolve("demo@1.2.0")) == [] and reg.signatures(reg.resolve("other@1.0.0")) == []
    assert reg.verify() == []  # signatures are not damage, wherever a backend keeps them


def test_signatures_of_another_bundle_are_refused(backend: Backend, reg: Registry) -> None:
    skill = reg.resolve(one_of(backend))
    forged = ResolvedSkill(skill.id, skill.name, skill.version, skill.description, "sha256:" + "0" * 64, skill.tar_digest, skill.size)
    with pytest.raises(IntegrityError, match="its signatures are not for the bundle asked about"):
        reg.signatures(forged)


def test_attaching_is_idempotent_and_keeps_several_signatures(reg: Registry) -> None:
    needs(reg, SIGN)
    skill = reg.resolve("demo@1.0.0")
    assert [reg.attach_signature(skill, e) for e in (envelope(1), envelope(1), envelope(2), envelope(1))] == [
        "attached", "unchanged", "attached", "unchanged"]
    assert reg.signatures(skill) == [envelope(1), envelope(2)]


@pytest.mark.parametrize("data, message", [
    (b"", "must be non-empty bytes"),
    (b"\xff not json", "is not JSON"),
    (b'{"payload": ""}', "lacks payload, payloadType, signatures"),
    (b'{"payload": "", "payloadType": "", "signatures": [], "pad": "' + b"x" * 70_000 + b'"}', "over the 64 KiB cap"),
])
def test_attaching_what_is_not_an_envelope_is_refused(reg: Registry, data: bytes, message: str) -> None:
    needs(reg, SIGN)
    skill = reg.resolve("demo@1.0.0")
    with pytest.raises(RegistryError, match=message):
        reg.attach_signature(skill, data)
    assert reg.signatures(skill) == []


def test_attaching_to_a_bundle_or_version_the_registry_does_not_hold_is_refused(reg: Registry) -> None:
    needs(reg, SIGN)
    skill = reg.resolve("demo@1.0.0")
    forged = ResolvedSkill(skill.id, skill.name, skill.version, skill.description, "sha256:" + "0" * 64, skill.tar_digest, skill.size)
    with pytest.raises(IntegrityError):
        reg.attach_signature(forged, envelope(1))
    missing = ResolvedSkill(skill.id, skill.name, "7.0.0", skill.description, skill.digest, skill.tar_digest, skill.size)
    with pytest.raises(NotFoundError):
        reg.attach_signature(missing, envelope(1))
    assert reg.signatures(skill) == []


def test_yank_and_unyank_keep_the_signatures(reg: Registry) -> None:
    needs(reg, SIGN)
    needs(reg, YANK)
    reg.attach_signature(reg.resolve("demo@1.10.0"), envelope(1))
    reg.set_yanked("demo@1.10.0", True, "broken")
    assert reg.signatures(reg.resolve("demo@1.10.0")) == [envelope(1)]
    reg.attach_signature(reg.resolve("demo@1.10.0"), envelope(2))  # signing a yanked version works too
    reg.set_yanked("demo@1.10.0", False)
    assert reg.signatures(reg.resolve("demo@1.10.0")) == [envelope(1), envelope(2)]
    assert reg.verify() == []


def test_remove_takes_the_signatures_along(reg: Registry, bundles) -> None:
    needs(reg, SIGN)
    needs(reg, REMOVE)
    reg.attach_signature(reg.resolve("demo@0.9.0"), envelope(1))
    reg.remove("demo@0.9.0")
    reg.publish(bundles[("demo", "0.9.0")])
    assert reg.signatures(reg.resolve("demo@0.9.0")) == []
