"""Signatures as OCI artifacts: the referrers tag schema on Debian's distribution 2.8 (no
referrers API), the referrers API when a registry has it, and hostile referrer data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillctl.bundle import sha256_digest
from skillctl.errors import RegistryError
from skillctl.registry import open_registry
from skillctl.registry.oci import artifact
from skillctl.registry.oci.referrers import (ANN_BUNDLE, EMPTY_MEDIA_TYPE, ENVELOPE_MEDIA_TYPE, INDEX_MEDIA_TYPE,
                                             SIGNATURE_ARTIFACT_TYPE, referrers_tag)

from .helpers import bundle
from .referrers_proxy import ReferrersProxy

pytestmark = pytest.mark.requires_registry


def envelope(n: int) -> bytes:
    return json.dumps({"payload": "", "payloadType": "application/vnd.in-toto+json", "signatures": [{"sig": str(n)}]}).encode()


def manifest_digest(reg, name: str, version: str) -> str:
    body, digest = reg.client.get_manifest(reg.location.repository(name), version, accept=artifact.ACCEPT_MANIFESTS,
                                           max_bytes=artifact.MAX_MANIFEST_BYTES)
    return digest


def get_json(reg, repo: str, ref: str, accept: str) -> dict:
    body, _ = reg.client.get_manifest(repo, ref, accept=accept, max_bytes=artifact.MAX_MANIFEST_BYTES)
    return json.loads(body)


def test_the_referrers_tag_follows_the_distribution_spec() -> None:
    assert referrers_tag("sha256:" + "a" * 64) == "sha256-" + "a" * 64
    spec_example = ("test+algorithm+using+algorithm+separators+and+lots+of+characters+to+excercise+overall+truncation:"
                    "alsoSome=InTheEncodedSectionToShowHyphenReplacementAndLotsAndLotsOfCharactersToExcerciseEncodedTruncation")
    assert referrers_tag(spec_example) == "test-algorithm-using-algorithm-s-alsoSome-InTheEncodedSectionToShowHyphenReplacementAndLotsAndLot"


def test_without_a_referrers_api_the_signature_is_listed_under_the_fallback_tag(registry_server, ns, tmp_path: Path) -> None:
    with open_registry(registry_server.url(ns), insecure=True) as reg:
        # Bytes of its own: blobs are shared across a registry's repositories, and other tests
        # damage theirs on purpose.
        rec = reg.publish(bundle(tmp_path, "demo", "1.0.0", content=ns)).record
        assert reg.attach_signature(rec.resolved(), envelope(1)) == "attached"
        repo, subject = reg.location.repository("demo"), manifest_digest(reg, "demo", "1.0.0")
        assert sorted(reg.client.tags(repo)) == ["1.0.0", referrers_tag(subject)]
        index = get_json(reg, repo, referrers_tag(subject), INDEX_MEDIA_TYPE)
        assert index["mediaType"] == INDEX_MEDIA_TYPE and len(index["manifests"]) == 1
        entry = index["manifests"][0]
        assert (entry["artifactType"], entry["annotations"]) == (SIGNATURE_ARTIFACT_TYPE, {ANN_BUNDLE: rec.digest})
        sig = get_json(reg, repo, entry["digest"], artifact.MANIFEST_MEDIA_TYPE)
        assert sig["subject"]["digest"] == subject and sig["artifactType"] == SIGNATURE_ARTIFACT_TYPE
        assert sig["config"] == {"mediaType": EMPTY_MEDIA_TYPE, "digest": sha256_digest(b"{}"), "size": 2}
        assert sig["layers"] == [{"mediaType": ENVELOPE_MEDIA_TYPE, "digest": sha256_digest(envelope(1)), "size": len(envelope(1))}]
        assert [r.version for r in reg.versions("demo")] == ["1.0.0"] and reg.verify() == []
    with open_registry(registry_server.url(ns), insecure=True) as fresh:  # nothing cached: found from the registry
        assert fresh.signatures(fresh.resolve("demo@1.0.0")) == [envelope(1)]


def test_a_yank_attaches_the_signatures_to_the_rewritten_manifest(registry_server, ns, tmp_path: Path) -> None:
    with open_registry(registry_server.url(ns), insecure=True) as reg:
        rec = reg.publish(bundle(tmp_path, "demo", "1.0.0")).record
        reg.attach_signature(rec.resolved(), envelope(1))
        before = manifest_digest(reg, "demo", "1.0.0")
        reg.set_yanked("demo@1.0.0", True, "bad")
        after = manifest_digest(reg, "demo", "1.0.0")
        assert after != before
        assert referrers_tag(after) in reg.client.tags(reg.location.repository("demo"))
        assert reg.signatures(reg.resolve("demo@1.0.0")) == [envelope(1)]


def test_with_a_referrers_api_no_fallback_tag_is_written(registry_server, ns, tmp_path: Path) -> None:
    with ReferrersProxy(registry_server.port) as proxy:
        url = f"oci://{proxy.host}/{ns}"
        with open_registry(url, insecure=True) as reg:
            rec = reg.publish(bundle(tmp_path, "demo", "1.0.0")).record
            assert [reg.attach_signature(rec.resolved(), e) for e in (envelope(1), envelope(1), envelope(2))] == [
                "attached", "unchanged", "attached"]
            repo = reg.location.repository("demo")
            assert reg.client.tags(repo) == ["1.0.0"]
            assert len(proxy.referrers[(repo, manifest_digest(reg, "demo", "1.0.0"))]) == 2
            reg.set_yanked("demo@1.0.0", True)
            assert reg.client.tags(repo) == ["1.0.0"]
        with open_registry(url, insecure=True) as fresh:
            assert fresh.signatures(fresh.resolve("demo@1.0.0")) == [envelope(1), envelope(2)]


def test_something_else_under_the_referrers_tag_is_never_overwritten(registry_server, ns, tmp_path: Path) -> None:
    with open_registry(registry_server.url(ns), insecure=True) as reg:
        rec = reg.publish(bundle(tmp_path, "demo", "1.0.0")).record
        repo, subject = reg.location.repository("demo"), manifest_digest(reg, "demo", "1.0.0")
        body, _ = reg.client.get_manifest(repo, "1.0.0", accept=artifact.ACCEPT_MANIFESTS, max_bytes=artifact.MAX_MANIFEST_BYTES)
        reg.client.put_manifest(repo, referrers_tag(subject), body, artifact.MANIFEST_MEDIA_TYPE)
        for call in (lambda: reg.attach_signature(rec.resolved(), envelope(1)), lambda: reg.signatures(rec.resolved())):
            with pytest.raises(RegistryError, match="not a referrers index; refusing to use or overwrite it"):
                call()
        assert get_json(reg, repo, referrers_tag(subject), artifact.ACCEPT_MANIFESTS)["mediaType"] == artifact.MANIFEST_MEDIA_TYPE


def test_an_index_entry_whose_subject_is_another_version_is_ignored(registry_server, ns, tmp_path: Path) -> None:
    with open_registry(registry_server.url(ns), insecure=True) as reg:
        one = reg.publish(bundle(tmp_path, "demo", "1.0.0")).record
        two = reg.publish(bundle(tmp_path, "demo", "2.0.0")).record
        reg.attach_signature(one.resolved(), envelope(1))
        repo = reg.location.repository("demo")
        index = get_json(reg, repo, referrers_tag(manifest_digest(reg, "demo", "1.0.0")), INDEX_MEDIA_TYPE)
        # A hostile writer lists 1.0.0's signature artifact under 2.0.0's referrers tag.
        reg.client.put_manifest(repo, referrers_tag(manifest_digest(reg, "demo", "2.0.0")), json.dumps(index).encode(), INDEX_MEDIA_TYPE)
        assert reg.signatures(two.resolved()) == [] and reg.signatures(one.resolved()) == [envelope(1)]
