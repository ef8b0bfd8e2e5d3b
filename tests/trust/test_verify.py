"""Verdicts: what makes a version signed, and the one reason when it is not."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from skillctl.trust import dsse
from skillctl.trust.statement import PREDICATE_TYPE, STATEMENT_TYPE, Subject, build_statement, parse_statement
from skillctl.trust.verify import verify_envelopes

from .helpers import make_key, tamper_payload, tamper_sig

DIGEST = "sha256:" + "ab" * 32
OTHER = "sha256:" + "cd" * 32
SUBJECT = Subject("demo", "1.2.0", DIGEST)


def signed(key, subject: Subject = SUBJECT, predicate: dict | None = None) -> bytes:
    return dsse.sign(build_statement(subject, predicate or {"builder": {"id": "skillctl"}}), key).to_bytes()


def test_a_statement_has_the_in_toto_v1_shape() -> None:
    doc = json.loads(build_statement(SUBJECT, {"x": 1}))
    assert doc == {"_type": STATEMENT_TYPE, "predicateType": PREDICATE_TYPE, "predicate": {"x": 1},
                   "subject": [{"name": "demo@1.2.0", "digest": {"sha256": "ab" * 32}}]}
    assert parse_statement(build_statement(SUBJECT, {})).subject == SUBJECT


def test_a_valid_signature_over_exactly_this_version_verifies(tmp_path: Path) -> None:
    key, pub = make_key(tmp_path)
    verdict = verify_envelopes([signed(key, predicate={"builder": {"id": "skillctl", "version": "9"}})], SUBJECT, [pub])
    assert verdict.ok and verdict.kind == "signed" and verdict.reason == ""
    assert [(s.keyid, s.predicate["builder"]["version"]) for s in verdict.signers] == [(pub.keyid, "9")]
    assert verdict.to_dict()["verified"] is True


def test_no_envelope_is_unsigned(tmp_path: Path) -> None:
    _, pub = make_key(tmp_path)
    verdict = verify_envelopes([], SUBJECT, [pub])
    assert (verdict.ok, verdict.kind, verdict.reason) == (False, "unsigned", "demo@1.2.0 is not signed")


def test_a_signature_by_a_key_not_trusted_is_refused(tmp_path: Path) -> None:
    key, _ = make_key(tmp_path / "a")
    _, trusted = make_key(tmp_path / "b")
    verdict = verify_envelopes([signed(key)], SUBJECT, [trusted])
    assert verdict.kind == "unknown-key" and f"signed by {key.keyid[:24]}, which is not a trusted key" in verdict.reason


@pytest.mark.parametrize("subject, kind, text", [
    (Subject("demo", "1.2.0", OTHER), "other-digest", "the signature is over sha256:cdcdcdcdcdcd…, not this bundle's sha256:abababababab…"),
    (Subject("evil", "1.2.0", DIGEST), "moved", "made for evil@1.2.0, not demo@1.2.0; it was moved here"),
    (Subject("demo", "1.1.0", DIGEST), "moved", "made for demo@1.1.0, not demo@1.2.0"),
    (Subject("demo", "1.1.0", OTHER), "moved", "made for demo@1.1.0 and another digest"),
])
def test_a_genuine_signature_about_something_else_is_refused(tmp_path: Path, subject: Subject, kind: str, text: str) -> None:
    key, pub = make_key(tmp_path)
    verdict = verify_envelopes([signed(key, subject)], SUBJECT, [pub])
    assert (verdict.ok, verdict.kind) == (False, kind) and text in verdict.reason


@pytest.mark.parametrize("edit", [
    lambda s: s["subject"][0]["digest"].update(sha256="cd" * 32),
    lambda s: s["subject"][0].update(name="demo@1.2.1"),
    lambda s: s["predicate"].update(audit={"worst_severity": None}),
])
def test_any_change_to_the_signed_statement_is_refused_as_altered(tmp_path: Path, edit) -> None:
    key, pub = make_key(tmp_path)
    verdict = verify_envelopes([tamper_payload(signed(key), edit)], SUBJECT, [pub])
    assert verdict.kind == "altered" and "does not verify: the envelope was altered" in verdict.reason


def test_one_flipped_bit_of_the_signature_is_refused(tmp_path: Path) -> None:
    key, pub = make_key(tmp_path)
    verdict = verify_envelopes([tamper_sig(signed(key), flip=True)], SUBJECT, [pub])
    assert verdict.kind == "altered"


def test_a_truncated_signature_is_refused(tmp_path: Path) -> None:
    key, pub = make_key(tmp_path)
    verdict = verify_envelopes([tamper_sig(signed(key), truncate=3)], SUBJECT, [pub])
    assert verdict.kind == "malformed" and "is 61 bytes; an Ed25519 signature has 64" in verdict.reason


def test_the_key_id_is_only_a_hint(tmp_path: Path) -> None:
    key, pub = make_key(tmp_path / "a")
    other, other_pub = make_key(tmp_path / "b")
    # A trusted key's signature under a wrong (or no) key id still counts ...
    doc = json.loads(signed(key))
    doc["signatures"][0]["keyid"] = "whatever"
    assert verify_envelopes([json.dumps(doc).encode()], SUBJECT, [pub]).ok
    # ... and an untrusted key claiming a trusted key's id is caught as an alteration.
    doc = json.loads(signed(other))
    doc["signatures"][0]["keyid"] = pub.keyid
    verdict = verify_envelopes([json.dumps(doc).encode()], SUBJECT, [pub])
    assert not verdict.ok and verdict.kind == "altered"


@pytest.mark.parametrize("payload, text", [
    (b"not json", "signed payload is not JSON"),
    (json.dumps({"_type": "https://in-toto.io/Statement/v0.1"}).encode(), "not an in-toto Statement v1"),
    (json.dumps({"_type": STATEMENT_TYPE, "predicateType": "https://slsa.dev/provenance/v1"}).encode(), "not a skillctl provenance"),
    (json.dumps({"_type": STATEMENT_TYPE, "predicateType": PREDICATE_TYPE, "predicate": {},
                 "subject": [{"name": "demo@1.2.0", "digest": {"sha256": "ab" * 32}}] * 2}).encode(), "exactly one subject"),
    (json.dumps({"_type": STATEMENT_TYPE, "predicateType": PREDICATE_TYPE, "predicate": {},
                 "subject": [{"name": "demo@1.2.0", "digest": {"sha512": "ab" * 64}}]}).encode(), "no sha256 digest"),
    (json.dumps({"_type": STATEMENT_TYPE, "predicateType": PREDICATE_TYPE, "predicate": {},
                 "subject": [{"name": "demo@v1", "digest": {"sha256": "ab" * 32}}]}).encode(), "is not NAME@VERSION"),
])
def test_a_signed_payload_that_is_not_our_statement_is_refused(tmp_path: Path, payload: bytes, text: str) -> None:
    key, pub = make_key(tmp_path)
    verdict = verify_envelopes([dsse.sign(payload, key).to_bytes()], SUBJECT, [pub])
    assert verdict.kind == "malformed" and text in verdict.reason


def test_another_payload_type_is_refused_before_anything_is_read(tmp_path: Path) -> None:
    key, pub = make_key(tmp_path)
    env = dsse.sign(build_statement(SUBJECT, {}), key, payload_type="application/json").to_bytes()
    verdict = verify_envelopes([env], SUBJECT, [pub])
    assert verdict.kind == "malformed" and "payloadType is 'application/json'" in verdict.reason


def test_one_valid_signature_is_enough_and_the_reason_names_the_most_telling_rejection(tmp_path: Path) -> None:
    key, pub = make_key(tmp_path / "a")
    stranger, _ = make_key(tmp_path / "b")
    bad = [b"{}", signed(stranger), signed(key, Subject("demo", "1.2.0", OTHER))]
    verdict = verify_envelopes(bad, SUBJECT, [pub])
    assert verdict.kind == "other-digest" and verdict.reason.endswith("(and 2 other rejected signatures)")
    assert verify_envelopes([*bad, signed(key)], SUBJECT, [pub]).ok


def test_signers_are_listed_in_the_order_of_the_trusted_keys(tmp_path: Path) -> None:
    a, pa = make_key(tmp_path / "a")
    b, pb = make_key(tmp_path / "b")
    verdict = verify_envelopes([signed(a), signed(b)], SUBJECT, [pb, pa])
    assert [s.keyid for s in verdict.signers] == [pb.keyid, pa.keyid]
    assert verdict.signed_by(pa.keyid) and not verify_envelopes([signed(a)], SUBJECT, [pb, pa]).signed_by(pb.keyid)


def test_the_payload_is_base64_of_the_statement_bytes(tmp_path: Path) -> None:
    key, _ = make_key(tmp_path)
    doc = json.loads(signed(key))
    assert doc["payloadType"] == "application/vnd.in-toto+json"
    assert json.loads(base64.b64decode(doc["payload"]))["_type"] == STATEMENT_TYPE
