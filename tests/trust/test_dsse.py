"""DSSE envelopes: the spec's PAE, interoperability with the reference library, hostile bytes."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from securesystemslib.dsse import Envelope as SslibEnvelope
from securesystemslib.signer import CryptoSigner, SSlibKey

from skillctl.errors import TrustError
from skillctl.trust import dsse

from .helpers import make_key, tamper_sig


def test_pae_matches_the_specs_test_vector() -> None:
    assert dsse.pae("http://example.com/HelloWorld", b"hello world") == b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    assert dsse.pae("t", b"") == b"DSSEv1 1 t 0 "
    assert dsse.pae("ü", b"x") == "DSSEv1 2 ü 1 x".encode()  # lengths count UTF-8 bytes


def test_an_envelope_we_sign_verifies_with_securesystemslib(tmp_path: Path) -> None:
    key, pub = make_key(tmp_path)
    env = dsse.sign(b'{"hello": "world"}', key)
    theirs = SslibEnvelope.from_dict(json.loads(env.to_bytes()))
    accepted = theirs.verify([SSlibKey.from_crypto(pub.key, keyid=pub.keyid)], 1)
    assert list(accepted) == [pub.keyid]


def test_an_envelope_securesystemslib_signs_verifies_here(tmp_path: Path) -> None:
    key, pub = make_key(tmp_path)
    signer = CryptoSigner(key.key, SSlibKey.from_crypto(pub.key, keyid=pub.keyid))
    theirs = SslibEnvelope(b'{"statement": 1}', dsse.IN_TOTO_PAYLOAD_TYPE, {})
    theirs.sign(signer)
    ours = dsse.parse_envelope(json.dumps(theirs.to_dict()).encode())
    assert ours.payload == b'{"statement": 1}' and dsse.verified_by(ours, [pub]) == [pub]


def test_the_signature_covers_payload_and_payload_type(tmp_path: Path) -> None:
    key, pub = make_key(tmp_path)
    env = dsse.sign(b"body", key)
    assert dsse.verified_by(env, [pub]) == [pub]
    assert dsse.verified_by(dsse.Envelope(b"bodY", env.payload_type, env.signatures), [pub]) == []
    assert dsse.verified_by(dsse.Envelope(b"body", "application/json", env.signatures), [pub]) == []


def test_only_the_signing_key_verifies(tmp_path: Path) -> None:
    key, pub = make_key(tmp_path / "a")
    _, other = make_key(tmp_path / "b")
    env = dsse.sign(b"body", key)
    assert dsse.verified_by(env, [other]) == [] and dsse.verified_by(env, [other, pub]) == [pub]


def test_url_safe_and_unpadded_base64_are_accepted(tmp_path: Path) -> None:
    key, pub = make_key(tmp_path)
    env = dsse.sign(b"\xfb\xff body with bytes that need + and /", key)
    doc = {"payload": base64.urlsafe_b64encode(env.payload).decode().rstrip("="), "payloadType": env.payload_type,
           "signatures": [{"sig": base64.urlsafe_b64encode(env.signatures[0].sig).decode().rstrip("=")}]}
    parsed = dsse.parse_envelope(json.dumps(doc).encode())
    assert parsed.payload == env.payload and parsed.signatures[0].keyid == ""  # keyid may be absent
    assert dsse.verified_by(parsed, [pub]) == [pub]


def test_signing_is_deterministic(tmp_path: Path) -> None:
    key, _ = make_key(tmp_path)
    assert dsse.sign(b"same", key).to_bytes() == dsse.sign(b"same", key).to_bytes()


@pytest.mark.parametrize("mutate, message", [
    (lambda d: b"\x00" + d, "not JSON"),
    (lambda d: d[: len(d) // 2], "not JSON"),
    (lambda d: b"[]", "not a JSON object"),
    (lambda d: json.dumps({**json.loads(d), "payload": "%%%"}).encode(), "payload is not valid base64"),
    (lambda d: json.dumps({k: v for k, v in json.loads(d).items() if k != "payloadType"}).encode(), "has no payloadType"),
    (lambda d: json.dumps({**json.loads(d), "signatures": []}).encode(), "has no signatures"),
    (lambda d: json.dumps({**json.loads(d), "signatures": [{"keyid": "x"}]}).encode(), "signature 1 has no sig"),
    (lambda d: json.dumps({**json.loads(d), "signatures": [{"sig": "AA=="}] * 20}).encode(), "over the cap"),
    (lambda d: d + b" " * (70 * 1024), "over the 64 KiB cap"),
])
def test_malformed_envelopes_are_refused_with_the_reason(tmp_path: Path, mutate, message: str) -> None:
    key, _ = make_key(tmp_path)
    with pytest.raises(TrustError, match=message):
        dsse.parse_envelope(mutate(dsse.sign(b"body", key).to_bytes()))


@pytest.mark.parametrize("cut", [1, 8, 32])
def test_a_truncated_signature_is_refused_by_its_length(tmp_path: Path, cut: int) -> None:
    key, _ = make_key(tmp_path)
    with pytest.raises(TrustError, match=f"is {64 - cut} bytes; an Ed25519 signature has 64 \\(truncated or not Ed25519\\)"):
        dsse.parse_envelope(tamper_sig(dsse.sign(b"body", key).to_bytes(), truncate=cut))


def test_a_signature_cut_inside_its_base64_is_refused(tmp_path: Path) -> None:
    key, _ = make_key(tmp_path)
    doc = json.loads(dsse.sign(b"body", key).to_bytes())
    doc["signatures"][0]["sig"] = doc["signatures"][0]["sig"][:-7]
    with pytest.raises(TrustError, match="not valid base64|is 59 bytes"):
        dsse.parse_envelope(json.dumps(doc).encode())
