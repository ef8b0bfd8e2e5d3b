"""Key files: generation, permissions, key types and key ids."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from skillctl.errors import TrustError
from skillctl.trust.keys import generate_key, key_paths, load_public_key, load_signing_key


def _pem_private(key, password: bytes | None = None) -> bytes:
    enc = serialization.BestAvailableEncryption(password) if password else serialization.NoEncryption()
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, enc)


def _pem_public(key) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def _write(path: Path, data: bytes, mode: int = 0o600) -> Path:
    path.write_bytes(data)
    os.chmod(path, mode)
    return path


def test_generate_writes_a_private_key_only_its_owner_reads_and_a_public_key(tmp_path: Path) -> None:
    made = generate_key(tmp_path / "team")
    assert (made.private_path.name, made.public_path.name) == ("team.key", "team.pub")
    assert made.private_path.stat().st_mode & 0o777 == 0o600
    assert b"BEGIN PRIVATE KEY" in made.private_path.read_bytes() and b"BEGIN PUBLIC KEY" in made.public_path.read_bytes()
    assert load_signing_key(made.private_path).keyid == load_public_key(made.public_path).keyid == made.keyid


def test_the_key_id_is_the_sha256_of_the_der_public_key(tmp_path: Path) -> None:
    made = generate_key(tmp_path / "team")
    der = serialization.load_pem_public_key(made.public_path.read_bytes()).public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    assert made.keyid == "ed25519:" + hashlib.sha256(der).hexdigest()


def test_the_key_id_is_what_the_documented_openssl_command_prints(tmp_path: Path) -> None:
    made = generate_key(tmp_path / "team")
    try:
        der = subprocess.run(["openssl", "pkey", "-pubin", "-in", str(made.public_path), "-outform", "DER"],
                             capture_output=True, check=True).stdout
    except FileNotFoundError:
        pytest.skip("openssl is not installed")
    assert made.keyid == "ed25519:" + hashlib.sha256(der).hexdigest()


@pytest.mark.parametrize("existing", ["team.key", "team.pub"])
def test_generate_never_overwrites_either_half(tmp_path: Path, existing: str) -> None:
    (tmp_path / existing).write_bytes(b"precious")
    with pytest.raises(TrustError, match="already exists; refusing to overwrite"):
        generate_key(tmp_path / "team")
    assert (tmp_path / existing).read_bytes() == b"precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == [existing]


def test_generate_creates_the_folder_and_refuses_one_it_cannot_create(tmp_path: Path) -> None:
    assert generate_key(tmp_path / "keys" / "team").public_path.is_file()
    (tmp_path / "file").write_text("x")
    with pytest.raises(TrustError, match="cannot create folder"):
        generate_key(tmp_path / "file" / "team")


def test_a_name_with_a_suffix_names_the_same_pair(tmp_path: Path) -> None:
    assert key_paths(tmp_path / "team.key") == key_paths(tmp_path / "team.pub") == key_paths(tmp_path / "team")


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_a_private_key_others_can_read_is_refused(tmp_path: Path, mode: int) -> None:
    made = generate_key(tmp_path / "team")
    os.chmod(made.private_path, mode)
    with pytest.raises(TrustError, match=f"readable by others \\(mode {mode:04o}\\); restrict it with: chmod 600"):
        load_signing_key(made.private_path)


def test_a_private_key_of_another_type_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "rsa.key", _pem_private(rsa.generate_private_key(public_exponent=65537, key_size=2048)))
    with pytest.raises(TrustError, match="is an RSA key; skillctl signs with Ed25519 keys only"):
        load_signing_key(path)
    path = _write(tmp_path / "ec.key", _pem_private(ec.generate_private_key(ec.SECP256R1())))
    with pytest.raises(TrustError, match="is an ECDSA key"):
        load_signing_key(path)


def test_a_public_key_of_another_type_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "ec.pub", _pem_public(ec.generate_private_key(ec.SECP256R1())), 0o644)
    with pytest.raises(TrustError, match="is an ECDSA key; skillctl verifies Ed25519 signatures only"):
        load_public_key(path)


def test_halves_given_the_wrong_way_round_are_refused(tmp_path: Path) -> None:
    made = generate_key(tmp_path / "team")
    os.chmod(made.public_path, 0o600)
    with pytest.raises(TrustError, match="is a public key; sign with the private half"):
        load_signing_key(made.public_path)
    with pytest.raises(TrustError, match="holds a private key; give the public half"):
        load_public_key(made.private_path)


def test_an_encrypted_private_key_is_refused_with_the_reason(tmp_path: Path) -> None:
    path = _write(tmp_path / "enc.key", _pem_private(Ed25519PrivateKey.generate(), b"secret"))
    with pytest.raises(TrustError, match="is encrypted"):
        load_signing_key(path)


@pytest.mark.parametrize("content, hint", [
    (b"not a key at all", "is not a PEM public key"),
    (b"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE8 user@host\n", "an OpenSSH key"),
])
def test_files_that_are_not_keys_are_refused(tmp_path: Path, content: bytes, hint: str) -> None:
    with pytest.raises(TrustError, match=hint):
        load_public_key(_write(tmp_path / "x.pub", content, 0o644))
    with pytest.raises(TrustError, match="is not a PEM private key"):
        load_signing_key(_write(tmp_path / "x.key", content))


def test_missing_and_oversized_key_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(TrustError, match="not found; create a key pair with: skillctl key generate"):
        load_public_key(tmp_path / "absent.pub")
    with pytest.raises(TrustError, match="a key file is under 1 KiB"):
        load_public_key(_write(tmp_path / "big.pub", b"x" * 100_000, 0o644))
    with pytest.raises(TrustError, match="not a regular file"):
        load_public_key(tmp_path)
