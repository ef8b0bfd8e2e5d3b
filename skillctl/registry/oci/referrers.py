"""Signatures in an OCI registry: artifacts whose ``subject`` is the skill version's manifest.

One image manifest per signature envelope (OCI image-spec 1.1 artifact)::

    {
      "schemaVersion": 2,
      "mediaType": "application/vnd.oci.image.manifest.v1+json",
      "artifactType": "application/vnd.dsse.envelope.v1+json",
      "config": {"mediaType": "application/vnd.oci.empty.v1+json", "digest": "sha256:44136f…", "size": 2},
      "layers": [{"mediaType": "application/vnd.dsse.envelope.v1+json", "digest": …, "size": …}],
      "subject": {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": <version manifest>, "size": …},
      "annotations": {"vnd.skillctl.signature.bundle": <bundle digest>}
    }

pushed by digest (no tag of its own). How readers find it, per distribution-spec 1.1:

- **referrers API** (``GET /v2/NAME/referrers/DIGEST``) when the registry has it: it indexes
  every manifest pushed with a ``subject`` by itself;
- **referrers tag schema** otherwise (the registry answers the API with 404, as distribution 2.8
  does): an image index tagged ``sha256-<hex of the subject digest>`` lists the referrers; the
  client that pushes a referrer adds its descriptor (``artifactType`` and annotations copied) and
  pushes the index again. Two clients updating one index at the same moment can lose an entry
  (the spec leaves that race to clients): the index is read back after the push and the update
  retried a few times.

Yanking rewrites the version's manifest (a new digest), so the signatures are attached to the new
manifest *before* the tag moves (``carry``); the old manifest keeps its own. The statements sign
the bundle digest, never a manifest digest, so carrying changes nothing a verifier checks.
Everything read back is hostile until checked: sizes capped before reading, every manifest and
blob hashed against its digest, a referrer whose ``subject`` is not the version's manifest ignored.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote, urljoin

from skillctl.bundle import sha256_digest
from skillctl.errors import RegistryError
from skillctl.nesting import loads_json
from skillctl.registry.oci.artifact import ACCEPT_MANIFESTS, MANIFEST_MEDIA_TYPE, MAX_MANIFEST_BYTES, Descriptor, canonical_json
from skillctl.registry.oci.client import MAX_LIST_BYTES, DistributionClient
from skillctl.registry.signatures import MAX_ENVELOPE_BYTES, MAX_SIGNATURES_PER_VERSION, too_many

SIGNATURE_ARTIFACT_TYPE = "application/vnd.dsse.envelope.v1+json"
ENVELOPE_MEDIA_TYPE = "application/vnd.dsse.envelope.v1+json"
INDEX_MEDIA_TYPE = "application/vnd.oci.image.index.v1+json"
EMPTY_MEDIA_TYPE = "application/vnd.oci.empty.v1+json"
EMPTY_CONFIG = b"{}"
ANN_BUNDLE = "vnd.skillctl.signature.bundle"
# Referrer manifests of ours are ~600 bytes; an index lists at most the per-version cap of them.
MAX_REFERRER_BYTES = 64 * 1024
INDEX_ATTEMPTS = 4
REFERRERS_TAG_RE = re.compile(r"^sha256-[0-9a-f]{64}$")
_TAG_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def referrers_tag(digest: str) -> str:
    """The referrers tag schema: algorithm truncated to 32 characters, '-', the encoded part
    truncated to 64, characters a tag cannot hold replaced by '-'."""
    algo, _, encoded = digest.partition(":")
    return _TAG_UNSAFE.sub("-", f"{algo[:32]}-{encoded[:64]}")


def is_referrers_tag(tag: str) -> bool:
    return REFERRERS_TAG_RE.match(tag) is not None


def _json_object(body: bytes, where: str) -> dict[str, Any]:
    try:
        doc = loads_json(body)  # bounded nesting: a hostile index is one line, not a RecursionError
    except ValueError:
        raise RegistryError(f"{where} is not valid JSON") from None
    if not isinstance(doc, dict):
        raise RegistryError(f"{where} is not a JSON object")
    return doc


def _index_entries(doc: dict[str, Any], where: str) -> list[dict[str, Any]]:
    if doc.get("schemaVersion") != 2 or doc.get("mediaType", INDEX_MEDIA_TYPE) != INDEX_MEDIA_TYPE:
        raise RegistryError(f"{where} is not an OCI image index")
    entries = doc.get("manifests", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise RegistryError(f"{where} has a malformed manifests list")
    return entries


class SignatureStore:
    """Signature artifacts of one registry (see the module docstring)."""

    def __init__(self, client: DistributionClient) -> None:
        self.client = client
        self._has_api: bool | None = None  # learnt from the first referrers request

    # ------------------------------------------------------------------ listing

    def _api_list(self, repo: str, subject: str) -> list[dict[str, Any]] | None:
        """Referrer descriptors from the referrers API; None when the registry has no such API."""
        if self._has_api is False:
            return None
        out: list[dict[str, Any]] = []
        url: str | None = f"/v2/{repo}/referrers/{subject}?artifactType={quote(SIGNATURE_ARTIFACT_TYPE, safe='')}"
        for _ in range(8):  # a version keeps a few dozen signatures at most: a handful of pages
            if url is None:
                break
            what = f"the referrers of {repo}@{subject[:19]}…"
            resp = self.client.request("GET", url, scope=f"repository:{repo}:pull", what=f"listing {what}", headers={"Accept": INDEX_MEDIA_TYPE})
            if resp.status_code == 404:
                resp.close()
                self._has_api = False
                return None
            if resp.status_code != 200:
                raise self.client.fail(resp, f"listing {what}")
            with resp:
                body = self.client.read_body(resp, MAX_LIST_BYTES, what)
                nxt = resp.links.get("next", {}).get("url")
            self._has_api = True
            out += _index_entries(_json_object(body, f"registry {self.client.host}: {what}"), what)
            url = urljoin(self.client.base + f"/v2/{repo}/referrers/", nxt) if nxt else None
        return out

    def _tag_index(self, repo: str, subject: str) -> tuple[list[dict[str, Any]], bool]:
        """(entries, exists) of the referrers-tag index of ``subject``."""
        tag = referrers_tag(subject)
        # Accept every manifest kind: a registry may answer 404 for a kind not accepted, and
        # whatever is under the tag must be seen before an index is pushed over it.
        got = self.client.get_manifest(repo, tag, accept=ACCEPT_MANIFESTS, max_bytes=MAX_MANIFEST_BYTES)
        if got is None:
            return [], False
        where = f"{self.client.host}/{repo}:{tag}"
        doc = _json_object(got[0], where)
        if doc.get("mediaType") != INDEX_MEDIA_TYPE:
            raise RegistryError(f"{where} holds a {str(doc.get('mediaType'))[:60]}, not a referrers index; refusing to use or overwrite it")
        return _index_entries(doc, where), True

    def _descriptors(self, repo: str, subject: str) -> list[dict[str, Any]]:
        entries = self._api_list(repo, subject)
        if entries is None:
            entries, _ = self._tag_index(repo, subject)
        return [e for e in entries if e.get("artifactType") == SIGNATURE_ARTIFACT_TYPE and isinstance(e.get("digest"), str)]

    def _envelope_layer(self, repo: str, ref_digest: str, subject: str) -> Descriptor | None:
        """The envelope layer of one referrer manifest; None when it is not a signature of ours
        about ``subject`` (a foreign artifact, or an index entry pointing elsewhere)."""
        got = self.client.get_manifest(repo, ref_digest, accept=MANIFEST_MEDIA_TYPE, max_bytes=MAX_REFERRER_BYTES)
        if got is None:
            return None
        doc = _json_object(got[0], f"{self.client.host}/{repo}@{ref_digest[:19]}…")
        subj, layers = doc.get("subject"), doc.get("layers")
        if doc.get("artifactType") != SIGNATURE_ARTIFACT_TYPE or not isinstance(subj, dict) or subj.get("digest") != subject:
            return None
        if not isinstance(layers, list) or len(layers) != 1 or not isinstance(layers[0], dict):
            return None
        layer = layers[0]
        digest, size = layer.get("digest"), layer.get("size")
        if layer.get("mediaType") != ENVELOPE_MEDIA_TYPE or not isinstance(digest, str) or not isinstance(size, int) or isinstance(size, bool):
            return None
        if not 0 < size <= MAX_ENVELOPE_BYTES:
            return None
        return Descriptor(ENVELOPE_MEDIA_TYPE, digest, size)

    def _layers(self, repo: str, subject: str) -> list[Descriptor]:
        out: list[Descriptor] = []
        for desc in self._descriptors(repo, subject)[: MAX_SIGNATURES_PER_VERSION * 2]:
            layer = self._envelope_layer(repo, desc["digest"], subject)
            if layer is not None and all(layer.digest != o.digest for o in out):
                out.append(layer)
        return out[:MAX_SIGNATURES_PER_VERSION]

    def envelopes(self, repo: str, subject: str) -> list[bytes]:
        """The envelopes of the signature artifacts whose subject is the manifest ``subject``."""
        return [
            self.client.get_blob(repo, layer.digest, size=layer.size, max_bytes=MAX_ENVELOPE_BYTES)
            for layer in self._layers(repo, subject)
        ]

    # ------------------------------------------------------------------ attaching

    def attach(self, repo: str, subject: Descriptor, envelope: bytes, bundle_digest: str, label: str) -> str:
        env_digest = sha256_digest(envelope)
        existing = self._layers(repo, subject.digest)
        if any(layer.digest == env_digest for layer in existing):
            return "unchanged"
        if len(existing) >= MAX_SIGNATURES_PER_VERSION:
            raise too_many(label)
        self.client.push_blob(repo, EMPTY_CONFIG, sha256_digest(EMPTY_CONFIG))
        self.client.push_blob(repo, envelope, env_digest)
        body = canonical_json({
            "schemaVersion": 2,
            "mediaType": MANIFEST_MEDIA_TYPE,
            "artifactType": SIGNATURE_ARTIFACT_TYPE,
            "config": Descriptor(EMPTY_MEDIA_TYPE, sha256_digest(EMPTY_CONFIG), len(EMPTY_CONFIG)).to_dict(),
            "layers": [Descriptor(ENVELOPE_MEDIA_TYPE, env_digest, len(envelope)).to_dict()],
            "subject": subject.to_dict(),
            "annotations": {ANN_BUNDLE: bundle_digest},
        })
        digest = sha256_digest(body)
        self.client.put_manifest(repo, digest, body, MANIFEST_MEDIA_TYPE)
        if not self._has_api:  # learnt while listing above; without the API the tag's index is ours to keep
            entry = {
                "mediaType": MANIFEST_MEDIA_TYPE, "digest": digest, "size": len(body),
                "artifactType": SIGNATURE_ARTIFACT_TYPE, "annotations": {ANN_BUNDLE: bundle_digest},
            }
            self._add_to_tag_index(repo, subject.digest, entry)
        return "attached"

    def _add_to_tag_index(self, repo: str, subject: str, entry: dict[str, Any]) -> None:
        tag = referrers_tag(subject)
        for _ in range(INDEX_ATTEMPTS):
            entries, _exists = self._tag_index(repo, subject)
            if any(e.get("digest") == entry["digest"] for e in entries):
                return
            index = canonical_json({"schemaVersion": 2, "mediaType": INDEX_MEDIA_TYPE, "manifests": [*entries, entry]})
            self.client.put_manifest(repo, tag, index, INDEX_MEDIA_TYPE)
            # Read back: another client may have pushed its own index over ours in between.
            after, _ = self._tag_index(repo, subject)
            if any(e.get("digest") == entry["digest"] for e in after):
                return
        raise RegistryError(
            f"registry {self.client.host}: the referrers index {repo}:{tag} kept changing under this client "
            f"({INDEX_ATTEMPTS} attempts); sign again"
        )

    def carry(self, repo: str, old_subject: str, new_subject: Descriptor, bundle_digest: str, label: str) -> int:
        """Attach every signature of ``old_subject`` to ``new_subject``; how many were new there."""
        moved = 0
        for envelope in self.envelopes(repo, old_subject):
            moved += self.attach(repo, new_subject, envelope, bundle_digest, label) == "attached"
        return moved
