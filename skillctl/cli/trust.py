"""``skillctl key generate``, ``skillctl sign`` and ``skillctl verify``."""

from __future__ import annotations

import json
from pathlib import Path

import click

from skillctl.cli.common import emit_json, format_option, library_errors, open_registry_for_cli, registry_option
from skillctl.errors import TrustError

_key_file = click.Path(dir_okay=False, path_type=Path)


@click.group("key")
def key_group() -> None:
    """Signing keys (Ed25519)."""


@key_group.command("generate")
@click.argument("name")
@format_option
@library_errors
def generate(name: str, fmt: str) -> None:
    """Create NAME.key (private, mode 0600) and NAME.pub (public).

    Existing files are never overwritten. Keep NAME.key secret (sign with it: publish --sign,
    sign --key); commit NAME.pub and list it under trust.keys in skills.yaml. The key id is
    "ed25519:" + the sha256 of the public key (openssl pkey -pubin -in NAME.pub -outform DER |
    sha256sum).
    """
    from skillctl.trust.keys import generate_key

    made = generate_key(name)
    if fmt == "json":
        emit_json({"private_key": str(made.private_path), "public_key": str(made.public_path), "keyid": made.keyid})
    else:
        click.echo(f"wrote {made.private_path} (secret, mode 0600) and {made.public_path}\nkey id {made.keyid}")


def signed_line(res) -> str:
    from skillctl.trust.keys import short_id

    where = ""
    if res.source:
        src = res.source
        where = f" from {src['repository'] or 'git'} {src['commit'][:12]}{' (dirty)' if src['dirty'] else ''}"
    verb = "signed" if res.status == "attached" else "already signed"
    return f"{verb:<14} {res.name}@{res.version}  by {short_id(res.keyid)}…{where}"


@click.command("sign")
@click.argument("ref")
@click.option("--key", "key_path", required=True, type=_key_file, help="Private key file (NAME.key, mode 0600).")
@click.option("--source", "source_dir", type=click.Path(file_okay=False, exists=True, path_type=Path),
              help="The skill's folder in a git checkout, to record repository and commit in the statement.")
@registry_option
@format_option
@library_errors
def sign_cmd(ref: str, key_path: Path, source_dir: Path | None, registry_url: str | None, fmt: str) -> None:
    """Sign a published NAME@VERSION and attach the signature in the registry.

    The signature is a DSSE envelope holding an in-toto Statement v1 about the bundle (name,
    version, sha256) with the builder, the git source (with --source) and the audit summary.
    Signing again with the same key changes nothing.
    """
    from skillctl.registry.refs import require_exact
    from skillctl.trust.keys import load_signing_key
    from skillctl.trust.sign import sign_version

    key = load_signing_key(key_path)
    reg = open_registry_for_cli(registry_url)
    rec = reg.resolve_record(require_exact(ref, "sign"))
    res = sign_version(reg, rec, key, source_folder=source_dir)
    emit_json(res.to_dict()) if fmt == "json" else click.echo(signed_line(res))


@click.command("verify")
@click.argument("ref")
@click.option("--key", "key_paths", required=True, multiple=True, type=_key_file,
              help="Trusted public key file (NAME.pub); repeat for several.")
@click.option("--pre", "prereleases", is_flag=True, help="Let ranges match pre-releases.")
@registry_option
@format_option
def verify_cmd(ref: str, key_paths: tuple[Path, ...], prereleases: bool, registry_url: str | None, fmt: str) -> None:
    """Check that REF's version carries a valid signature by one of the keys.

    Exit 0 only when a signature by a given key verifies over exactly the name, version and
    bundle digest REF resolves to (the bundle is downloaded and hashed); otherwise exit 1 with
    the reason: unsigned, unknown key, altered envelope, another digest, or a signature moved
    from another name or version. --format json prints the verdict and each signer's statement.
    """
    from skillctl.errors import SkillctlError
    from skillctl.trust.keys import load_public_key, short_id
    from skillctl.trust.statement import Subject
    from skillctl.trust.verify import verify_envelopes

    try:
        keys = [load_public_key(p) for p in key_paths]
        reg = open_registry_for_cli(registry_url)
        rec = reg.resolve(ref, prereleases=prereleases)
        reg.fetch(rec)  # the registry's record must be the bytes it serves
        verdict = verify_envelopes(reg.signatures(rec), Subject(rec.name, rec.version, rec.digest), keys)
    except SkillctlError as exc:
        raise click.ClickException(str(exc)) from exc
    if fmt == "json":
        click.echo(json.dumps(verdict.to_dict(), indent=2, ensure_ascii=False))
        if not verdict.ok:
            raise click.exceptions.Exit(1)
        return
    if not verdict.ok:
        raise click.ClickException(str(TrustError(f"not verified: {verdict.reason}")))
    for s in verdict.signers:
        audit = s.predicate.get("audit") or {}
        src = s.predicate.get("source") or {}
        click.echo(f"verified {rec.name}@{rec.version}  {rec.digest}  signed by {short_id(s.keyid)}… ({s.key_source})")
        if src:
            click.echo(f"  source: {src.get('repository') or '(no remote)'} @ {str(src.get('commit'))[:12]}{' (dirty)' if src.get('dirty') else ''}")
        builder = s.predicate.get("builder") or {}
        click.echo(f"  builder: {builder.get('id')} {builder.get('version')}; audit worst: {audit.get('worst_severity') or 'none'}")
