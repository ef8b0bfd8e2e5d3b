"""Faults and bad input against real servers: down, auth refused, tampered or hostile content."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from skillctl.errors import IntegrityError, NotFoundError, RegistryError
from skillctl.registry.oci import OciRegistry

from .conftest import PASSWORD, USER
from .helpers import as_older_skillctl_published, bundle
from .proxy import AuthorizingProxy
from .server import DistributionServer, free_port

pytestmark = [pytest.mark.requires_registry]


def one_line(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text and "Traceback" not in text
    return text


# ------------------------------------------------------------------------------ reachability


def test_registry_down_is_retried_then_one_line_naming_it() -> None:
    port = free_port()
    reg = OciRegistry.from_url(f"oci://127.0.0.1:{port}/skills", insecure=True, backoff_s=0.01)
    with pytest.raises(RegistryError) as exc:
        reg.resolve("demo")
    text = one_line(exc)
    assert text.startswith(f"cannot reach registry 127.0.0.1:{port} (http://127.0.0.1:{port}): connection refused after 3 attempt(s)")
    assert reg.client.requests == 3  # connection refused is safe to retry: nothing was sent


def test_a_registry_coming_up_during_the_retries_is_used(tmp_path: Path) -> None:
    server = DistributionServer(tmp_path / "late")
    reg = OciRegistry.from_url(server.url("skills"), insecure=True, attempts=12, backoff_s=0.05)
    starter = threading.Timer(0.3, server.start)
    starter.start()
    try:
        with pytest.raises(NotFoundError, match="no skill 'demo'"):  # an answer from the server, not a connection error
            reg.resolve("demo")
        assert reg.client.requests > 1
    finally:
        starter.join()
        server.stop()


def test_https_against_a_plain_http_registry_suggests_insecure(registry_server: DistributionServer) -> None:
    reg = OciRegistry.from_url(registry_server.url("skills"))  # the default: TLS
    assert reg.client.base.startswith("https://")
    with pytest.raises(RegistryError) as exc:
        reg.resolve("demo")
    assert f"TLS with registry {registry_server.host} failed" in one_line(exc) and "--insecure" in str(exc.value)


def test_insecure_comes_from_the_environment_only_when_set(registry_server, monkeypatch) -> None:
    monkeypatch.setenv("SKILLCTL_INSECURE", "1")
    assert OciRegistry.from_url(registry_server.url("s")).client.base.startswith("http://")
    monkeypatch.setenv("SKILLCTL_INSECURE", "0")
    assert OciRegistry.from_url(registry_server.url("s")).client.base.startswith("https://")


# ------------------------------------------------------------------------------ credentials


def test_401_without_credentials_names_the_registry_and_what_to_set(auth_server: DistributionServer) -> None:
    reg = OciRegistry.from_url(auth_server.url("skills"), insecure=True)
    with pytest.raises(RegistryError) as exc:
        reg.resolve("demo")
    text = one_line(exc)
    assert text.startswith(f"registry {auth_server.host} requires credentials (HTTP 401)")
    assert f"docker login {auth_server.host}" in text and "SKILLCTL_REGISTRY_USERNAME" in text and "--password-stdin" in text


def test_401_with_wrong_credentials_names_user_and_source(auth_server: DistributionServer, monkeypatch) -> None:
    monkeypatch.setenv("SKILLCTL_REGISTRY_USERNAME", USER)
    monkeypatch.setenv("SKILLCTL_REGISTRY_PASSWORD", "wrong")
    reg = OciRegistry.from_url(auth_server.url("skills"), insecure=True)
    with pytest.raises(RegistryError) as exc:
        reg.resolve("demo")
    text = one_line(exc)
    assert f"registry {auth_server.host} rejected the credentials of '{USER}' (from SKILLCTL_REGISTRY_USERNAME/SKILLCTL_REGISTRY_PASSWORD)" in text
    assert "wrong" not in text  # never the secret


def test_right_credentials_from_arguments_publish_and_pull(auth_server: DistributionServer, ns, tmp_path: Path) -> None:
    reg = OciRegistry.from_url(auth_server.url(ns), insecure=True, username=USER, password=PASSWORD)
    pub = reg.publish(bundle(tmp_path, "demo", "1.0.0"))
    assert pub.status == "published"
    assert reg.fetch(reg.resolve("demo")) == bundle(tmp_path, "demo", "1.0.0").data


def test_credentials_from_docker_config_and_from_a_helper(auth_server: DistributionServer, ns, tmp_path: Path, monkeypatch) -> None:
    import base64

    cfg = tmp_path / "dockercfg"
    cfg.mkdir()
    monkeypatch.setenv("DOCKER_CONFIG", str(cfg))
    (cfg / "config.json").write_text(json.dumps({"auths": {auth_server.host: {"auth": base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()}}}))
    reg = OciRegistry.from_url(auth_server.url(ns), insecure=True)
    reg.publish(bundle(tmp_path, "demo", "1.0.0"))
    bindir = tmp_path / "bin"
    bindir.mkdir()
    helper = bindir / "docker-credential-skilltest"
    helper.write_text(f'#!/bin/sh\nread host\nprintf \'{{"ServerURL":"%s","Username":"{USER}","Secret":"{PASSWORD}"}}\' "$host"\n')
    helper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{__import__('os').environ['PATH']}")
    (cfg / "config.json").write_text(json.dumps({"credHelpers": {auth_server.host: "skilltest"}}))
    assert OciRegistry.from_url(auth_server.url(ns), insecure=True).resolve("demo").version == "1.0.0"


def test_403_names_registry_user_and_the_missing_right(registry_server: DistributionServer, ns, tmp_path: Path) -> None:
    users = {"writer": ("w", True), "reader": ("r", False)}
    with AuthorizingProxy(registry_server.port, users) as proxy:
        url = f"oci://{proxy.host}/{ns}"
        OciRegistry.from_url(url, insecure=True, username="writer", password="w").publish(bundle(tmp_path, "demo", "1.0.0"))
        reader = OciRegistry.from_url(url, insecure=True, username="reader", password="r")
        assert reader.resolve("demo").version == "1.0.0"  # reading is allowed
        with pytest.raises(RegistryError) as exc:
            reader.publish(bundle(tmp_path, "demo", "1.1.0"))
    text = one_line(exc)
    assert text.startswith(f"registry {proxy.host} denied 'reader' (from --username/--password-stdin) uploading blob")
    assert "HTTP 403: DENIED" in text and "needs push rights" in text


def test_a_registry_without_catalog_says_list_is_unavailable(registry_server: DistributionServer, ns, tmp_path: Path) -> None:
    with AuthorizingProxy(registry_server.port, {"u": ("p", True)}, catalog=False) as proxy:
        reg = OciRegistry.from_url(f"oci://{proxy.host}/{ns}", insecure=True, username="u", password="p")
        reg.publish(bundle(tmp_path, "demo", "1.0.0"))
        assert reg.resolve("demo").version == "1.0.0"  # by name: no catalog needed
        with pytest.raises(RegistryError) as exc:
            reg.list_skills()
        assert "does not offer a catalog (/v2/_catalog)" in one_line(exc) and "skillctl versions NAME" in str(exc.value)
        with pytest.raises(RegistryError, match="does not offer a catalog"):
            OciRegistry.from_url(reg.url, insecure=True, username="u", password="p").resolve("skill_" + "0" * 24)


# ------------------------------------------------------------------------------ hostile content


def tamper(path: Path, offset: int = 40) -> None:
    data = bytearray(path.read_bytes())
    data[offset % len(data)] ^= 0x01
    path.write_bytes(bytes(data))


def test_a_bundle_blob_that_does_not_match_its_digest_is_refused(oci: OciRegistry, registry_server, tmp_path: Path) -> None:
    pub = oci.publish(bundle(tmp_path, "demo", "1.0.0")).record
    tamper(registry_server.blob_file(pub.digest))
    rec = oci.resolve("demo@1.0.0")
    with pytest.raises(IntegrityError) as exc:
        oci.fetch(rec)
    assert f"served blob {pub.digest[:19]}… of" in one_line(exc) and "refusing it" in str(exc.value)


def test_a_tampered_config_blob_is_refused_wherever_it_is_read(oci: OciRegistry, registry_server, ns, tmp_path: Path) -> None:
    oci.publish(bundle(tmp_path, "demo", "1.0.0"))
    manifest = json.loads(registry_server.get_manifest(f"{ns}/demo", "1.0.0"))
    tamper(registry_server.blob_file(manifest["config"]["digest"]), 10)
    reader = OciRegistry.from_url(oci.url, insecure=True)
    # the full record (versions, show, the id lookups) comes from the config
    for read in (lambda: reader.resolve_record("demo"), lambda: reader.versions("demo")):
        with pytest.raises(IntegrityError, match="whose bytes hash to"):
            read()
    # resolve and pull take what they need from the manifest and read no config; verify finds it
    assert reader.resolve("demo").version == "1.0.0"
    assert [(p.kind, "hash" in p.message) for p in reader.verify()] == [("corrupt", True)]
    # a manifest published before the pull annotations existed: resolve reads the config, and refuses it
    as_older_skillctl_published(registry_server, f"{ns}/demo", "1.0.0")
    with pytest.raises(IntegrityError, match="whose bytes hash to"):
        OciRegistry.from_url(oci.url, insecure=True).resolve("demo")


def test_a_manifest_whose_config_names_another_bundle_is_refused(oci: OciRegistry, registry_server, ns, tmp_path: Path) -> None:
    a = oci.publish(bundle(tmp_path, "demo", "1.0.0", "a")).record
    oci.publish(bundle(tmp_path, "demo", "1.1.0", "b"))
    # 1.1.0's config and annotations with 1.0.0's layer: each blob is intact, but they do not belong together
    doc = json.loads(registry_server.get_manifest(f"{ns}/demo", "1.1.0"))
    doc["layers"][0].update(digest=a.digest, size=a.size)
    registry_server.put_manifest(f"{ns}/demo", "1.1.0", doc)
    reader = OciRegistry.from_url(oci.url, insecure=True)
    with pytest.raises(IntegrityError) as exc:
        reader.resolve("demo@1.1.0")
    assert "manifest annotations name bundle" in one_line(exc)
    with pytest.raises(IntegrityError) as exc:
        reader.resolve_record("demo@1.1.0")
    assert "config names bundle" in one_line(exc)
    as_older_skillctl_published(registry_server, f"{ns}/demo", "1.1.0")
    with pytest.raises(IntegrityError) as exc:
        OciRegistry.from_url(oci.url, insecure=True).resolve("demo@1.1.0")
    assert "config names bundle" in one_line(exc)


@pytest.mark.parametrize("chunked", [False, True], ids=["declared-length", "chunked"])
def test_a_huge_manifest_is_refused_before_parsing(oci: OciRegistry, registry_server, ns, tmp_path: Path, chunked: bool) -> None:
    # distribution refuses to store manifests over 4 MiB and checks what it serves, so a huge one
    # can only come from a compromised registry or a man in the middle: the proxy plays that part
    oci.publish(bundle(tmp_path, "demo", "1.0.0"))
    served: list[int] = []

    def grow(method: str, path: str, body: bytes) -> bytes | None:
        if "/manifests/" not in path or method != "GET":
            return None
        doc = json.loads(body)
        doc["annotations"]["padding"] = "x" * (5 * 1024 * 1024)
        out = json.dumps(doc).encode()
        served.append(len(out))
        return out

    with AuthorizingProxy(registry_server.port, tamper=grow, chunked=chunked) as proxy:
        with pytest.raises(RegistryError) as exc:
            OciRegistry.from_url(f"oci://{proxy.host}/{ns}", insecure=True).resolve("demo@1.0.0")
    # with a Content-Length the refusal comes before reading; chunked, as soon as the cap is passed
    said = f"manifest of {served[0]} bytes is over" if not chunked else "manifest is over"
    assert f"{said} the 4 MiB cap; refusing it" in one_line(exc)


def test_a_manifest_not_matching_its_announced_digest_is_refused(oci: OciRegistry, registry_server, ns, tmp_path: Path) -> None:
    oci.publish(bundle(tmp_path, "demo", "1.0.0"))

    def swap(method: str, path: str, body: bytes) -> bytes | None:
        if method == "GET" and "/manifests/" in path:
            return body.replace(b'"org.opencontainers.image.description":"', b'"org.opencontainers.image.description":"evil ')
        return None

    with AuthorizingProxy(registry_server.port, tamper=swap) as proxy:
        with pytest.raises(IntegrityError) as exc:
            OciRegistry.from_url(f"oci://{proxy.host}/{ns}", insecure=True).resolve("demo@1.0.0")
    assert "but labelled it" in one_line(exc)


def test_a_bundle_swapped_in_transit_is_refused(oci: OciRegistry, registry_server, ns, tmp_path: Path) -> None:
    pub = oci.publish(bundle(tmp_path, "demo", "1.0.0", "a")).record
    evil = bundle(tmp_path, "demo", "1.0.0", "b").data

    def swap(method: str, path: str, body: bytes) -> bytes | None:
        return evil if method == "GET" and pub.digest in path else None

    with AuthorizingProxy(registry_server.port, tamper=swap) as proxy:
        reg = OciRegistry.from_url(f"oci://{proxy.host}/{ns}", insecure=True)
        with pytest.raises(IntegrityError) as exc:
            reg.fetch(reg.resolve("demo@1.0.0"))
    assert "whose bytes hash to" in one_line(exc)


def test_a_manifest_that_is_not_ours_is_named(oci: OciRegistry, registry_server, ns, tmp_path: Path) -> None:
    repo = f"{ns}/demo"
    cfg = registry_server.push_blob(repo, b'{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}')
    image = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
             "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cfg, "size": 78}, "layers": []}
    registry_server.put_manifest(repo, "1.0.0", image)
    with pytest.raises(RegistryError) as exc:
        oci.resolve("demo")
    assert "not a skillctl skill (config media type application/vnd.oci.image.config.v1+json" in one_line(exc)


def test_a_damaged_manifest_in_storage_is_one_line(oci: OciRegistry, registry_server, ns, tmp_path: Path) -> None:
    oci.publish(bundle(tmp_path, "demo", "1.0.0"))
    body = registry_server.get_manifest(f"{ns}/demo", "1.0.0")
    import hashlib

    path = registry_server.blob_file("sha256:" + hashlib.sha256(body).hexdigest())
    path.write_bytes(b"{broken" + b" " * (len(body) - 7))
    with pytest.raises(RegistryError) as exc:
        OciRegistry.from_url(oci.url, insecure=True).resolve("demo")
    one_line(exc)


def test_names_too_long_for_a_repository_are_refused_before_any_request(registry_server, tmp_path: Path) -> None:
    reg = OciRegistry.from_url(registry_server.url("n" * 200), insecure=True)
    with pytest.raises(RegistryError) as exc:
        reg.publish(bundle(tmp_path, "a-rather-long-skill-name-that-overflows-the-repository-limit", "1.0.0"))  # 200 + 1 + 60
    assert "OCI registries allow 255" in one_line(exc)
    assert reg.client.requests == 0


# ------------------------------------------------------------------------------ Bearer tokens


def test_bearer_token_auth_end_to_end(token_server, ns, tmp_path: Path, monkeypatch) -> None:
    server, tokens = token_server
    monkeypatch.setenv("SKILLCTL_REGISTRY_USERNAME", USER)
    monkeypatch.setenv("SKILLCTL_REGISTRY_PASSWORD", PASSWORD)
    reg = OciRegistry.from_url(server.url(ns), insecure=True)
    assert reg.publish(bundle(tmp_path, "demo", "1.0.0")).status == "published"
    assert reg.fetch(reg.resolve("demo")) == bundle(tmp_path, "demo", "1.0.0").data
    assert [s.name for s in reg.list_skills()] == ["demo"]  # the catalog scope too
    def normalised(scope: str) -> str:
        # distribution builds a challenge's action list from a Go map: "pull,push" or "push,pull"
        kind, _, rest = scope.partition(":")
        name, _, actions = rest.rpartition(":")
        return f"{kind}:{name}:{','.join(sorted(actions.split(',')))}"

    scopes = {normalised(scope) for user, scope in tokens.issued if user == USER}
    assert {f"repository:{ns}/demo:pull", f"repository:{ns}/demo:pull,push", "registry:catalog:*"} <= scopes
    # tokens are cached per scope: more reads need no new token
    before = len(tokens.issued)
    reg.resolve("demo@1.0.0")
    reg.versions("demo")
    assert len(tokens.issued) == before


def test_bearer_with_wrong_password_or_none_is_one_line(token_server, ns, monkeypatch) -> None:
    server, _ = token_server
    wrong = OciRegistry.from_url(server.url(ns), insecure=True, username=USER, password="nope")
    with pytest.raises(RegistryError) as exc:
        wrong.resolve("demo")
    assert f"registry {server.host} rejected the credentials of '{USER}' (from --username/--password-stdin)" in one_line(exc)
    anonymous = OciRegistry.from_url(server.url(ns), insecure=True)  # gets a token that grants nothing
    with pytest.raises(RegistryError) as exc:
        anonymous.resolve("demo")
    assert f"registry {server.host} requires credentials (HTTP 401)" in one_line(exc)
