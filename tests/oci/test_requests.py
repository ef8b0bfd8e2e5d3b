"""How many HTTP requests a pull costs, counted by the client (``DistributionClient.sent``, the
counter bench/oci_vs_local.py and bench/oci_vs_oras.py print) against a real distribution 2.8
server: an exact pin is one manifest and one blob; a range lists tags once per run; one
connection serves every skill; and what a run keeps never outlives it or a write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillctl.errors import IntegrityError, RegistryError
from skillctl.registry.oci import OciRegistry
from skillctl.registry.prepare import PreparedBundle

from .conftest import PASSWORD, USER
from .helpers import as_older_skillctl_published, bundle

pytestmark = [pytest.mark.requires_registry]


def fresh(root: Path, name: str, version: str, content: str = "") -> PreparedBundle:
    """A bundle no other test publishes: blobs are shared by the whole (session) registry, and
    other tests tamper with theirs."""
    return bundle(root, name, version, f"test_requests {content}")


def reader(url: str, **options) -> OciRegistry:
    return OciRegistry.from_url(url, insecure=True, **options)


def test_an_exact_pin_is_one_manifest_and_one_blob(oci: OciRegistry, oci_url: str, tmp_path: Path) -> None:
    published = oci.publish(fresh(tmp_path, "demo", "1.2.3")).record
    oci.publish(fresh(tmp_path, "demo", "1.3.0"))
    with reader(oci_url) as reg:
        rec = reg.resolve("demo@1.2.3")
        data = reg.fetch(rec)
        assert dict(reg.client.sent) == {"GET manifests": 1, "GET blobs": 1}  # no tag listing, no config blob
    assert rec == published.resolved() and len(data) == rec.size
    # the record from the annotations is the one the config gives
    assert rec == reader(oci_url).resolve_record("demo@1.2.3").resolved()


def test_outside_a_run_fetch_reads_the_tag_again(oci: OciRegistry, oci_url: str, tmp_path: Path) -> None:
    oci.publish(fresh(tmp_path, "demo", "1.0.0"))
    reg = reader(oci_url)
    reg.fetch(reg.resolve("demo@1.0.0"))
    assert dict(reg.client.sent) == {"GET manifests": 2, "GET blobs": 1}


def test_an_exact_pin_behind_basic_auth_adds_only_the_challenge(auth_server, ns: str, tmp_path: Path) -> None:
    url = auth_server.url(ns)
    with reader(url, username=USER, password=PASSWORD) as writer:
        writer.publish(fresh(tmp_path, "demo", "1.0.0"))
    with reader(url, username=USER, password=PASSWORD) as reg:
        reg.fetch(reg.resolve("demo@1.0.0"))
        # the first request is answered 401 and sent again with the credentials, which the blob reuses
        assert dict(reg.client.sent) == {"GET manifests": 2, "GET blobs": 1}


def test_an_exact_pin_under_another_spelling_lists_the_tags_once(oci: OciRegistry, oci_url: str, tmp_path: Path) -> None:
    oci.publish(fresh(tmp_path, "demo", "1.0.0+build.5"))
    with reader(oci_url) as reg:
        rec = reg.resolve("demo@1.0.0")  # one version: 1.0.0 and 1.0.0+build.5 have the same order
        reg.fetch(rec)
        assert rec.version == "1.0.0+build.5"
        assert dict(reg.client.sent) == {"GET manifests": 2, "GET tags": 1, "GET blobs": 1}  # tag 1.0.0: 404, then the listing


def test_a_range_pull_of_two_skills_lists_each_skills_tags_once(oci: OciRegistry, oci_url: str, tmp_path: Path) -> None:
    for name in ("alpha", "beta"):
        oci.publish(fresh(tmp_path, name, "1.0.0"))
        oci.publish(fresh(tmp_path, name, "1.1.0"))
    with reader(oci_url) as reg:
        for _ in range(2):  # e.g. `lock` then `install` in one command: the second pass costs no listing
            for name in ("alpha", "beta"):
                rec = reg.resolve(f"{name}@^1")
                assert rec.version == "1.1.0" and len(reg.fetch(rec)) == rec.size
        assert dict(reg.client.sent) == {"GET tags": 2, "GET manifests": 2, "GET blobs": 4}


def test_one_connection_serves_every_skill(oci: OciRegistry, oci_url: str, tmp_path: Path) -> None:
    names = [f"s{i}" for i in range(4)]
    for name in names:
        oci.publish(fresh(tmp_path, name, "1.0.0"))
    with reader(oci_url) as reg:
        for name in names:
            reg.fetch(reg.resolve(f"{name}@1.0.0"))
        pools = reg.client.session.get_adapter(reg.client.base).poolmanager.pools
        opened = [pools[key].num_connections for key in pools.keys()]
        assert reg.client.requests == 8 and opened == [1]


def test_manifests_of_an_older_skillctl_are_read_through_their_config(
    oci: OciRegistry, oci_url: str, registry_server, ns: str, tmp_path: Path
) -> None:
    published = oci.publish(fresh(tmp_path, "demo", "1.0.0")).record
    as_older_skillctl_published(registry_server, f"{ns}/demo", "1.0.0")
    with reader(oci_url) as reg:
        rec = reg.resolve("demo@1.0.0")
        reg.fetch(rec)
        assert dict(reg.client.sent) == {"GET manifests": 1, "GET blobs": 2}  # the config, then the bundle
    assert rec == published.resolved()


def test_the_annotations_must_belong_to_the_tag_and_agree_with_the_config(
    oci: OciRegistry, oci_url: str, registry_server, ns: str, tmp_path: Path
) -> None:
    oci.publish(fresh(tmp_path, "demo", "1.0.0"))
    repo = f"{ns}/demo"
    original = json.loads(registry_server.get_manifest(repo, "1.0.0"))

    def served(**annotations: str) -> None:
        doc = json.loads(json.dumps(original))
        doc["annotations"].update(annotations)
        registry_server.put_manifest(repo, "1.0.0", doc)

    served(**{"vnd.skillctl.id": "not-an-id"})
    with pytest.raises(RegistryError, match="manifest annotations lack a valid vnd.skillctl.id"):
        reader(oci_url).resolve("demo@1.0.0")
    served(**{"org.opencontainers.image.version": "2.0.0"})
    with pytest.raises(IntegrityError, match="annotations are for version '2.0.0', not the tag's 1.0.0"):
        reader(oci_url).resolve("demo@1.0.0")
    served(**{"org.opencontainers.image.title": "other-1.0.0"})
    with pytest.raises(IntegrityError, match="title 'other-1.0.0' is not skill 'demo'"):
        reader(oci_url).resolve("demo@1.0.0")
    # well-formed, but not what the config says: pulls would believe it, so verify reports it
    served(**{"vnd.skillctl.id": "skill_" + "f" * 24})
    problems = reader(oci_url).verify()
    assert [(p.severity, p.kind) for p in problems] == [("error", "corrupt")]
    assert "annotations disagree with the config (id)" in problems[0].message


def test_a_run_keeps_what_it_read_until_it_ends(oci: OciRegistry, oci_url: str, registry_server, ns: str, tmp_path: Path) -> None:
    oci.publish(fresh(tmp_path, "demo", "1.0.0", "one"))
    other = reader(registry_server.url(ns + "side"))
    moved = other.publish(fresh(tmp_path, "demo", "1.0.0", "two")).record
    with reader(oci_url) as reg:
        resolved = reg.resolve("demo@1.0.0")
        # behind the run's back: point the tag at other content
        body = registry_server.get_manifest(f"{ns}side/demo", "1.0.0")
        doc = json.loads(body)
        for d in (doc["config"], doc["layers"][0]):
            registry_server.push_blob(f"{ns}/demo", registry_server.blob_file(d["digest"]).read_bytes())
        registry_server.put_manifest(f"{ns}/demo", "1.0.0", body)
        # the run pulls the version it resolved, verified against that digest
        assert reg.resolve("demo@1.0.0") == resolved and len(reg.fetch(resolved)) == resolved.size
        # a pin the run's manifest does not name (a lock written elsewhere) reads the tag again
        assert len(reg.fetch(moved.resolved())) == moved.size
    with reader(oci_url) as reg:  # a new run reads afresh; the old pin is refused as moved
        assert reg.resolve("demo@1.0.0").digest == moved.digest
        with pytest.raises(IntegrityError, match="the tag was moved"):
            reg.fetch(resolved)


def test_writes_in_a_run_are_seen_by_its_reads(oci_url: str, tmp_path: Path) -> None:
    with reader(oci_url) as reg:
        reg.publish(fresh(tmp_path, "demo", "1.0.0"))
        assert reg.resolve("demo@^1").version == "1.0.0"
        reg.publish(fresh(tmp_path, "demo", "1.1.0"))
        assert reg.resolve("demo@^1").version == "1.1.0"
        reg.set_yanked("demo@1.1.0", True)
        assert reg.resolve("demo@^1").version == "1.0.0"
        assert reg.resolve("demo@1.1.0").yanked


def test_a_netrc_entry_for_the_host_is_neither_read_nor_sent(auth_server, ns: str, tmp_path: Path) -> None:
    # requests would read ~/.netrc for every request and let it replace the client's credentials
    (Path.home() / ".netrc").write_text("machine 127.0.0.1 login alice password not-the-password\n", "utf-8")
    (Path.home() / ".netrc").chmod(0o600)
    url = auth_server.url(ns)
    with reader(url, username=USER, password=PASSWORD) as reg:
        reg.publish(fresh(tmp_path, "demo", "1.0.0", "netrc"))
        assert reg.resolve("demo@1.0.0").version == "1.0.0"
    with pytest.raises(RegistryError, match="requires credentials"):
        reader(url).resolve("demo@1.0.0")  # anonymous stays anonymous
